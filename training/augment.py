"""Batched data augmentation as tensor ops on whatever device the batch lives on.

Two halves. `draw_augmentation` makes every random choice of a batch up front (per-image
crop offsets, flips, RandAugment ops and strengths, erasing boxes; MixUp or CutMix and its
weight per batch) as tensors on the device, from an explicit torch.Generator, so a run is
reproducible and a resumed run replays the same draws. `apply_augmentation` is then a pure
function of the images and those draws: every op is computed for the whole batch and each
image keeps its own result with `torch.where`. Nothing has a data-dependent shape, nothing
is read back to the host (no `.item()`, no boolean-mask indexing, no truth test of a
tensor), so on a GPU the step never waits for the device, and `torch.compile(fullgraph=True)`
takes `apply_augmentation` as one graph (generators cannot enter a compiled graph, which is
why the draws are a separate, eager half).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import Tensor

from vit.config import config_from_dict

from .checks import check_whole, is_real


@dataclass(frozen=True)
class AugmentConfig:
    crop_padding: int = 4  # random crop after zero padding by this many pixels (0: off)
    flip: bool = True  # random horizontal flip
    # Heavy defaults for long GPU runs (docs/training.md, "Recipe"); short runs (few epochs,
    # small models) learn faster with these off.
    randaug_ops: int = 2  # RandAugment-style: colour/geometry ops applied per image (0: off)
    randaug_magnitude: float = 0.5  # strength of those ops, 0..1
    mixup_alpha: float = 0.8  # Beta(alpha, alpha) MixUp (0: off)
    cutmix_alpha: float = 1.0  # Beta(alpha, alpha) CutMix (0: off); with MixUp, one of the two per batch
    erase_prob: float = 0.25  # random erasing probability per image

    def __post_init__(self) -> None:
        for name in ("crop_padding", "randaug_ops"):
            check_whole(name, getattr(self, name), 0)
        for name in ("mixup_alpha", "cutmix_alpha"):
            if not (is_real(getattr(self, name)) and getattr(self, name) >= 0):
                raise ValueError(f"{name} must be a finite number of at least 0, got {getattr(self, name)!r}")
        for name in ("randaug_magnitude", "erase_prob"):
            if not (is_real(getattr(self, name)) and 0 <= getattr(self, name) <= 1):
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if not isinstance(self.flip, bool):
            raise ValueError(f"flip must be True or False, got {self.flip!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> AugmentConfig:
        """An augmentation config read from a checkpoint or a file (vit.config.config_from_dict's rule)."""
        return config_from_dict(cls, d, "augmentation config")

    @property
    def mixes(self) -> bool:
        return self.mixup_alpha > 0 or self.cutmix_alpha > 0


# RandAugment-style ops, by index; index len(RANDAUG_OPS) is "no op".
RANDAUG_OPS = ("brightness", "contrast", "saturation", "solarize", "posterize", "translate_x", "translate_y")


@dataclass(frozen=True)
class AugmentDraw:
    """Every random choice of one batch, as tensors on the batch's device (None: op off)."""

    crop: Tensor | None  # (N, 2) int64: the window's (dy, dx) in the zero-padded image
    flip: Tensor | None  # (N,) bool
    randaug_op: Tensor | None  # (rounds, N) int64: index into RANDAUG_OPS, len(RANDAUG_OPS) for none
    randaug_strength: Tensor | None  # (rounds, N) float in [-magnitude, magnitude]
    erase_box: Tensor | None  # (N, 4) float: y0, y1, x0, x1 (an empty box for images not erased)
    erase_noise: Tensor | None  # (N, 3, H, W) float: what fills the box
    cutmix: Tensor | None  # () bool: CutMix (True) or MixUp (False) for the batch
    mix_lam: Tensor | None  # () float: the Beta(alpha, alpha) weight of the batch itself
    cut_center: Tensor | None  # (2,) int64: the CutMix box centre (cy, cx)


def _uniform(shape: tuple[int, ...], gen: torch.Generator, device: torch.device) -> Tensor:
    return torch.rand(shape, generator=gen, device=device)


def _draw_erase(n: int, h: int, w: int, prob: float, gen: torch.Generator, device: torch.device) -> Tensor:
    """(N, 4) boxes y0, y1, x0, x1 of 2-33 % of the area, aspect 0.3-3.3; empty where not erased."""
    area = (0.02 + 0.31 * _uniform((n,), gen, device)) * h * w
    aspect = torch.exp((2 * _uniform((n,), gen, device) - 1) * 1.2)  # log-uniform in [0.3, 3.3]
    eh = (area * aspect).sqrt().clamp(1, h) * (_uniform((n,), gen, device) < prob)  # height 0: not erased
    ew = (area / aspect).sqrt().clamp(1, w)
    y0 = _uniform((n,), gen, device) * (h - eh)
    x0 = _uniform((n,), gen, device) * (w - ew)
    return torch.stack([y0, y0 + eh, x0, x0 + ew], dim=1)


def _draw_mix(config: AugmentConfig, h: int, w: int, gen: torch.Generator, device: torch.device) -> tuple:
    """(cutmix?, lam, CutMix centre) for one batch, all on the device."""
    if config.mixup_alpha > 0 and config.cutmix_alpha > 0:
        cutmix = _uniform((), gen, device) < 0.5
    else:
        cutmix = torch.full((), config.cutmix_alpha > 0, device=device)  # a fill: no copy from the host
    alpha = torch.where(cutmix, config.cutmix_alpha, config.mixup_alpha).float()
    # Beta(a, a) from two Gammas, drawn with our generator (torch.distributions takes none).
    g = torch._standard_gamma(alpha.repeat(2), generator=gen)
    center = torch.stack(
        [torch.randint(0, h, (), generator=gen, device=device), torch.randint(0, w, (), generator=gen, device=device)]
    )
    return cutmix, g[0] / g.sum(), center


def draw_augmentation(
    config: AugmentConfig, shape: torch.Size, device: torch.device, gen: torch.Generator
) -> AugmentDraw:
    """All random choices for a batch of `shape` (N, C, H, W), in a fixed order from `gen`."""
    n, c, h, w = shape
    crop = flip = op = strength = box = noise = cutmix = lam = center = None
    if config.crop_padding > 0:
        crop = torch.randint(0, 2 * config.crop_padding + 1, (n, 2), generator=gen, device=device)
    if config.flip:
        flip = _uniform((n,), gen, device) < 0.5
    if config.randaug_ops > 0:
        op = torch.randint(0, len(RANDAUG_OPS) + 1, (config.randaug_ops, n), generator=gen, device=device)
        strength = (2 * _uniform((config.randaug_ops, n), gen, device) - 1) * config.randaug_magnitude
    if config.erase_prob > 0:
        box = _draw_erase(n, h, w, config.erase_prob, gen, device)
        noise = torch.randn((n, c, h, w), generator=gen, device=device)
    if config.mixes:
        cutmix, lam, center = _draw_mix(config, h, w, gen, device)
    return AugmentDraw(crop, flip, op, strength, box, noise, cutmix, lam, center)


# -- the ops: pure functions of the images and the draws --------------------------------------


def shift(images: Tensor, dy: Tensor, dx: Tensor) -> Tensor:
    """out[i, :, r, c] = images[i, :, r + dy[i], c + dx[i]], zero outside the image. (N, C, H, W)."""
    n, c, h, w = images.shape
    rows = torch.arange(h, device=images.device) + dy[:, None]  # (N, H)
    cols = torch.arange(w, device=images.device) + dx[:, None]  # (N, W)
    inside = ((rows >= 0) & (rows < h))[:, None, :, None] & ((cols >= 0) & (cols < w))[:, None, None, :]
    batch = torch.arange(n, device=images.device)[:, None, None, None]
    chans = torch.arange(c, device=images.device)[None, :, None, None]
    picked = images[batch, chans, rows.clamp(0, h - 1)[:, None, :, None], cols.clamp(0, w - 1)[:, None, None, :]]
    return torch.where(inside, picked, torch.zeros((), dtype=images.dtype, device=images.device))


def random_crop(images: Tensor, padding: int, offsets: Tensor) -> Tensor:
    """The H x W window at `offsets` (N, 2) = (dy, dx) of each image zero-padded by `padding`."""
    return shift(images, offsets[:, 0] - padding, offsets[:, 1] - padding)


def random_flip(images: Tensor, flip: Tensor) -> Tensor:
    return torch.where(flip[:, None, None, None], images.flip(-1), images)


def _blend(a: Tensor, b: Tensor, factor: Tensor) -> Tensor:
    """(1 - f) b + f a, per image: f > 1 extrapolates away from b, as PIL's enhancers do."""
    return (b + factor[:, None, None, None] * (a - b)).clamp(0, 1)


def _is(op: Tensor, *names: str) -> Tensor:
    """(N, 1, 1, 1) bool: image i's op is one of `names`."""
    hit = torch.zeros_like(op, dtype=torch.bool)
    for name in names:
        hit = hit | (op == RANDAUG_OPS.index(name))
    return hit[:, None, None, None]


def rand_augment_round(x: Tensor, op: Tensor, m: Tensor) -> Tensor:
    """One RandAugment round on float images (N, 3, H, W) in [0, 1]: image i gets op[i] at signed
    strength m[i]. Brightness, contrast and saturation are one blend toward a per-image base
    (black, the image's mean, its grey version); translation moves by up to a third of the image."""
    gray = (0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2])[:, None].expand_as(x)  # (N, 3, H, W)
    mean = x.mean(dim=(1, 2, 3), keepdim=True).expand_as(x)
    base = torch.where(_is(op, "brightness"), 0.0, torch.where(_is(op, "contrast"), mean, gray))
    out = torch.where(_is(op, "brightness", "contrast", "saturation"), _blend(x, base, 1 + m), x)
    threshold = 1 - m.abs()[:, None, None, None]
    out = torch.where(_is(op, "solarize"), torch.where(x >= threshold, 1 - x, x), out)
    levels = 2 ** (8 - (4 * m.abs()).round())[:, None, None, None]  # 8 bits down to 4 bits
    out = torch.where(_is(op, "posterize"), torch.floor(x * (levels - 1) + 0.5) / (levels - 1), out)
    h, w = x.shape[-2:]
    dx = torch.where(op == RANDAUG_OPS.index("translate_x"), (m * w / 3).round().long(), 0)
    dy = torch.where(op == RANDAUG_OPS.index("translate_y"), (m * h / 3).round().long(), 0)
    return torch.where(_is(op, "translate_x", "translate_y"), shift(x, dy, dx), out)


def random_erase(x: Tensor, box: Tensor, noise: Tensor) -> Tensor:
    """Replace the rectangle box[i] = (y0, y1, x0, x1) of image i with noise[i]."""
    h, w = x.shape[-2:]
    ys = torch.arange(h, device=x.device)[None, :, None]  # (1, H, 1)
    xs = torch.arange(w, device=x.device)[None, None, :]  # (1, 1, W)
    y0, y1, x0, x1 = (box[:, k, None, None] for k in range(4))  # each (N, 1, 1)
    inside = (ys >= y0) & (ys < y1) & (xs >= x0) & (xs < x1)  # (N, H, W)
    return torch.where(inside[:, None], noise, x)


def mix(x: Tensor, targets: Tensor, cutmix: Tensor, lam: Tensor, center: Tensor) -> tuple[Tensor, Tensor]:
    """MixUp or CutMix (chosen by the () bool `cutmix`) of the batch with itself reversed.
    targets: (N, classes) probabilities; the label weight of CutMix is the area actually kept."""
    h, w = x.shape[-2:]
    other = x.flip(0)
    half_h = (h * (1 - lam).sqrt()).floor().long() // 2
    half_w = (w * (1 - lam).sqrt()).floor().long() // 2
    ys = torch.arange(h, device=x.device)[:, None]  # (H, 1)
    xs = torch.arange(w, device=x.device)[None, :]  # (1, W)
    box = (
        (ys >= center[0] - half_h) & (ys < center[0] + half_h) & (xs >= center[1] - half_w) & (xs < center[1] + half_w)
    )
    kept = 1 - box.sum() / (h * w)
    # Per pixel, the share taken from the reversed batch: the box (CutMix) or 1 - lam everywhere
    # (MixUp). One lerp does either; lerp is exact at weights 0 and 1, so CutMix copies pixels.
    mixed = torch.lerp(x, other, torch.where(cutmix, box.to(x.dtype), 1 - lam))
    weight = torch.where(cutmix, kept, lam)
    return mixed, weight * targets + (1 - weight) * targets.flip(0)


def apply_augmentation(
    images: Tensor,
    labels: Tensor,
    num_classes: int,
    config: AugmentConfig,
    draw: AugmentDraw,
    normalize: Callable[[Tensor], Tensor],
) -> tuple[Tensor, Tensor]:
    """uint8 images (N, 3, H, W) + labels (N,) -> normalised float images and (N, classes) target
    probabilities (one-hot unless MixUp/CutMix mixed them). `normalize` maps floats in [0, 1] to
    the model's input (the model's `Preprocessing.normalize`, see device_data.Normalizer)."""
    if config.crop_padding > 0:
        images = random_crop(images, config.crop_padding, draw.crop)
    if config.flip:
        images = random_flip(images, draw.flip)
    x = images.float() / 255
    for r in range(config.randaug_ops):
        x = rand_augment_round(x, draw.randaug_op[r], draw.randaug_strength[r])
    x = normalize(x)
    if config.erase_prob > 0:
        x = random_erase(x, draw.erase_box, draw.erase_noise)
    # One-hot by comparison: F.one_hot reads the labels' min and max back to the host to check them.
    targets = (labels[:, None] == torch.arange(num_classes, device=labels.device)).float()
    if config.mixes:
        x, targets = mix(x, targets, draw.cutmix, draw.mix_lam, draw.cut_center)
    return x, targets


def augment_batch(
    images: Tensor,
    labels: Tensor,
    num_classes: int,
    config: AugmentConfig,
    normalize: Callable[[Tensor], Tensor],
    gen: torch.Generator,
) -> tuple[Tensor, Tensor]:
    """Draw a batch's augmentation from `gen` and apply it (see `apply_augmentation`)."""
    draw = draw_augmentation(config, images.shape, images.device, gen)
    return apply_augmentation(images, labels, num_classes, config, draw, normalize)
