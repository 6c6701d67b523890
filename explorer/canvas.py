"""The canvas every picture is drawn on: words (one font, at the text size each helper is
given, `px`), colour maps laid over images, colour bars with their ticks and units, tiles in a
mosaic with captions. Rendering only: plain numpy arrays in, PIL images out.

The colour rule (docs/pictures.md): colour starts at 0, so attention 0 is always the
bottom colour of the map; the top is set by `MapStyle.scale`, and every picture of values
carries a colour bar that says what the colours mean, with units.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib import colormaps, get_data_path
from matplotlib.colors import LinearSegmentedColormap, Normalize, TwoSlopeNorm
from matplotlib.ticker import MaxNLocator
from PIL import Image, ImageDraw, ImageFont

COLORMAPS = ("inferno", "viridis", "magma", "plasma", "turbo", "jet", "gray")
SCALES = ("layer", "head", "fixed")
GRID_COLOUR = (255, 255, 255)
MARK_COLOUR = (0, 200, 255)
OWN_SLOT_COLOUR = (0, 0, 0)
BACKGROUND = (255, 255, 255)
TEXT = (30, 30, 30)
GAP = 4  # pixels between tiles
BAR_PX = 12  # thickness of a colour bar
GIF_MAP_COLOURS = 128  # of a GIF frame's 256 palette entries, those kept for the colour map (render.gif_frame)
# DejaVu Sans, the font matplotlib ships and the charts use: unlike PIL's built-in font it
# has ×, → and · . TEXT_PX: the size of every word drawn on a picture; shown at its own size
# or at most 8 % smaller (explorer.views.DISPLAY_WIDTH), it stays at least 12 px on screen.
# PRESENT_TEXT_PX: the presentation mode's (docs/app.md), at least 18 px on a projector even 8 %
# smaller. The text size travels one way: each drawing function that writes words takes it
# (`text_px`, from ui.common.Server.text_px in the app) and hands it to every helper here (`px`).
TEXT_PX = 13
PRESENT_TEXT_PX = 20
# The PCA picture's legend: one colour bar per channel, from black (the component's smallest
# projection) to the pure channel colour (its largest), registered once with matplotlib.
CHANNELS = {"R": "pca_red", "G": "pca_green", "B": "pca_blue"}
for _name, _top in zip(CHANNELS.values(), ((1, 0, 0), (0, 1, 0), (0, 0, 1)), strict=True):
    if _name not in colormaps:
        colormaps.register(LinearSegmentedColormap.from_list(_name, [(0, 0, 0), _top]))
CHART_PT = 9  # the smallest text on a matplotlib chart: 9 pt at 100 dpi is 12.5 px


def chart_words_px(text_px: int = TEXT_PX) -> float:
    """A matplotlib chart's smallest words in px where words are asked `text_px` high: CHART_PT at
    100 dpi, grown by text_px / TEXT_PX as explorer/charts.py grows them (its points or its dpi)."""
    return CHART_PT * 100 / 72 * text_px / TEXT_PX


@functools.lru_cache(maxsize=8)
def _font_of(px: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(os.path.join(get_data_path(), "fonts", "ttf", "DejaVuSans.ttf"), px)


def _line(px: int) -> int:
    """Height of one line of text `px` high."""
    return px + GAP


def text_width(text: str, px: int) -> float:
    """How wide `text` is drawn at `px` (for a layout that must fit its words)."""
    return _width_of(text, px)


@functools.lru_cache(maxsize=4096)
def _width_of(text: str, px: int) -> float:
    return _font_of(px).getlength(text)


@functools.lru_cache(maxsize=2048)
def _text_image(text: str, px: int) -> Image.Image:
    """`text` rendered once on the background colour, one line high. Labels repeat from
    picture to picture ("head 1", "CLS 0.01", tick values), and pasting a cached bitmap
    costs a fraction of FreeType rendering it again, which dominated the heads view."""
    image = Image.new("RGB", (math.ceil(_width_of(text, px)) + 1, px + GAP), BACKGROUND)
    ImageDraw.Draw(image).text((0, 0), text, fill=TEXT, font=_font_of(px))
    return image


def _put_text(canvas: Image.Image, xy: tuple[float, float], text: str, px: int) -> None:
    """Write `text`, `px` high, at `xy` (top left) on a part of `canvas` that is background colour."""
    canvas.paste(_text_image(text, px), (round(xy[0]), round(xy[1])))


@dataclass(frozen=True)
class MapStyle:
    """How an attention map is drawn.

    Colour always starts at 0 (attention 0 is the bottom colour of `cmap`); `scale` sets the
    top: "layer" (default) the largest weight among the heads of the layer drawn, one scale
    shared by all its heads so they can be compared; "head" each head's own maximum
    (printed under its tile); "fixed" 1. "raw" is the map alone at full opacity: exactly
    what the overlay shows at opacity 1."""

    cmap: str = "inferno"
    opacity: float = 0.6  # weight of the heat map over the image (ignored when raw)
    smooth: bool = False  # bilinear instead of nearest (honest patch blocks) upsampling
    raw: bool = False  # the heat map alone, without the image underneath
    scale: str = "layer"  # one of SCALES

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"colour scale must be one of {', '.join(SCALES)}; got {self.scale!r}")


def scale_tops(maps: np.ndarray, scale: str) -> np.ndarray:
    """The value drawn in the top colour for each map of one layer's (..., gh, gw) stack:
    shape maps.shape[:-2]. "layer": the stack's largest value, "head": each map's own,
    "fixed": 1."""
    if scale == "fixed":
        return np.ones(maps.shape[:-2])
    if scale == "head":
        return maps.max(axis=(-2, -1))
    return np.full(maps.shape[:-2], maps.max())


def scale_for(size: tuple[int, int], target: int) -> int:
    """Integer magnification that brings the longer side of `size` close to `target` pixels
    (at least 1, so large images are shown as they are and small ones as crisp blocks)."""
    return max(1, round(target / max(size)))


def enlarge(image: np.ndarray, scale: int) -> np.ndarray:
    """Magnify an (H, W, 3) image by an integer factor with nearest neighbour: every input
    pixel becomes a scale x scale block, so pixel and patch boundaries stay exact."""
    if scale == 1:
        return image
    h, w = image.shape[:2]
    return np.asarray(Image.fromarray(image).resize((w * scale, h * scale), Image.Resampling.NEAREST))


def fitted_size(grid: tuple[int, int], target: int) -> tuple[int, int]:
    """(H, W) of `fit_to_grid`'s picture for a (gh, gw) grid: known before it is drawn."""
    gh, gw = grid
    cell = max(1, math.ceil(target / max(gh, gw)))
    return gh * cell, gw * cell


def fit_to_grid(image: np.ndarray, grid: tuple[int, int], target: int) -> np.ndarray:
    """Resize an (H, W, 3) image so its longer side is at least `target` pixels (the
    nearest whole number of cells above) and each side is a whole number of cells of the
    (gh, gw) patch grid, so nearest-upsampled maps land exactly on patch boundaries.
    Upscaling is nearest (crisp pixels), downscaling Lanczos."""
    h, w = fitted_size(grid, target)
    resample = Image.Resampling.NEAREST if w >= image.shape[1] else Image.Resampling.LANCZOS
    return np.asarray(Image.fromarray(image).resize((w, h), resample))


def heatmap(
    amap: np.ndarray, size: tuple[int, int], style: MapStyle, top: float | None = None, centre: float | None = None
) -> np.ndarray:
    """A (gh, gw) map upsampled to `size` (H, W) and coloured from 0 (bottom colour) to
    `top` (top colour; default: the map's own maximum, or 1 on the fixed scale). With a
    `centre`, two linear halves meet there: 0 to `centre` fill the bottom half of the colour
    map and `centre` to `top` the top half (matplotlib's TwoSlopeNorm), so a diverging map
    shows `centre` in its middle colour."""
    if top is None:
        top = float(scale_tops(amap, style.scale))
    h, w = size
    resample = Image.Resampling.BILINEAR if style.smooth else Image.Resampling.NEAREST
    values = np.asarray(amap, np.float32)  # PIL's mode F is float32
    plane = np.asarray(Image.fromarray(values, mode="F").resize((w, h), resample))
    if centre is None:
        position = plane / (top if top > 0 else 1.0)
    else:
        position = np.asarray(TwoSlopeNorm(centre, 0.0, top)(plane))
    rgba = colormaps[style.cmap](np.clip(position, 0.0, 1.0), bytes=True)
    return rgba[..., :3]


def overlay(
    image: np.ndarray, amap: np.ndarray, style: MapStyle, top: float | None = None, centre: float | None = None
) -> np.ndarray:
    """Draw a (gh, gw) attention map over an (H, W, 3) image (or alone, if `style.raw`),
    coloured from 0 to `top` (see `heatmap`, also for `centre`).

    The image must already be the size the map covers, e.g. the model input enlarged by an
    integer factor, so that each patch maps to a whole block of pixels."""
    heat = heatmap(amap, image.shape[:2], style, top, centre)
    if style.raw:
        return heat
    a = float(np.clip(style.opacity, 0.0, 1.0))
    return (image.astype(np.float32) * (1.0 - a) + heat.astype(np.float32) * a + 0.5).astype(np.uint8)


def patch_grid_image(
    image: np.ndarray, patch_size: int, scale: int, mark: tuple[int, int] | None = None
) -> Image.Image:
    """The model input enlarged by `scale`, with the patch grid drawn and, optionally, the
    patch at grid position `mark` = (row, col) outlined."""
    big = Image.fromarray(enlarge(image, scale))
    draw = ImageDraw.Draw(big)
    step = patch_size * scale
    w, h = big.size
    for x in range(step, w, step):
        draw.line([(x, 0), (x, h - 1)], fill=GRID_COLOUR, width=1)
    for y in range(step, h, step):
        draw.line([(0, y), (w - 1, y)], fill=GRID_COLOUR, width=1)
    if mark is not None:
        row, col = mark
        box = [col * step, row * step, (col + 1) * step - 1, (row + 1) * step - 1]
        draw.rectangle(box, outline=MARK_COLOUR, width=3)
    return big


@functools.lru_cache(maxsize=512)
def _wrap(text: str, width: int, px: int) -> tuple[str, ...]:
    """Greedy word wrap of each paragraph of `text`, `px` high, to lines at most `width` pixels wide."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if line and _width_of(candidate, px) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return tuple(lines)


def text_block(text: str, width: int, px: int) -> Image.Image:
    """`text`, `px` high, wrapped to `width` pixels, on the background colour."""
    lines = _wrap(text, width - GAP, px)
    block = Image.new("RGB", (width, len(lines) * _line(px) + GAP // 2), BACKGROUND)
    for i, line in enumerate(lines):
        _put_text(block, (GAP // 2, i * _line(px) + 1), line, px)
    return block


def stack(parts: Sequence[Image.Image]) -> Image.Image:
    """Parts one under another, left-aligned, with a small gap."""
    width = max(p.width for p in parts)
    canvas = Image.new("RGB", (width, sum(p.height for p in parts) + GAP * (len(parts) - 1)), BACKGROUND)
    y = 0
    for part in parts:
        canvas.paste(part, (0, y))
        y += part.height + GAP
    return canvas


def titled(title: str, body: Image.Image, px: int, footer: Sequence[Image.Image] = (), note: str = "") -> Image.Image:
    """A picture: wrapped title, the body, footer parts (colour bars), then a wrapped note, words `px` high."""
    width = max([body.width, *(f.width for f in footer)])
    parts = ([text_block(title, width, px)] if title else []) + [body, *footer]
    return stack(parts + ([text_block(note, width, px)] if note else []))


@functools.lru_cache(maxsize=64)
def map_gradient(cmap: str, length: int) -> np.ndarray:
    """(length, 3) uint8: `cmap` from its bottom colour to its top colour."""
    return colormaps[cmap](np.linspace(0.0, 1.0, length), bytes=True)[:, :3]


def number(value: float) -> str:
    """A value as pictures print it: 3 significant digits, a true minus sign."""
    return f"{value:.3g}".replace("-", "−")


@functools.lru_cache(maxsize=8)
def _locator(nbins: int, steps: tuple[float, ...] | None) -> MaxNLocator:
    """One MaxNLocator a setting: making one took a third of a tick's time, and the page's rows
    pick a colour bar's ticks for every query they send (explorer/page_text.py)."""
    return MaxNLocator(nbins=nbins, steps=steps)


def _ticks(low: float, high: float, nbins: int = 4, steps: tuple[float, ...] | None = None) -> list[float]:
    """Round values from `low` to `high` (both ends within rounding), `steps` as MaxNLocator's."""
    values = _locator(nbins, steps).tick_values(low, high)
    return [float(t) for t in values if low - 1e-9 * abs(low) <= t <= high + 1e-9 * abs(high)]


HALF_STEPS = (1, 2, 5, 10)  # 0.5, 1, 2, 5 away from the centre, never 0.4 or 2.5 (the top is then a tick)


def bar_ticks(low: float, high: float, centre: float | None = None) -> list[float]:
    """The ticks of a colour bar from `low` to `high`. With a `centre` (a two-slope bar, each
    half linear) the centre is a tick and each half steps evenly away from it by a round
    amount ("0, 0.5, 1, 1.5, 2"), so no tick crowds the centre and none is skipped."""
    if centre is None:
        return _ticks(low, high)
    below = [centre - t for t in _ticks(0.0, centre - low, 2, HALF_STEPS)]
    above = [centre + t for t in _ticks(0.0, high - centre, 3, HALF_STEPS)]
    return sorted({round(t, 12) for t in below + above})


def bar_text(low: float, high: float, centre: float | None = None) -> dict[str, list]:
    """What a colour bar from `low` to `high` writes, decided once for the server's PNG
    (`colour_bar`) and the page (explorer/page_text.py sends it; ui/js/canvas.js paints it):
    {"ends": [its ends' numbers, which set its margins], "ticks": [[value, its number], ...]}
    (`bar_ticks`). Where each tick goes along the bar is the painter's: the value's place in the
    bar's colours, at its length in pixels."""
    return {"ends": [number(low), number(high)], "ticks": [[t, number(t)] for t in bar_ticks(low, high, centre)]}


BAR_WIDTH = 320  # a colour bar's width under a narrower picture: room for its ticks and its label


def kept_ticks(marks: list[tuple[int, str]], width_of: Callable[[str], float]) -> list[tuple[int, str]]:
    """The ticks ([(x, words)], left to right) whose words a bar has room for: one whose words would
    come within GAP of the last kept one's is left out (a narrow bar never prints "0.080.16"); the
    page's painter does the same (ui/js/layout.js, barMarks)."""
    kept, right = [], -math.inf
    for x, text in marks:
        half = width_of(text) / 2
        if x - half >= right + GAP:
            kept.append((x, text))
            right = x + half
    return kept


def colour_bar(
    cmap: str,
    low: float,
    high: float,
    label: str,
    px: int,
    width: int = BAR_WIDTH,
    centre: float | None = None,
    mark: tuple[float, str] | None = None,
) -> Image.Image:
    """A horizontal colour bar `width` pixels wide: the colormap from `low` (left, its bottom
    colour) to `high` (right), ticks at round values, and `label` (what the colours mean,
    with units) wrapped under it, its words `px` high. With a `centre` (see `heatmap`), the middle of the bar is
    `centre` and each half is linear. `mark` = (value, text) points at a value from above
    the bar ("▼ uniform 0.0156")."""
    words = bar_text(low, high, centre)
    (low_text, high_text), ticks = words["ends"], words["ticks"]
    pad = GAP + int(_width_of(low_text, px)) // 2
    length = max(width - pad - int(_width_of(high_text, px)) // 2 - GAP, 2)
    position = Normalize(low, high) if centre is None else TwoSlopeNorm(centre, low, high)
    top = _line(px) if mark else 0
    bar = Image.new("RGB", (width, top + BAR_PX + 4 + _line(px)), BACKGROUND)
    bar.paste(Image.fromarray(np.repeat(map_gradient(cmap, length)[None], BAR_PX, axis=0)), (pad, top))
    draw = ImageDraw.Draw(bar)

    def x_of(value: float) -> int:
        return pad + round(float(np.clip(position(value), 0.0, 1.0)) * (length - 1))

    for x, text in kept_ticks([(x_of(t), text) for t, text in ticks], lambda text: _width_of(text, px)):
        draw.line([(x, top + BAR_PX), (x, top + BAR_PX + 3)], fill=TEXT)
        _put_text(bar, (x - _width_of(text, px) / 2, top + BAR_PX + 4), text, px)
    if mark:
        _put_mark(bar, x_of(mark[0]), mark[1], px)
    return stack([bar, text_block(label, width, px)])


def _put_mark(bar: Image.Image, x: int, text: str, px: int) -> None:
    """ "▼ text" (or "text ▼" near the right end) on the top line of `bar`, the ▼ over `x`."""
    arrow = _width_of("▼", px)
    if x + arrow / 2 + _width_of(f" {text}", px) <= bar.width:
        _put_text(bar, (x - arrow / 2, 0), f"▼ {text}", px)
    else:
        _put_text(bar, (x + arrow / 2 - _width_of(f"{text} ▼", px), 0), f"{text} ▼", px)


def row_bar(cmap: str, top_text: str, height: int, px: int) -> np.ndarray:
    """A compact vertical colour bar for one row of tiles: bottom colour at the bottom
    (labelled 0), top colour at the top (labelled `top_text`), its words `px` high."""
    column = map_gradient(cmap, height)[::-1]  # top of the picture = top of the scale
    width = BAR_PX + GAP + int(max(_width_of(top_text, px), _width_of("0", px))) + 2
    bar = Image.new("RGB", (width, height), BACKGROUND)
    bar.paste(Image.fromarray(np.repeat(column[:, None], BAR_PX, axis=1)), (0, 0))
    _put_text(bar, (BAR_PX + GAP, 0), top_text, px)
    _put_text(bar, (BAR_PX + GAP, height - px - 2), "0", px)
    return np.asarray(bar)


TOP = "{top}"  # where `scale_text` leaves the layer scale's top, written by `number`


def scale_text(scale: str, unit: str, scope: str, shared: str = "all its maps") -> str:
    """The label of a colour bar on `scale` (SCALES), with TOP where the shared top's number goes
    (`scale_legend` writes it in; the page writes its bar's top there, ui/js/drawn.js). `scope`
    names what one shared top covers ("this layer", "this map"), `shared` what shares it ("every frame")."""
    if scale == "head":
        return f"colour: {unit} as a share of each head's own maximum (per-head stretch, printed under each tile)"
    if scale == "fixed":
        return f"colour: {unit}, fixed scale from 0 to 1"
    return f"colour: {unit} from 0 to {TOP}, the largest in {scope} (one scale for {shared})"


def scale_legend(style: MapStyle, top: float, unit: str, scope: str, shared: str = "all its maps") -> tuple[float, str]:
    """The top of a colour bar for `style.scale` (`top` on the layer scale, else 1) and its label
    (`scale_text`)."""
    high = top if style.scale == "layer" else 1.0
    return high, scale_text(style.scale, unit, scope, shared).replace(TOP, number(high))


def _label_width(labels: Sequence[str], px: int) -> int:
    return max((int(_width_of(s, px)) for s in labels), default=0)


def mosaic(
    tiles: Sequence[Sequence[np.ndarray]], px: int, row_labels: Sequence[str] = (), col_labels: Sequence[str] = ()
) -> Image.Image:
    """Lay (h, w, 3) tiles out in rows, with optional row and column labels `px` high. Each
    column is as wide as its widest tile, each row as tall as its tallest."""
    ncols = max(len(r) for r in tiles)
    widths = _column_widths(tiles)
    heights = [max(t.shape[0] for t in row) for row in tiles]
    left = _label_width(row_labels, px) + 2 * GAP if row_labels else 0
    top = _line(px) if col_labels else 0
    xs = [left + sum(widths[:c]) + c * GAP for c in range(ncols)]
    canvas = Image.new("RGB", (xs[-1] + widths[-1] + GAP, top + sum(heights) + len(tiles) * GAP), BACKGROUND)
    for c, label in enumerate(col_labels):
        _put_text(canvas, (xs[c], 0), label, px)
    y = top
    for r, row in enumerate(tiles):
        if r < len(row_labels):
            _put_text(canvas, (GAP, y + row[0].shape[0] // 2 - px // 2), row_labels[r], px)
        for c, tile in enumerate(row):
            canvas.paste(Image.fromarray(tile), (xs[c], y))
        y += heights[r] + GAP
    return canvas


def _column_widths(tiles: Sequence[Sequence[np.ndarray]]) -> list[int]:
    ncols = max(len(r) for r in tiles)
    return [max(row[c].shape[1] for row in tiles if c < len(row)) for c in range(ncols)]


def mosaic_width(tiles: Sequence[Sequence[np.ndarray]], px: int, row_labels: Sequence[str] = ()) -> int:
    """The width `mosaic` draws these tiles and row labels at, without drawing them."""
    widths = _column_widths(tiles)
    left = _label_width(row_labels, px) + 2 * GAP if row_labels else 0
    return left + sum(widths) + len(widths) * GAP


def tile_caption(tile: np.ndarray, lines: Sequence[str], px: int) -> np.ndarray:
    """A tile with caption lines `px` high underneath (so labels survive wrapping into rows). A caption
    wider than the tile widens it with background on the right rather than being cut off."""
    if not lines:
        return tile
    h, w = tile.shape[:2]
    width = max(w, math.ceil(max(_width_of(line, px) for line in lines)) + 1)
    framed = Image.new("RGB", (width, h + len(lines) * _line(px)), BACKGROUND)
    framed.paste(Image.fromarray(tile), (0, 0))
    for i, line in enumerate(lines):
        _put_text(framed, (0, h + i * _line(px) + 1), line, px)
    return np.asarray(framed)
