"""Pictures of attention: overlays, tile grids, charts and animations. Rendering only.

Every function takes plain numpy arrays (an RGB image as (H, W, 3) uint8, attention maps
as (..., gh, gw) floats laid out row-major over the patch grid) and returns a PIL image.
Nothing here calls a model, so every picture can be tested with hand-made maps.

Colour comes from matplotlib colormaps, resampling from PIL: "nearest" upsampling shows
each patch as the honest square block the model actually saw; "smooth" (bilinear) looks
nicer but invents detail finer than a patch.

The colour rule (docs/pictures.md): colour starts at 0, so attention 0 is always the
bottom colour of the map; the top is set by `MapStyle.scale`, and every picture of values
carries a colour bar that says what the colours mean, with units.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import colormaps, get_data_path
from matplotlib.colors import LinearSegmentedColormap, Normalize, TwoSlopeNorm
from matplotlib.ticker import MaxNLocator
from PIL import Image, ImageDraw, ImageFont

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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
# smaller. A picture's text size is its MapStyle's `text_px`, set for the drawing by `text_size`.
TEXT_PX = 13
PRESENT_TEXT_PX = 20
# The PCA picture's legend: one colour bar per channel, from black (the component's smallest
# projection) to the pure channel colour (its largest), registered once with matplotlib.
CHANNELS = {"R": "pca_red", "G": "pca_green", "B": "pca_blue"}
for _name, _top in zip(CHANNELS.values(), ((1, 0, 0), (0, 1, 0), (0, 0, 1)), strict=True):
    if _name not in colormaps:
        colormaps.register(LinearSegmentedColormap.from_list(_name, [(0, 0, 0), _top]))
CHART_PT = 9  # the smallest text on a matplotlib chart: 9 pt at 100 dpi is 12.5 px
_TEXT_PX: ContextVar[int] = ContextVar("text_px", default=TEXT_PX)


@contextlib.contextmanager
def text_size(px: int) -> Iterator[None]:
    """Every word drawn inside is `px` high (the picture's MapStyle.text_px)."""
    token = _TEXT_PX.set(px)
    try:
        yield
    finally:
        _TEXT_PX.reset(token)


@functools.lru_cache(maxsize=8)
def _font_of(px: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(os.path.join(get_data_path(), "fonts", "ttf", "DejaVuSans.ttf"), px)


def _px() -> int:
    return _TEXT_PX.get()


def _line() -> int:
    """Height of one line of text at the current size."""
    return _px() + GAP


def _text_width(text: str) -> float:
    return _width_of(text, _px())


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


def _put_text(canvas: Image.Image, xy: tuple[float, float], text: str) -> None:
    """Write `text` at `xy` (top left) on a part of `canvas` that is background colour."""
    canvas.paste(_text_image(text, _px()), (round(xy[0]), round(xy[1])))


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
    text_px: int = TEXT_PX  # every word on the picture: PRESENT_TEXT_PX in the presentation mode

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"colour scale must be one of {', '.join(SCALES)}; got {self.scale!r}")
        if not TEXT_PX <= self.text_px <= 2 * PRESENT_TEXT_PX:
            raise ValueError(f"text size must be from {TEXT_PX} to {2 * PRESENT_TEXT_PX} px; got {self.text_px!r}")


def _style_text(draw: Callable[..., Image.Image]) -> Callable[..., Image.Image]:
    """`draw` with its words at the text size of the MapStyle it is given (`MapStyle.text_px`)."""

    @functools.wraps(draw)
    def drawn(*args: object, **kwargs: object) -> Image.Image:
        style = next(a for a in (*args, *kwargs.values()) if isinstance(a, MapStyle))
        with text_size(style.text_px):
            return draw(*args, **kwargs)

    return drawn


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


def fit_to_grid(image: np.ndarray, grid: tuple[int, int], target: int) -> np.ndarray:
    """Resize an (H, W, 3) image so its longer side is at least `target` pixels (the
    nearest whole number of cells above) and each side is a whole number of cells of the
    (gh, gw) patch grid, so nearest-upsampled maps land exactly on patch boundaries.
    Upscaling is nearest (crisp pixels), downscaling Lanczos."""
    gh, gw = grid
    cell = max(1, math.ceil(target / max(gh, gw)))
    w, h = gw * cell, gh * cell
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


def _wrap(text: str, width: int) -> tuple[str, ...]:
    """Greedy word wrap of each paragraph of `text` to lines at most `width` pixels wide."""
    return _wrap_at(text, width, _px())


@functools.lru_cache(maxsize=512)
def _wrap_at(text: str, width: int, px: int) -> tuple[str, ...]:
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if line and _text_width(candidate) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return tuple(lines)


def text_block(text: str, width: int) -> Image.Image:
    """`text` wrapped to `width` pixels, on the background colour."""
    lines = _wrap(text, width - GAP)
    block = Image.new("RGB", (width, len(lines) * _line() + GAP // 2), BACKGROUND)
    for i, line in enumerate(lines):
        _put_text(block, (GAP // 2, i * _line() + 1), line)
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


def _titled(title: str, body: Image.Image, footer: Sequence[Image.Image] = (), note: str = "") -> Image.Image:
    """A picture: wrapped title, the body, footer parts (colour bars), then a wrapped note."""
    width = max([body.width, *(f.width for f in footer)])
    parts = ([text_block(title, width)] if title else []) + [body, *footer]
    return stack(parts + ([text_block(note, width)] if note else []))


@functools.lru_cache(maxsize=64)
def _gradient(cmap: str, length: int) -> np.ndarray:
    """(length, 3) uint8: `cmap` from its bottom colour to its top colour."""
    return colormaps[cmap](np.linspace(0.0, 1.0, length), bytes=True)[:, :3]


def number(value: float) -> str:
    """A value as pictures print it: 3 significant digits, a true minus sign."""
    return f"{value:.3g}".replace("-", "−")


def _ticks(low: float, high: float, nbins: int = 4, steps: Sequence[float] | None = None) -> list[float]:
    """Round values from `low` to `high` (both ends within rounding), `steps` as MaxNLocator's."""
    values = MaxNLocator(nbins=nbins, steps=steps).tick_values(low, high)
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


def colour_bar(
    cmap: str,
    low: float,
    high: float,
    label: str,
    width: int = 320,
    centre: float | None = None,
    mark: tuple[float, str] | None = None,
) -> Image.Image:
    """A horizontal colour bar `width` pixels wide: the colormap from `low` (left, its bottom
    colour) to `high` (right), ticks at round values, and `label` (what the colours mean,
    with units) wrapped under it. With a `centre` (see `heatmap`), the middle of the bar is
    `centre` and each half is linear. `mark` = (value, text) points at a value from above
    the bar ("▼ uniform 0.0156")."""
    pad = GAP + int(_text_width(number(low))) // 2
    length = max(width - pad - int(_text_width(number(high))) // 2 - GAP, 2)
    ticks = bar_ticks(low, high, centre)
    position = Normalize(low, high) if centre is None else TwoSlopeNorm(centre, low, high)
    top = _line() if mark else 0
    bar = Image.new("RGB", (width, top + BAR_PX + 4 + _line()), BACKGROUND)
    bar.paste(Image.fromarray(np.repeat(_gradient(cmap, length)[None], BAR_PX, axis=0)), (pad, top))
    draw = ImageDraw.Draw(bar)

    def x_of(value: float) -> int:
        return pad + round(float(np.clip(position(value), 0.0, 1.0)) * (length - 1))

    for t in ticks:
        x = x_of(t)
        draw.line([(x, top + BAR_PX), (x, top + BAR_PX + 3)], fill=TEXT)
        text = number(t)
        _put_text(bar, (x - _text_width(text) / 2, top + BAR_PX + 4), text)
    if mark:
        _put_mark(bar, x_of(mark[0]), mark[1])
    return stack([bar, text_block(label, width)])


def _put_mark(bar: Image.Image, x: int, text: str) -> None:
    """ "▼ text" (or "text ▼" near the right end) on the top line of `bar`, the ▼ over `x`."""
    arrow = _text_width("▼")
    if x + arrow / 2 + _text_width(f" {text}") <= bar.width:
        _put_text(bar, (x - arrow / 2, 0), f"▼ {text}")
    else:
        _put_text(bar, (x + arrow / 2 - _text_width(f"{text} ▼"), 0), f"{text} ▼")


def _row_bar(cmap: str, top_text: str, height: int) -> np.ndarray:
    """A compact vertical colour bar for one row of tiles: bottom colour at the bottom
    (labelled 0), top colour at the top (labelled `top_text`)."""
    column = _gradient(cmap, height)[::-1]  # top of the picture = top of the scale
    width = BAR_PX + GAP + int(max(_text_width(top_text), _text_width("0"))) + 2
    bar = Image.new("RGB", (width, height), BACKGROUND)
    bar.paste(Image.fromarray(np.repeat(column[:, None], BAR_PX, axis=1)), (0, 0))
    _put_text(bar, (BAR_PX + GAP, 0), top_text)
    _put_text(bar, (BAR_PX + GAP, height - _px() - 2), "0")
    return np.asarray(bar)


def _scale_legend(
    style: MapStyle, top: float, unit: str, scope: str, shared: str = "all its maps"
) -> tuple[float, str]:
    """The top of a colour bar for `style.scale` and its label. `scope` names what one
    shared top covers ("this layer", "this map"), `shared` what shares it ("every frame")."""
    if style.scale == "head":
        return 1.0, f"colour: {unit} as a share of each head's own maximum (per-head stretch, printed under each tile)"
    if style.scale == "fixed":
        return 1.0, f"colour: {unit}, fixed scale from 0 to 1"
    return top, f"colour: {unit} from 0 to {number(top)}, the largest in {scope} (one scale for {shared})"


def _label_width(labels: Sequence[str]) -> int:
    return max((int(_text_width(s)) for s in labels), default=0)


def mosaic(
    tiles: Sequence[Sequence[np.ndarray]], row_labels: Sequence[str] = (), col_labels: Sequence[str] = ()
) -> Image.Image:
    """Lay (h, w, 3) tiles out in rows, with optional row and column labels. Each column is
    as wide as its widest tile, each row as tall as its tallest."""
    ncols = max(len(r) for r in tiles)
    widths = [max(row[c].shape[1] for row in tiles if c < len(row)) for c in range(ncols)]
    heights = [max(t.shape[0] for t in row) for row in tiles]
    left = _label_width(row_labels) + 2 * GAP if row_labels else 0
    top = _line() if col_labels else 0
    xs = [left + sum(widths[:c]) + c * GAP for c in range(ncols)]
    canvas = Image.new("RGB", (xs[-1] + widths[-1] + GAP, top + sum(heights) + len(tiles) * GAP), BACKGROUND)
    for c, label in enumerate(col_labels):
        _put_text(canvas, (xs[c], 0), label)
    y = top
    for r, row in enumerate(tiles):
        if r < len(row_labels):
            _put_text(canvas, (GAP, y + row[0].shape[0] // 2 - _px() // 2), row_labels[r])
        for c, tile in enumerate(row):
            canvas.paste(Image.fromarray(tile), (xs[c], y))
        y += heights[r] + GAP
    return canvas


def _caption(tile: np.ndarray, lines: Sequence[str]) -> np.ndarray:
    """A tile with caption lines underneath (so labels survive wrapping into rows). A caption
    wider than the tile widens it with background on the right rather than being cut off."""
    if not lines:
        return tile
    h, w = tile.shape[:2]
    width = max(w, math.ceil(max(_text_width(line) for line in lines)) + 1)
    framed = Image.new("RGB", (width, h + len(lines) * _line()), BACKGROUND)
    framed.paste(Image.fromarray(tile), (0, 0))
    for i, line in enumerate(lines):
        _put_text(framed, (0, h + i * _line() + 1), line)
    return np.asarray(framed)


PREFIX_PER_LINE = 2  # prefix shares per caption line, so five (CLS + 4 registers) fit under a small tile


def short_token_name(name: str) -> str:
    """How a prefix token ('cls', 'dist', 'reg1', ...; AttentionMaps.prefix_names) is named on a picture."""
    return "CLS" if name == "cls" else name


def prefix_lines(shares: np.ndarray, names: Sequence[str] = ()) -> list[str]:
    """A head's attention to the prefix tokens the maps leave out, each token by name:
    ["CLS 0.42 · dist 0.10", "reg1 0.05"]. Without names: "CLS 0.42" (the rest of several
    prefix tokens summed)."""
    if len(names) != len(shares):
        text = f"CLS {shares[0]:.2f}"
        return [text if len(shares) == 1 else f"{text} + {len(shares) - 1} more {shares[1:].sum():.2f}"]
    parts = [f"{short_token_name(n)} {s:.2f}" for n, s in zip(names, shares, strict=True)]
    return [" · ".join(parts[i : i + PREFIX_PER_LINE]) for i in range(0, len(parts), PREFIX_PER_LINE)]


def _tile_lines(
    name: str, top: float, style: MapStyle, prefix: np.ndarray | None, prefix_names: Sequence[str] = ()
) -> list[str]:
    """Caption lines of one tile: its name, its own maximum when each head is stretched
    alone (a line of its own: beside the name it widened a small tile, and with it the
    picture, which the page then shrank), and its attention to each prefix token."""
    first = [part for part in (name, f"max {top:.2g}" if style.scale == "head" else "") if part]
    shares = prefix_lines(prefix, prefix_names) if prefix is not None and len(prefix) else []
    return first + shares


@_style_text
def head_grid(
    image: np.ndarray,
    maps: np.ndarray,
    style: MapStyle,
    title: str = "",
    max_cols: int = 6,
    prefix: np.ndarray | None = None,
    note: str = "",
    prefix_names: Sequence[str] = (),
    mark: tuple[int, int] | None = None,
    layers_top: tuple[float, int] | None = None,
    tops: np.ndarray | None = None,
    scope: str = "this layer",
) -> Image.Image:
    """One tile per head of one layer: `maps` is (heads, gh, gw), `image` the enlarged model
    input, `prefix` (heads, prefix_tokens) each head's attention to the tokens the maps
    leave out (printed under its tile, by `prefix_names`), `mark` the query patch, outlined
    in every tile. A colour bar and `note` go underneath. `tops` (heads,) is the value drawn
    in each head's top colour, by default `scale_tops` of these maps; a video passes its
    whole clip's, and `scope` says what the shared top covers. `layers_top` = (top, layers):
    on the "layer" scale, colour up to `top`, the largest weight of that many layers, instead."""
    tops, shared = scale_tops(maps, style.scale) if tops is None else tops, "all its maps"
    if layers_top is not None and style.scale == "layer":
        tops, scope, shared = np.full_like(tops, layers_top[0]), f"all {layers_top[1]} layers", "every frame"
    grid = maps.shape[-2:]
    tiles = [
        _caption(
            outline_patches(overlay(image, m, style, t), grid, [mark] if mark else []),
            _tile_lines(f"head {i + 1}", t, style, None if prefix is None else prefix[i], prefix_names),
        )
        for i, (m, t) in enumerate(zip(maps, tops, strict=True))
    ]
    grid = mosaic([tiles[i : i + max_cols] for i in range(0, len(tiles), max_cols)])
    high, label = _scale_legend(style, float(tops.max()), "attention weight", scope, shared)
    return _titled(title, grid, [colour_bar(style.cmap, 0.0, high, label, max(grid.width, 320))], note)


@_style_text
def layers_by_heads(
    image: np.ndarray,
    maps: np.ndarray,
    style: MapStyle,
    title: str = "",
    prefix: np.ndarray | None = None,
    note: str = "",
    prefix_names: Sequence[str] = (),
) -> Image.Image:
    """Every head of every layer at a glance: `maps` is (layers, heads, gh, gw), `prefix`
    (layers, heads, prefix_tokens). Each row (a layer) ends with its own colour bar."""
    rows = [
        _scaled_row(image, layer, style, None if prefix is None else prefix[i], prefix_names)
        for i, layer in enumerate(maps)
    ]
    labels = [f"layer {i + 1}" for i in range(maps.shape[0])]
    cols = [f"head {j + 1}" for j in range(maps.shape[1])]
    return _titled(title, mosaic(rows, labels, cols), note=_row_scale_note(style, note))


def _scaled_row(
    image: np.ndarray,
    maps: np.ndarray,
    style: MapStyle,
    prefix: np.ndarray | None,
    prefix_names: Sequence[str] = (),
    named: bool = False,
) -> list[np.ndarray]:
    """One layer's (heads, gh, gw) maps as captioned tiles (each named "head j" if `named`,
    else the columns are labelled) followed by the layer's colour bar."""
    tops = scale_tops(maps, style.scale)
    tiles = [
        _caption(
            overlay(image, m, style, t),
            _tile_lines(
                f"head {j + 1}" if named else "", t, style, None if prefix is None else prefix[j], prefix_names
            ),
        )
        for j, (m, t) in enumerate(zip(maps, tops, strict=True))
    ]
    high, _ = _scale_legend(style, float(tops.max()), "", "")
    return [*tiles, _row_bar(style.cmap, "max" if style.scale == "head" else number(high), image.shape[0])]


def _row_scale_note(style: MapStyle, note: str) -> str:
    scale = {
        "layer": "from 0 (bottom) to the largest weight in that layer (top value printed)",
        "head": "from 0 to each head's own maximum (per-head stretch: heads are not comparable)",
        "fixed": "from 0 to 1 (fixed scale)",
    }[style.scale]
    return f"Colour: attention weight; the bar at the end of each row runs {scale}. {note}".strip()


def layer_frames(
    image: np.ndarray,
    maps: np.ndarray,
    style: MapStyle,
    max_cols: int = 6,
    prefix: np.ndarray | None = None,
    note: str = "",
    prefix_names: Sequence[str] = (),
    mark: tuple[int, int] | None = None,
    one_scale: bool = False,
) -> list[Image.Image]:
    """One head grid per layer, for the animation: `maps` is (layers, heads, gh, gw), each
    frame with the colour bar of its own scale. On the "layer" scale each frame is coloured up
    to its own layer's largest weight, as the screen shows it; with `one_scale`, every frame up
    to the largest weight of all layers, so brightness compares across frames (and the early,
    spread-out layers come out dark)."""
    layers_top = (float(maps.max()), len(maps)) if one_scale else None
    return [
        head_grid(
            image,
            m,
            style,
            f"layer {i + 1} of {len(maps)}",
            max_cols,
            prefix=None if prefix is None else prefix[i],
            note=note,
            prefix_names=prefix_names,
            mark=mark,
            layers_top=layers_top,
        )
        for i, m in enumerate(maps)
    ]


@_style_text
def map_picture(
    image: np.ndarray,
    amap: np.ndarray,
    style: MapStyle,
    title: str,
    unit: str,
    note: str = "",
    uniform: float | None = None,
    keep: np.ndarray | None = None,
) -> Image.Image:
    """One (gh, gw) map over `image` with a title, a colour bar in `unit` and a note.
    `uniform` (the value of every patch were the map's total spread evenly) is marked on the
    colour bar; `keep`, a (gh, gw) bool mask, draws every patch outside it as the photo in a
    light tint without the map (`dim_outside`)."""
    top = float(scale_tops(amap, style.scale))
    high, label = _scale_legend(style, top, unit, "this map")
    drawn = overlay(image, amap, style, top)
    if keep is not None:
        drawn = dim_outside(drawn, keep, image, style.cmap)
    mark = None
    if uniform is not None:  # on the per-map stretch the bar runs in shares of the map's maximum
        mark = (uniform / top if style.scale == "head" and top > 0 else uniform, f"uniform {number(uniform)}")
    bar = colour_bar(style.cmap, 0.0, high, label, max(drawn.shape[1], 320), mark=mark)
    return _titled(title, Image.fromarray(drawn), [bar], note)


RELATIVE_CMAP = "RdBu_r"  # diverging: blue below uniform, white at uniform, red above
RELATIVE_TOP = 2.0  # the relative scale reaches at least 2× uniform, so a near-uniform map stays white


@_style_text
def relative_picture(
    image: np.ndarray, amap: np.ndarray, uniform: float, style: MapStyle, title: str, note: str = ""
) -> Image.Image:
    """One (gh, gw) map as multiples of `uniform` (its total spread evenly over its patches):
    a diverging colour map with uniform in its middle colour, 0 at the bottom and
    max(RELATIVE_TOP, the largest multiple) at the top, so patches above and below an even
    share stand apart however flat the map is."""
    ratio = amap / uniform if uniform > 0 else np.zeros_like(amap)
    top = max(RELATIVE_TOP, float(ratio.max()))
    relative = replace(style, cmap=RELATIVE_CMAP)
    drawn = overlay(image, ratio, relative, top, centre=1.0)
    label = (
        f"colour: × uniform, each patch's value divided by {number(uniform)} (the map's total spread evenly over "
        f"its {amap.size} patches): 1 = uniform (white), blue below, red above"
    )
    bar = colour_bar(RELATIVE_CMAP, 0.0, top, label, max(drawn.shape[1], 320), centre=1.0)
    return _titled(title, Image.fromarray(drawn), [bar], note)


# Patches outside a mask are drawn as the photo in light grey (DIM_LEVELS), without the map's
# colour: dimming them darker read as the bar's bottom colour, "no attention". A colour map made
# of greys gets the pale blue tint instead (DIM_TINTS), so no dimmed pixel is a colour of the bar.
DIM_LEVELS = (150, 230)  # the photo's darkest and lightest grey levels once dimmed
DIM_TINTS = {"light grey": (1.0, 1.0, 1.0), "pale blue": (0.6, 0.78, 1.0)}
DIM_GAP = 40  # the least RGB distance from every colour of the bar a dimmed pixel keeps


def _gap_to_bar(tint: tuple[float, float, float], cmap: str) -> float:
    """The least RGB distance between the dimmed greys in `tint` and the colours of `cmap`."""
    shades = np.linspace(*DIM_LEVELS, 9)[:, None] * np.asarray(tint)  # (9, 3)
    bar = _gradient(cmap, 256).astype(float)  # (256, 3)
    return float(np.linalg.norm(shades[:, None] - bar[None], axis=-1).min())


@functools.lru_cache(maxsize=16)
def dim_tint(cmap: str) -> str:
    """The name of the DIM_TINTS tint for masks over `cmap`: light grey unless the bar holds
    colours within DIM_GAP of it (a map of greys), then the one farthest from the bar."""
    if _gap_to_bar(DIM_TINTS["light grey"], cmap) >= DIM_GAP:
        return "light grey"
    return max(DIM_TINTS, key=lambda name: _gap_to_bar(DIM_TINTS[name], cmap))


def dim_outside(picture: np.ndarray, keep: np.ndarray, photo: np.ndarray, cmap: str) -> np.ndarray:
    """`picture` (H, W, 3), which covers the (gh, gw) grid of `keep` in whole cells, with every
    patch where `keep` is False drawn as `photo` (the same size, without the map) in the light
    `dim_tint(cmap)`: the photo stays recognisable and no dimmed pixel reads as a value."""
    ch, cw = picture.shape[0] // keep.shape[0], picture.shape[1] // keep.shape[1]
    pixels = np.repeat(np.repeat(keep, ch, axis=0), cw, axis=1)  # (gh, gw) -> (H, W)
    luma = photo.astype(float) @ np.array([0.299, 0.587, 0.114])  # (H, W), ITU-R BT.601 grey
    low, high = DIM_LEVELS
    light = low + (high - low) * luma / 255.0
    dimmed = (light[..., None] * np.asarray(DIM_TINTS[dim_tint(cmap)]) + 0.5).astype(np.uint8)
    return np.where(pixels[..., None], picture, dimmed)


def outline_patches(picture: np.ndarray, grid: tuple[int, int], patches: Sequence[tuple[int, int]]) -> np.ndarray:
    """`picture` (H, W, 3), which covers the (gh, gw) grid in whole cells, with the patches
    at 0-based (row, col) outlined in MARK_COLOUR."""
    canvas = Image.fromarray(picture)
    draw = ImageDraw.Draw(canvas)
    ch, cw = picture.shape[0] // grid[0], picture.shape[1] // grid[1]
    for row, col in patches:
        draw.rectangle([col * cw, row * ch, (col + 1) * cw - 1, (row + 1) * ch - 1], outline=MARK_COLOUR, width=2)
    return np.asarray(canvas)


@dataclass(frozen=True)
class MapRow:
    """One row of a shared-scale comparison: a `label`, the picture the maps cover (H, W, 3),
    the maps (n, gh, gw), a caption per map, and patches (row, col) to outline in every map."""

    label: str
    image: np.ndarray
    maps: np.ndarray
    captions: Sequence[Sequence[str]] = ()
    marks: Sequence[tuple[int, int]] = ()


@_style_text
def shared_scale_rows(rows: Sequence[MapRow], style: MapStyle, title: str, unit: str, note: str = "") -> Image.Image:
    """Rows of maps (e.g. several models, one image) on ONE colour scale from 0 to the largest
    value of all of them, whatever `style.scale` says, so every tile compares with every
    other; one colour bar in `unit` underneath (docs/pictures.md)."""
    top = max(float(row.maps.max()) for row in rows)
    tiles = []
    for row in rows:
        drawn = [outline_patches(overlay(row.image, m, style, top), m.shape, row.marks) for m in row.maps]
        captions = list(row.captions) + [[]] * (len(drawn) - len(row.captions))
        tiles.append([_caption(t, c) for t, c in zip(drawn, captions, strict=True)])
    grid = mosaic(tiles, [row.label for row in rows])
    label = f"colour: {unit} from 0 to {number(top)}, the largest of all maps shown (one scale for all)"
    return _titled(title, grid, [colour_bar(style.cmap, 0.0, top, label, max(grid.width, 320))], note)


def save_gif(
    frames: Sequence[Image.Image],
    path: str | os.PathLike,
    seconds_per_frame: float = 0.8,
    cmap: str | None = None,
) -> None:
    """Write frames as an animated GIF that loops forever. Frames are padded to a common
    size (a GIF has one canvas; a taller frame, e.g. one whose colour-bar label wraps onto
    another line, would otherwise be cut off). With `cmap`, each frame's palette keeps that
    colour map's gradient (`gif_frame`), so its colour bar shows no bands."""
    size = (max(f.width for f in frames), max(f.height for f in frames))
    first, *rest = (gif_frame(_padded(f, size), cmap) for f in frames)
    first.save(path, save_all=True, append_images=rest, duration=int(seconds_per_frame * 1000), loop=0)


def gif_frame(frame: Image.Image, cmap: str | None) -> Image.Image:
    """`frame` on a GIF's 256-colour palette. Left to Pillow, a median cut gave a colour bar
    of 256 shades about 20 bands; here GIF_MAP_COLOURS entries are the colour map itself, evenly
    spaced, the others adapt to the frame (median cut), and each pixel takes its nearest entry,
    undithered (no speckles on flat tiles)."""
    if cmap is None:
        return frame
    adaptive = 256 - GIF_MAP_COLOURS
    own = frame.quantize(adaptive, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).getpalette()
    gradient = colormaps[cmap](np.linspace(0.0, 1.0, GIF_MAP_COLOURS), bytes=True)[:, :3]
    palette = Image.new("P", (1, 1))
    palette.putpalette(own[: 3 * adaptive] + gradient.ravel().tolist())
    return frame.quantize(palette=palette, dither=Image.Dither.NONE)


def _padded(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    if image.size == size:
        return image
    canvas = Image.new("RGB", size, BACKGROUND)
    canvas.paste(image, (0, 0))
    return canvas


def position_similarity_tiles(
    similarity: np.ndarray, cmap: str = "viridis", tile_scale: int = 0, compared: str = "position embeddings"
) -> Image.Image:
    """The ViT paper's Fig. 7 (centre): `similarity` is (gh, gw, gh, gw) cosine similarities;
    tile (i, j) shows how similar slot (i, j)'s position embedding is to every slot's, with
    slot (i, j) itself outlined. Rows and columns are numbered from 1; colours run from -1
    to 1 (the colour bar underneath). `compared` names what is compared in the title
    (`views.position_words`: a rotary model's angles)."""
    gh, gw = similarity.shape[:2]
    scale = tile_scale or max(3, math.ceil(64 / max(gh, gw)))  # tiles of at least 64 px
    colour = colormaps[cmap]
    tiles = [
        [
            _own_slot(enlarge(colour((similarity[i, j] + 1.0) / 2.0, bytes=True)[..., :3], scale), i, j, scale)
            for j in range(gw)
        ]
        for i in range(gh)
    ]
    grid = mosaic(tiles, [f"row {i + 1}" for i in range(gh)], [str(j + 1) for j in range(gw)])
    title = (
        f"Cosine similarity of {compared}, grid {gh} rows × {gw} columns (columns numbered along the top). "
        "The tile in row i, column j compares slot (i, j), outlined in black, with every slot."
    )
    return _titled(
        title, grid, [colour_bar(cmap, -1.0, 1.0, "colour: cosine similarity, from −1 to 1", max(grid.width, 320))]
    )


def _own_slot(tile: np.ndarray, row: int, col: int, scale: int) -> np.ndarray:
    """Outline the block of slot (row, col) in a tile enlarged by `scale`."""
    marked = tile.copy()
    y, x = row * scale, col * scale
    marked[[y, y + scale - 1], x : x + scale] = OWN_SLOT_COLOUR
    marked[y : y + scale, [x, x + scale - 1]] = OWN_SLOT_COLOUR
    return marked


def _figure(width: float, height: float, layout: str | None = None) -> Figure:
    """A matplotlib figure (inches at 100 dpi) that is not registered with pyplot, so
    concurrent requests never share global state. Imported here, on first use: the charts
    need matplotlib's whole drawing stack, which costs half a second at start-up."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout=layout)


def _figure_to_image(fig: Figure) -> Image.Image:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3].copy())


def attention_distance_chart(distance: np.ndarray, image_size: tuple[int, int]) -> Image.Image:
    """The ViT paper's Fig. 7 (right) for one image (the paper averages over many): `distance`
    is (layers, heads) in pixels; one ring per head at each layer, coloured by head (legend) and
    shifted sideways by head, so heads at equal distance do not hide each other. The y axis runs from 0 to the image
    diagonal (no distance can be larger), so charts of different images compare at a
    glance; the dashed line, half the diagonal, is labelled in the legend."""
    layers, heads = distance.shape
    return distance_axes(layers, heads, tuple(image_size)).draw(distance)


DOT_SPREAD = 0.3  # how far (in layers) a distance chart's dots sit either side of their layer


class DistanceAxes:
    """The distance chart's axes, drawn once; each chart restores them and draws only the
    dots (matplotlib blitting): a few milliseconds instead of ~60 for a full redraw."""

    def __init__(self, layers: int, heads: int, image_size: tuple[int, int]):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.lines import Line2D

        fig = _figure(6.4, 3.6, layout="constrained")  # constrained: no label or legend is clipped
        ax = fig.add_subplot()
        diagonal = math.hypot(*image_size)
        ax.axhline(diagonal / 2, color="grey", linestyle="--", linewidth=1)
        ax.set_title("for this image (the ViT paper averages many images)", fontsize=CHART_PT)
        ax.set(xlabel="layer (one dot per head, heads side by side)", ylabel="mean attention distance (pixels)")
        ax.set(xlim=(0.5, layers + 0.5), ylim=(0, diagonal))
        ax.set_xticks(range(1, layers + 1))
        ax.grid(alpha=0.3)
        # tab20's dark colours first, then its light twins: neighbouring heads stay distinct
        colours = [colormaps["tab20"](2 * (j % 10) + (j // 10) % 2) for j in range(heads)]
        handles = [
            Line2D(
                [],
                [],
                color=c,
                marker="o",
                markerfacecolor="none",
                markeredgewidth=1.5,
                linestyle="",
                label=f"head {j + 1}",
            )
            for j, c in enumerate(colours)
        ]
        handles.append(Line2D([], [], color="grey", linestyle="--", label="½ image diagonal"))
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=CHART_PT, ncols=1 + heads // 13
        )
        # each layer's heads side by side within ±DOT_SPREAD of it, head 1 leftmost: (layers * heads,)
        side = np.linspace(-DOT_SPREAD, DOT_SPREAD, heads) if heads > 1 else np.zeros(1)
        self.layers = (np.arange(1, layers + 1)[:, None] + side[None, :]).reshape(-1)
        # animated=True: left out of canvas.draw(), so the saved background has no dots
        # hollow rings: where many heads crowd a layer and dots overlap, each ring still shows
        self.dots = ax.scatter(
            self.layers,
            self.layers * 0.0,
            s=28,
            facecolors="none",
            edgecolors=colours * layers,
            linewidths=1.5,
            animated=True,
        )
        self.canvas = FigureCanvasAgg(fig)
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(fig.bbox)
        self.lock = threading.Lock()  # one figure shared by concurrent requests

    def draw(self, distance: np.ndarray) -> Image.Image:
        with self.lock:
            self.canvas.restore_region(self.background)
            self.dots.set_offsets(np.column_stack([self.layers, distance.reshape(-1)]))
            self.dots.axes.draw_artist(self.dots)
            return Image.fromarray(np.asarray(self.canvas.buffer_rgba())[..., :3].copy())


@functools.lru_cache(maxsize=16)
def distance_axes(layers: int, heads: int, image_size: tuple[int, int]) -> DistanceAxes:
    """The distance chart's axes for one layout, drawn once and shared (its figure: `.canvas.figure`)."""
    return DistanceAxes(layers, heads, image_size)


def training_curves(history: Sequence[dict], step_losses: Sequence[tuple[float, float]] = ()) -> Image.Image:
    """Loss and accuracy per epoch, train vs validation, from the training job's history;
    `step_losses` (epochs done, running train loss) draws the loss from the first steps on."""
    return _figure_to_image(training_figure(history, step_losses))


def training_figure(history: Sequence[dict], step_losses: Sequence[tuple[float, float]] = ()) -> Figure:
    """The matplotlib figure of `training_curves`: 600 px wide, the Train tab's column."""
    fig = _figure(6.0, 2.8)
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.17, top=0.9, wspace=0.3)
    loss_ax, acc_ax = fig.subplots(1, 2)
    if step_losses:
        x, y = zip(*step_losses, strict=True)
        loss_ax.plot(x, y, "-", color="0.6", linewidth=1, label="train, during the epoch")
    epochs = [h["epoch"] for h in history]
    for ax, key in ((loss_ax, "loss"), (acc_ax, "acc")):
        for split, style in (("train", "o-"), ("val", "s--")):
            values = [h.get(f"{split}_{key}") for h in history]
            if any(v is not None for v in values):
                ax.plot(epochs, [math.nan if v is None else v for v in values], style, label=split, markersize=4)
        ax.set_xlabel("epoch")
        ax.set_title("loss" if key == "loss" else "accuracy", fontsize=10)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=CHART_PT)
    return fig


PROBE_COLUMNS = 6  # head tiles per row of the probe strip: 12 would not fit the Train tab's column
PROBE_ROWS = 24  # rows of the probe strip at most, so a long run stays far under WebP's 16,383 px


def probe_shown(readings: int, heads: int) -> list[int]:
    """Which of `readings` probe readings fit the strip: all of a short run; of a long one the
    first, the last and evenly spaced ones between (a row per reading grew past what an image
    format holds: a 200-epoch run's strip broke every status poll)."""
    keep = max(2, PROBE_ROWS // math.ceil(heads / PROBE_COLUMNS))
    if readings <= keep:
        return list(range(readings))
    return sorted({round(i * (readings - 1) / (keep - 1)) for i in range(keep)})


def probe_epochs(epochs: Sequence[int]) -> str:
    """The epochs of the strip's rows in words, e.g. "before training and after epochs 22, 44 and 200"."""
    after = [str(e) for e in epochs if e]
    said = after[0] if len(after) == 1 else f"{', '.join(after[:-1])} and {after[-1]}"
    noun = "epoch" if len(after) == 1 else "epochs"
    before = "before training" if 0 in epochs else ""
    return " and ".join(part for part in (before, f"after {noun} {said}" if after else "") if part)


def probe_strip(image: np.ndarray, probes: Sequence[tuple[int, np.ndarray]], style: MapStyle) -> Image.Image:
    """How the probe image's CLS attention (last layer, one tile per head) changes over
    training: one row per epoch (of up to PROBE_COLUMNS heads; more heads continue on the
    next row), each ending with its colour bar; a long run shows the epochs probe_shown picks
    and says which. `probes` holds (epoch, (layers, heads, gh, gw))
    pairs of patch maps only; each map is the patch part of a softmax row, so 1 - its total
    is the attention to CLS, printed under each tile (models without a CLS token leave
    nothing out and print nothing)."""
    heads = probes[0][1].shape[1]
    chosen = [probes[i] for i in probe_shown(len(probes), heads)]
    shown = f"Rows: {probe_epochs([e for e, _ in chosen])} ({len(chosen)} of {len(probes)} readings)."
    shown = "" if len(chosen) == len(probes) else shown
    probes = chosen
    left_out = [1.0 - maps[-1].sum(axis=(-2, -1), keepdims=True)[..., 0] for _, maps in probes]  # (heads, 1)
    has_prefix = max(float(share.max()) for share in left_out) > 1e-5  # float32 sums of a GAP row: ~1e-7
    wrapped = heads > PROBE_COLUMNS  # then each tile is named, as columns no longer hold one head
    rows, labels = [], []
    for (epoch, maps), share in zip(probes, left_out, strict=True):
        *tiles, bar = _scaled_row(image, maps[-1], style, share if has_prefix else None, named=wrapped)
        for start in range(0, len(tiles), PROBE_COLUMNS):
            rows.append([*tiles[start : start + PROBE_COLUMNS], bar])
            labels.append(("before training" if epoch == 0 else f"after epoch {epoch}") if start == 0 else "")
    cols = [] if wrapped else [f"head {j + 1}" for j in range(heads)]
    left = "Maps show attention to the patches; attention to CLS (printed under each tile) is left out."
    note = f"{left if has_prefix else ''} {shown}".strip()
    title = "CLS attention of the probe image, last layer"
    return _titled(title, mosaic(rows, labels, cols), note=_row_scale_note(style, note))


PCA_TILE_PX = 192  # the longer side of each image's tiles in the PCA picture, at most


def pca_picture(
    photos: Sequence[np.ndarray],
    colours: Sequence[np.ndarray],
    keep: Sequence[np.ndarray],
    names: Sequence[str],
    legend: Sequence[str],
    title: str,
    note: str,
    text_px: int = TEXT_PX,
) -> Image.Image:
    """Patch features in colour (DINOv2 Fig. 1): per image a column of its photo, (h, w, 3)
    uint8 already the size of its grid's whole cells, above its (gh, gw, 3) colours in [0, 1]
    (R, G, B = components 1, 2, 3, upsampled as honest patch blocks), the patches outside its
    (gh, gw) `keep` mask drawn as the photo in a light tint (no colour value). Under the
    tiles, one colour bar per channel (black to its pure colour, 0 to 1) labelled `legend`."""
    with text_size(text_px):
        tiles = []
        for photo, colour, kept in zip(photos, colours, keep, strict=True):
            blocks = (np.clip(colour, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)  # (gh, gw, 3)
            cell = photo.shape[0] // colour.shape[0], photo.shape[1] // colour.shape[1]
            big = np.repeat(np.repeat(blocks, cell[0], axis=0), cell[1], axis=1)  # (h, w, 3), one block a patch
            # the background tinted as over a grey colour map (pale blue): grey is a colour RGB mixes can make
            tiles.append((photo, dim_outside(big, kept, photo, "gray")))
        grid = mosaic([[p for p, _ in tiles], [c for _, c in tiles]], ["image", "PCA"], list(names))
        across = grid.width >= 3 * 320  # the three bars side by side where they fit, else one under another
        width = (grid.width - 2 * GAP) // 3 if across else max(grid.width, 320)
        bars = [colour_bar(cmap, 0.0, 1.0, text, width) for cmap, text in zip(CHANNELS.values(), legend, strict=False)]
        footer = [mosaic([[np.asarray(bar) for bar in bars]])] if across else bars
        return _titled(title, grid, footer, note)


LOGIT_LENS_CMAP = "viridis"  # perceptually uniform, dark at 0: an unlikely class fades into the background


def logit_lens_chart(
    probabilities: np.ndarray,
    classes: Sequence[str],
    top1: Sequence[str],
    title: str,
    note: str,
    text_px: int = TEXT_PX,
) -> Image.Image:
    """What each layer would answer: `probabilities` (K, L) of K classes (rows, `classes`)
    after each of L layers (columns 1..L) as a heat map from 0 to 1 with its colour bar
    ("probability, 0 to 1"), each cell's value printed where they fit, and above each column
    the class that layer ranks first (`top1`, L labels). Its words grow with `text_px` (the
    presentation mode) from CHART_PT at TEXT_PX."""
    k, layers = probabilities.shape
    pt, grow = CHART_PT * text_px / TEXT_PX, text_px / TEXT_PX
    width, height = 3.2 + 0.45 * layers * grow, (1.9 + 0.32 * k + 0.06 * max(map(len, top1))) * grow
    fig = _figure(min(11.9, width), height, layout="constrained")
    ax = fig.add_subplot()
    shown = ax.imshow(probabilities, vmin=0.0, vmax=1.0, cmap=LOGIT_LENS_CMAP, aspect="auto")
    ax.set_xticks(range(layers), [str(i + 1) for i in range(layers)], fontsize=pt)
    ax.set_yticks(range(k), list(classes), fontsize=pt)
    ax.set_xlabel("layer (1 = first block; the last is the model's prediction)", fontsize=pt)
    ax.set_ylabel("the last layer's top classes", fontsize=pt)
    top = ax.secondary_xaxis("top")
    top.set_xticks(range(layers), list(top1), rotation=60, ha="left", fontsize=pt)
    top.set_xlabel("top-1 class read after each layer", fontsize=pt)
    if k * layers <= 150 and layers * grow <= 16:  # the values themselves, where a cell is wide enough
        for (row, col), p in np.ndenumerate(probabilities):
            colour = "black" if p > 0.6 else "white"  # viridis is light at the top
            ax.text(col, row, f"{p:.2f}", ha="center", va="center", fontsize=pt, color=colour)
    bar = fig.colorbar(shown, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label("probability, 0 to 1", fontsize=pt)
    bar.ax.tick_params(labelsize=pt)
    with text_size(text_px):
        return _titled(title, _figure_to_image(fig), note=note)
