"""How a model expects its input images: a small, JSON-serialisable record that builds the
torchvision transform. Each model carries its own (wrong preprocessing = silent accuracy loss)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import torch

from .config import config_from_dict, require

if TYPE_CHECKING:
    from torchvision.transforms import v2

# torchvision's InterpolationMode values. Spelled out so that importing `vit` does not import
# torchvision, which pulls in torch._dynamo and adds seconds to every start-up (the app's
# cold start most of all); torchvision is imported when a transform is first built.
INTERPOLATIONS = ("nearest", "nearest-exact", "bilinear", "bicubic", "box", "hamming", "lanczos")

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
# The one list of CIFAR-10's class names, in the data set's label order.
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


@dataclass(frozen=True)
class Preprocessing:
    resize_size: int  # the shorter side is resized to this many pixels...
    crop_size: int  # ...then the centre crop_size x crop_size square is kept
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    interpolation: str = "bilinear"

    def __post_init__(self) -> None:
        what = "preprocessing"
        allowed = f"expected one of {INTERPOLATIONS}"
        require(self.interpolation in INTERPOLATIONS, what, "interpolation", self.interpolation, allowed)
        for name in ("resize_size", "crop_size"):
            require(getattr(self, name) >= 1, what, name, getattr(self, name), "expected a positive integer")
        require(
            self.crop_size <= self.resize_size,
            what,
            "crop_size",
            self.crop_size,
            f"must not exceed resize_size {self.resize_size}",
        )
        for name in ("mean", "std"):
            values = getattr(self, name)
            require(
                len(values) == 3 and all(math.isfinite(v) for v in values),
                what,
                name,
                values,
                "expected 3 finite numbers (R, G, B)",
            )
        require(all(s > 0 for s in self.std), what, "std", self.std, "every channel's std must be positive")

    def geometry(self) -> v2.Compose:
        """uint8 image -> uint8 image: resize the shorter side, then centre-crop."""
        from torchvision.transforms import InterpolationMode, v2

        resize = v2.Resize(self.resize_size, interpolation=InterpolationMode(self.interpolation), antialias=True)
        return v2.Compose([resize, v2.CenterCrop(self.crop_size)])

    def transform(self) -> v2.Compose:
        """PIL image or uint8 tensor -> normalised float tensor (3, crop, crop)."""
        from torchvision.transforms import v2

        return v2.Compose(
            [v2.ToImage(), self.geometry(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(self.mean, self.std)]
        )

    def normalize(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 images, or floats already in [0, 1], shaped (..., 3, H, W) -> (x - mean) / std per
        channel. The one normalisation step of the project: the app, training and evaluation call it
        (`transform()` ends in torchvision's `Normalize`, which computes the same)."""
        x = images.float() / 255 if images.dtype == torch.uint8 else images
        mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device)[:, None, None]  # (3, 1, 1)
        std = torch.tensor(self.std, dtype=x.dtype, device=x.device)[:, None, None]
        return (x - mean) / std

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Preprocessing:
        """Build from JSON with `config_from_dict`'s rule (a ValueError naming the field)."""
        return config_from_dict(cls, d, "preprocessing")


CIFAR10 = Preprocessing(resize_size=32, crop_size=32, mean=CIFAR10_MEAN, std=CIFAR10_STD)
