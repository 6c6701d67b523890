"""The Train tab's probe strip: the CLS attention of every head on one fixed image, a row per
reading (before training and after chosen epochs), on one colour scale for the whole strip.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from PIL import Image

from .canvas import TEXT_PX, MapStyle, mosaic, titled
from .render import Prefix, row_scale_note, scaled_row

PROBE_COLUMNS = 6  # head tiles per row of the probe strip at most: 12 would not fit the Train tab's column
PROBE_ROWS = 24  # rows of the probe strip at most, so a long run stays far under WebP's 16,383 px


@functools.lru_cache(maxsize=8)
def probe_columns(text_px: int, width: int) -> int:
    """Head tiles a row of the probe strip: up to PROBE_COLUMNS, as many as fit `width` (its
    column) with text `text_px` high. The presentation mode's had been drawn at TEXT_PX, its
    words 13 px on a projector; at PRESENT_TEXT_PX six a row are 796 px wide, three 514."""
    reading = [(1, np.zeros((1, 2 * PROBE_COLUMNS, 8, 8)))]  # a wrapped one: its widest labels
    for columns in range(PROBE_COLUMNS, 1, -1):
        if probe_strip(np.zeros((64, 64, 3), np.uint8), reading, MapStyle(), text_px, columns).width <= width:
            return columns
    return 1


def probe_shown(readings: int, heads: int, columns: int = PROBE_COLUMNS) -> list[int]:
    """Which of `readings` probe readings fit the strip of `columns` tiles a row: all of a short
    run; of a long one the first, the last and evenly spaced ones between (a row per reading grew
    past what an image format holds: a 200-epoch run's strip broke every status poll)."""
    keep = max(2, PROBE_ROWS // math.ceil(heads / columns))
    if readings <= keep:
        return list(range(readings))
    return sorted({round(i * (readings - 1) / (keep - 1)) for i in range(keep)})


def probe_epochs(epochs: Sequence[int]) -> str:
    """The epochs of the strip's rows in words, e.g. "before training and after epochs 22, 44 and 200"."""
    after = [str(e) for e in epochs if e]
    said = ", ".join(after[:-1]) + " and " + after[-1] if len(after) > 1 else "".join(after)
    noun = "epoch" if len(after) == 1 else "epochs"
    before = "before training" if 0 in epochs else ""
    return " and ".join(part for part in (before, f"after {noun} {said}" if after else "") if part)


def probe_strip(
    image: np.ndarray,
    probes: Sequence[tuple[int, np.ndarray]],
    style: MapStyle,
    text_px: int = TEXT_PX,
    columns: int = PROBE_COLUMNS,
) -> Image.Image:
    """How the probe image's CLS attention (last layer, one tile per head) changes over
    training: one row per epoch (of up to `columns` heads; more heads continue on the
    next row), each ending with its colour bar; a long run shows the epochs probe_shown picks
    and says which. `probes` holds (epoch, (layers, heads, gh, gw))
    pairs of patch maps only; each map is the patch part of a softmax row, so 1 - its total
    is the attention to CLS, printed under each tile (models without a CLS token leave
    nothing out and print nothing). Its text is `text_px` high."""
    heads = probes[0][1].shape[1]
    chosen = [probes[i] for i in probe_shown(len(probes), heads, columns)]
    shown = f"Rows: {probe_epochs([e for e, _ in chosen])} ({len(chosen)} of {len(probes)} readings)."
    shown = "" if len(chosen) == len(probes) else shown
    probes = chosen
    left_out = [1.0 - maps[-1].sum(axis=(-2, -1), keepdims=True)[..., 0] for _, maps in probes]  # (heads, 1)
    has_prefix = max(float(share.max()) for share in left_out) > 1e-5  # float32 sums of a GAP row: ~1e-7
    wrapped = heads > columns  # then each tile is named, as columns no longer hold one head
    rows, labels = [], []
    for (epoch, maps), share in zip(probes, left_out, strict=True):
        *tiles, bar = scaled_row(image, maps[-1], style, Prefix(share) if has_prefix else None, text_px, named=wrapped)
        for start in range(0, len(tiles), columns):
            rows.append([*tiles[start : start + columns], bar])
            labels.append(("before training" if epoch == 0 else f"after epoch {epoch}") if start == 0 else "")
    cols = [] if wrapped else [f"head {j + 1}" for j in range(heads)]
    left = "Maps show attention to the patches; attention to CLS (printed under each tile) is left out."
    note = f"{left if has_prefix else ''} {shown}".strip()
    title = "CLS attention of the probe image, last layer"
    return titled(title, mosaic(rows, text_px, labels, cols), text_px, note=row_scale_note(style, note))
