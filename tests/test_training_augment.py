"""Batched augmentation: each op does what it says, per image, reproducibly."""

from __future__ import annotations

import torch

import vit
from training.augment import (
    AugmentConfig,
    augment_batch,
    mix,
    rand_augment,
    random_crop,
    random_erase,
    random_flip,
)
from training.device_data import Normalizer


def _images(n: int = 16, size: int = 8) -> torch.Tensor:
    return torch.randint(0, 256, (n, 3, size, size), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_random_crop_is_a_window_of_the_padded_image():
    images = _images()
    out = random_crop(images, 2, _gen())
    padded = torch.nn.functional.pad(images, (2, 2, 2, 2))
    for img, src in zip(out, padded, strict=True):
        windows = [src[:, y : y + 8, x : x + 8] for y in range(5) for x in range(5)]
        assert any(torch.equal(img, w) for w in windows)
    assert not all(torch.equal(a, b) for a, b in zip(out, images, strict=True))  # some moved
    assert torch.equal(random_crop(images, 0, _gen()), images)


def test_random_flip_flips_some_images_and_keeps_the_rest():
    images = _images(64)
    out = random_flip(images, _gen())
    flipped = torch.tensor([torch.equal(o, i.flip(-1)) for o, i in zip(out, images, strict=True)])
    kept = torch.tensor([torch.equal(o, i) for o, i in zip(out, images, strict=True)])
    assert (flipped | kept).all() and 10 < flipped.sum() < 54


def test_same_generator_seed_same_batch_different_seed_different_batch():
    images, labels = _images(), torch.arange(16) % 3
    config = AugmentConfig(randaug_ops=2, mixup_alpha=0.8, cutmix_alpha=1.0, erase_prob=0.5)
    normalize = Normalizer(vit.Preprocessing(8, 8, mean=(0.5,) * 3, std=(0.25,) * 3), "cpu")
    a = augment_batch(images, labels, 3, config, normalize, _gen(1))
    b = augment_batch(images, labels, 3, config, normalize, _gen(1))
    c = augment_batch(images, labels, 3, config, normalize, _gen(2))
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
    assert torch.equal(t.argmax(dim=1), labels) and torch.equal(t.sum(dim=1), torch.ones(16))


def test_mixup_targets_match_the_mixing_weight():
    x = torch.stack([torch.full((3, 4, 4), float(i)) for i in range(4)])  # image i is constant i
    targets = torch.eye(4)
    out, mixed = mix(x, targets, AugmentConfig(mixup_alpha=1.0, cutmix_alpha=0.0), _gen(5))
    lam = mixed[0, 0].item()
    torch.testing.assert_close(out[0], torch.full((3, 4, 4), lam * 0 + (1 - lam) * 3))
    torch.testing.assert_close(mixed[0, 3], torch.tensor(1 - lam))


def test_cutmix_label_weight_is_the_pasted_area():
    x = torch.zeros(2, 1, 10, 10)
    x[1] = 1.0
    out, mixed = mix(x, torch.eye(2), AugmentConfig(mixup_alpha=0.0, cutmix_alpha=1.0), _gen(3))
    pasted = out[0].mean().item()  # image 0 is zeros, pasted pixels come from image 1
    torch.testing.assert_close(mixed[0, 1], torch.tensor(pasted))
    torch.testing.assert_close(mixed[0, 0], torch.tensor(1 - pasted))


def test_random_erase_changes_a_rectangle_only_with_probability_one():
    x = torch.zeros(8, 3, 16, 16)
    out = random_erase(x, 1.0, _gen())
    changed = (out != 0).any(dim=1)  # (N, H, W)
    for mask in changed:
        rows, cols = mask.any(dim=1).nonzero(), mask.any(dim=0).nonzero()
        assert 0 < mask.sum() == (rows.max() - rows.min() + 1) * (cols.max() - cols.min() + 1)  # a filled box
    assert torch.equal(random_erase(x, 0.0, _gen()), x)


def test_rand_augment_stays_in_range_and_changes_images():
    x = _images(32).float() / 255
    out = rand_augment(x, 2, 0.9, _gen())
    assert out.shape == x.shape and out.min() >= 0 and out.max() <= 1
    changed = (out - x).abs().flatten(1).amax(dim=1) > 0
    assert 16 < changed.sum() <= 32  # most images got a non-identity op
