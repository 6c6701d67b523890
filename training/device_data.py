"""The data on the training device: normalisation, resizing, each epoch's shard of the
training set, and the clean (unaugmented) batches evaluation feeds the model.

Randomness: at the start of every epoch the shuffle, the augmentation generator and the
global torch RNG are seeded from (seed, epoch, rank) (`epoch_seed`), so a run resumed at an
epoch boundary replays exactly what the uninterrupted run would have done.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import vit

from .data import ImageSet


class Normalizer:
    """The model's `Preprocessing.normalize`, held on one device as x * scale + shift.

    `Preprocessing.normalize` builds its mean and std with `torch.tensor` on every call: on a
    GPU that is a blocking host-to-device copy, a synchronisation inside every training step.
    Here the step is measured once, on 0 and 1, and kept on the device as an affine map."""

    def __init__(self, preprocessing: vit.Preprocessing, device: torch.device | str):
        zero_and_one = torch.stack([torch.zeros(3, 1, 1), torch.ones(3, 1, 1)]).to(device)  # (2, 3, 1, 1)
        at_zero, at_one = preprocessing.normalize(zero_and_one)  # -mean/std and (1 - mean)/std
        self.preprocessing = preprocessing
        self.shift = at_zero  # (3, 1, 1)
        self.scale = at_one - at_zero  # (3, 1, 1): 1/std

    def __call__(self, images: Tensor) -> Tensor:
        """uint8 images, or floats in [0, 1], (..., 3, H, W) -> the standardised float batch."""
        x = images.float() / 255 if images.dtype == torch.uint8 else images
        return x * self.scale + self.shift


def channel_stats(data: ImageSet) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and (unbiased) std of a data set in [0, 1]: how models trained from
    scratch standardise. Exact, from each channel's histogram of its 256 byte values: no float
    copy of the data set (a float copy of CIFAR-10 took ~8 s of the Train tab's start)."""
    levels = torch.arange(256, dtype=torch.float64, device=data.images.device) / 255
    mean, std = [], []
    for c in range(data.images.shape[1]):
        counts = torch.bincount(data.images[:, c].reshape(-1), minlength=256).double()  # (256,)
        n = counts.sum()
        m = (counts * levels).sum() / n
        mean.append(round(float(m), 4))
        std.append(round(float(((counts * (levels - m) ** 2).sum() / (n - 1)).sqrt()), 4))
    return tuple(mean), tuple(std)


def epoch_seed(seed: int, epoch: int, rank: int) -> int:
    """A distinct seed per (run seed, epoch, DDP rank)."""
    return (seed * 1_000_003 + epoch) * 1_009 + rank


def epoch_shard(size: int, seed: int, epoch: int, rank: int, world: int, device: torch.device) -> Tensor:
    """This rank's indices into the training set for one epoch: every rank draws the same
    permutation, then takes every world-th index of it (the remainder is dropped)."""
    order = torch.randperm(size, generator=torch.Generator().manual_seed(epoch_seed(seed, epoch, 0)))
    per_rank = size // world
    return order[rank : per_rank * world : world].to(device)


def resize(x: Tensor, size: int) -> Tensor:
    """Upsample a batch to the model's resolution (fine-tuning 224px models on 32px data)."""
    if x.shape[-1] == size and x.shape[-2] == size:
        return x
    return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=True)


def eval_batch(images: Tensor, normalize: Normalizer, image_size: int) -> Tensor:
    """uint8 images (N, 3, H, W) -> the float batch the model takes, without augmentation."""
    return resize(normalize(images), image_size)


def autocast(device: torch.device) -> AbstractContextManager:
    """bf16 on CUDA (no loss scaling needed, unlike fp16); full fp32 on the CPU. No cast cache: a
    CUDA graph's capture needs it off (training.graphs), and a ViT casts each weight once per pass."""
    return torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False) if device.type == "cuda" else nullcontext()


@torch.no_grad()
def predict(model: nn.Module, images: Tensor, normalize: Normalizer, image_size: int, batch_size: int) -> Tensor:
    """Logits (N, K) for uint8 images (N, 3, H, W), on the device of `normalize`, in eval mode."""
    was_training = model.training
    model.eval()
    device = normalize.scale.device
    out = []
    for start in range(0, len(images), batch_size):
        x = eval_batch(images[start : start + batch_size].to(device), normalize, image_size)
        with autocast(device):
            out.append(model(x).float())
    model.train(was_training)
    return torch.cat(out) if out else torch.empty(0, 0, device=device)
