"""Making and reading pictures in tests: one-hot maps, which colormap colour a pixel is, and where
colour bars are."""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from PIL import Image

from explorer import canvas
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


def colour_index(pixels: np.ndarray, cmap: str) -> np.ndarray:
    """(..., 3) uint8 pixels -> their index in the 256-entry colormap (`lut`), -1 where none."""
    table = lut(cmap)
    flat = pixels.reshape(-1, 3).tolist()
    return np.array([table.get(tuple(p), -1) for p in flat]).reshape(pixels.shape[:-1])


def squares(picture: Image.Image, side: int) -> list[tuple[int, int]]:
    """Top-left corners (y, x), in reading order, of the `side` x `side` blocks of a picture
    holding no background (white) pixel: its map tiles, where tiles are separated by
    background and no other part is that large (words, colour bars and gaps are not)."""
    filled = (np.asarray(picture) != 255).any(-1).astype(np.int64)
    total = np.pad(filled, ((1, 0), (1, 0))).cumsum(0).cumsum(1)
    window = total[side:, side:] - total[:-side, side:] - total[side:, :-side] + total[:-side, :-side]
    full = np.pad(window == side * side, ((1, 0), (1, 0)))  # full[y + 1, x + 1]: the block at (y, x)
    corners = full[1:, 1:] & ~full[:-1, 1:] & ~full[1:, :-1]  # no full block just above or left of it
    return [(int(y), int(x)) for y, x in np.argwhere(corners)]


def brightest_cell(tile: np.ndarray, cmap: str, grid: tuple[int, int]) -> tuple[int, int]:
    """(row, col) of the patch cell of a map tile (H, W, 3), covering `grid` in whole cells,
    whose median colour is highest on the colormap (pixels of no colormap colour count -1)."""
    index = colour_index(tile, cmap)
    gh, gw = grid
    ch, cw = index.shape[0] // gh, index.shape[1] // gw
    cells = index[: gh * ch, : gw * cw].reshape(gh, ch, gw, cw).transpose(0, 2, 1, 3).reshape(gh, gw, -1)
    medians = np.median(cells, axis=-1)
    row, col = np.unravel_index(int(medians.argmax()), medians.shape)
    assert (medians == medians[row, col]).sum() == 1, medians  # one brightest cell, no tie
    return int(row), int(col)


def ring_heights(chart: Image.Image, axes, heads: int) -> np.ndarray:
    """(layers, heads): the picture row of the centre of each head's ring at each layer of a
    distance chart drawn on `axes` (charts.distance_axes), read from the picture alone: the
    mean row of the pixels near the head's colour inside the axes, in the column band where
    the chart puts that head's rings (the x of a dot does not depend on the data)."""
    rgb = np.asarray(chart).astype(int)
    height = rgb.shape[0]
    ax = axes.dots.axes
    x0, y0, x1, y1 = ax.bbox.extents  # display pixels, y upwards
    xs = ax.transData.transform(np.column_stack([axes.layers, np.zeros_like(axes.layers)]))[:, 0]
    spacing = np.diff(xs[:heads]).min() if heads > 1 else np.inf
    diameter = np.sqrt(axes.dots.get_sizes()[0]) * axes.canvas.figure.dpi / 72  # marker size is in points²
    half = min(spacing / 2, diameter)
    colours = np.asarray(axes.dots.get_edgecolors()[:, :3] * 255)
    rows, cols = np.mgrid[:height, : rgb.shape[1]]
    inside = (cols > x0 + 1) & (cols < x1 - 1) & (rows > height - y1 + 1) & (rows < height - y0 - 1)
    found = []
    for x, colour in zip(xs, colours, strict=True):
        near = (np.abs(rgb - colour).sum(-1) < 60) & inside & (np.abs(cols - x) <= half)
        assert near.sum() >= 8, (x, colour)  # a ring is drawn there
        found.append(rows[near].mean() + 0.5)  # a pixel's centre
    return np.array(found).reshape(-1, heads)


def expected_ring_heights(axes, distance: np.ndarray, height: int) -> np.ndarray:
    """(layers, heads): the picture row where `axes` puts the ring of each distance."""
    points = np.column_stack([axes.layers, distance.reshape(-1)])
    return (height - axes.dots.axes.transData.transform(points)[:, 1]).reshape(distance.shape)


def drawn_peaks(picture: Image.Image, side: int, cmap: str, grid: tuple[int, int]) -> list[tuple[int, int]]:
    """The `brightest_cell` of each `side` x `side` map tile (`squares`), in reading order."""
    pixels = np.asarray(picture)
    return [brightest_cell(pixels[y : y + side, x : x + side], cmap, grid) for y, x in squares(picture, side)]


def has_rising_bar(picture: np.ndarray, cmap: str) -> bool:
    """Whether some column of `picture` (H, W, 3) climbs `cmap` from its bottom colour (at the
    bottom) to its top colour (above), never down, over more than 200 pixels: a matplotlib
    colour bar, which it resamples, so each pixel is read as its nearest colormap colour."""
    colours = colormaps[cmap](np.arange(256), bytes=True)[:, :3].astype(float)
    distance = np.linalg.norm(picture.astype(float)[:, :, None] - colours[None, None], axis=-1)  # (H, W, 256)
    on_map = distance.min(axis=-1) < 3

    def climbs(column: int) -> bool:
        levels = distance[on_map[:, column], column].argmin(axis=-1)[::-1]  # bottom to top
        return len(levels) > 200 and levels[0] < 3 and levels[-1] > 252 and bool((np.diff(levels) >= 0).all())

    return any(climbs(column) for column in range(picture.shape[1]))


SERIES = {"train": (31, 119, 180), "val": (255, 127, 14), "steps": (153, 153, 153)}  # C0, C1, the "0.6" grey


def _longest_run(dark: np.ndarray) -> np.ndarray:
    """The longest run of True along the last axis of `dark`, per line."""
    edges = np.diff(np.pad(dark.astype(np.int8), [(0, 0)] * (dark.ndim - 1) + [(1, 1)]), axis=-1)
    longest = np.zeros(dark.shape[:-1], int)
    for index in np.ndindex(*dark.shape[:-1]):
        starts, ends = np.flatnonzero(edges[index] == 1), np.flatnonzero(edges[index] == -1)
        longest[index] = (ends - starts).max(initial=0)
    return longest


def panel_frames(chart: Image.Image, length: int = 100) -> list[tuple[int, int, int, int]]:
    """(top, bottom, left, right) picture pixels inside the frame of each matplotlib panel of
    `chart` side by side, left to right, read from its spines: dark lines unbroken over more
    than `length` pixels (words never are)."""
    dark = np.asarray(chart).astype(int).sum(-1) < 3 * 100
    rows, cols = np.flatnonzero(_longest_run(dark) > length), np.flatnonzero(_longest_run(dark.T) > length)
    top, bottom = int(rows.min()), int(rows.max())
    lefts = [int(c) for i, c in enumerate(cols) if i == 0 or c > cols[i - 1] + 1]  # first column of each spine
    rights = [int(c) for i, c in enumerate(cols) if i == len(cols) - 1 or cols[i + 1] > c + 1]
    return [(top + 2, bottom - 1, left + 2, right - 1) for left, right in zip(lefts[::2], rights[1::2], strict=True)]


def curve_series(curves: Image.Image) -> tuple[set[str], set[str]]:
    """Which series (SERIES) the loss panel and the accuracy panel of `charts.training_curves`
    draw, each found by its colour inside its panel's frame (`panel_frames`; words, outside
    it, have antialiased greys of every level)."""
    rgb = np.asarray(curves).astype(int)
    found = []
    for top, bottom, left, right in panel_frames(curves):
        part = rgb[top:bottom, left:right]
        found.append({name for name, colour in SERIES.items() if (np.abs(part - colour).sum(-1) < 30).sum() >= 20})
    loss, accuracy = found
    return loss, accuracy


def first_line_px(picture: Image.Image) -> int:
    """How tall a picture's first line of text (its title) is drawn, in pixels: the rows from the
    top holding text-coloured pixels, from the top of its tallest letter to the bottom of "y"."""
    rgb = np.asarray(picture.convert("RGB")).astype(int)
    ink = (np.abs(rgb - np.array(canvas.TEXT)).max(axis=-1) < 60).any(axis=1)
    top = int(np.argmax(ink))
    bottom = top + int(np.argmin(ink[top:]))  # the first row after the line with no ink
    return bottom - top
