"""Tiny synthetic data sets, a tiny run config, a host-sync counter, a finder of machine paths
in checkpoint headers and the text a Markdown status shows, for the training tests."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from PIL import Image

from training.config import TrainConfig

CLASSES = ("cat", "dog", "ship")


def class_image(label: int, index: int, size: int) -> torch.Tensor:
    """A (3, size, size) uint8 image a model can learn: the class sets the dominant colour."""
    g = torch.Generator().manual_seed(1000 * label + index)
    image = torch.randint(0, 80, (3, size, size), generator=g, dtype=torch.uint8)
    image[label % 3] += 150
    return image


def write_image_folder(
    root: Path, per_class: int = 12, size: int = 16, classes: tuple[str, ...] = CLASSES, test_per_class: int = 4
) -> Path:
    """root/{train,test}/<class>/NNNN.png, deterministic content."""
    for split, count in (("train", per_class), ("test", test_per_class)):
        for label, name in enumerate(classes):
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                pixels = class_image(label, i + (0 if split == "train" else 500), size).permute(1, 2, 0)  # (H, W, 3)
                Image.fromarray(pixels.numpy()).save(folder / f"{i:04d}.png")
    return root


def tiny_config(data: str, out: Path, **overrides) -> TrainConfig:
    """A run of a few seconds on `write_image_folder` data: 2 epochs of vit_cifar_nano, bitwise reproducible."""
    settings = dict(
        model="vit_cifar_nano",
        data=data,
        out=str(out),
        epochs=2,
        batch_size=8,
        lr=2e-3,
        warmup_epochs=1,
        holdout=6,
        threads=1,
        eval_test=False,
        deterministic=True,
    )
    return TrainConfig(**{**settings, **overrides})


# Ops that read a tensor's value on the host: on a GPU each one waits for the device.
# nonzero is what boolean-mask indexing runs; is_nonzero a truth test of a tensor.
SYNC_OPS = (
    "aten::_local_scalar_dense",
    "aten::item",
    "aten::is_nonzero",
    "aten::nonzero",
    "aten::masked_select",
    "aten::unique",
    "aten::_unique2",
    "aten::equal",
)


def _inside(event, names: tuple[str, ...]) -> bool:
    parent = event.cpu_parent
    while parent is not None:
        if parent.name in names:
            return True
        parent = parent.cpu_parent
    return False


@contextmanager
def count_sync_ops(ignore_inside: tuple[str, ...] = ()) -> Iterator[dict[str, int]]:
    """Count, by name, the host-reading ops run inside the block (nested calls included, as
    torch.profiler records them), except those run inside an op named in `ignore_inside`;
    the dict is filled when the block ends."""
    counts: dict[str, int] = {}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        yield counts
    for event in prof.events():
        if event.name in SYNC_OPS and not _inside(event, ignore_inside):
            counts[event.name] = counts.get(event.name, 0) + 1


def machine_paths(header: dict, *places: Path) -> list[str]:
    """Every string in a checkpoint header (and every word of a recorded command) that is an
    absolute path or names the home folder, the temporary folder or one of `places`."""
    found: list[str] = []
    private = [str(Path.home()), tempfile.gettempdir(), *map(str, places)]

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str):
            words = [w.partition("=")[2] or w for w in value.split()]
            if any(os.path.isabs(w) or w.startswith("~") for w in words) or any(p in value for p in private):
                found.append(value)

    walk(header)
    return found


def shown_text(markdown: str) -> str:
    """What a status written with explorer.texts.markdown_text reads as: its backslash escapes gone."""
    return re.sub(r"\\(.)", r"\1", markdown)
