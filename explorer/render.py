"""Pictures of attention: maps over the image, head grids, layers x heads overviews, single
maps (weights, relative to uniform, top mass), GIF frames, position similarity, patch
features in colour. Rendering only (explorer.canvas draws the words and the colour bars).

Every function takes plain numpy arrays (an RGB image as (H, W, 3) uint8, attention maps
as (..., gh, gw) floats laid out row-major over the patch grid) and returns a PIL image.
Nothing here calls a model, so every picture can be tested with hand-made maps.

Colour comes from matplotlib colormaps, resampling from PIL: "nearest" upsampling shows
each patch as the honest square block the model actually saw; "smooth" (bilinear) looks
nicer but invents detail finer than a patch.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from matplotlib import colormaps
from PIL import Image, ImageDraw

from .canvas import (
    BACKGROUND,
    BAR_WIDTH,
    CHANNELS,
    GAP,
    GIF_MAP_COLOURS,
    MARK_COLOUR,
    OWN_SLOT_COLOUR,
    TEXT_PX,
    MapStyle,
    colour_bar,
    enlarge,
    map_gradient,
    mosaic,
    mosaic_width,
    number,
    overlay,
    row_bar,
    scale_legend,
    scale_tops,
    stack,
    text_width,
    tile_caption,
    titled,
)

# Prefix shares per caption line. Two a line ("CLS 0.00 · reg1 0.00", 138 px) were wider than a
# register model's 80-px tiles, which they widened to an 858-px picture in a 546-px column; one a
# line ("reg1 0.00", 62 px) fits under them (issue 42). The page is sent the lines (explorer/page_text.py).
PREFIX_PER_LINE = 1


class Prefix(NamedTuple):
    """The attention the maps leave out, to the prefix tokens: `shares` (..., prefix_tokens), of
    one head, of a layer's heads or of every layer's, and the tokens' `names` ('cls', 'dist',
    'reg1', ...; AttentionMaps.prefix_names). Without names the first share is CLS's and the
    rest are summed."""

    shares: np.ndarray
    names: Sequence[str] = ()

    def at(self, i: int) -> Prefix:
        """The shares of layer or head `i`, with the same names."""
        return Prefix(self.shares[i], self.names)


def short_token_name(name: str) -> str:
    """How a prefix token ('cls', 'dist', 'reg1', ...; AttentionMaps.prefix_names) is named on a picture."""
    return "CLS" if name == "cls" else name


def prefix_lines(prefix: Prefix) -> list[str]:
    """A head's attention to the prefix tokens the maps leave out, each token by name, PREFIX_PER_LINE
    a line: ["CLS 0.42", "dist 0.10", "reg1 0.05"]. Without names: "CLS 0.42" (the rest of several
    prefix tokens summed)."""
    shares, names = prefix
    if len(names) != len(shares):
        text = f"CLS {shares[0]:.2f}"
        return [text if len(shares) == 1 else f"{text} + {len(shares) - 1} more {shares[1:].sum():.2f}"]
    parts = [f"{short_token_name(n)} {s:.2f}" for n, s in zip(names, shares, strict=True)]
    return [" · ".join(parts[i : i + PREFIX_PER_LINE]) for i in range(0, len(parts), PREFIX_PER_LINE)]


HEAD_NAME = "head {head}"  # a head's tile's name, its number 1-based in the place of "{head}"


def head_name(head: int) -> str:
    """How a head's tile names it (`head` 0-based): HEAD_NAME."""
    return HEAD_NAME.replace("{head}", str(head + 1))


def top_line(top: float) -> str:
    """A head's own maximum, as its tile's caption writes it on the per-head scale."""
    return f"max {top:.2g}"


def caption_parts(scale: str) -> tuple[str, ...]:
    """The lines of a head tile's caption on `scale`, in order: its name, its own maximum when each
    head is stretched alone (a line of its own: beside the name it widened a small tile, and with it
    the picture, which the page then shrank), and its attention to the prefix tokens. The page is
    sent them (explorer/page_maps.text) and writes the lines the server decided in this order."""
    return ("name", "top", "prefix") if scale == "head" else ("name", "prefix")


def _tile_lines(name: str, top: float, style: MapStyle, prefix: Prefix | None) -> list[str]:
    """Caption lines of one tile (`caption_parts`); a tile without a `name` has no name line."""
    lines = {
        "name": [name] if name else [],
        "top": [top_line(top)],
        "prefix": prefix_lines(prefix) if prefix is not None and len(prefix.shares) else [],
    }
    return [line for part in caption_parts(style.scale) for line in lines[part]]


@dataclass(frozen=True)
class ScaleTop:
    """The top of a head grid's colour scale: `tops` (heads,), the value drawn in each head's top
    colour; `scope`, what one shared top covers ("this layer", "all 6 layers", the whole clip);
    `shared`, what shares it (the colour bar's words)."""

    tops: np.ndarray
    scope: str = "this layer"
    shared: str = "all its maps"

    @classmethod
    def of(cls, maps: np.ndarray, style: MapStyle, scope: str = "this layer") -> ScaleTop:
        """The top `style.scale` sets for `maps` (heads, ...) alone (`scale_tops`)."""
        return cls(scale_tops(maps, style.scale), scope)


def head_grid(
    image: np.ndarray,
    maps: np.ndarray,
    style: MapStyle,
    title: str = "",
    max_cols: int = 6,
    prefix: Prefix | None = None,
    note: str = "",
    mark: tuple[int, int] | None = None,
    top: ScaleTop | None = None,
    text_px: int = TEXT_PX,
    bar_px: int = BAR_WIDTH,
) -> Image.Image:
    """One tile per head of one layer: `maps` is (heads, gh, gw), `image` the enlarged model
    input, `prefix` (shares (heads, prefix_tokens)) each head's attention to the tokens the maps
    leave out (printed under its tile, by name), `mark` the query patch, outlined
    in every tile. A colour bar (as wide as the tiles, and at least `bar_px`) and `note` go
    underneath. `top`: the colour scale's top, by default these maps' own (`ScaleTop.of`); a
    video passes its whole clip's, a GIF on one scale its layers'. Its text is `text_px` high."""
    top = ScaleTop.of(maps, style) if top is None else top
    tops = top.tops
    grid = maps.shape[-2:]
    tiles = [
        tile_caption(
            outline_patches(overlay(image, m, style, t), grid, [mark] if mark else []),
            _tile_lines(head_name(i), t, style, None if prefix is None else prefix.at(i)),
            text_px,
        )
        for i, (m, t) in enumerate(zip(maps, tops, strict=True))
    ]
    grid = mosaic([tiles[i : i + max_cols] for i in range(0, len(tiles), max_cols)], text_px)
    high, label = scale_legend(style, float(tops.max()), "attention weight", top.scope, top.shared)
    bar = colour_bar(style.cmap, 0.0, high, label, text_px, max(grid.width, bar_px))
    return titled(title, grid, text_px, [bar], note)


def layers_by_heads(
    image: np.ndarray,
    maps: np.ndarray,
    style: MapStyle,
    title: str = "",
    prefix: Prefix | None = None,
    note: str = "",
    text_px: int = TEXT_PX,
    width: int | None = None,
) -> Image.Image:
    """Every head of every layer at a glance: `maps` is (layers, heads, gh, gw), `prefix`'s
    shares (layers, heads, prefix_tokens). Each row (a layer) ends with its own colour bar.
    Its text is `text_px` high. With a `width` (the page's), the heads are split into as few
    blocks, one under another, as keep each block within it (heads 1 to 8 above heads 9 to 16),
    every block with its layers' names and colour bars: the page shrinks a wider picture, and a
    16-head model's 20-px words in `--present` had been shown at 14 px, captions touching."""
    rows = [
        scaled_row(image, layer, style, None if prefix is None else prefix.at(i), text_px)
        for i, layer in enumerate(maps)
    ]
    labels = [f"layer {i + 1}" for i in range(maps.shape[0])]
    cols = [f"head {j + 1}" for j in range(maps.shape[1])]
    heads = maps.shape[1]
    step = heads if width is None else heads_per_block(rows, text_px, labels, width)
    blocks = [mosaic(block, text_px, labels, cols[a : a + step]) for a, block in head_blocks(rows, step)]
    return titled(title, stack(blocks), text_px, note=row_scale_note(style, note))


def head_blocks(rows: Sequence[Sequence[np.ndarray]], step: int) -> list[tuple[int, list[list[np.ndarray]]]]:
    """Rows of head tiles, each ending with its colour bar, cut into blocks of `step` heads: (the
    block's first head, 0-based; its rows, each with its colour bar again)."""
    heads = len(rows[0]) - 1
    return [(a, [[*row[a : a + step], row[-1]] for row in rows]) for a in range(0, heads, step)]


def heads_per_block(rows: Sequence[Sequence[np.ndarray]], text_px: int, labels: Sequence[str], width: int) -> int:
    """The heads a block of `layers_by_heads` holds: of rows of head tiles each ending with its
    colour bar, the most in blocks of equal share (12 heads: 12, 6, 4, ...; never 10 above 2) whose
    every block is at most `width` wide; 1 where even one head is wider."""
    heads = len(rows[0]) - 1
    for count in range(1, heads + 1):
        step = math.ceil(heads / count)
        if all(mosaic_width(block, text_px, labels) <= width for _, block in head_blocks(rows, step)):
            return step
    return 1


def scaled_row(
    image: np.ndarray,
    maps: np.ndarray,
    style: MapStyle,
    prefix: Prefix | None,
    text_px: int,
    named: bool = False,
) -> list[np.ndarray]:
    """One layer's (heads, gh, gw) maps as captioned tiles (each named "head j" if `named`,
    else the columns are labelled) followed by the layer's colour bar, text `text_px` high."""
    tops = scale_tops(maps, style.scale)
    tiles = [
        tile_caption(
            overlay(image, m, style, t),
            _tile_lines(f"head {j + 1}" if named else "", t, style, None if prefix is None else prefix.at(j)),
            text_px,
        )
        for j, (m, t) in enumerate(zip(maps, tops, strict=True))
    ]
    high, _ = scale_legend(style, float(tops.max()), "", "")
    return [*tiles, row_bar(style.cmap, "max" if style.scale == "head" else number(high), image.shape[0], text_px)]


def row_scale_note(style: MapStyle, note: str) -> str:
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
    prefix: Prefix | None = None,
    note: str = "",
    mark: tuple[int, int] | None = None,
    one_scale: bool = False,
    text_px: int = TEXT_PX,
) -> list[Image.Image]:
    """One head grid per layer, for the animation: `maps` is (layers, heads, gh, gw), each
    frame with the colour bar of its own scale. On the "layer" scale each frame is coloured up
    to its own layer's largest weight, as the screen shows it; with `one_scale`, every frame up
    to the largest weight of all layers, so brightness compares across frames (and the early,
    spread-out layers come out dark). Their text is `text_px` high."""
    # one scale: on the "layer" scale, every frame up to the largest weight of all layers
    joint = one_scale and style.scale == "layer"
    top = ScaleTop(np.full(maps.shape[1], float(maps.max())), f"all {len(maps)} layers", "every frame")
    return [
        head_grid(
            image,
            m,
            style,
            f"layer {i + 1} of {len(maps)}",
            max_cols,
            prefix=None if prefix is None else prefix.at(i),
            note=note,
            mark=mark,
            top=top if joint else None,
            text_px=text_px,
        )
        for i, m in enumerate(maps)
    ]


def map_picture(
    image: np.ndarray,
    amap: np.ndarray,
    style: MapStyle,
    title: str,
    unit: str,
    note: str = "",
    uniform: float | None = None,
    keep: np.ndarray | None = None,
    text_px: int = TEXT_PX,
) -> Image.Image:
    """One (gh, gw) map over `image` with a title, a colour bar in `unit` and a note.
    `uniform` (the value of every patch were the map's total spread evenly) is marked on the
    colour bar; `keep`, a (gh, gw) bool mask, draws every patch outside it as the photo in a
    light tint without the map (`dim_outside`). Its text is `text_px` high."""
    top = float(scale_tops(amap, style.scale))
    high, label = scale_legend(style, top, unit, "this map")
    drawn = overlay(image, amap, style, top)
    if keep is not None:
        drawn = dim_outside(drawn, keep, image, style.cmap)
    mark = None
    if uniform is not None:  # on the per-map stretch the bar runs in shares of the map's maximum
        mark = (uniform / top if style.scale == "head" and top > 0 else uniform, f"uniform {number(uniform)}")
    bar = colour_bar(style.cmap, 0.0, high, label, text_px, max(drawn.shape[1], BAR_WIDTH), mark=mark)
    return titled(title, Image.fromarray(drawn), text_px, [bar], note)


RELATIVE_CMAP = "RdBu_r"  # diverging: blue below uniform, white at uniform, red above
RELATIVE_CENTRE = 1.0  # uniform itself, in the diverging map's middle colour
RELATIVE_TOP = 2.0  # the relative scale reaches at least 2× uniform, so a near-uniform map stays white


def relative_picture(
    image: np.ndarray,
    amap: np.ndarray,
    uniform: float,
    style: MapStyle,
    title: str,
    note: str = "",
    text_px: int = TEXT_PX,
) -> Image.Image:
    """One (gh, gw) map as multiples of `uniform` (its total spread evenly over its patches):
    a diverging colour map with uniform in its middle colour, 0 at the bottom and
    max(RELATIVE_TOP, the largest multiple) at the top, so patches above and below an even
    share stand apart however flat the map is. Its text is `text_px` high."""
    ratio, top = relative_values(amap, uniform)
    relative = replace(style, cmap=RELATIVE_CMAP)
    drawn = overlay(image, ratio, relative, top, centre=RELATIVE_CENTRE)
    label = relative_label(uniform, amap.size)
    bar = colour_bar(RELATIVE_CMAP, 0.0, top, label, text_px, max(drawn.shape[1], BAR_WIDTH), centre=RELATIVE_CENTRE)
    return titled(title, Image.fromarray(drawn), text_px, [bar], note)


def relative_values(amap: np.ndarray, uniform: float) -> tuple[np.ndarray, float]:
    """`amap` as multiples of `uniform` (0 where uniform is 0), and the relative scale's top:
    max(RELATIVE_TOP, the largest multiple). Live's page is sent both (explorer/live.py)."""
    ratio = amap / uniform if uniform > 0 else np.zeros_like(amap)
    return ratio, max(RELATIVE_TOP, float(ratio.max()))


def relative_label(uniform: float, patches: int) -> str:
    """The colour bar's words of a map drawn relative to uniform (`relative_picture`)."""
    return (
        f"colour: × uniform, each patch's value divided by {number(uniform)} (the map's total spread evenly over "
        f"its {patches} patches): 1 = uniform (white), blue below, red above"
    )


# Patches outside a mask are drawn as the photo in light grey (DIM_LEVELS), without the map's
# colour: dimming them darker read as the bar's bottom colour, "no attention". A colour map made
# of greys gets the pale blue tint instead (DIM_TINTS), so no dimmed pixel is a colour of the bar.
DIM_LEVELS = (150, 230)  # the photo's darkest and lightest grey levels once dimmed
DIM_TINTS = {"light grey": (1.0, 1.0, 1.0), "pale blue": (0.6, 0.78, 1.0)}
DIM_GAP = 40  # the least RGB distance from every colour of the bar a dimmed pixel keeps


def _gap_to_bar(tint: tuple[float, float, float], cmap: str) -> float:
    """The least RGB distance between the dimmed greys in `tint` and the colours of `cmap`."""
    shades = np.linspace(*DIM_LEVELS, 9)[:, None] * np.asarray(tint)  # (9, 3)
    bar = map_gradient(cmap, 256).astype(float)  # (256, 3)
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


def shared_scale_rows(
    rows: Sequence[MapRow], style: MapStyle, title: str, unit: str, note: str = "", text_px: int = TEXT_PX
) -> Image.Image:
    """Rows of maps (e.g. several models, one image) on ONE colour scale from 0 to the largest
    value of all of them, whatever `style.scale` says, so every tile compares with every
    other; one colour bar in `unit` underneath (docs/pictures.md). Its text is `text_px` high."""
    top = max(float(row.maps.max()) for row in rows)
    tiles = []
    for row in rows:
        drawn = [outline_patches(overlay(row.image, m, style, top), m.shape, row.marks) for m in row.maps]
        captions = list(row.captions) + [[]] * (len(drawn) - len(row.captions))
        tiles.append([tile_caption(t, c, text_px) for t, c in zip(drawn, captions, strict=True)])
    grid = mosaic(tiles, text_px, [row.label for row in rows])
    label = f"colour: {unit} from 0 to {number(top)}, the largest of all maps shown (one scale for all)"
    bar = colour_bar(style.cmap, 0.0, top, label, text_px, max(grid.width, BAR_WIDTH))
    return titled(title, grid, text_px, [bar], note)


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
    similarity: np.ndarray,
    cmap: str = "viridis",
    tile_scale: int = 0,
    compared: str = "position embeddings",
    text_px: int = TEXT_PX,
    step: int = 1,
) -> Image.Image:
    """The ViT paper's Fig. 7 (centre): `similarity` is (gh, gw, gh, gw) cosine similarities;
    tile (i, j) shows how similar slot (i, j)'s position embedding is to every slot's, with
    slot (i, j) itself outlined. Rows and columns are numbered from 1; colours run from -1
    to 1 (the colour bar underneath). `compared` names what is compared in the title (a rotary
    model's angles: explorer/more_views/similarity.py, `positions_compared`). Its text is `text_px`
    high. `step`: a tile for every `step`-th slot along each side only (`similarity_step`), the
    title says which."""
    return _similarity_tiles(similarity, cmap, tile_scale, compared, step, text_px)


def _similarity_scale(side: int, step: int) -> int:
    """Pixels per slot in a tile: tiles of at least 64 px; of every slot, at least 3 per slot,
    of every `step`-th one at least 1 (their tiles may be smaller, there being fewer)."""
    return max(3 if step == 1 else 1, math.ceil(64 / side))


def similarity_step(grid: tuple[int, int], text_px: int, max_width: int) -> int:
    """The smallest `step` whose tiles (one for every `step`-th slot along each side) fit
    `max_width`: DINOv2's 37 x 37 slots drew 37 tiles of 111 px a row, 4,307 px that a
    1280-px screen showed at 0.28 of their size, words and all; every 3rd slot's tile fits."""
    gh, gw = grid
    side = max(gh, gw)
    for step in range(1, side):
        rows = range(0, gh, step)
        label = int(max(text_width(f"row {i + 1}", text_px) for i in rows)) + 2 * GAP  # canvas.mosaic's
        if label + len(range(0, gw, step)) * (gw * _similarity_scale(side, step) + GAP) <= max_width:
            return step
    return side


def _similarity_tiles(
    similarity: np.ndarray, cmap: str, tile_scale: int, compared: str, step: int, text_px: int
) -> Image.Image:
    gh, gw = similarity.shape[:2]
    scale = tile_scale or _similarity_scale(max(gh, gw), step)
    colour = colormaps[cmap]
    rows, cols = range(0, gh, step), range(0, gw, step)
    tiles = [
        [
            _own_slot(enlarge(colour((similarity[i, j] + 1.0) / 2.0, bytes=True)[..., :3], scale), i, j, scale)
            for j in cols
        ]
        for i in rows
    ]
    grid = mosaic(tiles, text_px, [f"row {i + 1}" for i in rows], [str(j + 1) for j in cols])
    title = (
        f"Cosine similarity of {compared}, grid {gh} rows × {gw} columns (columns numbered along the top). "
        "The tile in row i, column j compares slot (i, j), outlined in black, with every slot."
    )
    if step > 1:
        title += (
            f" A tile for every {step} slots along each side (rows and columns 1, {1 + step}, {1 + 2 * step}, …): "
            f"all {gh * gw} would not fit the screen."
        )
    bar = colour_bar(cmap, -1.0, 1.0, "colour: cosine similarity, from −1 to 1", text_px, max(grid.width, BAR_WIDTH))
    return titled(title, grid, text_px, [bar])


def _own_slot(tile: np.ndarray, row: int, col: int, scale: int) -> np.ndarray:
    """Outline the block of slot (row, col) in a tile enlarged by `scale`."""
    marked = tile.copy()
    y, x = row * scale, col * scale
    marked[[y, y + scale - 1], x : x + scale] = OWN_SLOT_COLOUR
    marked[y : y + scale, [x, x + scale - 1]] = OWN_SLOT_COLOUR
    return marked


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
    tiles, one colour bar per channel (black to its pure colour, 0 to 1) labelled `legend`. Its
    text is `text_px` high."""
    tiles = []
    for photo, colour, kept in zip(photos, colours, keep, strict=True):
        blocks = (np.clip(colour, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)  # (gh, gw, 3)
        cell = photo.shape[0] // colour.shape[0], photo.shape[1] // colour.shape[1]
        big = np.repeat(np.repeat(blocks, cell[0], axis=0), cell[1], axis=1)  # (h, w, 3), one block a patch
        # the background tinted as over a grey colour map (pale blue): grey is a colour RGB mixes can make
        tiles.append((photo, dim_outside(big, kept, photo, "gray")))
    grid = mosaic([[p for p, _ in tiles], [c for _, c in tiles]], text_px, ["image", "PCA"], list(names))
    across = grid.width >= 3 * BAR_WIDTH  # the three bars side by side where they fit, else one under another
    width = (grid.width - 2 * GAP) // 3 if across else max(grid.width, BAR_WIDTH)
    channels = zip(CHANNELS.values(), legend, strict=False)
    bars = [colour_bar(cmap, 0.0, 1.0, text, text_px, width) for cmap, text in channels]
    footer = [mosaic([[np.asarray(bar) for bar in bars]], text_px)] if across else bars
    return titled(title, grid, text_px, footer, note)
