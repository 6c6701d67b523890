"""Optimisation: AdamW with decay only on weight matrices, warmup + cosine schedule,
label-smoothed soft-target loss, and one optimizer step."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .device_data import autocast


def lr_at(step: int, total_steps: int, warmup_steps: int, base_lr: float) -> float:
    """Linear warmup from 0 to `base_lr`, then a cosine decay to 0 at `total_steps`."""
    if step < warmup_steps:
        return base_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(total_steps - warmup_steps, 1)
    return base_lr * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


WARMUP_SHARE = 0.1  # the default warm-up: this share of the run, at least one step


def warmup_steps(warmup_epochs: float | None, steps_per_epoch: int, total_steps: int) -> int:
    """Steps of linear warm-up: `warmup_epochs` of them, or by default (None) WARMUP_SHARE of the
    run and at least one step, so the learning rate peaks early and then decays."""
    if warmup_epochs is None:
        return max(1, round(WARMUP_SHARE * total_steps))
    return round(warmup_epochs * steps_per_epoch)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Decay matrices only: norms, biases, position embeddings and the CLS token are
    offsets and scales whose shrinking toward 0 only hurts."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim <= 1 or name in ("pos_embed", "cls_token", "dist_token", "reg_token") else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def make_optimizer(
    model: nn.Module, lr: float, weight_decay: float, device: torch.device, capturable: bool = False
) -> torch.optim.AdamW:
    """AdamW over `param_groups`, fused where torch has the kernel (CUDA and CPU): on CUDA one
    launch updates every parameter and reads the step counters on the device, so the step
    never waits for the GPU; on CPU it is ~3x faster than the default for-each version.
    `capturable`: for a CUDA graph (training.graphs), the learning rate a tensor on the device
    that `set_lr` overwrites in place, so one captured step serves the whole schedule."""
    assert not capturable or device.type == "cuda", f"a capturable optimizer is for CUDA graphs, not {device}"
    groups = param_groups(model, weight_decay)
    optimizer = torch.optim.AdamW(groups, lr=lr, fused=device.type in ("cuda", "cpu"), capturable=capturable)
    tensor_lr(optimizer)
    return optimizer


def tensor_lr(optimizer: torch.optim.Optimizer) -> None:
    """A capturable optimizer's learning rates as tensors on the device, one per group (the graph
    holds each group's own): when it is made, and after `load_state_dict` (a saved state holds them
    as numbers, training.state)."""
    for group in optimizer.param_groups:
        if group.get("capturable") and not isinstance(group["lr"], Tensor):
            group["lr"] = torch.tensor(float(group["lr"]), dtype=torch.float32, device=group["params"][0].device)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """Every group's learning rate to `lr`: in place where it is a tensor (a CUDA graph reads it there)."""
    for group in optimizer.param_groups:
        if isinstance(group["lr"], Tensor):
            group["lr"].fill_(lr)
        else:
            group["lr"] = lr


def soft_cross_entropy(logits: Tensor, targets: Tensor, smoothing: float) -> Tensor:
    """Cross-entropy against target probabilities (N, K), with label smoothing."""
    targets = targets * (1 - smoothing) + smoothing / targets.shape[-1]
    return -(targets * logits.float().log_softmax(dim=-1)).sum(dim=-1).mean()


def optimizer_step(optimizer: torch.optim.Optimizer, loss: Tensor, clip_grad: float) -> None:
    """Backward, clip the gradient norm (0: off), step, clear the gradients. Nothing here reads a
    value back to the host: clip_grad_norm_ scales by a clamped factor instead of testing the norm."""
    loss.backward()
    if clip_grad > 0:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        nn.utils.clip_grad_norm_(params, clip_grad)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def model_step(
    forward: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: Tensor,
    targets: Tensor,
    label_smoothing: float,
    clip_grad: float,
) -> Tensor:
    """One optimizer step on a prepared float batch and target probabilities: the model's own
    cost, without data or augmentation (bench/train_step.py compares the two). Returns the loss."""
    with autocast(x.device):
        logits = forward(x)
    loss = soft_cross_entropy(logits, targets, label_smoothing)
    optimizer_step(optimizer, loss, clip_grad)
    return loss.detach()
