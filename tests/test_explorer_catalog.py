"""The model catalogue behind the picker: fallbacks, what may be opened, and memory bounds."""

import threading
import time

import pytest
import torch
from hub_standin import hub  # noqa: F401 - the fixture
from markdown_helpers import HOSTILE_NAMES, shows_as_written

import vit
from explorer.catalog import BUNDLED, ModelCatalog, ModelUnavailable, ServingLimits, download_text
from explorer.loaded import LoadedModel
from vit.clip import CLIP_CONFIGS
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES, Preprocessing
from vit.pretrained import PRETRAINED


def test_missing_bundled_model_falls_back_to_clearly_labelled_untrained_weights(tmp_path):
    catalog = ModelCatalog(tmp_path / "absent.safetensors", tmp_path)
    loaded = catalog.get(BUNDLED)
    assert loaded.untrained and "untrained weights" in loaded.describe()
    assert catalog.choices()[0] == ("CIFAR-10 nano (untrained weights)", BUNDLED)
    again = ModelCatalog(tmp_path / "absent.safetensors", tmp_path).get(BUNDLED)
    assert all((a == b).all() for a, b in zip(loaded.model.parameters(), again.model.parameters(), strict=True))


def test_the_bundled_models_name_in_the_picker_is_the_models_own(tmp_path):
    """After issue 46 shipped a vit_cifar_tiny, the picker still called it "CIFAR-10 nano"."""
    catalog = ModelCatalog(runs_dir=tmp_path)
    loaded = catalog.get(BUNDLED)
    size = {
        c.dim: name.removeprefix("vit_cifar_") for name, c in vit.model.CONFIGS.items() if name.startswith("vit_cifar")
    }
    assert catalog.choices()[0] == (f"CIFAR-10 {size[loaded.model.config.dim]} (bundled)", BUNDLED)


def test_keys_never_hold_paths_and_each_visitor_lists_only_their_own(tmp_path, tiny_checkpoint):
    runs = tmp_path / "runs"
    (runs / "job").mkdir(parents=True)
    inside = runs / "job" / "model.safetensors"
    inside.write_bytes(tiny_checkpoint.read_bytes())
    local = ModelCatalog(tiny_checkpoint, runs)  # local mode: the runs folder is everyone's
    [(key, label)] = local.checkpoints("alice")
    assert label == "job/model.safetensors" and str(tmp_path) not in key
    assert local.get(key).meta.class_names[0] == "airplane"
    with pytest.raises(ModelUnavailable, match="unknown checkpoint: pick one from the list"):
        local.get(f"checkpoint:{tiny_checkpoint}")  # a real file, named by path: never opened

    public = ModelCatalog(tiny_checkpoint, runs, scan_runs=False)
    assert public.checkpoints("alice") == []  # nobody sees the runs folder
    key = public.register(tiny_checkpoint, "alice", "upload.safetensors")
    assert public.get(key).model.config.depth == 6
    assert [k for k, _ in public.checkpoints("alice")] == [key] and public.checkpoints("bob") == []
    assert key not in [k for _, k in public.choices("bob")]
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\0" * 10)
    with pytest.raises(ModelUnavailable, match="cannot use this checkpoint: broken.safetensors is not a readable"):
        public.register(broken, "alice")
    assert len(public.checkpoints("alice")) == 1


def test_a_finished_run_is_one_entry_however_often_it_is_scanned_or_registered(tmp_path, tiny_checkpoint):
    """Each training run added three entries to the model list: its training state
    (last.safetensors), its model file as scanned, and the same file again as "my run"."""
    run = tmp_path / "runs" / "visitor-run1"
    run.mkdir(parents=True)
    (run / vit.checkpoint.TRAINING_STATE).write_bytes(tiny_checkpoint.read_bytes())
    model = run / "model.safetensors"  # the model file while the run goes on
    model.write_bytes(tiny_checkpoint.read_bytes())
    local = ModelCatalog(tiny_checkpoint, tmp_path / "runs")
    assert [label for _, label in local.checkpoints("alice")] == ["visitor-run1/model.safetensors"]
    named = model.rename(run / "vit_cifar_nano_5epochs_acc41.safetensors")  # as the run ends
    key = local.register(named, "alice", label="my run, 5 epochs")
    assert local.checkpoints("alice") == [(key, "my run, 5 epochs")]  # the renamed file's old entry is gone
    assert local.register(named, "alice", label="my run, 5 epochs") == key  # "Open in Explore": the same entry
    assert local.checkpoints("alice") == local.checkpoints("bob") == [(key, "my run, 5 epochs")]
    second = tmp_path / "runs" / "visitor-run2"
    second.mkdir()
    other = second / "vit_cifar_nano_2epochs_acc50.safetensors"
    other.write_bytes(tiny_checkpoint.read_bytes())
    local.register(other, "alice", label="my run, 2 epochs")
    assert [label for _, label in local.checkpoints("alice")] == ["my run, 5 epochs", "my run, 2 epochs"]


def test_loaded_models_are_bounded_and_the_bundled_one_stays(tmp_path, tiny_checkpoint):
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, capacity=1)  # one model besides the pinned bundled one
    keys = []
    for i in range(3):
        path = tmp_path / f"m{i}.safetensors"
        vit.save_checkpoint(vit.create_model("vit_cifar_nano", depth=1), path, preprocessing=CIFAR10)
        keys.append(catalog.register(path, "alice"))
    catalog.get(BUNDLED)
    for key in keys:
        catalog.get(key)
    assert list(catalog._loaded) == [BUNDLED, keys[2]]
    weights = sum(
        t.nbytes for m in (catalog.get(BUNDLED).model, catalog.get(keys[2]).model) for t in m.state_dict().values()
    )
    assert catalog.loaded_bytes() == weights  # what the operator's log says the catalogue holds


def test_unknown_keys_are_refused_without_being_remembered_or_echoed_whole(tmp_path, tiny_checkpoint):
    catalog = ModelCatalog(tiny_checkpoint, tmp_path)
    catalog.get(BUNDLED)
    before = (len(catalog._pending), len(catalog._loaded), len(catalog._checkpoints))
    for i in range(300):  # each distinct key used to leave one lock behind, forever
        with pytest.raises(ModelUnavailable, match="pick one from the list"):
            catalog.get(f"pretrained:nonexistent-{i}")
        with pytest.raises(ModelUnavailable, match="pick one from the list"):
            catalog.get(f"checkpoint:{i}")
    assert (len(catalog._pending), len(catalog._loaded), len(catalog._checkpoints)) == before
    with pytest.raises(ModelUnavailable) as refused:
        catalog.get("x" * 2**20)  # a 1 MB key
    assert len(str(refused.value)) < 100 and "xxxx" in str(refused.value)


def test_a_key_that_loaded_leaves_no_lock_behind(tmp_path, tiny_checkpoint):
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False)
    key = catalog.register(tiny_checkpoint, "alice")
    catalog.get(key)
    assert catalog._pending == {}


def _hostile(tmp_path, name: str, pre: Preprocessing = CIFAR10, **config) -> str:
    """A small valid checkpoint whose header asks for costly work; returns the file."""
    path = tmp_path / f"{name}.safetensors"
    model = vit.VisionTransformer(vit.ViTConfig(num_classes=10, in_channels=3, **config))
    vit.save_checkpoint(model, path, preprocessing=pre)
    return path


@pytest.mark.parametrize(
    ("name", "pre", "config", "message"),
    [
        ("resize", Preprocessing(16000, 32), {}, "preprocessing resize_size 16,000 is more than this server's 1,024"),
        ("grid80", CIFAR10, {"image_size": 320, "patch_size": 4}, "patch grid side 80 is more than this server's 48"),
        ("heads144", CIFAR10, {"dim": 144, "heads": 144}, "heads 144 is more than this server's 64"),
        (  # issue 56: a 1 x 1 grid with 1,500 registers sent 145 MB of rows to the page
            "registers",
            Preprocessing(4, 4),
            {"image_size": 4, "register_tokens": 1500},
            r"prefix tokens \(CLS, distillation, registers\) 1,501 is more than this server's 16",
        ),
        (  # a header claiming 64 heads for a 128-wide model (2 channels a head)
            "heads64",
            CIFAR10,
            {"dim": 128, "heads": 64, "mlp_dim": 8},
            r"64 heads of 2 channels each \(dim 128\) are narrower than any trained ViT.s \(8 channels at least\)",
        ),
        (
            "maps",  # every field within bounds: 12 layers x 64 heads x 577² attention weights
            Preprocessing(384, 384),
            {"image_size": 384, "patch_size": 16, "dim": 64, "heads": 64, "depth": 12},
            "one analysis would need about 3,902 MiB, more than this server's 1,024 MiB per request",
        ),
    ],
)
def test_costly_but_valid_checkpoints_are_refused_when_loaded(
    tmp_path, tiny_checkpoint, monkeypatch, name, pre, config, message
):
    small = {"image_size": 32, "patch_size": 4, "dim": 8, "depth": 1, "heads": 2, "mlp_dim": 8}
    path = _hostile(tmp_path, name, pre, **(small | config))
    assert path.stat().st_size < 2_000_000  # a small upload
    monkeypatch.setattr(vit.VisionTransformer, "forward", lambda *_: pytest.fail("a forward pass ran"))
    monkeypatch.setattr(LoadedModel, "position_similarity", lambda _: pytest.fail("the similarity was computed"))
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False)
    with pytest.raises(ModelUnavailable, match=message):
        catalog.register(path, "alice")
    assert catalog.checkpoints("alice") == [] and len(catalog._loaded) == 0


def test_every_pretrained_model_of_the_picker_fits_the_default_limits():
    named = {name: spec for name, spec in PRETRAINED.items() if spec.config is not None}  # others: a config.json
    assert named
    for name, spec in named.items():
        config = CLIP_CONFIGS[spec.config] if spec.library == "open_clip" else vit.model.CONFIGS[spec.config]
        with torch.device("meta"):  # ViT-L's weights are never allocated
            model = vit.VisionTransformer(config)
        crop = spec.input_size or model.config.image_size
        loaded = LoadedModel(name, name, model, vit.ModelMeta([], Preprocessing(round(crop / 0.875), crop)))
        ServingLimits().check(loaded)


def test_a_model_whose_first_screen_would_not_fit_a_reply_is_refused_when_loaded():
    """Every field within its bound, the maps within the request's memory, but 64 layers x 64
    heads x 17 token queries of rows: more than the page may be sent of them (page_budget)."""
    config = vit.ViTConfig(
        image_size=20, patch_size=4, num_classes=10, dim=512, depth=64, heads=64, mlp_dim=8,
        class_token=False, register_tokens=16, pool="gap",
    )  # fmt: skip
    with torch.device("meta"):  # the weights are never allocated
        model = vit.VisionTransformer(config)
    loaded = LoadedModel("deep", "deep", model, vit.ModelMeta([], Preprocessing(20, 20)))
    with pytest.raises(ModelUnavailable, match=r"token queries' attention would send 1\d\.\d MB to the"):
        ServingLimits().check(loaded)


class SlowLoader:
    """A stand-in for vit.load_pretrained: counts its calls, reports progress in steps and
    finishes only when the test lets it (so every visitor asks while it is still running)."""

    def __init__(self, fail: Exception | None = None, total: int | None = 4_000_000):
        self.calls = 0
        self.release = threading.Event()
        self.started = threading.Event()
        self.fail, self.total = fail, total

    def __call__(self, name, *, progress=None):
        self.calls += 1
        self.started.set()
        progress(1_000_000, self.total)
        self.release.wait(10)
        progress(4_000_000, self.total)
        if self.fail is not None:
            raise self.fail
        return vit.create_model("vit_cifar_nano", depth=1).eval(), vit.ModelMeta(list(CIFAR10_CLASSES), CIFAR10, {})


def _ask_at_once(catalog, key, visitors=5):
    """Every visitor asks for `key` in its own thread; (results or errors, progress seen by each)."""
    outcomes, seen = [None] * visitors, [[] for _ in range(visitors)]

    def visit(i):
        try:
            outcomes[i] = catalog.get(key, progress=lambda done, total: seen[i].append((done, total)))
        except ModelUnavailable as e:
            outcomes[i] = e

    threads = [threading.Thread(target=visit, args=(i,)) for i in range(visitors)]
    for t in threads:
        t.start()
    return threads, outcomes, seen


@pytest.fixture
def slow(monkeypatch):
    loader = SlowLoader()
    monkeypatch.setattr(vit, "load_pretrained", loader)
    monkeypatch.setattr(vit, "list_pretrained", lambda: ["deit_small_patch16_224.fb_in1k"])
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: False)
    return loader


def test_many_visitors_asking_for_one_model_share_one_download_and_all_watch_it(tmp_path, tiny_checkpoint, slow):
    catalog = ModelCatalog(tiny_checkpoint, tmp_path)
    key = "pretrained:deit_small_patch16_224.fb_in1k"
    threads, outcomes, seen = _ask_at_once(catalog, key)
    assert slow.started.wait(10)
    deadline = time.monotonic() + 10
    while not all(seen) and time.monotonic() < deadline:  # the waiters see the first step too
        time.sleep(0.05)
    slow.release.set()
    for t in threads:
        t.join(10)
    assert slow.calls == 1
    assert all(o is outcomes[0] for o in outcomes) and outcomes[0].key == key
    assert all(s and s[0] == (1_000_000, 4_000_000) for s in seen)
    assert catalog.get(key) is outcomes[0] and slow.calls == 1  # loaded: no second download


def test_a_failed_download_is_one_line_for_every_waiter_and_the_whole_reason_for_the_log(
    tmp_path, tiny_checkpoint, slow, caplog
):
    cause = ConnectionError("Traceback-worthy detail: HTTPSConnectionPool(host='huggingface.co', port=443)")
    failure = vit.PretrainedUnavailable("the Hugging Face Hub (huggingface.co) cannot be reached from this machine")
    failure.__cause__ = cause
    slow.fail = failure
    catalog = ModelCatalog(tiny_checkpoint, tmp_path)
    threads, outcomes, _ = _ask_at_once(catalog, "pretrained:deit_small_patch16_224.fb_in1k", visitors=3)
    assert slow.started.wait(10)
    slow.release.set()
    for t in threads:
        t.join(10)
    assert slow.calls == 1
    for outcome in outcomes:
        assert isinstance(outcome, ModelUnavailable) and str(outcome) == str(failure)
        assert "\n" not in str(outcome) and "Traceback" not in str(outcome) and "Error" not in str(outcome)
    assert "HTTPSConnectionPool" in caplog.text  # the full reason, for the operator


def test_a_crash_inside_a_loader_reaches_visitors_as_one_line_without_python(tmp_path, tiny_checkpoint, slow, caplog):
    slow.fail = KeyError("blocks.0.attn.qkv.weight")
    slow.release.set()
    catalog = ModelCatalog(tiny_checkpoint, tmp_path)
    with pytest.raises(ModelUnavailable) as caught:
        catalog.get("pretrained:deit_small_patch16_224.fb_in1k")
    said = "pretrained:deit_small_patch16_224.fb_in1k could not be loaded (the reason is in the server log)"
    assert str(caught.value) == said
    assert "KeyError" in caplog.text and "blocks.0.attn.qkv.weight" in caplog.text


def test_visitors_choose_only_among_the_listed_pretrained_names(tmp_path, tiny_checkpoint, slow):
    public = ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False)
    for name in ("evil/any-repo", "../../etc/passwd", "google/vit-base-patch16-224-in21k"):
        with pytest.raises(ModelUnavailable, match="unknown model"):
            public.get(f"pretrained:{name}")
    assert slow.calls == 0  # never asked the Hub
    assert [k for _, k in public.choices()][1:] == ["pretrained:deit_small_patch16_224.fb_in1k"]


def test_available_means_loadable_without_a_download(tmp_path, tiny_checkpoint, monkeypatch):
    cached = {"vit_small_patch16_224.dino"}
    names = ["vit_small_patch16_224.dino", "deit_small_patch16_224.fb_in1k"]
    monkeypatch.setattr(vit, "list_pretrained", lambda: names)
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: name in cached)
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False)
    key = catalog.register(tiny_checkpoint, "alice")
    assert catalog.available(BUNDLED) and catalog.available(key)
    assert catalog.available("pretrained:vit_small_patch16_224.dino")
    assert not catalog.available("pretrained:deit_small_patch16_224.fb_in1k")
    assert not catalog.available("pretrained:not-listed") and not catalog.available("checkpoint:nope")
    labels = dict((k, label) for label, k in catalog.choices())
    assert labels["pretrained:deit_small_patch16_224.fb_in1k"].endswith("downloads once)")
    assert labels["pretrained:vit_small_patch16_224.dino"] == "vit_small_patch16_224.dino (pretrained)"


def test_a_default_model_that_cannot_be_had_falls_back_to_the_bundled_one_with_a_note(
    tmp_path, tiny_checkpoint, slow, caplog
):
    slow.fail = vit.PretrainedUnavailable("the Hugging Face Hub (huggingface.co) cannot be reached from this machine")
    slow.release.set()
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, default="pretrained:deit_small_patch16_224.fb_in1k")
    assert catalog.start().key == BUNDLED and catalog.default_key == BUNDLED
    assert "deit_small_patch16_224.fb_in1k" in catalog.note and "cannot be reached" in catalog.note
    assert "starting on the bundled one instead" in caplog.text


def test_the_default_model_stays_loaded_beyond_the_capacity(tmp_path, tiny_checkpoint, slow):
    slow.release.set()
    default = "pretrained:deit_small_patch16_224.fb_in1k"
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, capacity=1, default=default)
    assert catalog.start().key == default
    keys = []
    for i in range(2):
        path = tmp_path / f"m{i}.safetensors"
        vit.save_checkpoint(vit.create_model("vit_cifar_nano", depth=1), path, preprocessing=CIFAR10)
        keys.append(catalog.register(path, "alice"))
    assert set(catalog._loaded) == {default, keys[1]}  # the first checkpoint made room, the default stayed


def test_download_text_says_bytes_and_percent():
    assert download_text("deit_s", 12_500_000, 88_300_000) == "downloading deit_s: 12.5 of 88.3 MB (14%)"
    assert download_text("deit_s", 3_000_000, None) == "downloading deit_s: 3.0 MB so far"


def test_offline_the_picker_lists_what_opens_here_first_and_marks_what_cannot_be_had(
    tmp_path, tiny_checkpoint, monkeypatch
):
    """Offline, the picker offered 23 models "(pretrained, downloads once)" that cannot load."""
    names = ["deit_small_patch16_224.fb_in1k", "vit_small_patch16_224.dino", "vit_b_16"]
    monkeypatch.setattr(vit, "list_pretrained", lambda: names)
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: name == "vit_small_patch16_224.dino")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False)
    key = catalog.register(tiny_checkpoint, "alice", label="mine")
    assert not catalog.check_downloads() and catalog.online is False
    assert catalog.choices("alice") == [
        ("tiny.safetensors (default)", BUNDLED),
        ("vit_small_patch16_224.dino (pretrained)", "pretrained:vit_small_patch16_224.dino"),
        ("checkpoint: mine", key),
        (
            "deit_small_patch16_224.fb_in1k (not on this machine, and no internet to download it)",
            "pretrained:deit_small_patch16_224.fb_in1k",
        ),
        ("vit_b_16 (not on this machine, and no internet to download it)", "pretrained:vit_b_16"),
    ]


def test_a_pick_that_cannot_download_is_said_in_a_teachers_words_and_marks_the_rest(
    tmp_path, tiny_checkpoint, monkeypatch
):
    """The failure spoke of HF_HUB_OFFLINE and showed an internal key and a server path;
    a failed download also tells the catalogue this machine is offline (no HF_HUB_OFFLINE set)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: False)

    def offline(name, progress=None):
        raise vit.NoInternet(f"cannot load {name}: the Hugging Face Hub cannot be reached, cache {tmp_path}/hub")

    monkeypatch.setattr(vit, "load_pretrained", offline)
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False)
    assert catalog.online is None and "downloads once" in catalog.choices()[-1][0]
    with pytest.raises(ModelUnavailable) as caught:
        catalog.get("pretrained:deit_small_patch16_224.fb_in1k")
    said = str(caught.value)
    assert said.startswith("deit_small_patch16_224.fb_in1k is not on this machine, and this machine has no internet")
    assert "pretrained:" not in said and str(tmp_path) not in said and "HF_HUB" not in said
    assert catalog.online is False and "no internet to download it" in catalog.choices()[-1][0]


def test_a_model_the_hub_does_not_have_is_said_in_a_teachers_words(hub, tmp_path, tiny_checkpoint):  # noqa: F811
    """It said "cannot load vit_small_patch16_224.dino: the Hub at http://127.0.0.1:… has no file
    config.json of timm/…" where, offline, the same pick got a sentence a teacher can act on. The
    stand-in answers 404 for a repository it lacks and for a file a repository lacks."""
    hub.publish("facebook/dinov2-small", "config.json", b"{}")  # preprocessor_config.json is missing
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False)
    for name in ("vit_small_patch16_224.dino", "facebook/dinov2-small"):
        with pytest.raises(ModelUnavailable) as caught:
            catalog.get(f"pretrained:{name}")
        said = str(caught.value)
        assert said.startswith(f"{name} cannot be downloaded: the Hugging Face Hub does not have it"), said
        assert "Pick another model: the ones at the top of the list are on this machine." in said
        for jargon in ("http", "127.0.0.1", hub.url, ".json", "timm/", "pretrained:", "404"):
            assert jargon not in said, jargon
        assert isinstance(caught.value.__cause__, vit.NotOnHub)  # the whole reason goes to the log
    assert catalog.online is not False  # the machine is online: the other downloads stay offered


def test_gated_weights_reach_the_visitor_as_the_sentence_that_says_what_to_do(tmp_path, tiny_checkpoint, monkeypatch):
    # vit.load_pretrained's Gated sentence (tests/test_pretrained.py) is what the picker shows;
    # the machine is online, so the other downloads stay offered.
    said = "cannot load vit_small_patch16_dinov3.lvd1689m: its weights need you to accept Meta's DINOv3 licence on …"

    def gated(name, progress=None):
        raise vit.Gated(said, "https://huggingface.co/timm/vit_small_patch16_dinov3.lvd1689m")

    monkeypatch.setattr(vit, "load_pretrained", gated)
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False)
    with pytest.raises(ModelUnavailable) as caught:
        catalog.get("pretrained:vit_small_patch16_dinov3.lvd1689m")
    assert str(caught.value) == said and catalog.online is not False


def test_hf_hub_offline_is_no_internet_and_keeps_its_kind_through_load_pretrained(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert not vit.can_download()
    with pytest.raises(vit.NoInternet, match="cannot load deit_small_patch16_224.fb_in1k"):
        vit.load_pretrained("deit_small_patch16_224.fb_in1k")


def test_a_restarted_server_lists_a_train_tab_run_by_its_name_and_when_it_was_trained(tmp_path, tiny_checkpoint):
    """A restarted local server listed earlier runs by their internal folders
    ("37584848d5d1d37d-…/vit_cifar_nano_…")."""
    import os
    from datetime import datetime

    from explorer.catalog import APP_RUN_MARKER
    from training import registry

    assert APP_RUN_MARKER == registry.APP_RUN_MARKER  # the one mark of a Train-tab run's folder
    run = tmp_path / "runs" / "37584848d5d1d37d-0123456789ab"
    run.mkdir(parents=True)
    (run / APP_RUN_MARKER).write_text(registry.MARKER_TEXT)
    model = run / "vit_cifar_nano_5epochs_acc41.safetensors"
    model.write_bytes(tiny_checkpoint.read_bytes())
    saved = datetime(2025, 1, 2, 3, 4).timestamp()
    os.utime(model, (saved, saved))
    [(_, label)] = ModelCatalog(tiny_checkpoint, tmp_path / "runs").checkpoints()
    assert label == "vit_cifar_nano_5epochs_acc41, trained 2025-01-02 03:04"


@pytest.mark.parametrize("label", HOSTILE_NAMES)
def test_a_models_description_shows_its_label_as_written(label):
    """An uploaded checkpoint is labelled by its file name, which the visitor chose (issue 56)."""
    model = vit.create_model("vit_cifar_nano")
    described = LoadedModel("k", label, model, vit.ModelMeta(list(CIFAR10_CLASSES), CIFAR10)).describe()
    assert shows_as_written(described, f"{label} — ")
