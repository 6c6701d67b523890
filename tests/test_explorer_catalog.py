"""The model catalogue behind the picker: fallbacks, what may be opened, and memory bounds."""

import pytest
import torch

import vit
from explorer.catalog import BUNDLED, PRETRAINED, LoadedModel, ModelCatalog, ModelUnavailable, ServingLimits
from vit.preprocessing import CIFAR10, Preprocessing


def test_missing_bundled_model_falls_back_to_clearly_labelled_untrained_weights(tmp_path):
    catalog = ModelCatalog(tmp_path / "absent.safetensors", tmp_path)
    loaded = catalog.get(BUNDLED)
    assert loaded.untrained and "untrained weights" in loaded.describe()
    assert catalog.choices()[0] == ("CIFAR-10 nano (untrained weights)", BUNDLED)
    again = ModelCatalog(tmp_path / "absent.safetensors", tmp_path).get(BUNDLED)
    assert all((a == b).all() for a, b in zip(loaded.model.parameters(), again.model.parameters(), strict=True))


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


def test_loaded_models_are_bounded_and_the_bundled_one_stays(tmp_path, tiny_checkpoint):
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, capacity=2)
    keys = []
    for i in range(3):
        path = tmp_path / f"m{i}.safetensors"
        vit.save_checkpoint(vit.create_model("vit_cifar_nano", depth=1), path, preprocessing=CIFAR10)
        keys.append(catalog.register(path, "alice"))
    catalog.get(BUNDLED)
    for key in keys:
        catalog.get(key)
    assert list(catalog._loaded) == [BUNDLED, keys[2]]


def test_unknown_keys_are_refused_without_being_remembered_or_echoed_whole(tmp_path, tiny_checkpoint):
    catalog = ModelCatalog(tiny_checkpoint, tmp_path)
    catalog.get(BUNDLED)
    before = (len(catalog._loading), len(catalog._loaded), len(catalog._checkpoints))
    for i in range(300):  # each distinct key used to leave one lock behind, forever
        with pytest.raises(ModelUnavailable, match="pick one from the list"):
            catalog.get(f"pretrained:nonexistent-{i}")
        with pytest.raises(ModelUnavailable, match="pick one from the list"):
            catalog.get(f"checkpoint:{i}")
    assert (len(catalog._loading), len(catalog._loaded), len(catalog._checkpoints)) == before
    with pytest.raises(ModelUnavailable) as refused:
        catalog.get("x" * 2**20)  # a 1 MB key
    assert len(str(refused.value)) < 100 and "xxxx" in str(refused.value)


def test_a_key_that_loaded_leaves_no_lock_behind(tmp_path, tiny_checkpoint):
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, scan_runs=False)
    key = catalog.register(tiny_checkpoint, "alice")
    catalog.get(key)
    assert catalog._loading == {}


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
        with torch.device("meta"):  # ViT-L's weights are never allocated
            model = vit.create_model(spec.config)
        crop = spec.input_size or model.config.image_size
        loaded = LoadedModel(name, name, model, vit.ModelMeta([], Preprocessing(round(crop / 0.875), crop)))
        ServingLimits().check(loaded)
