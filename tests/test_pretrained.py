"""Named pretrained weights through the Hub stand-in (tests/hub_standin.py): every family of the
zoo downloads, loads with its metadata, is read from the cache the second time, and every
failure is one sentence without Python in it."""

from __future__ import annotations

import re
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
import timm
import torch
import torchvision
import transformers
from conftest import randomise_
from hub_standin import hub  # noqa: F401 - the fixture
from tolerance import forward_tolerance

import vit
from vit.pretrained import PRETRAINED, timm_class_names

PYTHON_IN_IT = re.compile(r"Error\b|Exception|Traceback|\w\(|\)\(|File \"")


def assert_one_clear_line(error: BaseException) -> None:
    message = str(error)
    assert "\n" not in message and not PYTHON_IN_IT.search(message), message
    assert error.__cause__ is not None  # the full reason, for the server log


def publish_timm(hub, tmp_path: Path, name: str, **kwargs) -> torch.nn.Module:  # noqa: F811
    """timm's `name` (built with `kwargs`) with random weights at its real shapes, as timm uploads
    it (config.json with pretrained_cfg, model.safetensors), under the Hub repo the zoo names."""
    model = randomise_(timm.create_model(name, pretrained=False, **kwargs)).eval()
    folder = tmp_path / name
    timm.models.save_for_hf(model, str(folder), safe_serialization=True)
    hub.publish_folder(PRETRAINED[name].weights, folder)
    return model


def max_gap(foreign: torch.nn.Module, ours: vit.VisionTransformer, size: int) -> float:
    images = torch.randn(1, 3, size, size)
    with torch.no_grad():
        return (foreign(images) - ours(images)).abs().max().item()


# One name per timm-format family: supervised, DeiT distilled, DINO, DINOv2, DINOv2 with registers.
TIMM_FAMILIES = {
    "vit_tiny_patch16_224.augreg_in21k_ft_in1k": (1000, 224),
    "deit_tiny_distilled_patch16_224.fb_in1k": (1000, 224),
    "vit_small_patch16_224.dino": (0, 224),
    "vit_small_patch14_dinov2.lvd142m": (0, 518),
    "vit_small_patch14_reg4_dinov2.lvd142m": (0, 518),
}


@pytest.mark.parametrize("name", TIMM_FAMILIES)
def test_timm_family_downloads_and_loads_with_its_metadata(hub, tmp_path, name: str) -> None:  # noqa: F811
    classes, trained_at = TIMM_FAMILIES[name]
    foreign = publish_timm(hub, tmp_path, name)
    assert not vit.is_pretrained_cached(name)
    model, meta = vit.load_pretrained(name)
    named = vit.model.CONFIGS[PRETRAINED[name].config]
    assert model.config == replace(named, num_classes=classes, image_size=trained_at)
    assert max_gap(foreign, model, trained_at) <= 1e-4
    assert len(meta.class_names) == classes
    if classes:
        assert meta.class_names[0] == "tench" and meta.class_names[-1] == "toilet tissue"
    assert meta.preprocessing.crop_size == 224  # DINOv2 runs at 224 px here, not 518
    assert vit.is_pretrained_cached(name)
    assert sorted(p.rsplit("/", 1)[-1] for p in hub.downloads()) == sorted(vit.pretrained_files(name))


DINOV3 = "vit_small_patch16_dinov3.lvd1689m"


def test_dinov3_downloads_and_loads_with_registers_and_rotary_positions(hub, tmp_path) -> None:  # noqa: F811
    foreign = publish_timm(hub, tmp_path, DINOV3, global_pool="token")  # upstream DINOv3 reads the CLS token
    model, meta = vit.load_pretrained(DINOV3)
    assert model.config == vit.model.CONFIGS["vit_small_patch16_dinov3"]
    assert model.config.prefix_names == ("cls", "reg1", "reg2", "reg3", "reg4") and model.pos_embed is None
    images = torch.randn(1, 3, 256, 256)
    with torch.no_grad():
        expected = foreign(images)
        tol = forward_tolerance(model.config, expected.abs().max().item())
        torch.testing.assert_close(model(images), expected, atol=tol, rtol=0)
    assert meta.class_names == []  # features, no classifier
    # timm's pretrained_cfg for DINOv3: 256 px, crop_pct 1.0 (no margin), ImageNet mean and std.
    p = meta.preprocessing
    assert (p.resize_size, p.crop_size, p.mean) == (256, 256, (0.485, 0.456, 0.406))
    assert meta.info["licence"] == "Meta's DINOv3 licence"


@pytest.mark.parametrize("token", [None, "hf_teacher"])
def test_gated_weights_say_which_licence_to_accept_and_how(hub, monkeypatch, token: str | None) -> None:  # noqa: F811
    # timm's DINOv3 copies are not gated today (Meta's facebook/dinov3-* are): if they were, the Hub
    # would answer 401 without a token and 403 with one that has not accepted the licence.
    repo = PRETRAINED[DINOV3].weights
    hub.publish(repo, "config.json", b"{}")
    hub.gated.add(repo)
    if token:
        monkeypatch.setenv("HF_TOKEN", token)
    else:
        monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(vit.Gated) as caught:
        vit.load_pretrained(DINOV3)
    page = f"{hub.url.split('://', 1)[1].rstrip('/')}/{repo}"
    assert str(caught.value).startswith(
        f"cannot load {DINOV3}: its weights need you to accept Meta's DINOv3 licence on {page} and a token: "
    )
    assert "HF_TOKEN" in str(caught.value) and caught.value.url.endswith(f"/{repo}")
    assert_one_clear_line(caught.value)
    assert hub.tokens[-1] == (f"Bearer {token}" if token else None)  # 403 with a token, 401 without


def test_timm_preprocessing_comes_from_the_config_json(hub, tmp_path) -> None:  # noqa: F811
    name = "vit_tiny_patch16_224.augreg_in21k_ft_in1k"
    publish_timm(hub, tmp_path, name)
    _, meta = vit.load_pretrained(name)
    assert meta.preprocessing.interpolation == "bicubic" and meta.preprocessing.mean == (0.5, 0.5, 0.5)
    assert (meta.preprocessing.resize_size, meta.preprocessing.crop_size) == (248, 224)  # crop_pct 0.9


def test_timm_class_names_prefer_descriptions_and_never_show_wordnet_ids() -> None:
    synsets = [f"n{i:08d}" for i in range(1000)]
    assert timm_class_names({"num_classes": 1000, "label_names": synsets})[0] == "tench"
    described = {"num_classes": 2, "label_names": ["n1", "n2"], "label_descriptions": {"n1": "cat", "n2": "dog"}}
    assert timm_class_names(described) == ["cat", "dog"]
    assert timm_class_names({"num_classes": 2, "label_names": ["cat", "dog"]}) == ["cat", "dog"]
    assert timm_class_names({"num_classes": 0}) == []
    with pytest.raises(vit.PretrainedUnavailable, match="3 classes and their config.json names none"):
        timm_class_names({"num_classes": 3})


def test_a_second_load_reads_the_cache_without_a_request(hub, tmp_path) -> None:  # noqa: F811
    name = "deit_tiny_distilled_patch16_224.fb_in1k"
    publish_timm(hub, tmp_path, name)
    first, _ = vit.load_pretrained(name)
    before = len(hub.requests)
    assert before > 0
    again, _ = vit.load_pretrained(name)
    assert len(hub.requests) == before
    assert torch.equal(first.head_dist.weight, again.head_dist.weight)


def test_visitors_asking_at_once_share_one_download(hub, tmp_path) -> None:  # noqa: F811
    # huggingface_hub's file lock: the second caller waits and then finds the finished file.
    name = "vit_tiny_patch16_224.augreg_in21k_ft_in1k"
    publish_timm(hub, tmp_path, name)
    with ThreadPoolExecutor(4) as pool:
        models = list(pool.map(lambda _: vit.load_pretrained(name)[0], range(4)))
    assert sorted(hub.downloads()) == sorted(f"/timm/{name}/resolve/main/{f}" for f in vit.pretrained_files(name))
    assert all(torch.equal(m.head.weight, models[0].head.weight) for m in models)


def test_progress_reports_increasing_bytes_up_to_the_total(hub, tmp_path) -> None:  # noqa: F811
    name = "vit_tiny_patch16_224.augreg_in21k_ft_in1k"
    publish_timm(hub, tmp_path, name)
    calls: list[tuple[int, int | None]] = []
    vit.load_pretrained(name, progress=lambda done, total: calls.append((done, total)))
    total = sum(len(hub.files[(PRETRAINED[name].weights, f)]) for f in vit.pretrained_files(name))
    assert len(calls) > 2 and {t for _, t in calls} == {total}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] == 0 and done[-1] == total
    calls.clear()
    vit.load_pretrained(name, progress=lambda done, total: calls.append((done, total)))
    assert calls == []  # cached: nothing to report


def test_a_truncated_download_is_refused_and_does_not_poison_the_cache(hub, tmp_path) -> None:  # noqa: F811
    name = "vit_tiny_patch16_224.augreg_in21k_ft_in1k"
    foreign = publish_timm(hub, tmp_path, name)
    hub.short.add((PRETRAINED[name].weights, "model.safetensors"))
    with pytest.raises(vit.PretrainedUnavailable, match="did not complete") as caught:
        vit.load_pretrained(name)
    assert_one_clear_line(caught.value)
    assert not vit.is_pretrained_cached(name)
    assert not list((tmp_path / "hf").rglob("*.incomplete"))  # huggingface_hub 2.4 deletes the partial file
    hub.short.clear()  # the network is good again
    model, _ = vit.load_pretrained(name)
    assert max_gap(foreign, model, 224) <= 1e-4


def test_the_zoo_loads_without_timm_or_transformers_installed(hub, tmp_path, monkeypatch) -> None:  # noqa: F811
    # A Space installs requirements.txt only: neither library may be imported on the way.
    publish_timm(hub, tmp_path, "vit_small_patch16_224.dino")
    config = transformers.Dinov2Config(image_size=518, patch_size=14, **SMALL)
    publish_transformers(hub, tmp_path, "facebook/dinov2-small", transformers.Dinov2Model(config), dinov2_processor())
    for library in ("timm", "transformers"):
        monkeypatch.setitem(sys.modules, library, None)  # `import timm` now raises ImportError
    for name in ("vit_small_patch16_224.dino", "facebook/dinov2-small"):
        model, _ = vit.load_pretrained(name)
        assert model.config.num_classes == 0


NOT_ON_HUB = "does not have these weights (they may have been moved, renamed or removed there)"


def test_a_missing_repository_is_one_clear_sentence(hub) -> None:  # noqa: F811
    with pytest.raises(vit.NotOnHub, match=r"^cannot load vit_small_patch16_224.dino: the Hugging Face Hub") as caught:
        vit.load_pretrained("vit_small_patch16_224.dino")
    assert_one_clear_line(caught.value)
    assert NOT_ON_HUB in str(caught.value) and hub.url not in str(caught.value)  # no address: a person's words
    assert "timm/vit_small_patch16_224.dino" in str(caught.value.__cause__)  # the log gets what was missing


def test_a_missing_file_is_one_clear_sentence(hub) -> None:  # noqa: F811
    hub.publish("facebook/dinov2-small", "config.json", b"{}")
    with pytest.raises(vit.NotOnHub) as caught:
        vit.load_pretrained("facebook/dinov2-small")
    assert str(caught.value) == f"cannot load facebook/dinov2-small: the Hugging Face Hub {NOT_ON_HUB}"
    assert "preprocessor_config.json" in str(caught.value.__cause__)


def test_an_unreachable_hub_is_one_clear_sentence_at_once(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(vit.PretrainedUnavailable, match=r"Hub \(127.0.0.1:9\) cannot be reached") as caught:
        vit.load_pretrained("facebook/dinov2-small")
    assert_one_clear_line(caught.value)


def test_unusable_downloaded_files_are_one_clear_sentence(hub) -> None:  # noqa: F811
    name = "vit_small_patch16_224.dino"
    hub.publish(PRETRAINED[name].weights, "config.json", b"{}")
    hub.publish(PRETRAINED[name].weights, "model.safetensors", b"not safetensors")
    with pytest.raises(vit.PretrainedUnavailable, match="not usable weights") as caught:
        vit.load_pretrained(name)
    assert_one_clear_line(caught.value)


# transformers-format repos. The loader takes the architecture from config.json, so small
# models of each family stand in for the real ones (DINOv2 keeps its 518 px / 37x37 grid).
SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}


def publish_transformers(hub, tmp_path: Path, repo: str, model, processor) -> None:  # noqa: F811
    folder = tmp_path / repo.replace("/", "--")
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    hub.publish_folder(repo, folder)


def test_google_vit_loads_with_class_names_and_preprocessing(hub, tmp_path) -> None:  # noqa: F811
    labels = {i: f"label {i}" for i in range(7)}
    config = transformers.ViTConfig(image_size=32, patch_size=8, id2label=labels, **SMALL)
    foreign = randomise_(transformers.ViTForImageClassification(config)).eval()
    publish_transformers(hub, tmp_path, "google/vit-base-patch16-224", foreign, transformers.ViTImageProcessor())
    model, meta = vit.load_pretrained("google/vit-base-patch16-224")
    assert meta.class_names == [f"label {i}" for i in range(7)]
    assert (meta.preprocessing.resize_size, meta.preprocessing.crop_size) == (224, 224)
    assert meta.preprocessing.mean == (0.5, 0.5, 0.5) and meta.preprocessing.interpolation == "bilinear"
    images = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        assert (foreign(pixel_values=images).logits - model(images)).abs().max().item() <= 1e-4


def dinov2_processor() -> transformers.BitImageProcessor:
    # facebook/dinov2-*'s preprocessor_config.json: shorter side 256, centre crop 224, bicubic.
    return transformers.BitImageProcessor(
        size={"shortest_edge": 256}, resample=3, image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225]
    )


@pytest.mark.parametrize(
    ("repo", "family", "prefix"),
    [
        ("facebook/dinov2-small", "Dinov2", 1),
        ("facebook/dinov2-with-registers-small", "Dinov2WithRegisters", 5),
    ],
)
def test_dinov2_repos_load_headless_at_224_px(hub, tmp_path, repo: str, family: str, prefix: int) -> None:  # noqa: F811
    config = getattr(transformers, f"{family}Config")(image_size=518, patch_size=14, **SMALL)
    foreign = randomise_(getattr(transformers, f"{family}Model")(config)).eval()
    publish_transformers(hub, tmp_path, repo, foreign, dinov2_processor())
    model, meta = vit.load_pretrained(repo)
    assert meta.class_names == [] and model.config.num_classes == 0
    assert (meta.preprocessing.resize_size, meta.preprocessing.crop_size) == (256, 224)
    assert meta.preprocessing.interpolation == "bicubic" and meta.preprocessing.mean == (0.485, 0.456, 0.406)
    assert model.config.grid == (37, 37) and model.prefix_tokens == prefix
    images = torch.randn(1, 3, 518, 518)
    with torch.no_grad():
        assert (foreign(pixel_values=images).pooler_output - model(images)).abs().max().item() <= 1e-4
    assert vit.pretrained_repo(repo) == repo
    assert vit.pretrained_files(repo) == ["config.json", "preprocessor_config.json", "model.safetensors"]


def test_torchvision_entries_name_the_file_their_weights_url_downloads() -> None:
    for name, spec in PRETRAINED.items():
        if spec.library == "torchvision":
            url = torchvision.models.get_weight(spec.weights).url
            assert vit.pretrained_files(name) == [url.rsplit("/", 1)[-1]], name


def test_the_zoo_names_the_transformers_repos_and_their_files() -> None:
    names = vit.list_pretrained()
    for repo in ("google/vit-base-patch16-224", "facebook/dinov2-small", "facebook/dinov2-with-registers-small"):
        assert repo in names and vit.pretrained_repo(repo) == repo
    assert vit.pretrained_repo("vit_small_patch16_224.dino") == "timm/vit_small_patch16_224.dino"
    with pytest.raises(ValueError, match="download.pytorch.org, not from the Hugging Face Hub"):
        vit.pretrained_repo("vit_b_16.tv_in1k")
    with pytest.raises(ValueError, match="unknown pretrained weights"):
        vit.pretrained_files("nope")


def test_zoo_entries_map_to_our_configurations_of_the_same_architecture() -> None:
    # The architecture timm builds for each hub name (on the meta device: shapes, no memory)
    # is the named configuration the zoo entry promises, with class count and size from timm.
    for name, spec in PRETRAINED.items():
        if spec.library != "timm":
            continue
        assert spec.weights == f"timm/{name}"
        upstream = {"global_pool": "token"} if "dinov3" in name else {}  # DINOv3 reads its CLS token
        with torch.device("meta"):
            foreign = timm.create_model(name, pretrained=False, **upstream)
        theirs = vit.weights.config_from_timm(foreign)
        ours = vit.model.CONFIGS[spec.config]
        assert theirs == replace(ours, num_classes=theirs.num_classes, image_size=theirs.image_size), name


def test_the_zoo_lists_dino_deit_and_dinov2() -> None:
    names = vit.list_pretrained()
    for expected in (
        "vit_small_patch16_224.dino",
        "vit_base_patch16_224.dino",
        "vit_small_patch8_224.dino",
        *(f"deit_{s}_patch16_224.fb_in1k" for s in ("tiny", "small", "base")),
        *(f"deit_{s}_distilled_patch16_224.fb_in1k" for s in ("tiny", "small", "base")),
        *(f"vit_{s}_patch14{r}_dinov2.lvd142m" for s in ("small", "large") for r in ("", "_reg4")),
        *(f"vit_{s}_patch16_dinov3.lvd1689m" for s in ("small", "base", "large")),
    ):
        assert expected in names
    assert PRETRAINED["vit_large_patch14_reg4_dinov2.lvd142m"].input_size == 224


@dataclass
class Offline:
    home: Path  # empty TORCH_HOME / HF_HOME live below this
    attempts: list = field(default_factory=list)  # every connection the code tried to open


@pytest.fixture
def offline(monkeypatch, tmp_path) -> Offline:
    """No network, empty caches: exactly what a fresh offline machine sees."""
    state = Offline(tmp_path)

    def refuse(*args, **kwargs):
        state.attempts.append(args)
        raise OSError("network is unreachable (disabled by the test)")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    return state


@pytest.mark.parametrize(
    "name",
    [
        "vit_b_16.tv_in1k",
        "vit_tiny_patch16_224.augreg_in21k_ft_in1k",
        "deit_tiny_distilled_patch16_224.fb_in1k",
        "vit_small_patch14_reg4_dinov2.lvd142m",
        "facebook/dinov2-small",
    ],
)
def test_offline_pretrained_download_fails_at_once_with_one_sentence(offline, name: str) -> None:
    # One reachability probe, no retries (huggingface_hub alone would retry for ~45 s).
    with pytest.raises(vit.PretrainedUnavailable, match=rf"cannot load {re.escape(name)}: .* cannot be reached") as e:
        vit.load_pretrained(name)
    assert_one_clear_line(e.value)
    assert str(offline.home) not in str(e.value)  # no folder of the server: visitors read it
    assert len(offline.attempts) == 1
    assert not vit.is_pretrained_cached(name)


def test_offline_mode_names_no_cache_folder(offline, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(vit.PretrainedUnavailable, match="not in the Hugging Face cache and HF_HUB_OFFLINE") as e:
        vit.load_pretrained("facebook/dinov2-small")
    assert str(offline.home) not in str(e.value) and offline.attempts == []


def test_unknown_pretrained_name() -> None:
    with pytest.raises(ValueError, match="unknown pretrained weights"):
        vit.load_pretrained("vit_b_16.nonsense")


def legacy_names(state_dict: dict) -> dict:
    """torchvision's older MLP key names, as in its downloadable .pth files."""
    return {k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."): v for k, v in state_dict.items()}


def test_pretrained_torchvision_from_cache_brings_its_metadata(offline) -> None:
    # Put a file where torch.hub caches downloads (with the legacy names real downloads use),
    # so the whole load_pretrained path runs without a network.
    weights = torchvision.models.ViT_B_32_Weights.IMAGENET1K_V1
    cache = offline.home / "torch" / "hub" / "checkpoints"
    cache.mkdir(parents=True)
    foreign = randomise_(torchvision.models.vit_b_32()).eval()
    torch.save(legacy_names(foreign.state_dict()), cache / weights.url.rsplit("/", 1)[-1])
    assert vit.is_pretrained_cached("vit_b_32.tv_in1k")
    model, meta = vit.load_pretrained("vit_b_32.tv_in1k")
    assert offline.attempts == []
    assert max_gap(foreign, model, 224) <= 1e-4
    assert meta.class_names == weights.meta["categories"] and len(meta.class_names) == 1000
    assert (meta.preprocessing.resize_size, meta.preprocessing.crop_size) == (256, 224)
    assert meta.preprocessing.mean == (0.485, 0.456, 0.406) and meta.preprocessing.interpolation == "bilinear"


def fill_hub_cache(offline: Offline, name: str, foreign: torch.nn.Module) -> None:
    """Lay out a Hugging Face cache entry for timm's `name` as a finished download leaves it."""
    snapshot = offline.home / "hf" / "hub" / f"models--timm--{name}" / "snapshots" / ("0" * 40)
    timm.models.save_for_hf(foreign, str(snapshot), safe_serialization=True)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)


def test_pretrained_dinov2_with_registers_offline_from_the_cache(offline) -> None:
    name = "vit_small_patch14_reg4_dinov2.lvd142m"
    foreign = randomise_(timm.create_model(name, pretrained=False)).eval()  # 518 px, no classifier
    fill_hub_cache(offline, name, foreign)
    model, meta = vit.load_pretrained(name)
    assert offline.attempts == []  # cached: not even a probe
    assert model.config == vit.model.CONFIGS["vit_small_patch14_reg4_dinov2"]
    assert torch.equal(model.reg_token, foreign.reg_token) and torch.equal(model.pos_embed, foreign.pos_embed)
    assert meta.class_names == []  # no classifier: the model returns features
    assert (meta.preprocessing.resize_size, meta.preprocessing.crop_size) == (224, 224)  # not 518
    with torch.no_grad():
        features, maps = model(torch.randn(1, 3, 224, 224), need_weights=True)
    assert features.shape == (1, 384) and maps.grid == (16, 16) and maps.prefix_tokens == 5
