"""Checkpoints of real model shapes with random weights, for benchmarks on a machine with no
network: latency and memory depend on the shapes, not on the weights.

    python -m bench.checkpoints vit_small_patch16_224 /tmp/vit_s16.safetensors
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

import vit
from vit.preprocessing import IMAGENET_MEAN, IMAGENET_STD, Preprocessing

# ImageNet's usual evaluation transform (resize 256, centre crop 224), as DeiT and timm's ViTs use.
IMAGENET = Preprocessing(resize_size=256, crop_size=224, mean=IMAGENET_MEAN, std=IMAGENET_STD, interpolation="bicubic")


def random_checkpoint(config: str, path: str | Path, num_classes: int = 1000, seed: int = 0) -> Path:
    """Write a checkpoint of `vit.create_model(config)` with `num_classes` classes ("class 1", ...),
    random weights and ImageNet preprocessing; returns its path."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = vit.create_model(config, num_classes=num_classes)
    names = [f"class {i + 1}" for i in range(num_classes)]
    vit.save_checkpoint(model, path, class_names=names, preprocessing=IMAGENET, source=f"random weights, {config}")
    return Path(path)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="a vit.create_model name, e.g. vit_small_patch16_224 or vit_base_patch16_224")
    p.add_argument("path")
    p.add_argument("--classes", type=int, default=1000)
    args = p.parse_args(argv)
    print(random_checkpoint(args.config, args.path, args.classes))


if __name__ == "__main__":
    main()
