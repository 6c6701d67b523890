"""Optimisation: schedule, decay groups, loss, the optimizer and one step."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from tolerance import rounding_tolerance

import vit
from training.optim import lr_at, make_optimizer, model_step, param_groups, set_lr, soft_cross_entropy


def test_lr_warms_up_linearly_then_decays_to_zero():
    lrs = [lr_at(s, total_steps=100, warmup_steps=10, base_lr=1.0) for s in range(101)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0) and lrs[10] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:], strict=False))
    assert lrs[55] == pytest.approx(0.5) and lrs[100] == pytest.approx(0.0, abs=1e-12)


def test_weight_decay_skips_norms_biases_pos_embed_and_cls_token():
    model = vit.create_model("vit_cifar_nano")
    decay, no_decay = param_groups(model, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    kept = {names[id(p)] for p in no_decay["params"]}
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert {"pos_embed", "cls_token", "norm.weight", "head.bias", "blocks.0.norm1.weight"} <= kept
    assert {"head.weight", "blocks.0.attn.qkv.weight", "patch_embed.proj.weight"} <= decayed
    assert len(decayed) + len(kept) == len(list(model.parameters()))


def test_soft_cross_entropy_matches_torch_label_smoothing():
    logits = torch.randn(8, 5, generator=torch.Generator().manual_seed(0))
    labels = torch.arange(8) % 5
    ours = soft_cross_entropy(logits, F.one_hot(labels, 5).float(), 0.1)
    torch.testing.assert_close(ours, F.cross_entropy(logits, labels, label_smoothing=0.1))


def test_the_optimizer_is_fused_adamw_with_decay_groups():
    model = torch.nn.Linear(4, 2)
    cpu = make_optimizer(model, 1e-3, 0.05, torch.device("cpu"))
    assert cpu.defaults["fused"] and [g["weight_decay"] for g in cpu.param_groups] == [0.05, 0.0]
    if torch.cuda.is_available():
        assert make_optimizer(model.cuda(), 1e-3, 0.05, torch.device("cuda")).defaults["fused"]


def test_a_step_lowers_the_loss_of_its_batch_and_clips_the_gradient():
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 3)
    optimizer = make_optimizer(model, 0.1, 0.0, torch.device("cpu"))
    set_lr(optimizer, 0.05)
    assert all(g["lr"] == 0.05 for g in optimizer.param_groups)
    x, targets = 10 * torch.randn(16, 6), F.one_hot(torch.arange(16) % 3, 3).float()
    seen = []
    optimizer.register_step_pre_hook(
        lambda *_: seen.append(torch.cat([p.grad.flatten() for p in model.parameters()]).norm())
    )
    first = model_step(model, optimizer, x, targets, 0.0, clip_grad=1e-3)
    n = sum(p.numel() for p in model.parameters())  # the norm sums n squares, then scales by clip / norm
    clipped = seen[0] <= 1e-3 * (1 + rounding_tolerance(torch.float32, n, steps=2))
    assert not first.requires_grad and clipped  # clipped before the step
    assert all(p.grad is None for p in model.parameters())  # cleared after it
    for _ in range(5):
        loss = model_step(model, optimizer, x, targets, 0.0, clip_grad=0.0)
    assert loss < first and seen[-1] > 1e-3  # unclipped


def test_prefix_tokens_are_not_decayed():
    model = vit.create_model("vit_cifar_nano", distill_token=True, register_tokens=2)
    decay, no_decay = param_groups(model, 0.05)
    kept = {id(p) for p in no_decay["params"]}
    assert all(id(getattr(model, name)) in kept for name in ("cls_token", "dist_token", "reg_token", "pos_embed"))
