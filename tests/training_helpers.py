"""Tiny synthetic data sets for the training tests (imported by tests/test_training_*.py)."""

from __future__ import annotations

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
