"""vit.preprocessing: the per-model input record refuses values that would silently break inputs."""

import math

import pytest
import torch

from vit.preprocessing import CIFAR10, Preprocessing


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"std": (0.2, 0.0, 0.2)}, r"'std' = \(0.2, 0.0, 0.2\) is not allowed: every channel's std must be positive"),
        ({"std": (0.2, -1.0, 0.2)}, "'std' = .* every channel's std must be positive"),
        ({"std": (0.2, math.inf, 0.2)}, "'std' = .* expected 3 finite numbers"),
        ({"mean": (0.5, math.nan, 0.5)}, "'mean' = .* expected 3 finite numbers"),
        ({"mean": (0.5, 0.5)}, "'mean' = .* expected 3 finite numbers"),
        ({"crop_size": 40}, "'crop_size' = 40 is not allowed: must not exceed resize_size 32"),
        ({"resize_size": 0, "crop_size": 0}, "'resize_size' = 0 is not allowed: expected a positive integer"),
        ({"interpolation": "cubic"}, "'interpolation' = 'cubic' is not allowed: expected one of"),
    ],
)
def test_bad_values_are_refused_by_field(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match="preprocessing field " + message):
        Preprocessing(**{"resize_size": 32, "crop_size": 32, **fields})


def test_from_dict_round_trip_and_refusals() -> None:
    assert Preprocessing.from_dict(CIFAR10.to_dict()) == CIFAR10
    with pytest.raises(ValueError, match=r"unknown preprocessing field\(s\) \['scale'\]"):
        Preprocessing.from_dict({**CIFAR10.to_dict(), "scale": 2})
    with pytest.raises(ValueError, match="preprocessing field 'crop_size' = '32' is not allowed: expected int"):
        Preprocessing.from_dict({**CIFAR10.to_dict(), "crop_size": "32"})


def test_normalize_standardises_each_channel() -> None:
    pre = Preprocessing(resize_size=2, crop_size=2, mean=(0.5, 0.25, 0.0), std=(0.5, 0.25, 2.0))
    images = torch.full((1, 3, 2, 2), 255, dtype=torch.uint8)  # white: 1.0 after scaling
    got = pre.normalize(images)
    torch.testing.assert_close(got[0, :, 0, 0], torch.tensor([1.0, 3.0, 0.5]))
