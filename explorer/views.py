"""What each view of the app shows for an `Explanation`: PIL images and Markdown, no Gradio.

The app (`ui/`) wires these to components; the benchmark and the tests call them directly. A
query is `vit.analysis.Query`: None (the CLS token) or a (row, col) patch position, 0-based as
tensors are; people see 1-based numbers.
"""

from __future__ import annotations

from PIL import Image

from vit.analysis import Query

from . import render
from .explain import Explanation
from .render import MapStyle

INPUT_PX, HEAD_PX, OVERVIEW_PX, ROLLOUT_PX = 384, 160, 64, 320  # display size of each view's longer side


def input_scale(ex: Explanation) -> int:
    """Magnification of the model input in the clickable input view."""
    return render.scale_for(ex.input.pixels.shape[:2], INPUT_PX)


def input_view(ex: Explanation, query: Query = None) -> Image.Image:
    """The model input with its patch grid, and the query patch outlined."""
    return render.patch_grid_image(ex.input.pixels, ex.patch_size, input_scale(ex), query)


def clicked_patch(ex: Explanation, x: float, y: float) -> tuple[int, int]:
    """The (row, col) under a click at pixel (x, y) of the input view."""
    return ex.patch_at(x, y, input_scale(ex))


def describe_input(ex: Explanation) -> str:
    (h, w), (ih, iw, _) = ex.original_size, ex.input.pixels.shape
    gh, gw = ex.grid
    prefix = ex.tokens - gh * gw
    return (
        f"uploaded **{w}x{h}** px (W x H) → model input **{iw}x{ih}** px · patch **{ex.patch_size}** px · "
        f"grid **{gh} rows x {gw} columns** = {gh * gw} patches · **{ex.tokens} tokens**"
        f"{f' ({prefix} CLS + {gh * gw} patches)' if prefix else ''}\n\n{ex.input.policy}"
    )


def describe_query(query: Query, has_cls: bool = True) -> str:
    if query is None:
        who = "the CLS token" if has_cls else "the average of all patches (this model has no CLS token)"
        return f"Query: **{who}**. Click a patch in the input to see where that patch looks."
    row, col = query
    return f"Query: **the patch at row {row + 1}, column {col + 1}** (outlined). Reset to go back to the default."


def _who(ex: Explanation, query: Query) -> str:
    if query is None:
        return "CLS" if ex.has_cls else "mean of patches"
    return f"patch ({query[0] + 1}, {query[1] + 1})"


def heads(ex: Explanation, query: Query, layer: int, style: MapStyle) -> Image.Image:
    """Where the query looks, one tile per head, in `layer` (1-based)."""
    base = render.fit_to_grid(ex.input.pixels, ex.grid, HEAD_PX)
    title = f"layer {layer} of {ex.depth}, query: {_who(ex, query)}"
    return render.head_grid(base, ex.query_maps(query)[layer - 1], style, title)


def layer_frames(ex: Explanation, query: Query, style: MapStyle) -> list[Image.Image]:
    """The `heads` view of every layer, for the animated GIF."""
    base = render.fit_to_grid(ex.input.pixels, ex.grid, HEAD_PX)
    return render.layer_frames(base, ex.query_maps(query), style)


def overview(ex: Explanation, style: MapStyle) -> Image.Image:
    """The default query's attention (CLS) in every head of every layer."""
    base = render.fit_to_grid(ex.input.pixels, ex.grid, OVERVIEW_PX)
    title = f"query: {_who(ex, None)}, every layer and head"
    return render.layers_by_heads(base, ex.query_maps(None), style, title)


def rollout(ex: Explanation, head_fusion: str, discard_ratio: float, style: MapStyle) -> Image.Image:
    base = render.fit_to_grid(ex.input.pixels, ex.grid, ROLLOUT_PX)
    return Image.fromarray(render.overlay(base, ex.rollout(head_fusion, discard_ratio), style))


def distance_chart(ex: Explanation) -> Image.Image:
    return render.attention_distance_chart(ex.attention_distance(), ex.input.pixels.shape[:2])
