"""Making and reading pictures in tests: one-hot maps, which colormap colour a pixel is, and where
colour bars are."""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from PIL import Image

from explorer.canvas import MapStyle

RAW = MapStyle(cmap="gray", raw=True)  # the map alone, grey: a pixel's level is its weight


def lut(cmap: str) -> dict[tuple[int, int, int], int]:
    """Colour -> index in the 256-entry colormap (the first index, where colours repeat)."""
    colours = colormaps[cmap](np.arange(256), bytes=True)[:, :3]
    table: dict[tuple[int, int, int], int] = {}
    for i, c in enumerate(map(tuple, colours.tolist())):
        table.setdefault(c, i)
    return table


def gradient_runs(picture: Image.Image, cmap: str, min_length: int = 40) -> set[tuple[str, int, int]]:
    """The colour bars in a picture, as (direction, start, end) extents: runs of at least
    `min_length` pixels along a row (or up a column, for vertical bars) whose colours climb
    the colormap from its bottom colour to its top colour. A bar's rows share one extent."""
    table = lut(cmap)
    index = np.array([[table.get(tuple(p), -1) for p in row] for row in np.asarray(picture).tolist()])
    bars = set()
    for direction, lines in (("across", index), ("up", index[::-1].T)):
        for line in lines:
            edges = np.flatnonzero(np.diff(np.r_[False, line >= 0, False].astype(int)))
            for start, end in zip(edges[::2], edges[1::2], strict=True):
                run = line[start:end]
                if len(run) >= min_length and run[0] == 0 and run[-1] == 255 and (np.diff(run) >= 0).all():
                    bars.add((direction, int(start), int(end)))
    return bars


def one_hot(grid: tuple[int, int], row: int, col: int) -> np.ndarray:
    """A map of `grid` with all its weight on the patch (row, col)."""
    m = np.zeros(grid, dtype=np.float32)
    m[row, col] = 1.0
    return m


def top_of_bar(picture: Image.Image, cmap: str) -> int:
    """The first picture row of the (only) horizontal colour bar."""
    ((_, start, end),) = {run for run in gradient_runs(picture, cmap) if run[0] == "across"}
    rows = np.asarray(picture)[:, start]
    bottom = tuple(colormaps[cmap](0.0, bytes=True)[:3])
    return int(np.flatnonzero((rows == bottom).all(axis=1))[0])
