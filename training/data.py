"""Image classification data as whole uint8 tensors: an ImageFolder-layout folder or
torchvision's CIFAR-10.

A CIFAR-size training set is 150 MB as uint8, so it is decoded once, cached, and then
held in memory (or on the GPU) as one (N, 3, H, W) tensor; augmentation then runs as
batched tensor ops (see augment.py) instead of a per-image CPU pipeline.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import PIL
import torch
from PIL import Image, UnidentifiedImageError
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")
CIFAR10_NAME = "cifar10"  # the `--data` value that selects torchvision's CIFAR-10
# In words, not as a path pattern: the app cuts anything path-like in a message to its last part.
IMAGE_FOLDER_LAYOUT = "a folder holding train/<class>/ and test/<class>/ image folders (the ImageFolder layout)"


class DataError(ValueError):
    """The data cannot be used; the message says why and what to do."""


@dataclass
class ImageSet:
    """A labelled image set held as whole tensors."""

    images: Tensor  # (N, 3, H, W) uint8
    labels: Tensor  # (N,) int64, indices into class_names
    class_names: list[str]

    def __post_init__(self) -> None:
        if self.images.dtype != torch.uint8 or self.images.ndim != 4 or self.images.shape[1] != 3:
            raise DataError(
                f"images must be one (N, 3, H, W) uint8 tensor, got {self.images.dtype} {tuple(self.images.shape)}"
            )
        if len(self.images) != len(self.labels):
            raise DataError(f"one label per image: {len(self.images)} images but {len(self.labels)} labels")

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def image_size(self) -> tuple[int, int]:
        return self.images.shape[-2], self.images.shape[-1]

    def subset(self, index: Tensor) -> ImageSet:
        return ImageSet(self.images[index], self.labels[index], self.class_names)

    def to(self, device: torch.device | str) -> ImageSet:
        return ImageSet(self.images.to(device), self.labels.to(device), self.class_names)


def default_cache_dir() -> Path:
    """Where decoded data sets are cached: outside any repository, overridable by env var."""
    return Path(os.environ.get("VIT_EXPLORER_CACHE", Path.home() / ".cache" / "vit-explorer")) / "datasets"


def list_image_folder(split_dir: Path) -> tuple[list[str], list[tuple[Path, int]]]:
    """(class names, [(file, label)]) of `split_dir/<class>/<image>`, checking the layout.

    Class names are the sub-folder names, sorted, as torchvision's ImageFolder does."""
    if not split_dir.is_dir():
        raise DataError(f"{split_dir}: no such folder (expected {IMAGE_FOLDER_LAYOUT})")
    class_names = sorted(d.name for d in split_dir.iterdir() if d.is_dir() and not d.name.startswith("."))
    files = [  # file names sorted as strings: sorting Path objects took seconds for CIFAR-10's 50,000
        (split_dir / name / file, label)
        for label, name in enumerate(class_names)
        for file in sorted(os.listdir(split_dir / name))
        if os.path.splitext(file)[1].lower() in IMAGE_SUFFIXES
    ]
    if not files:
        raise DataError(
            f"{split_dir}: no images found (expected <class>/<image> files with suffix {', '.join(IMAGE_SUFFIXES)})"
        )
    if len(class_names) < 2:
        raise DataError(f"{split_dir}: found {len(class_names)} class folder(s) {class_names}; need at least 2")
    empty = sorted(set(class_names) - {class_names[label] for _, label in files})
    if empty:
        raise DataError(f"{split_dir}: class folder(s) without images: {empty}")
    return class_names, files


def _decode(path: Path) -> Tensor:
    try:
        with Image.open(path) as image:
            pixels = np.asarray(image.convert("RGB"))  # (H, W, 3) uint8
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise DataError(f"{path}: unreadable image ({e})") from e
    return torch.from_numpy(pixels.copy()).permute(2, 0, 1)  # (3, H, W)


def _cache_key(split_dir: Path, files: list[tuple[Path, int]]) -> str:
    """Changes whenever the folder, a file name, its label, size or mtime, or the decoder changes
    (JPEG decoders may differ in the last bit)."""
    h = hashlib.sha256(f"{split_dir.resolve()}\0PIL {PIL.__version__}\n".encode())
    for path, label in files:
        stat = path.stat()
        h.update(f"{path.relative_to(split_dir)}\0{label}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def load_image_folder(split_dir: str | os.PathLike, cache_dir: Path | None = None) -> ImageSet:
    """Decode every image of `split_dir/<class>/*` into one uint8 tensor, cached as safetensors.

    All images must have the same size (the set becomes one tensor)."""
    split_dir = Path(split_dir)
    class_names, files = list_image_folder(split_dir)
    cache = (cache_dir or default_cache_dir()) / f"{_cache_key(split_dir, files)}.safetensors"
    labels = torch.tensor([label for _, label in files], dtype=torch.int64)
    if cache.is_file():
        try:
            images = load_file(cache)["images"]
            if len(images) == len(labels):
                return ImageSet(images, labels, class_names)
        except (SafetensorError, OSError, KeyError):
            pass  # a damaged cache is rebuilt below
    decoded = [_decode(path) for path, _ in files]
    sizes = {tuple(img.shape[-2:]) for img in decoded}
    if len(sizes) > 1:
        raise DataError(f"{split_dir}: images have different sizes {sorted(sizes)[:5]}; resize them to one size first")
    images = torch.stack(decoded)  # (N, 3, H, W)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    save_file({"images": images}, tmp)
    os.replace(tmp, cache)  # atomic: concurrent runs never read a half-written cache
    return ImageSet(images, labels, class_names)


def load_cifar10(root: str | os.PathLike, train: bool, download: bool) -> ImageSet:
    """torchvision's CIFAR-10 (python version) under `root`, downloading it if asked.

    torchvision unpickles the batch files, but only after checking each file's md5
    against the official release, so no untrusted pickle is ever loaded."""
    from torchvision.datasets import CIFAR10

    try:
        ds = CIFAR10(str(root), train=train, download=download)
    except (OSError, RuntimeError) as e:  # URLError is an OSError; "not found or corrupted" a RuntimeError
        if download and isinstance(e, OSError):  # one sentence for a person; the cause stays chained
            raise DataError(
                "CIFAR-10 cannot be downloaded here: this machine could not reach the internet. Use "
                f"{IMAGE_FOLDER_LAYOUT} instead, or train on a machine that is online."
            ) from e
        raise DataError(
            f"CIFAR-10 is not under {root}, or is damaged ({e}). Use {IMAGE_FOLDER_LAYOUT} instead, or download "
            "it on a machine that is online."
        ) from e
    images = torch.from_numpy(ds.data).permute(0, 3, 1, 2).contiguous()  # (N, 32, 32, 3) -> (N, 3, 32, 32)
    return ImageSet(images, torch.tensor(ds.targets, dtype=torch.int64), list(ds.classes))


def cifar10_downloaded(cache_dir: Path | None = None) -> bool:
    """Whether torchvision's CIFAR-10 is already in the cache (so training on it needs no network)."""
    return ((cache_dir or default_cache_dir()) / "torchvision" / "cifar-10-batches-py").is_dir()


def check_source(data: str) -> None:
    """Fail fast on a data argument that cannot work, before any model is built."""
    if data == CIFAR10_NAME:
        return
    root = Path(data)
    if not root.is_dir():
        # Said on the Train tab too, where no one "passes" anything: the words fit a form and the CLI.
        raise DataError(f"{root}: no such folder; the data is a folder with train/<class>/ images, or CIFAR-10")
    list_image_folder(root / "train")


def load_split(data: str, split: str, *, download: bool = True, cache_dir: Path | None = None) -> ImageSet:
    """The 'train' or 'test' split of `data`: 'cifar10' (torchvision) or an ImageFolder root."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if data == CIFAR10_NAME:
        return load_cifar10((cache_dir or default_cache_dir()) / "torchvision", split == "train", download)
    return load_image_folder(Path(data) / split, cache_dir)


def holdout_split(data: ImageSet, holdout: int, seed: int = 0) -> tuple[ImageSet, ImageSet]:
    """(train, validation): a fixed random `holdout` images of a training set set aside
    for choosing hyper-parameters, so the test split is only used once at the end."""
    if not 0 < holdout < len(data):
        raise DataError(f"cannot hold out {holdout} of {len(data)} training images for validation")
    perm = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))
    return data.subset(perm[holdout:].sort().values), data.subset(perm[:holdout].sort().values)
