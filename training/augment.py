"""Batched data augmentation as tensor ops on whatever device the batch lives on.

Every random draw comes from an explicit torch.Generator on the batch's device, so a run
is reproducible and the same code runs on CPU (tests) and GPU (where the whole uint8 data
set lives on the device and the CPU never touches an image).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


@dataclass(frozen=True)
class AugmentConfig:
    crop_padding: int = 4  # random crop after zero padding by this many pixels (0: off)
    flip: bool = True  # random horizontal flip
    # The defaults follow Lee et al. 2021 ("Vision Transformer for Small-Size Datasets"), a recipe for long GPU runs;
    # short runs (few epochs, small models) learn faster with these off.
    randaug_ops: int = 2  # RandAugment-style: colour/geometry ops applied per image (0: off)
    randaug_magnitude: float = 0.5  # strength of those ops, 0..1
    mixup_alpha: float = 0.8  # Beta(alpha, alpha) MixUp (0: off)
    cutmix_alpha: float = 1.0  # Beta(alpha, alpha) CutMix (0: off); with MixUp, one of the two per batch
    erase_prob: float = 0.25  # random erasing probability per image

    def to_dict(self) -> dict:
        return asdict(self)


def _uniform(n: int, gen: torch.Generator, device: torch.device) -> Tensor:
    return torch.rand(n, generator=gen, device=device)


def random_crop(images: Tensor, padding: int, gen: torch.Generator) -> Tensor:
    """Zero-pad by `padding` and cut a random H x W window per image: (N, C, H, W) -> same."""
    n, c, h, w = images.shape
    padded = F.pad(images, (padding, padding, padding, padding))  # (N, C, H+2p, W+2p)
    dy = torch.randint(0, 2 * padding + 1, (n,), generator=gen, device=images.device)
    dx = torch.randint(0, 2 * padding + 1, (n,), generator=gen, device=images.device)
    rows = (dy[:, None] + torch.arange(h, device=images.device))[:, None, :, None]  # (N, 1, H, 1)
    cols = (dx[:, None] + torch.arange(w, device=images.device))[:, None, None, :]  # (N, 1, 1, W)
    batch = torch.arange(n, device=images.device)[:, None, None, None]
    chans = torch.arange(c, device=images.device)[None, :, None, None]
    return padded[batch, chans, rows, cols]  # (N, C, H, W)


def random_flip(images: Tensor, gen: torch.Generator) -> Tensor:
    flip = _uniform(len(images), gen, images.device) < 0.5
    return torch.where(flip[:, None, None, None], images.flip(-1), images)


def _blend(a: Tensor, b: Tensor, factor: Tensor) -> Tensor:
    """(1 - f) b + f a, per image: f > 1 extrapolates away from b, as PIL's enhancers do."""
    return (b + factor[:, None, None, None] * (a - b)).clamp(0, 1)


def _op_brightness(x: Tensor, m: Tensor) -> Tensor:
    return _blend(x, torch.zeros_like(x), 1 + m)


def _op_contrast(x: Tensor, m: Tensor) -> Tensor:
    mean = x.mean(dim=(1, 2, 3), keepdim=True).expand_as(x)
    return _blend(x, mean, 1 + m)


def _op_saturation(x: Tensor, m: Tensor) -> Tensor:
    gray = (0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2])[:, None].expand_as(x)  # (N, 3, H, W)
    return _blend(x, gray, 1 + m)


def _op_solarize(x: Tensor, m: Tensor) -> Tensor:
    threshold = 1 - m.abs()[:, None, None, None]
    return torch.where(x >= threshold, 1 - x, x)


def _op_posterize(x: Tensor, m: Tensor) -> Tensor:
    levels = 2 ** (8 - (4 * m.abs()).round())[:, None, None, None]  # 8 bits down to 4 bits
    return torch.floor(x * (levels - 1) + 0.5) / (levels - 1)


def _translate(x: Tensor, m: Tensor, axis: int) -> Tensor:
    """Shift by up to a third of the image (signed by m) along x (axis 0) or y (axis 1)."""
    size = x.shape[-1] if axis == 0 else x.shape[-2]
    theta = torch.eye(2, 3, device=x.device, dtype=x.dtype).repeat(len(x), 1, 1)  # (N, 2, 3) identity
    theta[:, axis, 2] = 2 * (m * size / 3).round() / size  # grid units: 2 spans the whole image
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="nearest", padding_mode="zeros", align_corners=False)


def _op_translate_x(x: Tensor, m: Tensor) -> Tensor:
    return _translate(x, m, 0)


def _op_translate_y(x: Tensor, m: Tensor) -> Tensor:
    return _translate(x, m, 1)


RANDAUG_OPS = (
    _op_brightness,
    _op_contrast,
    _op_saturation,
    _op_solarize,
    _op_posterize,
    _op_translate_x,
    _op_translate_y,
)


def rand_augment(x: Tensor, ops: int, magnitude: float, gen: torch.Generator) -> Tensor:
    """Apply `ops` rounds; in each, every image gets one op (or none) chosen at random, at a
    random signed strength up to `magnitude`. x: float (N, 3, H, W) in [0, 1]."""
    n = len(x)
    for _ in range(ops):
        choice = torch.randint(0, len(RANDAUG_OPS) + 1, (n,), generator=gen, device=x.device)  # last: identity
        strength = (2 * _uniform(n, gen, x.device) - 1) * magnitude  # in [-m, m]
        out = x.clone()
        for k, op in enumerate(RANDAUG_OPS):
            picked = choice == k
            if picked.any():
                out[picked] = op(x[picked], strength[picked])
        x = out
    return x


def random_erase(x: Tensor, prob: float, gen: torch.Generator) -> Tensor:
    """Replace a random rectangle (2-33% of the area, aspect 0.3-3.3) with noise, per image."""
    n, _, h, w = x.shape
    area = (0.02 + 0.31 * _uniform(n, gen, x.device)) * h * w
    aspect = torch.exp((2 * _uniform(n, gen, x.device) - 1) * 1.2)  # log-uniform in [0.3, 3.3]
    eh = (area * aspect).sqrt().clamp(1, h)
    ew = (area / aspect).sqrt().clamp(1, w)
    y0 = _uniform(n, gen, x.device) * (h - eh)
    x0 = _uniform(n, gen, x.device) * (w - ew)
    ys = torch.arange(h, device=x.device)[None, :, None]  # (1, H, 1)
    xs = torch.arange(w, device=x.device)[None, None, :]  # (1, 1, W)
    inside = (ys >= y0[:, None, None]) & (ys < (y0 + eh)[:, None, None])
    inside = inside & (xs >= x0[:, None, None]) & (xs < (x0 + ew)[:, None, None])  # (N, H, W)
    inside = inside & (_uniform(n, gen, x.device) < prob)[:, None, None]
    noise = torch.randn(x.shape, generator=gen, device=x.device, dtype=x.dtype)
    return torch.where(inside[:, None], noise, x)


def mix(x: Tensor, targets: Tensor, config: AugmentConfig, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """MixUp or CutMix of the batch with itself reversed. targets: (N, classes) soft labels."""
    use_cutmix = config.cutmix_alpha > 0 and (config.mixup_alpha <= 0 or _uniform(1, gen, x.device).item() < 0.5)
    alpha = config.cutmix_alpha if use_cutmix else config.mixup_alpha
    # Beta(a, a) from two Gammas, drawn with our generator (torch.distributions has none).
    g = torch._standard_gamma(torch.full((2,), alpha, device=x.device), generator=gen)
    lam = (g[0] / g.sum()).item()
    if use_cutmix:
        _, _, h, w = x.shape
        ch, cw = int(h * (1 - lam) ** 0.5), int(w * (1 - lam) ** 0.5)
        cy = int(torch.randint(0, h, (1,), generator=gen, device=x.device))
        cx = int(torch.randint(0, w, (1,), generator=gen, device=x.device))
        y0, y1 = max(cy - ch // 2, 0), min(cy + ch // 2, h)
        x0, x1 = max(cx - cw // 2, 0), min(cx + cw // 2, w)
        x = x.clone()
        x[:, :, y0:y1, x0:x1] = x.flip(0)[:, :, y0:y1, x0:x1]
        lam = 1 - (y1 - y0) * (x1 - x0) / (h * w)  # the label weight is the area actually kept
    else:
        x = lam * x + (1 - lam) * x.flip(0)
    return x, lam * targets + (1 - lam) * targets.flip(0)


def augment_batch(
    images: Tensor,
    labels: Tensor,
    num_classes: int,
    config: AugmentConfig,
    mean: Tensor,
    std: Tensor,
    gen: torch.Generator,
) -> tuple[Tensor, Tensor]:
    """uint8 images (N, 3, H, W) + labels (N,) -> normalised float images and (N, classes)
    target probabilities (one-hot unless MixUp/CutMix mixed them)."""
    if config.crop_padding > 0:
        images = random_crop(images, config.crop_padding, gen)
    if config.flip:
        images = random_flip(images, gen)
    x = images.float() / 255
    if config.randaug_ops > 0:
        x = rand_augment(x, config.randaug_ops, config.randaug_magnitude, gen)
    x = standardize(x, mean, std)
    if config.erase_prob > 0:
        x = random_erase(x, config.erase_prob, gen)
    targets = F.one_hot(labels, num_classes).float()
    if config.mixup_alpha > 0 or config.cutmix_alpha > 0:
        x, targets = mix(x, targets, config, gen)
    return x, targets


def standardize(x: Tensor, mean: Tensor, std: Tensor) -> Tensor:
    """float (N, 3, H, W) in [0, 1] -> zero mean, unit variance per channel."""
    return (x - mean[:, None, None]) / std[:, None, None]


def normalize(images: Tensor, mean: Tensor, std: Tensor) -> Tensor:
    """uint8 (N, 3, H, W) -> normalised float: the evaluation-time transform."""
    return standardize(images.float() / 255, mean, std)
