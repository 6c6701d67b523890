"""vit.checkpoint's checks before it builds: limits, shapes from the header, hash, finiteness, file mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import flip_byte
from safetensors.torch import save_file

import vit
from vit.checkpoint import (
    FORMAT,
    HEADER_KEY,
    LoadLimits,
    is_checkpoint,
    load_state_dict_file,
    parameter_shapes,
    read_tensors,
)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    model = vit.create_model("vit_cifar_nano")
    path = tmp_path / "model.safetensors"
    vit.save_checkpoint(model, path, class_names=[str(i) for i in range(10)])
    return path


def hostile_file(path: Path, **config) -> Path:
    """A tiny safetensors file whose header describes a big model but holds one small tensor."""
    header = {"format": FORMAT, "config": config, "class_names": [str(i) for i in range(config["num_classes"])]}
    save_file({"head.bias": torch.zeros(config["num_classes"])}, path, metadata={HEADER_KEY: json.dumps(header)})
    return path


BIG = dict(image_size=32, patch_size=4, num_classes=10, dim=1024, depth=16, heads=16, mlp_dim=4096)


def test_a_small_file_describing_a_big_model_is_refused_before_anything_is_allocated(tmp_path: Path) -> None:
    path = hostile_file(tmp_path / "hostile.safetensors", **BIG)
    assert path.stat().st_size < 1024
    with pytest.raises(vit.CheckpointError, match="weights do not fit the model: missing keys"):
        vit.load_checkpoint(path)
    # Peak memory, measured in a fresh process: the refused load costs nothing like the
    # ~800 M parameters (3.2 GB) the header describes.
    script = (
        "import resource, sys, vit\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n    vit.load_checkpoint(sys.argv[1])\nexcept vit.CheckpointError:\n    pass\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n"
    )
    run = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True)
    assert int(run.stdout) < 200, f"peak memory grew by {run.stdout.strip()} MiB"


def test_a_config_over_the_parameter_limit_is_refused_by_count(tmp_path: Path) -> None:
    path = hostile_file(tmp_path / "deep.safetensors", **{**BIG, "depth": 400})
    with pytest.raises(vit.CheckpointError, match=r"would have [\d,]+ parameters; this loader accepts at most"):
        vit.load_checkpoint(path)
    with pytest.raises(vit.CheckpointError, match="at most 100,000"):
        parameter_shapes(vit.create_model("vit_cifar_nano").config, LoadLimits(max_parameters=100_000))


def test_parameter_shapes_equal_the_real_models() -> None:
    model = vit.create_model("vit_cifar_tiny")
    assert parameter_shapes(model.config) == {k: tuple(v.shape) for k, v in model.state_dict().items()}


def test_a_flipped_byte_inside_the_tensors_is_refused(saved: Path) -> None:
    flip_byte(saved)
    with pytest.raises(vit.CheckpointError, match="is corrupt: its tensors do not match the hash"):
        vit.load_checkpoint(saved)


def test_a_checkpoint_is_never_read_as_foreign_weights(saved: Path) -> None:
    # Foreign weights carry no hash: a checkpoint read that way would skip its check.
    for damaged in (False, True):
        if damaged:
            flip_byte(saved)
        with pytest.raises(vit.CheckpointError, match="is a ViT explorer checkpoint, not foreign weights"):
            load_state_dict_file(saved)
        with pytest.raises(vit.CheckpointError, match="is a ViT explorer checkpoint"):
            vit.from_timm(str(saved))


def test_one_damaged_header_byte_cannot_make_a_checkpoint_look_foreign(saved: Path, tmp_path: Path) -> None:
    tensors, header = read_tensors(saved)
    text = json.dumps(header)
    key_hit = tmp_path / "key.safetensors"  # our key's name damaged, the format in its value intact
    save_file(tensors, key_hit, metadata={"vit_explores": text})
    value_hit = tmp_path / "value.safetensors"  # our key intact, the format's name damaged
    save_file(tensors, value_hit, metadata={HEADER_KEY: text.replace("vit-explorer/", "vit-exqlorer/")})
    assert is_checkpoint(saved) and is_checkpoint(key_hit) and is_checkpoint(value_hit)
    foreign = tmp_path / "timm.safetensors"
    save_file(tensors, foreign, metadata={"format": "pt"})  # what timm and the Hub write
    torch.save(tensors, tmp_path / "weights.pth")
    (tmp_path / "noise.bin").write_bytes(os.urandom(256))
    assert not any(is_checkpoint(tmp_path / n) for n in ("timm.safetensors", "weights.pth", "noise.bin", "missing"))
    assert set(load_state_dict_file(foreign)) == set(tensors)


def test_a_file_without_a_hash_is_refused(saved: Path) -> None:
    tensors, header = read_tensors(saved)
    del header["tensor_sha256"]
    save_file(tensors, saved, metadata={HEADER_KEY: json.dumps(header)})
    with pytest.raises(vit.CheckpointError, match="records no tensor hash"):
        vit.load_checkpoint(saved)


def test_nan_weights_are_refused_even_with_a_matching_hash(tmp_path: Path) -> None:
    model = vit.create_model("vit_cifar_nano")
    with torch.no_grad():
        model.head.weight[0, 0] = float("nan")
    path = tmp_path / "nan.safetensors"
    vit.save_checkpoint(model, path)
    with pytest.raises(vit.CheckpointError, match=r"NaN or infinite values: \['head.weight'\]"):
        vit.load_checkpoint(path)


def test_checkpoints_are_written_private(saved: Path) -> None:
    assert (saved.stat().st_mode & 0o777) == 0o600


def test_messages_name_the_file_not_the_server_folder(saved: Path) -> None:
    flip_byte(saved)
    with pytest.raises(vit.CheckpointError) as info:
        vit.load_checkpoint(saved)
    assert str(saved.parent) not in str(info.value)


def test_foreign_files_over_the_size_limit_or_not_weights_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "weights.pth"
    torch.save({"w": torch.ones(1000)}, path)
    with pytest.raises(vit.CheckpointError, match="files above 0 MiB are refused"):
        load_state_dict_file(path, LoadLimits(max_file_bytes=100))
    with pytest.raises(vit.CheckpointError, match="at most 10$"):
        load_state_dict_file(path, LoadLimits(max_parameters=10))
    text = tmp_path / "notes.pth"
    text.write_text("these are not weights")
    with pytest.raises(vit.CheckpointError, match="notes.pth is not a readable PyTorch weights file"):
        load_state_dict_file(text)
    torch.save({"w": torch.tensor([1.0, float("inf")])}, path)
    with pytest.raises(vit.CheckpointError, match="NaN or infinite"):
        load_state_dict_file(path)
    os.chmod(path, 0o600)
