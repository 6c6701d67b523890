"""The model catalogue behind the picker: fallbacks, what may be opened, and memory bounds."""

import pytest

import vit
from explorer.catalog import BUNDLED, ModelCatalog, ModelUnavailable
from vit.preprocessing import CIFAR10


def test_missing_bundled_model_falls_back_to_clearly_labelled_untrained_weights(tmp_path):
    catalog = ModelCatalog(tmp_path / "absent.safetensors", tmp_path)
    loaded = catalog.get(BUNDLED)
    assert loaded.untrained and "untrained weights" in loaded.describe()
    assert catalog.choices()[0] == ("CIFAR-10 nano (untrained weights)", BUNDLED)
    again = ModelCatalog(tmp_path / "absent.safetensors", tmp_path).get(BUNDLED)
    assert all((a == b).all() for a, b in zip(loaded.model.parameters(), again.model.parameters(), strict=True))


def test_only_runs_and_uploaded_checkpoints_can_be_opened(tmp_path, tiny_checkpoint):
    runs = tmp_path / "runs"
    (runs / "job").mkdir(parents=True)
    inside = runs / "job" / "model.safetensors"
    inside.write_bytes(tiny_checkpoint.read_bytes())
    catalog = ModelCatalog(tiny_checkpoint, runs)
    assert f"checkpoint:{inside}" in [key for _, key in catalog.choices()]
    assert catalog.get(f"checkpoint:{inside}").meta.class_names[0] == "airplane"
    with pytest.raises(ModelUnavailable, match="unknown checkpoint"):
        catalog.get(f"checkpoint:{tiny_checkpoint}")  # a real checkpoint, but neither in runs nor uploaded
    key = catalog.register_upload(tiny_checkpoint)
    assert catalog.get(key).model.config.depth == 6
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\0" * 10)
    with pytest.raises(ModelUnavailable, match="cannot use this checkpoint"):
        catalog.register_upload(broken)
    assert f"checkpoint:{broken.resolve()}" not in [key for _, key in catalog.choices()]


def test_loaded_models_are_bounded_and_the_bundled_one_stays(tmp_path, tiny_checkpoint):
    catalog = ModelCatalog(tiny_checkpoint, tmp_path, capacity=2)
    keys = []
    for i in range(3):
        path = tmp_path / f"m{i}.safetensors"
        vit.save_checkpoint(vit.create_model("vit_cifar_nano", depth=1), path, preprocessing=CIFAR10)
        keys.append(f"checkpoint:{path}")
    catalog.get(BUNDLED)
    for key in keys:
        catalog.get(key)
    assert list(catalog._loaded) == [BUNDLED, keys[2]]
