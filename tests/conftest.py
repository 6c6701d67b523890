"""Shared test helpers."""

from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def randomise_(module: torch.nn.Module, std: float = 0.02) -> torch.nn.Module:
    """Give every parameter random values: torchvision zero-initialises its head (and timm
    its biases), and a parity test that compares zeros with zeros proves nothing."""
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, std)
    return module
