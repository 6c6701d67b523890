"""Data on the device: the model's normalisation, per-epoch shards, clean evaluation batches."""

from __future__ import annotations

import torch
from tolerance import forward_tolerance

import vit
from training.data import ImageSet
from training.device_data import Normalizer, channel_stats, epoch_seed, epoch_shard, eval_batch, predict
from vit.preprocessing import CIFAR10

PRE = vit.Preprocessing(resize_size=8, crop_size=8, mean=(0.2, 0.5, 0.7), std=(0.1, 0.3, 0.25))


def _images(n: int = 6, size: int = 8) -> torch.Tensor:
    return torch.randint(0, 256, (n, 3, size, size), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)


def test_normalizer_is_the_models_preprocessing_normalize():
    images = _images()
    normalize = Normalizer(PRE, "cpu")
    torch.testing.assert_close(normalize(images), PRE.normalize(images))  # uint8
    x = images.float() / 255
    torch.testing.assert_close(normalize(x), PRE.normalize(x))  # floats in [0, 1]
    torch.testing.assert_close(normalize.scale.flatten(), 1 / torch.tensor(PRE.std))


def test_eval_batch_normalises_then_resizes_to_the_model():
    images = _images(size=8)
    same = eval_batch(images, Normalizer(PRE, "cpu"), 8)
    torch.testing.assert_close(same, PRE.normalize(images))
    bigger = eval_batch(images, Normalizer(PRE, "cpu"), 16)
    assert bigger.shape == (6, 3, 16, 16)
    torch.testing.assert_close(bigger.mean(dim=(2, 3)), same.mean(dim=(2, 3)), atol=0.05, rtol=0)


def test_epoch_shards_of_all_ranks_partition_one_permutation():
    cpu = torch.device("cpu")
    shards = [epoch_shard(10, seed=3, epoch=2, rank=r, world=3, device=cpu) for r in range(3)]
    together = torch.cat(shards)
    assert all(len(s) == 3 for s in shards) and len(set(together.tolist())) == 9  # 10 // 3 each, disjoint
    assert torch.equal(epoch_shard(10, 3, 2, 0, 3, cpu), shards[0])  # reproducible
    assert not torch.equal(epoch_shard(10, 3, 3, 0, 1, cpu), epoch_shard(10, 3, 2, 0, 1, cpu))  # a new epoch
    assert len({epoch_seed(0, e, r) for e in range(50) for r in range(4)}) == 200


def test_channel_stats_are_the_per_channel_moments():
    images = torch.zeros(4, 3, 2, 2, dtype=torch.uint8)
    images[:, 1] = 255
    images[:2, 2] = 255
    mean, std = channel_stats(ImageSet(images, torch.zeros(4, dtype=torch.long), ["a"]))
    assert mean == (0.0, 1.0, 0.5) and std[0] == 0.0 and std[1] == 0.0 and std[2] > 0.5


def test_channel_stats_from_histograms_equal_the_moments_of_the_pixels():
    images = torch.randint(0, 256, (50, 3, 8, 8), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    x = images.double() / 255
    mean, std = channel_stats(ImageSet(images, torch.zeros(50, dtype=torch.long), ["a"]))
    assert mean == tuple(round(v, 4) for v in x.mean(dim=(0, 2, 3)).tolist())
    assert std == tuple(round(v, 4) for v in x.std(dim=(0, 2, 3)).tolist())


def test_predict_equals_a_batched_forward_in_eval_mode():
    model = vit.create_model("vit_cifar_nano", depth=1).train()
    images = _images(5, 32)
    logits = predict(model, images, Normalizer(CIFAR10, "cpu"), 32, batch_size=2)
    assert model.training  # restored
    with torch.no_grad():
        expected = model.eval()(CIFAR10.normalize(images))
    # Batches of 2 against one of 5: the matrix kernels may block the sums otherwise.
    tol = forward_tolerance(model.config, expected.abs().max().item())
    torch.testing.assert_close(logits, expected, atol=tol, rtol=0)
