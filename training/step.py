"""One training step without a host-device synchronisation: augmentation drawn on the device,
applied, forward, loss, backward, gradient clipping, fused AdamW; the step's loss and accuracy
counts stay on the device for the caller to read once per logging interval.

With `compile=True` the part from augmentation to loss is one `torch.compile` graph (the
random draws stay eager: a torch.Generator cannot enter a graph); backward is compiled with it.
With `cuda_graph=True` everything after the draws (augmentation, forward, backward, clipping,
AdamW) is one CUDA graph replayed per step (training.graphs): no launch cost per kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

import torch
from torch import Tensor, nn

from .augment import AugmentConfig, AugmentDraw, apply_augmentation, draw_augmentation
from .device_data import autocast, resize
from .graphs import CapturedStep
from .optim import optimizer_step, set_lr, soft_cross_entropy


class TrainStep:
    """`step(images, labels, gen, lr)` -> (3,) tensor on the device: loss sum, correct count, images."""

    def __init__(
        self,
        forward: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        augment: AugmentConfig,
        normalize: Callable[[Tensor], Tensor],
        num_classes: int,
        image_size: int,
        label_smoothing: float,
        clip_grad: float,
        compile: bool = False,
        cuda_graph: bool = False,
    ):
        self.forward, self.optimizer = forward, optimizer
        self.augment, self.normalize = augment, normalize
        self.num_classes, self.image_size = num_classes, image_size
        self.label_smoothing, self.clip_grad = label_smoothing, clip_grad
        self._loss = torch.compile(self.forward_loss) if compile else self.forward_loss
        self._drawn: list[str] = []  # the AugmentDraw fields this config draws, in the graph's input order
        self._graph = CapturedStep(self._graphed, forward, optimizer) if cuda_graph else None

    def forward_loss(self, images: Tensor, labels: Tensor, draw: AugmentDraw) -> tuple[Tensor, Tensor]:
        """(loss, its detached (loss sum, correct, images) counts) of the augmented uint8 batch."""
        x, targets = apply_augmentation(images, labels, self.num_classes, self.augment, draw, self.normalize)
        with autocast(x.device):
            logits = self.forward(resize(x, self.image_size))
        loss = soft_cross_entropy(logits, targets, self.label_smoothing)
        correct = (logits.argmax(dim=-1) == labels).sum()
        counts = torch.stack([loss.detach() * len(labels), correct.to(loss.dtype), loss.new_full((), len(labels))])
        return loss, counts

    def _graphed(self, images: Tensor, labels: Tensor, *drawn: Tensor) -> Tensor:
        """The captured part of a step: the draws arrive as tensors, in `_drawn`'s order."""
        draw = AugmentDraw(**{f.name: None for f in fields(AugmentDraw)} | dict(zip(self._drawn, drawn, strict=True)))
        loss, counts = self._loss(images, labels, draw)
        optimizer_step(self.optimizer, loss, self.clip_grad)
        return counts

    def __call__(self, images: Tensor, labels: Tensor, gen: torch.Generator, lr: float) -> Tensor:
        draw = draw_augmentation(self.augment, images.shape, images.device, gen)
        set_lr(self.optimizer, lr)
        if self._graph is not None:
            self._drawn = [f.name for f in fields(draw) if getattr(draw, f.name) is not None]
            return self._graph(images, labels, *(getattr(draw, name) for name in self._drawn)).clone()
        loss, counts = self._loss(images, labels, draw)
        optimizer_step(self.optimizer, loss, self.clip_grad)
        return counts
