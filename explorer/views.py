"""The pictures several views share, for an `Explanation`: PIL images, no Gradio. The first
screen's input and head maps as the server draws them, for API clients and the PNG and GIF exports
(the page draws its own from explorer/page_maps.py's numbers, at the layout and input scale decided
here, `head_layout` and `input_scale`, so both show one layout); rollout's; the single maps
(relevance, a CLIP model's word maps). A "More views" view draws itself in its own module
(explorer/more_views/), from these where it shares them.

The app (`ui/`) wires these to components; the benchmark and the tests call them directly. Their
shared text (titles, notes, alt texts) is in `explorer.texts`, the values of the controls that
pick what they show in `explorer.controls`, the relevance map's arithmetic in `explorer.view_tasks`.
A query is `vit.analysis.Query`: None (the CLS token) or a (row, col) patch position, 0-based as
tensors are; people see 1-based numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

from vit import VisionTransformer
from vit.analysis import Query, top_mass_mask

from . import canvas, render
from .canvas import MapStyle
from .controls import SHOWS, Fusion, Showing
from .explain import Explanation
from .prompts import ZeroShot
from .texts import (
    describe_rollout,
    heads_title,
    left_out,
    query_label,
)
from .view_tasks import model_relevance

INPUT_PX, HEAD_PX, ROLLOUT_PX = 384, 160, 320  # display size of each view's longer side


# The CSS width (px) the app's layout gives each picture on a 1280×720 screen, measured in
# Chromium. gr.Image never enlarges a picture (object-fit: scale-down), so a picture at most
# this wide is shown at its own size and its text at the size drawn (canvas.TEXT_PX, ≥ 12 px;
# tests/test_explorer_views.py checks every picture against this table, each "More views" view at "more").
DISPLAY_WIDTH = {
    "heads": 546,
    # Every "More views" view: each fills the accordion's width, whose padding takes 24 px of the page's
    # 1216, so a new view has this width without a line here (ui/explore_views.py).
    "more": 1192,
    "prompts": 390,  # one map per prompt, three to a row of the full-width gallery
    "curves": 600,  # the Train tab shows the curves and the probe strip side by side
    "probe": 600,
    "compare": 1216,  # the Lessons tab
    "norms": 1216,
}


MAX_COLUMNS = 6  # head tiles per row, unless asked otherwise


def input_scale(ex: Explanation) -> int:
    """Magnification of the model input in the clickable input view."""
    return canvas.scale_for(ex.input.pixels.shape[:2], INPUT_PX)


def input_view(ex: Explanation, query: Query = None) -> Image.Image:
    """The model input with its patch grid, and the query patch (if the query is one) outlined."""
    mark = query if isinstance(query, tuple) else None
    return canvas.patch_grid_image(ex.input.pixels, ex.patch_size, input_scale(ex), mark)


def clicked_patch(ex: Explanation, x: float, y: float) -> tuple[int, int]:
    """The (row, col) under a click at pixel (x, y) of the input view."""
    return ex.patch_at(x, y, input_scale(ex))


def patch_of(query: Query) -> tuple[int, int] | None:
    """The (row, col) of a patch query, to outline in the head tiles; None for a prefix token."""
    return query if isinstance(query, tuple) else None


def prefix_of(ex: Explanation, query: Query) -> render.Prefix:
    """The query's attention to the prefix tokens, (layers, heads, prefix_tokens), with their names."""
    return render.Prefix(ex.prefix_attention(query), ex.prefix_names)


def head_layout(
    ex: Explanation, columns: int | None = None, style: MapStyle | None = None, text_px: int = canvas.TEXT_PX
) -> tuple[int, int]:
    """(tiles per row, tile side in px) of the heads view: up to MAX_COLUMNS tiles a row, each at
    most HEAD_PX and small enough for the row to fit the heads' DISPLAY_WIDTH, in whole pixels per
    patch. With a `style`, fewer tiles a row where its captions (`caption_px`, `text_px` high)
    would widen the row past DISPLAY_WIDTH, which the page would then shrink, text and all (large
    text: the presentation mode). `columns`: at most that many tiles a row, each as large, as the
    page wraps them in a narrower frame (ui/js/layout.js, fittingColumns: a phone)."""
    cols = max(1, min(ex.heads, MAX_COLUMNS))
    side = max(ex.grid)

    def tile(n: int) -> int:
        room = (DISPLAY_WIDTH["heads"] - canvas.GAP * n) // n
        return side * max(1, min(HEAD_PX, room) // side)

    widest = 0.0 if style is None else caption_px(ex, style, text_px)
    while cols > 1 and cols * (max(tile(cols), widest) + canvas.GAP) > DISPLAY_WIDTH["heads"]:
        cols -= 1
    return min(cols, columns or cols), tile(cols)


def caption_px(ex: Explanation, style: MapStyle, text_px: int) -> float:
    """The widest line, `text_px` high, a head tile's caption may hold in `style`: its name, its own
    maximum on the per-head scale, and its shares of the prefix tokens (render._tile_lines). The shares had
    been left out: in `--present` a model with registers got six 80-px tiles a row under 95-px
    lines ("reg1 0.00"), and the page shrank the picture, text and all."""
    widest = render.Prefix(np.zeros(ex.attention.prefix_tokens), ex.prefix_names)  # "reg1 0.00"
    shares = render.prefix_lines(widest) if ex.has_prefix else []
    lines = [f"head {ex.heads}", *(["max 0.0000"] if style.scale == "head" else []), *shares]
    return max(canvas.text_width(line, text_px) for line in lines)


def heads(
    ex: Explanation,
    query: Query,
    layer: int,
    style: MapStyle,
    columns: int | None = None,
    text_px: int = canvas.TEXT_PX,
) -> Image.Image:
    """Where the query looks, one tile per head, in `layer` (0-based; the title says it from 1),
    at most `columns` tiles a row (see `head_layout`; wrapped, the colour bar is as wide as the
    tiles, as the page draws it), text `text_px` high."""
    cols, tile = head_layout(ex, columns, style, text_px)
    wrapped = cols < head_layout(ex, None, style, text_px)[0]
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, tile)
    title = heads_title(ex, query_label(ex, query), layer + 1)
    return render.head_grid(
        base,
        ex.query_maps(query)[layer],
        style,
        title,
        cols,
        prefix=prefix_of(ex, query).at(layer),
        note=left_out(ex),
        mark=patch_of(query),
        text_px=text_px,
        bar_px=0 if wrapped else canvas.BAR_WIDTH,
    )


def layer_frames(
    ex: Explanation,
    query: Query,
    style: MapStyle,
    one_scale: bool = False,
    text_px: int = canvas.TEXT_PX,
) -> list[Image.Image]:
    """The `heads` view of every layer, for the animated GIF: each frame as the screen draws
    that layer, or with `one_scale` all on the scale of the largest weight of all layers; text
    `text_px` high, the tiles laid out as the screen lays them in that style and text size."""
    cols, tile = head_layout(ex, None, style, text_px)
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, tile)
    note = f"query: {query_label(ex, query)}. {left_out(ex)}"
    return render.layer_frames(
        base,
        ex.query_maps(query),
        style,
        cols,
        prefix=prefix_of(ex, query),
        note=note,
        mark=patch_of(query),
        one_scale=one_scale,
        text_px=text_px,
    )


def rollout(
    ex: Explanation,
    fusion: Fusion,
    style: MapStyle,
    showing: Showing = Showing(),  # noqa: B008 - a NamedTuple
    text_px: int = canvas.TEXT_PX,
) -> Image.Image:
    """Attention rollout of the CLS token (or the mean patch) through all layers, its heads fused
    as `fusion` says, drawn as `showing` says (see `one_map`), text `text_px` high."""
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, ROLLOUT_PX)
    amap = ex.rollout(*fusion)
    return one_map(
        base, amap, style, rollout_title(ex), "rollout weight", describe_rollout(ex, *fusion), showing, text_px
    )


def rollout_title(ex: Explanation) -> str:
    return f"attention rollout, query: {query_label(ex, None)}"


def uniform_value(amap: np.ndarray) -> float:
    """What every patch of a (gh, gw) map would hold were its total spread evenly: total / N
    (1/N for a map that sums to 1)."""
    return float(amap.sum()) / amap.size


def uniform_note(uniform: float, patches: int) -> str:
    """What uniform is, in the note under a map over the whole grid (`one_map`)."""
    return f"Uniform = {canvas.number(uniform)}: the map's total spread evenly over its {patches} patches"


def one_map(
    base: np.ndarray,
    amap: np.ndarray,
    style: MapStyle,
    title: str,
    unit: str,
    note: str,
    showing: Showing,
    text_px: int = canvas.TEXT_PX,
) -> Image.Image:
    """A map over the whole grid (rollout, relevance) as `showing.show` says: "weights" from 0
    with uniform marked, "relative" to uniform, or "top mass": only the patches holding the top
    `showing.keep` (0 to 1) of its mass, as DINO's visualize_attention does (Caron et al. 2021).
    Its text is `text_px` high."""
    show, keep = showing
    if show not in SHOWS:
        raise ValueError(f"show must be one of {', '.join(SHOWS)}; got {show!r}")
    uniform, n = uniform_value(amap), amap.size
    even = uniform_note(uniform, n)
    if show == "relative":
        return render.relative_picture(base, amap, uniform, style, title, f"{note} {even}.", text_px)
    even += " (▼ on the colour bar); a patch above it gets more than an even share, one below it less."
    if show == "weights":
        return render.map_picture(base, amap, style, title, unit, f"{note} {even}", uniform=uniform, text_px=text_px)
    mask = top_mass_mask(torch.from_numpy(amap), keep).numpy()
    kept = (
        f"Shown: the {int(mask.sum())} of {n} patches that hold the top {keep:.0%} of the map's mass (largest first, "
        "as DINO's visualize_attention, Caron et al. 2021); the others show the photo in "
        f"{render.dim_tint(style.cmap)} without the colour map (no value of the colour bar)."
    )
    note = f"{note} {even} {kept}"
    return render.map_picture(base, amap, style, title, unit, note, uniform=uniform, keep=mask, text_px=text_px)


def relevance(
    model: VisionTransformer,
    class_names: Sequence[str],
    ex: Explanation,
    target: int | None,
    style: MapStyle,
    showing: Showing = Showing(),  # noqa: B008 - a NamedTuple, never changed
    computed: tuple[np.ndarray, int] | None = None,
    text_px: int = canvas.TEXT_PX,
) -> Image.Image:
    """Class-specific relevance (Chefer, Gur & Wolf 2021, Eq. 5-6; docs/lessons.md) of every
    patch for class `target` (0-based; None: the predicted class), for the CLS token, drawn as
    `showing` says (see `one_map`). One more forward and backward pass over the explanation's
    model input, unless `computed` brings `relevance_map`'s result (made on a GPU). Raises
    ValueError for a model without a classifier head or a class out of range. Its text is
    `text_px` high."""
    amap, chosen = computed if computed is not None else model_relevance(model, ex.input.tensor, target)
    name = class_names[chosen] if chosen < len(class_names) else f"class {chosen}"
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, ROLLOUT_PX)
    which = "the predicted class" if target is None else "the chosen class"
    title = f"relevance for {which} '{name}' (Chefer et al. 2021)"  # the class, not the query: no query changes it
    note = (
        "Per layer, each head's attention A is weighted by the gradient of the class score, Ā = mean over heads "
        "of (∇A ⊙ A)⁺ (Eq. 5), and accumulated as R ← R + Ā·R from R = I (Eq. 6); the map is the "
        f"{query_label(ex, None)} row of R over the patches. Unlike rollout, it changes with the class."
    )
    return one_map(base, amap, style, title, "relevance (a.u.)", note, showing, text_px)


def prompt_relevance(
    pixels: np.ndarray,
    grid: tuple[int, int],
    zs: ZeroShot,
    index: int,
    style: MapStyle,
    showing: Showing = Showing(),  # noqa: B008 - a NamedTuple, never changed
    text_px: int = canvas.TEXT_PX,
) -> Image.Image:
    """The relevance map (on the (gh, gw) `grid` of the model input `pixels`) of prompt `index`
    (0-based) of a CLIP model's ZeroShot (Chefer et al. 2021, Eq. 5-6 with the image-text logit as
    the score), drawn as `showing` says (see `one_map`), text `text_px` high."""
    prompt = zs.prompts[index]
    base = canvas.fit_to_grid(pixels, grid, ROLLOUT_PX)
    title = f"'{prompt}': {zs.probabilities[prompt]:.0%} (relevance, Chefer et al. 2021)"
    note = (
        f"The score is the image-text logit of '{zs.template.format(prompt)}': the cosine similarity of the two "
        "embeddings times CLIP's learned scale (100 for OpenAI's weights); per layer Ā = mean over heads of "
        "(∇A ⊙ A)⁺ (Eq. 5), R ← R + Ā·R from R = I (Eq. 6); the map is the CLS row of R over the patches, "
        "on its own colour scale."
    )
    return one_map(base, zs.relevance[index], style, title, "relevance (a.u.)", note, showing, text_px)
