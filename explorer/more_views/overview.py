"""Layers x heads: the default query's attention (CLS) in every head of every layer."""

from __future__ import annotations

from PIL import Image

from .. import canvas, render
from ..canvas import MapStyle
from ..explain import Explanation
from ..texts import left_out, on_grid, query_label
from ..views import DISPLAY_WIDTH, prefix_of
from .base import Drawn, MoreView, Scene, register

OVERVIEW_PX = 64  # a tile's longer side


def overview(ex: Explanation, style: MapStyle, text_px: int = canvas.TEXT_PX) -> Image.Image:
    """The default query's attention (CLS) in every head of every layer, text `text_px` high, its
    heads in blocks that fit the page's width (`render.layers_by_heads`): shown as drawn, never shrunk."""
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, OVERVIEW_PX)
    title = f"query: {query_label(ex, None)}, every layer and head"
    return render.layers_by_heads(
        base,
        ex.query_maps(None),
        style,
        title,
        prefix=prefix_of(ex, None),
        note=left_out(ex),
        text_px=text_px,
        width=DISPLAY_WIDTH["more"],
    )


def overview_alt(ex: Explanation, model: str) -> str:
    """The layers × heads overview."""
    return (
        f"Attention of the query {query_label(ex, None)} in every head of every layer: {ex.depth} rows (layers 1 to "
        f"{ex.depth}) of {ex.heads} tiles (heads 1 to {ex.heads}), each row with its colour bar; {on_grid(ex, model)}."
    )


def picture(scene: Scene, style: MapStyle) -> Drawn:
    ex = scene.ex
    return Drawn(overview(ex, style, scene.text_px), overview_alt(ex, scene.model))


VIEW = register(
    MoreView(
        "overview",
        "Layers x heads",
        "layers x heads",
        "**Attention of the default query (CLS)** in every head of every layer",
        "Attention of the default query in every head of every layer",
        picture,
        record=MapStyle,
        parse=None,
        api_name="overview",
        style=True,
    )
)
