"""What a training run is asked to do (`TrainConfig`), checked before anything is loaded, and
the device it names."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from vit.config import config_from_dict

from .augment import AugmentConfig
from .checks import check_lr, check_whole, is_real
from .data import check_source
from .sources import check_model_spec


@dataclass
class TrainConfig:
    model: str = "vit_cifar_tiny"  # preset, pretrained name or weights file
    data: str = "cifar10"  # 'cifar10' (torchvision) or an ImageFolder root with train/ and test/
    out: str = "runs/train"
    epochs: int = 100
    batch_size: int = 128  # per process
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_epochs: float | None = None  # None: 10% of the run, at least one step (optim.warmup_steps)
    label_smoothing: float = 0.1
    clip_grad: float = 1.0  # max gradient norm (0: off)
    drop_path: float | None = None  # None: the model's own rate
    image_size: int | None = None  # None: the data's size for presets, the model's own otherwise
    holdout: int = 5000  # training images set aside for validation
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    seed: int = 0
    device: str = "auto"  # 'auto', 'cpu', 'cuda', 'cuda:1', ...
    compile: bool = False
    cuda_graph: bool = False  # replay each step as one CUDA graph (training.graphs)
    deterministic: bool = False
    threads: int | None = None  # CPU threads for torch (None: torch's default)
    eval_batch_size: int = 500
    eval_test: bool = True  # evaluate the test split once, after the last epoch
    download: bool = True  # allow torchvision to download CIFAR-10
    data_archive: str | None = None  # archive the data came from: its sha256 is recorded

    def __post_init__(self) -> None:
        if isinstance(self.augment, dict):
            self.augment = AugmentConfig.from_dict(self.augment)
        self.check_values()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        """A config read from a checkpoint or a file: ValueError naming the field, the value and
        what is allowed (vit.config.config_from_dict, the project's one rule)."""
        return config_from_dict(cls, d, "training config")

    def check_values(self) -> None:
        """Raise ValueError on values that cannot work (the config alone, no files looked at):
        whole numbers are ints (never bools), real numbers are finite, and each is in its range."""
        for name in ("epochs", "batch_size", "eval_batch_size", "holdout"):
            check_whole(name, getattr(self, name), 1)
        check_whole("seed", self.seed, 0)
        for name in ("image_size", "threads"):
            if getattr(self, name) is not None:
                check_whole(name, getattr(self, name), 1)
        check_lr(self.lr)
        for name in ("weight_decay", "warmup_epochs", "clip_grad"):
            value = getattr(self, name)
            if (value is not None or name != "warmup_epochs") and not (is_real(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number of at least 0, got {value!r}")
        if self.warmup_epochs is not None and self.warmup_epochs >= self.epochs:
            raise ValueError(
                f"warmup_epochs ({self.warmup_epochs:g}) must be shorter than the run ({self.epochs} epochs): the "
                "learning rate would never decay; leave it out for 10% of the run"
            )
        for name in ("label_smoothing", "drop_path"):
            value = getattr(self, name)
            if (value is not None or name == "label_smoothing") and not (is_real(value) and 0 <= value < 1):
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        for name in ("compile", "cuda_graph", "deterministic", "eval_test", "download"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")

    def validate(self) -> None:
        """Raise ValueError (DataError for the data) on settings that cannot work, before anything is loaded."""
        self.check_values()
        check_model_spec(self.model)
        if self.data_archive is not None and not Path(self.data_archive).is_file():
            raise ValueError(f"--data-archive {self.data_archive}: no such file")
        resolve_device(self.device)
        check_source(self.data)


def resolve_device(name: str) -> torch.device:
    """'auto' (CUDA when there is a GPU), 'cpu', 'cuda' or 'cuda:N'; ValueError for a GPU that is not there."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as e:
        raise ValueError(f"unknown device {name!r}; use 'auto', 'cpu', 'cuda' or 'cuda:N'") from e
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} requested but no CUDA GPU is available")
    return device


def describe_device(device: torch.device) -> str:
    """A one-line description for people, with a warning when only the CPU is there."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    if torch.cuda.is_available():
        return "cpu"
    return "cpu (no GPU found: training runs on the CPU and will be slow)"
