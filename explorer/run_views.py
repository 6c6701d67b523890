"""What the Train tab shows of a run: the training curves and the probe image's attention, each
with its alt text (docs/pictures.md). PIL images and strings from plain data, no Gradio: the
training layer knows nothing of pictures, and the Train tab only wires these to components."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from PIL import Image

from . import canvas, charts, probe_strip
from .canvas import TEXT_PX, MapStyle
from .views import DISPLAY_WIDTH

PROBE_PX = 64  # display size of the probe image's longer side, per tile


def curves(history: Sequence[dict], step_losses: Sequence[tuple[float, float]], text_px: int = TEXT_PX) -> Image.Image:
    return charts.training_curves(history, step_losses, text_px)


def curves_alt(history: Sequence[dict], step_losses: Sequence[tuple[float, float]]) -> str:
    return f"Training loss and accuracy: {len(history)} epochs done, {len(step_losses)} loss readings"


def probe(image: torch.Tensor, probes: Sequence[tuple[int, torch.Tensor]], text_px: int = TEXT_PX) -> Image.Image:
    """The probe image ((3, H, W) uint8) beside its per-head CLS attention of the last layer,
    one row per (epoch, (layers, heads, gh, gw) maps) reading, text `text_px` high, as many
    tiles a row as fit the Train tab's column (probe_strip.probe_columns)."""
    pixels = image.permute(1, 2, 0).numpy()  # (3, H, W) -> (H, W, 3)
    grid = tuple(probes[0][1].shape[-2:])
    base = canvas.fit_to_grid(pixels, grid, PROBE_PX)
    readings = [(epoch, maps.numpy()) for epoch, maps in probes]
    return probe_strip.probe_strip(base, readings, MapStyle(), text_px, _columns(text_px))


def _columns(text_px: int) -> int:
    return probe_strip.probe_columns(text_px, DISPLAY_WIDTH["probe"])


def probe_alt(probes: Sequence[tuple[int, torch.Tensor]], text_px: int = TEXT_PX) -> str:
    """The first reading is taken before training; one follows each epoch. A long run's
    picture shows some of them (probe_strip.probe_shown): the alt text names which."""
    shown = probe_strip.probe_shown(len(probes), probes[0][1].shape[1], _columns(text_px))
    text = (
        "CLS attention of the probe image in every head of the last layer, before training "
        f"and after each of {len(probes) - 1} epochs"
    )
    if len(shown) == len(probes):
        return text
    return f"{text}; the picture shows {probe_strip.probe_epochs([probes[i][0] for i in shown])}"
