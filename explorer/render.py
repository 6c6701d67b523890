"""Pictures of attention: overlays, tile grids, charts and animations. Rendering only.

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
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import colormaps
from PIL import Image, ImageDraw, ImageFont

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLORMAPS = ("inferno", "viridis", "magma", "plasma", "turbo", "jet", "gray")
GRID_COLOUR = (255, 255, 255)
MARK_COLOUR = (0, 200, 255)
BACKGROUND = (255, 255, 255)
TEXT = (30, 30, 30)
GAP = 4  # pixels between tiles
_FONT = ImageFont.load_default(size=13)


@dataclass(frozen=True)
class MapStyle:
    """How an attention map is drawn."""

    cmap: str = "inferno"
    opacity: float = 0.6  # weight of the heat map over the image (ignored when raw)
    smooth: bool = False  # bilinear instead of nearest (honest patch blocks) upsampling
    raw: bool = False  # the heat map alone, without the image underneath


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
    """Resize an (H, W, 3) image so its longer side is about `target` pixels and each side is
    a whole number of cells of the (gh, gw) patch grid, so nearest-upsampled maps land
    exactly on patch boundaries. Upscaling is nearest (crisp pixels), downscaling Lanczos."""
    gh, gw = grid
    cell = max(1, round(target / max(gh, gw)))
    w, h = gw * cell, gh * cell
    resample = Image.Resampling.NEAREST if w >= image.shape[1] else Image.Resampling.LANCZOS
    return np.asarray(Image.fromarray(image).resize((w, h), resample))


def normalise(amap: np.ndarray) -> np.ndarray:
    """Stretch one map to [0, 1] (each map is scaled to its own range: heads differ in
    sharpness, not just in where they look). A constant map becomes all zeros."""
    lo, hi = float(amap.min()), float(amap.max())
    return (amap - lo) / (hi - lo) if hi > lo else np.zeros_like(amap, dtype=np.float32)


def heatmap(amap: np.ndarray, size: tuple[int, int], style: MapStyle) -> np.ndarray:
    """A (gh, gw) map upsampled to `size` (H, W) and coloured: (H, W, 3) uint8."""
    h, w = size
    resample = Image.Resampling.BILINEAR if style.smooth else Image.Resampling.NEAREST
    plane = Image.fromarray(normalise(amap).astype(np.float32), mode="F").resize((w, h), resample)
    rgba = colormaps[style.cmap](np.clip(np.asarray(plane), 0.0, 1.0), bytes=True)
    return rgba[..., :3]


def overlay(image: np.ndarray, amap: np.ndarray, style: MapStyle) -> np.ndarray:
    """Draw a (gh, gw) attention map over an (H, W, 3) image (or alone, if `style.raw`).

    The image must already be the size the map covers, e.g. the model input enlarged by an
    integer factor, so that each patch maps to a whole block of pixels."""
    heat = heatmap(amap, image.shape[:2], style)
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


def _label_width(labels: Sequence[str]) -> int:
    return max((int(_FONT.getlength(s)) for s in labels), default=0)


def mosaic(
    tiles: Sequence[Sequence[np.ndarray]],
    row_labels: Sequence[str] = (),
    col_labels: Sequence[str] = (),
    title: str = "",
) -> Image.Image:
    """Lay equal-sized (h, w, 3) tiles out in rows, with optional labels and a title."""
    h, w = tiles[0][0].shape[:2]
    ncols = max(len(r) for r in tiles)
    left = _label_width(row_labels) + 2 * GAP if row_labels else 0
    line = _FONT.size + GAP
    top = (line if title else 0) + (line if col_labels else 0)
    canvas = Image.new("RGB", (left + ncols * (w + GAP), top + len(tiles) * (h + GAP)), BACKGROUND)
    draw = ImageDraw.Draw(canvas)
    if title:
        draw.text((left, 0), title, fill=TEXT, font=_FONT)
    for c, label in enumerate(col_labels):
        draw.text((left + c * (w + GAP), top - line), label, fill=TEXT, font=_FONT)
    for r, row in enumerate(tiles):
        y = top + r * (h + GAP)
        if r < len(row_labels):
            draw.text((GAP, y + h // 2 - _FONT.size // 2), row_labels[r], fill=TEXT, font=_FONT)
        for c, tile in enumerate(row):
            canvas.paste(Image.fromarray(tile), (left + c * (w + GAP), y))
    return canvas


def head_grid(image: np.ndarray, maps: np.ndarray, style: MapStyle, title: str = "", max_cols: int = 6) -> Image.Image:
    """One tile per head: `maps` is (heads, gh, gw); `image` the enlarged model input."""
    tiles = [overlay(image, m, style) for m in maps]
    rows = [tiles[i : i + max_cols] for i in range(0, len(tiles), max_cols)]
    labelled = [[_caption(t, f"head {i * max_cols + j + 1}") for j, t in enumerate(row)] for i, row in enumerate(rows)]
    return mosaic(labelled, title=title)


def _caption(tile: np.ndarray, text: str) -> np.ndarray:
    """A tile with a caption strip underneath (so labels survive wrapping into rows)."""
    h, w = tile.shape[:2]
    strip = Image.new("RGB", (w, _FONT.size + GAP), BACKGROUND)
    ImageDraw.Draw(strip).text((0, 1), text, fill=TEXT, font=_FONT)
    return np.concatenate([tile, np.asarray(strip)], axis=0)


def layers_by_heads(image: np.ndarray, maps: np.ndarray, style: MapStyle, title: str = "") -> Image.Image:
    """Every head of every layer at a glance: `maps` is (layers, heads, gh, gw)."""
    tiles = [[overlay(image, m, style) for m in layer] for layer in maps]
    rows = [f"layer {i + 1}" for i in range(maps.shape[0])]
    cols = [f"head {j + 1}" for j in range(maps.shape[1])]
    return mosaic(tiles, rows, cols, title)


def layer_frames(image: np.ndarray, maps: np.ndarray, style: MapStyle, max_cols: int = 6) -> list[Image.Image]:
    """One head grid per layer, for the animation: `maps` is (layers, heads, gh, gw)."""
    return [head_grid(image, m, style, f"layer {i + 1} of {len(maps)}", max_cols) for i, m in enumerate(maps)]


def save_gif(frames: Sequence[Image.Image], path: str | os.PathLike, seconds_per_frame: float = 0.8) -> None:
    """Write frames as an animated GIF that loops forever."""
    first, *rest = frames
    first.save(path, save_all=True, append_images=rest, duration=int(seconds_per_frame * 1000), loop=0)


def position_similarity_tiles(similarity: np.ndarray, cmap: str = "viridis", tile_scale: int = 0) -> Image.Image:
    """The ViT paper's Fig. 7 (centre): `similarity` is (gh, gw, gh, gw) cosine similarities;
    tile (i, j) shows how similar slot (i, j)'s position embedding is to every slot's."""
    gh, gw = similarity.shape[:2]
    scale = tile_scale or max(2, 48 // max(gh, gw))
    colour = colormaps[cmap]
    tiles = [
        [enlarge(colour((similarity[i, j] + 1.0) / 2.0, bytes=True)[..., :3], scale) for j in range(gw)]
        for i in range(gh)
    ]
    return mosaic(tiles, title=f"cosine similarity of position embeddings ({gh}x{gw} slots; -1 to 1, {cmap})")


def _figure(width: float, height: float) -> Figure:
    """A matplotlib figure (inches at 100 dpi) that is not registered with pyplot, so
    concurrent requests never share global state. Imported here, on first use: the charts
    need matplotlib's whole drawing stack, which costs half a second at start-up."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100)


def _figure_to_image(fig: Figure) -> Image.Image:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3].copy())


def attention_distance_chart(distance: np.ndarray, image_size: tuple[int, int]) -> Image.Image:
    """The ViT paper's Fig. 7 (right): `distance` is (layers, heads) in pixels; one dot per
    head at each layer. The y axis runs from 0 to the image diagonal (no distance can be
    larger), so charts of different images compare at a glance; the dashed line is half
    the diagonal, for scale."""
    layers, heads = distance.shape
    return _distance_axes(layers, heads, tuple(image_size)).draw(distance)


class _DistanceAxes:
    """The distance chart's axes, drawn once; each chart restores them and draws only the
    dots (matplotlib blitting): a few milliseconds instead of ~60 for a full redraw."""

    def __init__(self, layers: int, heads: int, image_size: tuple[int, int]):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        fig = _figure(5.0, 3.2)
        fig.subplots_adjust(left=0.13, right=0.97, bottom=0.15, top=0.97)
        ax = fig.add_subplot()
        diagonal = math.hypot(*image_size)
        ax.axhline(diagonal / 2, color="grey", linestyle="--", linewidth=1)
        ax.set(xlabel="layer (one dot per head)", ylabel="mean attention distance (pixels)")
        ax.set(xlim=(0.5, layers + 0.5), ylim=(0, diagonal))
        ax.set_xticks(range(1, layers + 1))
        ax.grid(alpha=0.3)
        self.layers = np.repeat(np.arange(1, layers + 1), heads)
        colours = np.tile(np.arange(heads), layers)
        # animated=True: left out of canvas.draw(), so the saved background has no dots
        self.dots = ax.scatter(self.layers, self.layers * 0.0, c=colours, cmap="tab20", s=22, animated=True)
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
def _distance_axes(layers: int, heads: int, image_size: tuple[int, int]) -> _DistanceAxes:
    return _DistanceAxes(layers, heads, image_size)


def training_curves(history: Sequence[dict]) -> Image.Image:
    """Loss and accuracy per epoch, train vs validation, from the training job's history."""
    fig = _figure(7.0, 2.8)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.17, top=0.9, wspace=0.25)
    loss_ax, acc_ax = fig.subplots(1, 2)
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
            ax.legend(fontsize=8)
    return _figure_to_image(fig)


def probe_strip(image: np.ndarray, probes: Sequence[tuple[int, np.ndarray]], style: MapStyle) -> Image.Image:
    """How the probe image's CLS attention (last layer, one tile per head) changes over
    training: one row per epoch. `probes` holds (epoch, (layers, heads, gh, gw)) pairs."""
    tiles = [[overlay(image, m, style) for m in maps[-1]] for _, maps in probes]
    rows = [f"epoch {epoch}" for epoch, _ in probes]
    cols = [f"head {j + 1}" for j in range(probes[0][1].shape[1])]
    return mosaic(tiles, rows, cols, "CLS attention of the probe image, last layer")
