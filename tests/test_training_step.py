"""The training step: learns, matches the model-only step, reads nothing back to the host,
compiles as one graph from augmentation to loss."""

from __future__ import annotations

import torch
from tolerance import assert_close_up_to_rounding
from training_helpers import count_sync_ops

import vit
from training.augment import AugmentConfig, draw_augmentation
from training.device_data import Normalizer
from training.optim import make_optimizer, model_step
from training.step import TrainStep
from vit.preprocessing import CIFAR10

HEAVY = AugmentConfig(randaug_ops=2, mixup_alpha=0.8, cutmix_alpha=1.0, erase_prob=0.5)
OFF = AugmentConfig(crop_padding=0, flip=False, randaug_ops=0, mixup_alpha=0, cutmix_alpha=0, erase_prob=0)


def _step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, augment: AugmentConfig, compile: bool = False):
    """The step every test trains with: 3 classes of 16-px images, label smoothing, clipping."""
    return TrainStep(
        model,
        optimizer,
        augment=augment,
        normalize=Normalizer(CIFAR10, "cpu"),
        num_classes=3,
        image_size=16,
        label_smoothing=0.1,
        clip_grad=1.0,
        compile=compile,
    )


def _setup(augment: AugmentConfig, compile: bool = False, seed: int = 0):
    torch.manual_seed(seed)
    model = vit.create_model("vit_cifar_nano", depth=1, num_classes=3, image_size=16, drop_path=0.1)
    optimizer = make_optimizer(model, 1e-3, 0.05, torch.device("cpu"))
    return model, optimizer, _step(model, optimizer, augment, compile)


def _batch(n: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 256, (n, 3, 16, 16), generator=g, dtype=torch.uint8), torch.arange(n) % 3


def test_counts_are_the_loss_sum_correct_and_images_and_the_weights_move():
    model, _, step = _setup(HEAVY)
    before = [p.detach().clone() for p in model.parameters()]
    images, labels = _batch()
    counts = step(images, labels, torch.Generator().manual_seed(0), 1e-3)
    assert counts.shape == (3,) and counts[2] == 8 and 0 <= counts[1] <= 8 and counts[0] > 0
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert all(p.grad is None for p in model.parameters())  # cleared for the next step


def test_without_augmentation_it_is_the_model_only_step():
    # Plain SGD with lr=1 on both sides, so each weight moves by exactly minus its (clipped)
    # gradient. AdamW's first step is lr·g/(|g| + eps): it turns a rounding-size difference
    # of a near-zero gradient (Normalizer's x·(1/std) - mean/std against (x - mean)/std) into
    # a difference of up to lr, which compares rounding luck rather than the two steps.
    images, labels = _batch()
    model_a, _, _ = _setup(OFF)
    model_b, _, _ = _setup(OFF)  # the same seed: the same initial weights
    before = [p.detach().clone() for p in model_a.parameters()]
    sgd_a, sgd_b = (torch.optim.SGD(m.parameters(), lr=1.0) for m in (model_a, model_b))
    step = _step(model_a, sgd_a, OFF)
    torch.manual_seed(7)  # the same drop-path draws in both
    step(images, labels, torch.Generator().manual_seed(0), 1.0)
    torch.manual_seed(7)
    model_step(model_b, sgd_b, CIFAR10.normalize(images), torch.eye(3)[labels], 0.1, 1.0)
    # Weight gradients sum over images x tokens (8 x 17) of products whose error comes through
    # the forward and backward passes of one block (about 4 reductions each way); the clipped
    # gradient has norm <= 1, so every moved amount is at most 1.
    for a, b, start in zip(model_a.parameters(), model_b.parameters(), before, strict=True):
        assert_close_up_to_rounding(a - start, b - start, reduction=8 * 17, magnitude=1.0, steps=8)
    assert any(not torch.equal(a, start) for a, start in zip(model_a.parameters(), before, strict=True))


def test_a_whole_step_reads_nothing_back_to_the_host():
    _, _, step = _setup(HEAVY)
    images, labels = _batch()
    gen = torch.Generator().manual_seed(0)
    step(images, labels, gen, 1e-3)  # the first step creates the optimizer state
    # The fused AdamW kernel reads its step counters: on the CPU from host memory, on CUDA on the device.
    with count_sync_ops(ignore_inside=("aten::_fused_adamw_",)) as ops:
        step(images, labels, gen, 1e-3)
    assert ops == {}


def test_augmentation_to_loss_compiles_as_one_graph():
    # fullgraph=True fails on any graph break; the "eager" backend captures the graph without
    # inductor's code generation, which keeps the test to seconds on a CPU.
    _, _, step = _setup(HEAVY)
    images, labels = _batch()
    draw = draw_augmentation(HEAVY, images.shape, images.device, torch.Generator().manual_seed(0))
    compiled = torch.compile(step.forward_loss, fullgraph=True, backend="eager")
    torch.manual_seed(3)
    loss, counts = compiled(images, labels, draw)
    torch.manual_seed(3)
    expected, expected_counts = step.forward_loss(images, labels, draw)
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(counts, expected_counts)
