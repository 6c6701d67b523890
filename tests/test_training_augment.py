"""Batched augmentation: each op does what it says, per image, reproducibly, without host syncs."""

from __future__ import annotations

import pytest
import torch
from training_helpers import count_sync_ops

import vit
from training.augment import (
    RANDAUG_OPS,
    AugmentConfig,
    apply_augmentation,
    augment_batch,
    draw_augmentation,
    mix,
    rand_augment_round,
    random_crop,
    random_erase,
    random_flip,
    shift,
)
from training.device_data import Normalizer

HEAVY = AugmentConfig(randaug_ops=2, mixup_alpha=0.8, cutmix_alpha=1.0, erase_prob=0.5)


def _images(n: int = 16, size: int = 8) -> torch.Tensor:
    return torch.randint(0, 256, (n, 3, size, size), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _normalize(size: int = 8) -> Normalizer:
    return Normalizer(vit.Preprocessing(size, size, mean=(0.5,) * 3, std=(0.25,) * 3), "cpu")


def test_shift_moves_content_and_fills_zeros():
    x = torch.arange(16.0).reshape(1, 1, 4, 4).repeat(2, 1, 1, 1)
    out = shift(x, torch.tensor([1, 0]), torch.tensor([0, -2]))
    assert out[0, 0].tolist() == [[4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15], [0, 0, 0, 0]]
    assert out[1, 0, :, :2].eq(0).all() and torch.equal(out[1, 0, :, 2:], x[1, 0, :, :2])


def test_random_crop_is_the_drawn_window_of_the_padded_image():
    images = _images()
    offsets = torch.randint(0, 5, (16, 2), generator=_gen())
    out = random_crop(images, 2, offsets)
    padded = torch.nn.functional.pad(images, (2, 2, 2, 2))
    for img, src, (dy, dx) in zip(out, padded, offsets.tolist(), strict=True):
        assert torch.equal(img, src[:, dy : dy + 8, dx : dx + 8])
    assert out.dtype == torch.uint8
    assert torch.equal(random_crop(images, 2, torch.full((16, 2), 2)), images)  # centred window: unchanged


def test_random_flip_flips_exactly_the_drawn_images():
    images = _images(4)
    flip = torch.tensor([True, False, True, False])
    out = random_flip(images, flip)
    for o, i, f in zip(out, images, flip.tolist(), strict=True):
        assert torch.equal(o, i.flip(-1) if f else i)


def test_same_generator_seed_same_batch_different_seed_different_batch():
    images, labels = _images(), torch.arange(16) % 3
    a = augment_batch(images, labels, 3, HEAVY, _normalize(), _gen(1))
    b = augment_batch(images, labels, 3, HEAVY, _normalize(), _gen(1))
    c = augment_batch(images, labels, 3, HEAVY, _normalize(), _gen(2))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    assert a[0].shape == (16, 3, 8, 8) and a[1].shape == (16, 3)
    torch.testing.assert_close(a[1].sum(dim=1), torch.ones(16))  # still probabilities


def test_no_augmentation_is_plain_normalisation_with_one_hot_targets():
    images, labels = _images(), torch.arange(16) % 3
    off = AugmentConfig(crop_padding=0, flip=False, randaug_ops=0, mixup_alpha=0, cutmix_alpha=0, erase_prob=0)
    pre = vit.Preprocessing(8, 8, mean=(0.2, 0.5, 0.7), std=(0.1, 0.3, 0.25))
    x, t = augment_batch(images, labels, 3, off, Normalizer(pre, "cpu"), _gen())
    torch.testing.assert_close(x, pre.normalize(images))
    assert torch.equal(t, torch.nn.functional.one_hot(labels, 3).float())


def test_mixup_blends_image_and_targets_with_the_drawn_weight():
    x = torch.stack([torch.full((3, 4, 4), float(i)) for i in range(4)])  # image i is constant i
    lam = torch.tensor(0.3)
    out, mixed = mix(x, torch.eye(4), torch.tensor(False), lam, torch.tensor([0, 0]))
    torch.testing.assert_close(out[0], torch.full((3, 4, 4), 0.3 * 0 + 0.7 * 3))
    torch.testing.assert_close(mixed[0], torch.tensor([0.3, 0.0, 0.0, 0.7]))


def test_cutmix_pastes_the_box_and_weights_labels_by_the_area_kept():
    x = torch.zeros(2, 1, 10, 10)
    x[1] = 1.0
    # lam 0.64: a box of 10 * sqrt(0.36) = 6 pixels a side around (5, 5): rows and columns 2..7.
    out, mixed = mix(x, torch.eye(2), torch.tensor(True), torch.tensor(0.64), torch.tensor([5, 5]))
    expected = torch.zeros(10, 10)
    expected[2:8, 2:8] = 1
    assert torch.equal(out[0, 0], expected)
    torch.testing.assert_close(mixed[0], torch.tensor([1 - 0.36, 0.36]))
    # At the border the box is cut off, and the label weight follows the pixels actually pasted.
    out, mixed = mix(x, torch.eye(2), torch.tensor(True), torch.tensor(0.64), torch.tensor([0, 9]))
    assert out[0].sum() == 3 * 4 and mixed[0, 1] == pytest.approx(12 / 100)


def test_the_drawn_mix_is_one_of_the_two_and_both_occur():
    config = AugmentConfig(mixup_alpha=1.0, cutmix_alpha=1.0)
    kinds = {
        bool(draw_augmentation(config, torch.Size((2, 3, 8, 8)), torch.device("cpu"), _gen(s)).cutmix)
        for s in range(20)
    }
    assert kinds == {True, False}
    only_cut = draw_augmentation(AugmentConfig(mixup_alpha=0.0), torch.Size((2, 3, 8, 8)), torch.device("cpu"), _gen())
    assert bool(only_cut.cutmix) and 0 <= float(only_cut.mix_lam) <= 1


def test_random_erase_fills_the_box_only():
    x = torch.zeros(2, 3, 8, 8)
    noise = torch.full((2, 3, 8, 8), 7.0)
    box = torch.tensor([[1.0, 3.5, 2.0, 6.0], [4.0, 4.0, 0.0, 8.0]])  # the second box is empty
    out = random_erase(x, box, noise)
    expected = torch.zeros(8, 8)
    expected[1:4, 2:6] = 7.0  # rows 1, 2, 3 (< 3.5), columns 2..5
    assert torch.equal(out[0, 1], expected) and out[1].eq(0).all()


def test_drawn_erase_boxes_are_rectangles_and_follow_the_probability():
    draw = draw_augmentation(AugmentConfig(erase_prob=1.0), torch.Size((64, 3, 16, 16)), torch.device("cpu"), _gen())
    heights, widths = draw.erase_box[:, 1] - draw.erase_box[:, 0], draw.erase_box[:, 3] - draw.erase_box[:, 2]
    assert (heights >= 1).all() and (widths >= 1).all() and (draw.erase_box >= 0).all() and (draw.erase_box <= 16).all()
    half = draw_augmentation(AugmentConfig(erase_prob=0.5), torch.Size((64, 3, 16, 16)), torch.device("cpu"), _gen())
    assert 10 < ((half.erase_box[:, 1] - half.erase_box[:, 0]) > 0).sum() < 54


@pytest.mark.parametrize("name", RANDAUG_OPS)
def test_each_rand_augment_op_changes_only_the_images_that_drew_it(name):
    x = _images(4).float() / 255
    op = torch.tensor([RANDAUG_OPS.index(name), len(RANDAUG_OPS), RANDAUG_OPS.index(name), len(RANDAUG_OPS)])
    out = rand_augment_round(x, op, torch.tensor([0.9, 0.9, -0.9, 0.9]))
    assert torch.equal(out[1], x[1]) and torch.equal(out[3], x[3])  # "no op" keeps the image
    assert not torch.equal(out[0], x[0]) and not torch.equal(out[2], x[2])
    assert out.min() >= 0 and out.max() <= 1


def test_rand_augment_ops_match_their_definitions():
    x = _images(2).float() / 255
    m = torch.tensor([0.5, -0.5])

    def one(name: str) -> torch.Tensor:
        return rand_augment_round(x, torch.full((2,), RANDAUG_OPS.index(name)), m)

    torch.testing.assert_close(one("brightness"), (x * torch.tensor([1.5, 0.5])[:, None, None, None]).clamp(0, 1))
    torch.testing.assert_close(one("solarize")[0], torch.where(x[0] >= 0.5, 1 - x[0], x[0]))
    torch.testing.assert_close(one("posterize")[0], torch.floor(x[0] * 63 + 0.5) / 63)  # 8 - 4 * 0.5 = 6 bits
    shifted = one("translate_x")  # 8 px wide: round(0.5 * 8 / 3) = 1 pixel
    assert torch.equal(shifted[0, :, :, :7], x[0, :, :, 1:]) and torch.equal(shifted[1, :, :, 1:], x[1, :, :, :7])


def test_apply_is_a_pure_function_of_the_draw():
    images, labels = _images(), torch.arange(16) % 3
    draw = draw_augmentation(HEAVY, images.shape, images.device, _gen(4))
    a = apply_augmentation(images, labels, 3, HEAVY, draw, _normalize())
    b = apply_augmentation(images, labels, 3, HEAVY, draw, _normalize())
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert torch.equal(a[0], augment_batch(images, labels, 3, HEAVY, _normalize(), _gen(4))[0])


def test_augmentation_never_reads_a_tensor_back_to_the_host():
    images, labels = _images(32), torch.arange(32) % 3
    with count_sync_ops() as ops:
        augment_batch(images, labels, 3, HEAVY, _normalize(), _gen())
    assert ops == {}


def test_apply_compiles_as_one_graph():
    # fullgraph=True fails on any graph break; the "eager" backend runs dynamo's capture without
    # inductor's code generation, so the test takes seconds. A generator cannot enter a graph:
    # that is why the draws are made outside.
    images, labels = _images(8), torch.arange(8) % 3
    draw = draw_augmentation(HEAVY, images.shape, images.device, _gen())
    compiled = torch.compile(apply_augmentation, fullgraph=True, backend="eager")
    got = compiled(images, labels, 3, HEAVY, draw, _normalize())
    expected = apply_augmentation(images, labels, 3, HEAVY, draw, _normalize())
    torch.testing.assert_close(got, expected)


def test_the_sync_counter_sees_mask_indexing_item_and_truth_tests():
    x = torch.randn(8)
    with count_sync_ops() as ops:
        x[x > 0].sum().item()
        if (x > 5).any():
            pass
    assert ops.get("aten::nonzero", 0) >= 1 and ops.get("aten::item", 0) >= 1 and ops.get("aten::is_nonzero", 0) >= 1
