"""The project's checkpoint format: round trip, atomic writes, and hostile or broken files."""

import json
import os

import pytest
import torch
from safetensors.torch import save_file

import vit
from vit.checkpoint import HEADER_KEY, read_tensors, write_tensors
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES

CLASSES = list(CIFAR10_CLASSES)


@pytest.fixture
def saved(tmp_path):
    model = vit.create_model("vit_cifar_nano").eval()
    path = tmp_path / "model.safetensors"
    vit.save_checkpoint(model, path, class_names=CLASSES, preprocessing=CIFAR10, epochs=3, note="hi")
    return model, path


def test_round_trip_keeps_weights_config_and_metadata(saved) -> None:
    model, path = saved
    loaded, meta = vit.load_checkpoint(path)
    assert loaded.config == model.config and not loaded.training
    images = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        # The same weights through the same code: bit-identical, so any difference is a weight lost in the file.
        torch.testing.assert_close(loaded(images), model(images), atol=0, rtol=0)
    assert meta.class_names == CLASSES and meta.preprocessing == CIFAR10
    assert meta.info == {"epochs": 3, "note": "hi"} and meta.extra == {}


def test_extra_tensors_ride_along(tmp_path) -> None:
    model = vit.create_model("vit_cifar_showcase")
    path = tmp_path / "m.safetensors"
    vit.save_checkpoint(model, path, extra={"optimizer/step": torch.tensor([7])})
    _, meta = vit.load_checkpoint(path)
    assert meta.extra["optimizer/step"].item() == 7
    assert meta.class_names == [str(i) for i in range(10)]


def test_atomic_write_leaves_the_old_file_when_interrupted(saved, monkeypatch) -> None:
    model, path = saved
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr("vit.checkpoint.save_file", crash)
    with pytest.raises(KeyboardInterrupt, match="killed mid-write"):
        vit.save_checkpoint(vit.create_model("vit_cifar_nano"), path, class_names=CLASSES)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["model.safetensors"]  # no temp file left


def test_truncated_file_is_a_clear_error(saved) -> None:
    _, path = saved
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(vit.CheckpointError, match="not a readable safetensors file"):
        vit.load_checkpoint(path)


def test_empty_and_missing_files(tmp_path) -> None:
    (tmp_path / "empty.safetensors").write_bytes(b"")
    with pytest.raises(vit.CheckpointError, match="not a readable safetensors file"):
        vit.load_checkpoint(tmp_path / "empty.safetensors")
    with pytest.raises(vit.CheckpointError, match="no such file"):
        vit.load_checkpoint(tmp_path / "nope.safetensors")


def test_plain_safetensors_without_our_header_is_refused(tmp_path) -> None:
    save_file({"w": torch.zeros(2)}, tmp_path / "other.safetensors")
    with pytest.raises(vit.CheckpointError, match="not a ViT explorer checkpoint"):
        vit.load_checkpoint(tmp_path / "other.safetensors")


def rewrite_header(path, change) -> None:
    tensors, header = read_tensors(path)
    change(header, tensors)
    write_tensors(path, tensors, header)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h: h["config"].update(flash_heads=2), r"unknown checkpoint header config field\(s\) \['flash_heads'\]"),
        (lambda h: h["config"].update(heads="4"), "config field 'heads' = '4' is not allowed: expected int"),
        (lambda h: h["config"].update(heads=3), "field 'heads' = 3 is not allowed: must divide dim 128"),
        (lambda h: h.update(format="other/2"), "field 'format' = 'other/2' is not allowed: expected 'vit-explorer/1'"),
        (lambda h: h.update(class_names=CLASSES[:9]), "field 'class_names' .* expected a list of 10 strings"),
        (lambda h: h.update(class_names=list(range(10))), "'class_names' = .* expected a list of str"),
        (lambda h: h.update(info=["epochs", 3]), "field 'info' = .* expected a JSON object"),
        (lambda h: h["preprocessing"].update(std=[0.2, 0.0, 0.2]), "'std' = .* every channel's std must be positive"),
        (lambda h: h["preprocessing"].update(mean=[0.5, 0.5]), "'mean' = .* expected 3 finite numbers"),
        (lambda h: h.pop("config"), "invalid checkpoint header: .*config"),
    ],
)
def test_bad_header_fields_are_named_with_what_is_allowed(saved, change, message) -> None:
    _, path = saved
    rewrite_header(path, lambda h, t: change(h))
    with pytest.raises(vit.CheckpointError, match="bad checkpoint header: .*" + message):
        vit.load_checkpoint(path)


def test_saving_refuses_class_names_that_do_not_fit(tmp_path) -> None:
    model = vit.create_model("vit_cifar_nano")
    with pytest.raises(ValueError, match="'class_names' = .* expected a list of 10 strings, one per class"):
        vit.save_checkpoint(model, tmp_path / "m.safetensors", class_names=CLASSES[:3])


def test_missing_key_and_wrong_shape_are_named(saved) -> None:
    _, path = saved
    rewrite_header(path, lambda h, t: t.pop("blocks.3.mlp.fc1.bias"))
    with pytest.raises(vit.CheckpointError, match=r"missing keys \['blocks.3.mlp.fc1.bias'\]"):
        vit.load_checkpoint(path)
    rewrite_header(path, lambda h, t: t.update({"blocks.3.mlp.fc1.bias": torch.zeros(5)}))
    with pytest.raises(vit.CheckpointError, match=r"blocks.3.mlp.fc1.bias: file \(5,\) vs model \(256,\)"):
        vit.load_checkpoint(path)


def test_header_that_is_not_json(tmp_path) -> None:
    save_file({"w": torch.zeros(1)}, tmp_path / "x.safetensors", metadata={HEADER_KEY: "{not json"})
    with pytest.raises(vit.CheckpointError, match="not valid JSON"):
        vit.load_checkpoint(tmp_path / "x.safetensors")


class RunsACommand:
    """A pickle payload: unpickling it would call os.system."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_and_never_runs(tmp_path) -> None:
    marker = tmp_path / "pwned"
    evil = tmp_path / "weights.pth"
    torch.save({"conv_proj.weight": RunsACommand(marker)}, evil)  # a real torch zip file, hostile inside
    with pytest.raises(vit.CheckpointError, match="refused to load"):
        vit.from_torchvision(evil)
    with pytest.raises(vit.CheckpointError, match="not a readable safetensors file"):
        vit.load_checkpoint(evil)
    assert not marker.exists()


def test_state_dict_file_wrappers_and_formats(tmp_path) -> None:
    sd = vit.create_model("vit_cifar_showcase").state_dict()
    torch.save({"state_dict": sd, "epoch": 3}, tmp_path / "wrapped.pt")
    assert vit.load_state_dict_file(tmp_path / "wrapped.pt").keys() == sd.keys()
    save_file(sd, tmp_path / "plain.safetensors")
    assert vit.load_state_dict_file(tmp_path / "plain.safetensors").keys() == sd.keys()
    (tmp_path / "notes.pth").write_text(json.dumps({"a": 1}))
    with pytest.raises(vit.CheckpointError, match="refused to load .*not a weights file"):
        vit.load_state_dict_file(tmp_path / "notes.pth")
    data = (tmp_path / "wrapped.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(vit.CheckpointError, match="not a readable PyTorch weights file"):
        vit.load_state_dict_file(tmp_path / "cut.pt")
    torch.save({"lr": 0.1}, tmp_path / "hparams.pt")
    with pytest.raises(vit.CheckpointError, match="does not hold a state dict of tensors"):
        vit.load_state_dict_file(tmp_path / "hparams.pt")
