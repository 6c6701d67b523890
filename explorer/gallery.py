"""Class mode's gallery (issue 59, "Show me yours"): the students' pictures, each kept small, one
view of every approved one computed in one batched forward pass (a task of explorer/compute.py, one
GPU call on ZeroGPU: ui.zerogpu.GALLERY), and the tiles and the handout drawn from it.

The server draws the tiles (PNG) rather than sending numbers for the page to paint: a gallery is drawn
once per "Show the gallery" and read by every page as it is, the export is the same tiles laid out in
one picture, and canvas's overlay, caption, mosaic and colour bar already draw exactly that; the page's
painter (ui/js/drawn.js) draws one analysis's head grid, not a mosaic of many images.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from vit.analysis import query_attention

from . import canvas, render
from .canvas import MapStyle
from .compute import pass_seconds, to_model
from .explain import model_input, top_classes
from .images import to_rgb
from .loaded import LoadedModel

KEPT_PX = 448  # a picture's shorter side as the gallery keeps it: twice a 224 px model's input
KEPT_QUALITY = 90  # JPEG: a photo to analyse again, not a picture of values
TILE_PX = 192  # a tile's longer side
ROW_TILES = 5  # tiles a row of the handout
STYLE = MapStyle(scale="layer")  # one scale for the whole gallery, from 0


def kept_picture(image: Image.Image) -> bytes:
    """`image` as the gallery keeps it: RGB, its shorter side at most KEPT_PX, as JPEG."""
    image = to_rgb(image)
    shorter = min(image.size)
    if shorter > KEPT_PX:
        ratio = KEPT_PX / shorter
        image = image.resize((max(1, round(image.width * ratio)), max(1, round(image.height * ratio))))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=KEPT_QUALITY)
    return out.getvalue()


def batch(loaded: LoadedModel, pictures: Sequence[bytes]) -> tuple[torch.Tensor, list[np.ndarray]]:
    """The pictures as one batch (B, 3, H, W), each cropped as the model expects (every one the
    same size), and each one's pixels as the model sees them."""
    inputs = [
        model_input(Image.open(io.BytesIO(p)), loaded.preprocessing, loaded.model.config.patch_size, "crop")
        for p in pictures
    ]
    return torch.cat([i.tensor for i in inputs]), [i.pixels for i in inputs]


def gallery_maps(
    loaded: LoadedModel, tensor: torch.Tensor, layer: int, head: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Task (explorer/compute.py): one forward pass over the batch `tensor` (B, 3, H, W): each image's
    CLS map (the mean patch query without a CLS token) at `layer` (0-based), of `head` (0-based) or the
    mean of the heads (None), (B, gh, gw), and the logits (B, classes). Only these cross back from a GPU
    worker: the whole maps of 60 pictures would be 0.7 GB for a ViT-S."""
    with torch.inference_mode():
        logits, maps = loaded.model(to_model(loaded.model, tensor), need_weights=True)
        rows = query_attention(maps)[:, layer]  # (B, heads, gh, gw)
        chosen = rows.mean(dim=1) if head is None else rows[:, head]
    return chosen.float().cpu().numpy(), logits.float().cpu().numpy()


def gallery_cost(loaded: LoadedModel, tensor: torch.Tensor, *_: object) -> float:
    """GPU seconds of `gallery_maps`: one pass over the batch."""
    return pass_seconds(loaded.model, tensor.shape[-2:], tensor.shape[0])


@dataclass(frozen=True)
class GalleryView:
    """What "Show the gallery" drew: a tile a picture, in the order asked, and the colour bar."""

    tiles: list[Image.Image]
    bar: Image.Image
    title: str  # what the maps are: layer and head, 1-based
    captions: tuple[str, ...] = ()  # each tile's top prediction, as its picture writes it (the page's alt text)


def what_is_shown(layer: int, head: int | None, prefix: Sequence[str] = ("cls",)) -> str:
    """The maps' title, layer and head counted from 1 (`layer`, `head` 0-based), with what the maps
    leave out: the query's attention to the prefix tokens (`prefix`, the model's `prefix_names`)."""
    heads = "the mean of its heads" if head is None else f"head {head + 1}"
    who = "the CLS token" if "cls" in prefix else "the mean patch query"  # vit.analysis.query_attention's query
    if not prefix:
        return f"Where {who} looks in layer {layer + 1}, {heads}, over all the patches (no prefix token is left out)"
    names = ", ".join(render.short_token_name(name) for name in prefix)
    return f"Where {who} looks in layer {layer + 1}, {heads}, over the patches (its attention to {names} is left out)"


def predicted(logits: np.ndarray, class_names: list[str]) -> str:
    """A tile's caption: its top prediction, or that the model names no classes (DINO)."""
    if logits.shape[-1] == 0 or not class_names:
        return "no classes"
    (name, p), *_ = top_classes(torch.from_numpy(logits), class_names, 1).items()
    return f"{name[:28]} ({100 * p:.0f} %)"


def gallery_view(
    loaded: LoadedModel, pixels: list[np.ndarray], maps: np.ndarray, logits: np.ndarray, layer: int, head: int | None,
    px: int = canvas.TEXT_PX,
) -> GalleryView:  # fmt: skip
    """The tiles of `gallery_maps`'s result over each picture's `pixels`, all on one colour scale
    from 0 to the gallery's largest weight, each captioned with its top prediction."""
    top = float(maps.max()) if maps.size else 1.0
    high, label = canvas.scale_legend(STYLE, top, "attention weight", "this gallery", "every picture")
    tiles, captions = [], tuple(predicted(row, loaded.meta.class_names) for row in logits)
    for image, amap, caption in zip(pixels, maps, captions, strict=True):
        tile = canvas.overlay(canvas.fit_to_grid(image, amap.shape, TILE_PX), amap, STYLE, top=high)
        tiles.append(Image.fromarray(canvas.tile_caption(tile, [caption], px)))
    bar = canvas.colour_bar(STYLE.cmap, 0.0, high, label, px)
    return GalleryView(tiles, bar, what_is_shown(layer, head, loaded.model.config.prefix_names), captions)


def handout(question: str, view: GalleryView, px: int = canvas.TEXT_PX) -> Image.Image:
    """The gallery as one picture: the question, what the maps are, the tiles (at least one) in rows
    of ROW_TILES, the colour bar."""
    arrays = [np.asarray(t) for t in view.tiles]
    rows = [arrays[i : i + ROW_TILES] for i in range(0, len(arrays), ROW_TILES)]
    return canvas.titled(f"{question} — {view.title}", canvas.mosaic(rows, px), px, footer=[view.bar])


def png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()
