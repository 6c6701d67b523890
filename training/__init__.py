"""Training and fine-tuning for the ViT explorer: CLI (`python -m training`), a background
job for the app's Train tab (training.job), evaluation (`python -m training.evaluate`)."""

from .config import TrainConfig
from .data import DataError, ImageSet, load_split
from .engine import Hooks, Trainer, TrainingError, train

__all__ = ["DataError", "Hooks", "ImageSet", "TrainConfig", "Trainer", "TrainingError", "load_split", "train"]
