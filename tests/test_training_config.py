"""TrainConfig / AugmentConfig: defaults round-trip, configs from files refused field by field, devices."""

from __future__ import annotations

import pytest
import torch

from training.augment import AugmentConfig
from training.config import TrainConfig, describe_device, resolve_device
from training.registry import TrainLimits


def test_a_config_round_trips_through_its_dict():
    config = TrainConfig(model="vit_cifar_nano", epochs=3, augment=AugmentConfig(randaug_ops=0, erase_prob=0.1))
    again = TrainConfig.from_dict(config.to_dict())
    assert again == config and isinstance(again.augment, AugmentConfig)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"colour": "blue"}, r"unknown training config field\(s\) \['colour'\]; known fields: \[.*'batch_size'"),
        ({"epochs": "ten"}, r"training config field 'epochs' = 'ten' is not allowed: expected int"),
        ({"drop_path": "x"}, r"field 'drop_path' = 'x' is not allowed: expected float or None"),
        ({"compile": 1}, r"field 'compile' = 1 is not allowed: expected bool"),
        ({"lr": -1.0}, r"invalid training config: lr must be a number above 0, got -1\.0"),
        ({"augment": {"flip": "yes"}}, r"training config augment field 'flip' = 'yes' is not allowed: expected bool"),
        ({"augment": {"erase_prob": 2.0}}, r"erase_prob must be in \[0, 1\], got 2\.0"),
    ],
)
def test_a_config_from_a_file_is_refused_with_the_field_value_and_what_is_allowed(changes, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig.from_dict({**TrainConfig().to_dict(), **changes})


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("crop_padding", -1, "crop_padding must be a whole number of at least 0, got -1"),
        ("randaug_ops", 1.5, "randaug_ops must be a whole number of at least 0, got 1.5"),
        ("mixup_alpha", -0.1, "mixup_alpha must be a finite number of at least 0"),
        ("cutmix_alpha", float("nan"), "cutmix_alpha must be a finite number of at least 0, got nan"),
        ("erase_prob", float("nan"), r"erase_prob must be in \[0, 1\], got nan"),
        ("flip", "yes", "flip must be True or False"),
        ("randaug_magnitude", 1.5, r"randaug_magnitude must be in \[0, 1\]"),
    ],
)
def test_augment_config_refuses_values_that_cannot_work(field, value, match):
    with pytest.raises(ValueError, match=match):
        AugmentConfig(**{field: value})


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"batch_size": 0}, "batch_size must be a whole number of at least 1, got 0"),
        ({"epochs": True}, "epochs must be a whole number of at least 1, got True"),
        ({"holdout": 2.5}, "holdout must be a whole number of at least 1, got 2.5"),
        ({"threads": 0}, "threads must be a whole number of at least 1, got 0"),
        ({"weight_decay": float("nan")}, "weight_decay must be a finite number of at least 0, got nan"),
        ({"warmup_epochs": float("nan")}, "warmup_epochs must be a finite number of at least 0, got nan"),
        ({"clip_grad": float("inf")}, "clip_grad must be a finite number of at least 0, got inf"),
        ({"lr": float("nan")}, "lr must be a number above 0, got nan"),
        ({"lr": True}, "lr must be a number above 0, got True"),
        ({"label_smoothing": float("nan")}, r"label_smoothing must be in \[0, 1\), got nan"),
        ({"compile": "yes"}, "compile must be True or False"),
        ({"weight_decay": -0.1}, "weight_decay must be a finite number of at least 0, got -0.1"),
        ({"drop_path": 1.0}, r"drop_path must be in \[0, 1\), got 1.0"),
        ({"label_smoothing": -0.5}, r"label_smoothing must be in \[0, 1\)"),
    ],
)
def test_constructing_a_config_checks_its_numbers(changes, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**changes)


def test_validate_refuses_a_missing_archive_and_an_unknown_device(tmp_path):
    with pytest.raises(ValueError, match=r"--data-archive .*nothing\.tar: no such file"):
        TrainConfig(model="vit_cifar_nano", data_archive=str(tmp_path / "nothing.tar")).validate()
    with pytest.raises(ValueError, match="unknown device 'gpu0'"):
        TrainConfig(model="vit_cifar_nano", device="gpu0").validate()


def test_auto_device_is_the_gpu_when_there_is_one():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device("cpu") == torch.device("cpu")
    assert describe_device(torch.device("cpu")).startswith("cpu")
    if not torch.cuda.is_available():
        assert "no GPU found" in describe_device(torch.device("cpu"))
        with pytest.raises(ValueError, match="no CUDA GPU is available"):
            resolve_device("cuda")


def test_the_learning_rate_has_one_rule_everywhere():
    # TrainConfig (CLI and files) and the Train tab's limits share training.checks.check_lr:
    # 0 is refused by both, and the server's cap is the only difference.
    for lr in (0, 0.0, -1e-3, float("nan"), float("inf"), "0.1", True):
        with pytest.raises(ValueError, match="must be a number above 0"):
            TrainConfig(lr=lr)
        with pytest.raises(ValueError, match="learning rate must be a number above 0 and at most 1"):
            TrainLimits().check(epochs=1, batch_size=8, lr=lr)
    assert TrainConfig(lr=5.0).lr == 5.0 and TrainLimits(max_lr=10).check(epochs=1, batch_size=8, lr=5)[2] == 5.0


def test_warm_up_defaults_to_a_tenth_of_the_run_and_at_least_one_step():
    from training.optim import warmup_steps

    assert TrainConfig().warmup_epochs is None
    assert warmup_steps(None, steps_per_epoch=352, total_steps=5 * 352) == 176  # 10% of 5 epochs
    assert warmup_steps(None, steps_per_epoch=2, total_steps=4) == 1  # never zero steps
    assert warmup_steps(0.5, steps_per_epoch=10, total_steps=100) == 5  # an explicit length in epochs


@pytest.mark.parametrize("warmup", [5.0, 7.5])
def test_a_warm_up_as_long_as_the_run_is_refused(warmup):
    with pytest.raises(ValueError, match=rf"warmup_epochs \({warmup:g}\) must be shorter than the run \(5 epochs\)"):
        TrainConfig(epochs=5, warmup_epochs=warmup)
