"""What each view of the app shows for an `Explanation`: PIL images and Markdown, no Gradio.

The app (`ui/`) wires these to components; the benchmark and the tests call them directly. A
query is `vit.analysis.Query`: None (the CLS token) or a (row, col) patch position, 0-based as
tensors are; people see 1-based numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np
import torch
from PIL import Image

from vit import VisionTransformer
from vit.analysis import MIN_FOREGROUND, PatchPca, Query, grid_border, patch_pca, top_mass_mask
from vit.messages import shown
from vit.probes import logit_lens
from vit.relevance import class_relevance

from . import canvas, charts, render
from .canvas import MapStyle
from .compute import pass_seconds, svd_flops, to_model, work_seconds
from .explain import Explanation
from .loaded import LoadedModel
from .prompts import ZeroShot

PATCH, MEAN = "patch", "mean"  # query tokens that are not prefix tokens: a patch, the mean of all patches

# How rollout and relevance are drawn: weights from 0 with uniform marked on the colour bar,
# relative to uniform (a diverging map centred on it), or only the patches holding the top
# `keep` of the map's mass (DINO's threshold). KEEP: the default kept fraction.
SHOWS = ("weights", "relative", "top mass")
KEEP = 0.6


class Showing(NamedTuple):
    """How a single map (rollout, relevance, a word's) is drawn: `how`, one of SHOWS, and for
    "top mass" the share `keep` of the map's mass kept, 0 to 1."""

    how: str = "weights"
    keep: float = KEEP


class Fusion(NamedTuple):
    """How rollout fuses a layer's heads (`how`: mean, max or min) and the share of its weakest
    entries it discards (Abnar & Zuidema 2020, with Gildenblat's fusion and discard)."""

    how: str = "mean"
    discard: float = 0.0


class Drawing(NamedTuple):
    """How an image's maps are drawn: rollout's fusion, the maps' style, how single maps show."""

    fusion: Fusion = Fusion()
    style: MapStyle = MapStyle()
    showing: Showing = Showing()


class QueryError(ValueError):
    """A query token the model does not have; its message names the allowed ones."""


def parse_query(token: object, prefix_names: Sequence[str], patch: Callable[[], tuple[int, int]]) -> Query:
    """The query a "Query token" choice names (Explore's picker, Live's, their API parameter):
    a prefix token of the model ('cls', 'dist', 'reg1', ...), None for CLS or the mean of the
    patches, or for PATCH the 0-based (row, column) `patch()` gives (asked only then: it checks
    its own values)."""
    tokens = [value for _, value in query_choices(prefix_names)]
    if token not in tokens:
        raise QueryError(f"unknown query token {shown(token)}; choose one of {', '.join(map(repr, tokens))}")
    if token == PATCH:
        return patch()
    return None if token in ("cls", MEAN) else str(token)


INPUT_PX, HEAD_PX, OVERVIEW_PX, ROLLOUT_PX = 384, 160, 64, 320  # display size of each view's longer side
# The CSS width (px) the app's layout gives each picture on a 1280×720 screen, measured in
# Chromium. gr.Image never enlarges a picture (object-fit: scale-down), so a picture at most
# this wide is shown at its own size and its text at the size drawn (canvas.TEXT_PX, ≥ 12 px;
# tests/test_explorer_views.py checks every view against this table).
DISPLAY_WIDTH = {
    "heads": 546,
    "overview": 1192,  # these five sit in the "More views" accordion, whose padding takes 24 px
    "rollout": 1192,
    "relevance": 1192,
    "prompts": 390,  # one map per prompt, three to a row of the full-width gallery
    "distance": 1192,
    "similarity": 1192,
    "pca": 1192,
    "logit_lens": 1192,
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


def token_label(name: str) -> str:
    """A prefix token ('cls', 'dist', 'reg1', ...) as people read it; registers count from 1."""
    if name == "cls":
        return "CLS token"
    if name == "dist":
        return "distillation token"
    if name.startswith("reg") and name[3:].isdigit():
        return f"register {name[3:]}"
    return name


def query_choices(prefix_names: Sequence[str]) -> list[tuple[str, str]]:
    """(label, token) pairs of the "Query token" picker: every prefix token, the mean of the
    patches for a model without CLS (its default query), and a patch."""
    choices = [(token_label(name), name) for name in prefix_names]
    if "cls" not in prefix_names:
        choices.insert(0, ("mean of all patches (no CLS token)", MEAN))
    return [*choices, ("a patch (click the grid)", PATCH)]


def query_token(query: Query, prefix_names: Sequence[str]) -> str:
    """The picker's token for a query: a prefix name, PATCH, or the default (CLS, or MEAN)."""
    if isinstance(query, tuple):
        return PATCH
    if query is None:
        return "cls" if "cls" in prefix_names else MEAN
    return str(query)


def clicked_patch(ex: Explanation, x: float, y: float) -> tuple[int, int]:
    """The (row, col) under a click at pixel (x, y) of the input view."""
    return ex.patch_at(x, y, input_scale(ex))


def describe_input(ex: Explanation) -> str:
    """Markdown: upload and model input sizes (width × height, as every message of the app
    writes sizes; the grid reads rows × columns), and a note when the image was enlarged."""
    (h, w), (ih, iw, _) = ex.original_size, ex.input.pixels.shape
    gh, gw = ex.grid
    prefix = ex.tokens - gh * gw
    names = _prefix_list(ex)
    listed = names if prefix == 1 else f"{prefix} prefix tokens: {names}"
    return (
        f"uploaded **{w} × {h}** px → model input **{iw} × {ih}** px (width × height) · "
        f"patch **{ex.patch_size}** px · grid **{gh} rows × {gw} columns** = {gh * gw} patches · "
        f"**{ex.tokens} tokens**{f' ({listed} + {gh * gw} patches)' if prefix else ''}\n\n{ex.input.policy}"
        + upscale_note((w, h), (iw, ih))
    )


def upscale_note(original: tuple[int, int], model: tuple[int, int]) -> str:
    """A sentence when the model input is larger than the upload on either side (sizes width ×
    height): the model sees an enlarged, blurred picture, and the maps describe that one."""
    if original[0] >= model[0] and original[1] >= model[1]:
        return ""
    return (
        f"\n\n**Enlarged:** the image is {original[0]} × {original[1]} px, smaller than the model's input, so it "
        f"was upscaled to {model[0]} × {model[1]} px (width × height): the model sees a blurred enlargement, "
        "not more detail."
    )


def _prefix_list(ex: Explanation) -> str:
    """The prefix tokens as a picture names them: "CLS, dist, reg1"."""
    return ", ".join(render.short_token_name(n) for n in ex.prefix_names)


def describe_query(query: Query, has_cls: bool = True) -> str:
    if isinstance(query, str):
        label = token_label(query)
        named = label if label.startswith("register ") else f"the {label}"  # "register 2" is a name, as "layer 3"
        return (
            f"Query: **{named}**, a token with no pixels of its own. Click a patch in the input "
            "to see where that patch looks, or pick another token."
        )
    if query is None:
        who = "the CLS token" if has_cls else "the average of all patches (this model has no CLS token)"
        return f"Query: **{who}**. Click a patch in the input to see where that patch looks."
    row, col = query
    return f"Query: **the patch at row {row + 1}, column {col + 1}** (outlined). Reset to go back to the default."


def query_label(ex: Explanation, query: Query) -> str:
    """The query as pictures name it: "CLS", "reg1", "patch (3, 7)" (1-based), "mean of patches"."""
    if isinstance(query, str):
        return render.short_token_name(query)
    if query is None:
        return "CLS" if ex.has_cls else "mean of patches"
    return f"patch ({query[0] + 1}, {query[1] + 1})"


def left_out(ex: Explanation) -> str:
    """The caption sentence that says what the patch maps leave out."""
    n, p = ex.grid[0] * ex.grid[1], ex.tokens - ex.grid[0] * ex.grid[1]
    if not p:
        return f"Maps show attention to all {n} patches (this model has no CLS token: nothing is left out)."
    names = _prefix_list(ex)
    what = names if p == 1 else f"the {p} prefix tokens ({names})"
    return f"Maps show attention to the {n} patches; attention to {what} (printed under each head) is left out."


def patch_of(query: Query) -> tuple[int, int] | None:
    """The (row, col) of a patch query, to outline in the head tiles; None for a prefix token."""
    return query if isinstance(query, tuple) else None


def head_layout(ex: Explanation, columns: int | None = None, style: MapStyle | None = None) -> tuple[int, int]:
    """(tiles per row, tile side in px) of the heads view: `columns` tiles a row (default: up
    to MAX_COLUMNS), each at most HEAD_PX and small enough for the row to fit the heads'
    DISPLAY_WIDTH, in whole pixels per patch. `columns=2` keeps HEAD_PX tiles in a 332-px
    picture, at least 150 px wide on a phone's 326-px column. With a `style`, fewer tiles a
    row where its captions (`caption_px`) would widen the row past DISPLAY_WIDTH, which the
    page would then shrink, text and all (large text: the presentation mode)."""
    cols = max(1, min(ex.heads, columns or MAX_COLUMNS))
    side = max(ex.grid)

    def tile(n: int) -> int:
        room = (DISPLAY_WIDTH["heads"] - canvas.GAP * n) // n
        return side * max(1, min(HEAD_PX, room) // side)

    widest = 0.0 if style is None else caption_px(ex, style)
    while cols > 1 and cols * (max(tile(cols), widest) + canvas.GAP) > DISPLAY_WIDTH["heads"]:
        cols -= 1
    return cols, tile(cols)


def caption_px(ex: Explanation, style: MapStyle) -> float:
    """The widest line a head tile's caption may hold in `style`: its name, its own maximum on
    the per-head scale, and its shares of the prefix tokens (render._tile_lines). The shares had
    been left out: in `--present` a model with registers got six 80-px tiles a row under 95-px
    lines ("reg1 0.00"), and the page shrank the picture, words and all."""
    shares = render.prefix_lines(np.zeros(ex.attention.prefix_tokens), ex.prefix_names) if ex.has_prefix else []
    lines = [f"head {ex.heads}", *(["max 0.0000"] if style.scale == "head" else []), *shares]
    return max(canvas.text_width(line, style.text_px) for line in lines)


def heads_title(ex: Explanation, label: str, layer: int | str) -> str:
    """The head maps' title: the layer (1-based) and the query as pictures name it (`query_label`)."""
    return f"layer {layer} of {ex.depth}, query: {label}"


def heads(ex: Explanation, query: Query, layer: int, style: MapStyle, columns: int | None = None) -> Image.Image:
    """Where the query looks, one tile per head, in `layer` (1-based), `columns` tiles a row
    (see `head_layout`)."""
    cols, tile = head_layout(ex, columns, style)
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, tile)
    title = heads_title(ex, query_label(ex, query), layer)
    i = layer - 1
    maps, prefix = ex.query_maps(query)[i], ex.prefix_attention(query)[i]
    return render.head_grid(
        base,
        maps,
        style,
        title,
        cols,
        prefix=prefix,
        note=left_out(ex),
        prefix_names=ex.prefix_names,
        mark=patch_of(query),
    )


def layer_frames(
    ex: Explanation, query: Query, style: MapStyle, columns: int | None = None, one_scale: bool = False
) -> list[Image.Image]:
    """The `heads` view of every layer, for the animated GIF: each frame as the screen draws
    that layer, or with `one_scale` all on the scale of the largest weight of all layers."""
    cols, tile = head_layout(ex, columns)
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, tile)
    maps, prefix = ex.query_maps(query), ex.prefix_attention(query)
    note = f"query: {query_label(ex, query)}. {left_out(ex)}"
    return render.layer_frames(
        base,
        maps,
        style,
        cols,
        prefix=prefix,
        note=note,
        prefix_names=ex.prefix_names,
        mark=patch_of(query),
        one_scale=one_scale,
    )


def overview(ex: Explanation, style: MapStyle) -> Image.Image:
    """The default query's attention (CLS) in every head of every layer."""
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, OVERVIEW_PX)
    title = f"query: {query_label(ex, None)}, every layer and head"
    return render.layers_by_heads(
        base,
        ex.query_maps(None),
        style,
        title,
        prefix=ex.prefix_attention(None),
        note=left_out(ex),
        prefix_names=ex.prefix_names,
    )


def describe_rollout(ex: Explanation, head_fusion: str, discard_ratio: float) -> str:
    """Rollout's convention in words (Abnar & Zuidema 2020; docs/pictures.md), and its share
    on CLS, which the map leaves out."""
    discard = (
        f"the weakest {discard_ratio:.0%} of entries are set to 0 (never the CLS column nor a row's strongest "
        "patch entry, so the map is never all zero); "
        if discard_ratio > 0
        else ""
    )
    rule = (
        f"Rollout (Abnar & Zuidema 2020): per layer the heads are fused ({head_fusion}), {discard}the identity "
        "is added for the residual connection and each row renormalised: Â = rownorm(A + I), which is "
        "0.5·A + 0.5·I for mean fusion; the layers are multiplied, R = Â_L ⋯ Â_1."
    )
    if not ex.has_prefix:
        return f"{rule} Map: the mean patch row of R (no CLS token: nothing is left out)."
    shares = ex.rollout_prefix(head_fusion, discard_ratio)
    if ex.prefix_names == ("cls",):
        return f"{rule} Map: the CLS row of R over the patches; its share on CLS itself, {shares[0]:.2f}, is left out."
    row = "the CLS row" if ex.has_cls else "the mean patch row"
    named = ", ".join(f"{render.short_token_name(n)} {s:.2f}" for n, s in zip(ex.prefix_names, shares, strict=True))
    return f"{rule} Map: {row} of R over the patches; its share on the prefix tokens ({named}) is left out."


def rollout(
    ex: Explanation,
    fusion: Fusion,
    style: MapStyle,
    showing: Showing = Showing(),  # noqa: B008 - a NamedTuple
) -> Image.Image:
    """Attention rollout of the CLS token (or the mean patch) through all layers, its heads fused
    as `fusion` says, drawn as `showing` says (see `one_map`)."""
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, ROLLOUT_PX)
    title = f"attention rollout, query: {query_label(ex, None)}"
    note = describe_rollout(ex, *fusion)
    amap = ex.rollout(*fusion)
    return one_map(base, amap, style, title, "rollout weight", note, showing)


def uniform_value(amap: np.ndarray) -> float:
    """What every patch of a (gh, gw) map would hold were its total spread evenly: total / N
    (1/N for a map that sums to 1)."""
    return float(amap.sum()) / amap.size


def one_map(
    base: np.ndarray, amap: np.ndarray, style: MapStyle, title: str, unit: str, note: str, showing: Showing
) -> Image.Image:
    """A map over the whole grid (rollout, relevance) as `showing.how` says: "weights" from 0
    with uniform marked, "relative" to uniform, or "top mass": only the patches holding the top
    `showing.keep` (0 to 1) of its mass, as DINO's visualize_attention does (Caron et al. 2021)."""
    show, keep = showing
    if show not in SHOWS:
        raise ValueError(f"show must be one of {', '.join(SHOWS)}; got {show!r}")
    uniform, n = uniform_value(amap), amap.size
    even = f"Uniform = {canvas.number(uniform)}: the map's total spread evenly over its {n} patches"
    if show == "relative":
        return render.relative_picture(base, amap, uniform, style, title, f"{note} {even}.")
    even += " (▼ on the colour bar); a patch above it gets more than an even share, one below it less."
    if show == "weights":
        return render.map_picture(base, amap, style, title, unit, f"{note} {even}", uniform=uniform)
    mask = top_mass_mask(torch.from_numpy(amap), keep).numpy()
    kept = (
        f"Shown: the {int(mask.sum())} of {n} patches that hold the top {keep:.0%} of the map's mass (largest first, "
        "as DINO's visualize_attention, Caron et al. 2021); the others show the photo in "
        f"{render.dim_tint(style.cmap)} without the colour map (no value of the colour bar)."
    )
    return render.map_picture(base, amap, style, title, unit, f"{note} {even} {kept}", uniform=uniform, keep=mask)


def distance_chart(ex: Explanation, text_px: int = canvas.TEXT_PX) -> Image.Image:
    return charts.attention_distance_chart(ex.attention_distance(), ex.input.pixels.shape[:2], text_px)


def relevance(
    model: VisionTransformer,
    class_names: Sequence[str],
    ex: Explanation,
    target: int | None,
    style: MapStyle,
    showing: Showing = Showing(),  # noqa: B008 - a NamedTuple, never changed
    computed: tuple[np.ndarray, int] | None = None,
) -> Image.Image:
    """Class-specific relevance (Chefer, Gur & Wolf 2021, Eq. 5-6; docs/lessons.md) of every
    patch for class `target` (0-based; None: the predicted class), for the CLS token, drawn as
    `showing` says (see `one_map`). One more forward and backward pass over the explanation's
    model input, unless `computed` brings `relevance_map`'s result (made on a GPU). Raises
    ValueError for a model without a classifier head or a class out of range."""
    amap, chosen = computed if computed is not None else _relevance(model, ex.input.tensor, target)
    name = class_names[chosen] if chosen < len(class_names) else f"class {chosen}"
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, ROLLOUT_PX)
    which = "the predicted class" if target is None else "the chosen class"
    title = f"relevance for {which} '{name}' (Chefer et al. 2021)"  # the class, not the query: no query changes it
    note = (
        "Per layer, each head's attention A is weighted by the gradient of the class score, Ā = mean over heads "
        "of (∇A ⊙ A)⁺ (Eq. 5), and accumulated as R ← R + Ā·R from R = I (Eq. 6); the map is the "
        f"{query_label(ex, None)} row of R over the patches. Unlike rollout, it changes with the class."
    )
    return one_map(base, amap, style, title, "relevance (a.u.)", note, showing)


def _relevance(model: VisionTransformer, tensor: torch.Tensor, target: int | None) -> tuple[np.ndarray, int]:
    amap, chosen = class_relevance(model, to_model(model, tensor), target)
    return amap[0].cpu().numpy(), int(chosen[0])  # (gh, gw), the class explained


def relevance_map(loaded: LoadedModel, tensor: torch.Tensor, target: int | None) -> tuple[np.ndarray, int]:
    """Task (explorer/compute.py): the relevance map (gh, gw) of `tensor` (1, 3, H, W) for class
    `target` (None: the predicted one) and the class it explains."""
    return _relevance(loaded.model, tensor, target)


def relevance_cost(loaded: LoadedModel, tensor: torch.Tensor, target: int | None) -> float:
    """GPU seconds of `relevance_map`: a forward pass and a backward pass (about twice its work)."""
    return 3 * pass_seconds(loaded.model, tensor.shape[-2:])


def prompt_relevance(
    pixels: np.ndarray,
    grid: tuple[int, int],
    zs: ZeroShot,
    index: int,
    style: MapStyle,
    showing: Showing = Showing(),  # noqa: B008 - a NamedTuple, never changed
) -> Image.Image:
    """The relevance map (on the (gh, gw) `grid` of the model input `pixels`) of prompt `index`
    (0-based) of a CLIP model's ZeroShot (Chefer et al. 2021, Eq. 5-6 with the image-text logit as
    the score), drawn as `showing` says (see `one_map`)."""
    prompt = zs.prompts[index]
    base = canvas.fit_to_grid(pixels, grid, ROLLOUT_PX)
    title = f"'{prompt}': {zs.probabilities[prompt]:.0%} (relevance, Chefer et al. 2021)"
    note = (
        f"The score is the image-text logit of '{zs.template.format(prompt)}': the cosine similarity of the two "
        "embeddings times CLIP's learned scale (100 for OpenAI's weights); per layer Ā = mean over heads of "
        "(∇A ⊙ A)⁺ (Eq. 5), R ← R + Ā·R from R = I (Eq. 6); the map is the CLS row of R over the patches, "
        "on its own colour scale."
    )
    return one_map(base, zs.relevance[index], style, title, "relevance (a.u.)", note, showing)


# Every ASCII punctuation character: CommonMark lets each be backslash-escaped, and marked (the
# renderer of gr.Markdown) escapes the same set.
_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_text(text: str) -> str:
    """`text` (a visitor's words) as Markdown that shows it as typed: every ASCII punctuation
    character backslash-escaped, so none of it becomes a picture (a `![x](url)` was fetched), a
    link, an HTML tag, an entity, emphasis, code or a $$ formula (`\\<` shows "<", so no
    html.escape on top, whose "&lt;" would then show), and each run of whitespace one space, as
    the page shows it anyway, so no heading, list or code block starts inside it."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", re.sub(r"\s+", " ", text))


def prompt_note(zs: ZeroShot, left_out: str = "") -> str:
    """Markdown under the prompt maps: the words left out for the server's memory, if any
    (`left_out`, explorer.prompts.affordable_words' sentence, which holds none of the words), the
    template, what the probabilities are, and which words were longer than CLIP reads. The words
    are the visitor's: shown as typed."""
    cut = "".join(
        f" “{markdown_text(p)}” is longer than CLIP reads ({zs.context} tokens, the template's included): only "
        "its beginning was used."
        for p in zs.cut
    )
    return (
        (f"**{left_out}** " if left_out else "") + f"Each word was put into CLIP's template **“{zs.template}”** "
        f"(e.g. “{zs.template.format(markdown_text(zs.prompts[0]))}”). "
        "The probabilities are a softmax over the words typed only: CLIP picks the best of *these* words, so it "
        f"answers even when none fits the picture. Each map shows which patches raised that word's similarity.{cut}"
    )


# Alt texts (docs/pictures.md): what each picture shows, in words, for screen readers and for
# anyone who cannot see it: the view, the layer, the query and the model, 1-based.


def _on(ex: Explanation, model: str) -> str:
    gh, gw = ex.grid
    return f"model: {model}, on the {gh} × {gw} patch grid (rows × columns)"


def input_alt(ex: Explanation, query: Query, model: str) -> str:
    """The clickable model input."""
    (h, w, _), who = ex.input.pixels.shape, query_label(ex, query)
    marked = f"; the query, {who}, is outlined" if isinstance(query, tuple) else f"; the query is {who}"
    return f"The model input, {w} × {h} pixels, with its patch grid drawn over it{marked}; {_on(ex, model)}."


def heads_alt(ex: Explanation, query: Query, layer: int, model: str) -> str:
    """The head maps of one layer (1-based), and the PNG export."""
    return (
        f"Attention maps of the {ex.heads} heads of layer {layer} of {ex.depth}, one tile each, for the query "
        f"{query_label(ex, query)}: where it looks over the image, with a colour bar; {_on(ex, model)}."
    )


def overview_alt(ex: Explanation, model: str) -> str:
    """The layers × heads overview."""
    return (
        f"Attention of the query {query_label(ex, None)} in every head of every layer: {ex.depth} rows (layers 1 to "
        f"{ex.depth}) of {ex.heads} tiles (heads 1 to {ex.heads}), each row with its colour bar; {_on(ex, model)}."
    )


def rollout_alt(ex: Explanation, fusion: Fusion, showing: Showing, model: str) -> str:
    """The rollout map, its heads fused as `fusion` says, drawn as `showing` says."""
    return (
        f"Attention rollout of the query {query_label(ex, None)} through all {ex.depth} layers ({fusion.how} over "
        f"heads, discard ratio {fusion.discard:.2f}), drawn as {_shown(showing)}; {_on(ex, model)}."
    )


def relevance_alt(ex: Explanation, class_name: str | None, showing: Showing, model: str) -> str:
    """The class-relevance map for `class_name` (None: the predicted class, the explanation's
    top class, as `relevance` picks it), drawn as `showing` says."""
    which = (
        f"the chosen class '{class_name}'" if class_name else f"the predicted class '{next(iter(ex.probabilities))}'"
    )
    return f"Relevance of each patch for {which} (Chefer et al. 2021), drawn as {_shown(showing)}; {_on(ex, model)}."


def prompt_alt(grid: tuple[int, int], zs: ZeroShot, index: int, showing: Showing, model: str) -> str:
    """The relevance map of one prompt on a (gh, gw) `grid`, drawn as `showing` says."""
    prompt, (gh, gw) = zs.prompts[index], grid
    return (
        f"Relevance of each patch for the words '{prompt}' (probability {zs.probabilities[prompt]:.0%} among "
        f"{len(zs.prompts)} prompts; Chefer et al. 2021), drawn as {_shown(showing)}; model: {model}, on the "
        f"{gh} × {gw} patch grid (rows × columns)."
    )


def _shown(showing: Showing) -> str:
    return {
        "weights": "weights from 0 with uniform marked on the colour bar",
        "relative": "multiples of uniform (blue below, white at, red above)",
        "top mass": f"only the patches holding the top {showing.keep:.0%} of its mass, the rest as the photo in a "
        "light tint",
    }[showing.how]


def distance_alt(ex: Explanation, model: str) -> str:
    """The mean attention distance chart."""
    return (
        f"Chart of the mean attention distance in pixels (y) of each of the {ex.heads} heads in each of the "
        f"{ex.depth} layers (x) for this image, one dot per head, side by side; {_on(ex, model)}."
    )


def position_words(model: VisionTransformer) -> str:
    """What the position-similarity picture compares for `model`: its learned position
    embeddings, or, for a rotary model (DINOv3), the rotation angles of each slot, which are
    computed, not learned (docs/analysis.md)."""
    if model.config.pos_embed == "rope":
        return "rotary position angles (computed, not learned)"
    return "position embeddings"


def similarity_step(grid: tuple[int, int], text_px: int) -> int:
    """A position-similarity tile for every how many slots along each side, so that the tiles
    fit the picture's DISPLAY_WIDTH (render.similarity_step)."""
    return render.similarity_step(grid, text_px, DISPLAY_WIDTH["similarity"])


def similarity_alt(grid: tuple[int, int], model: str, compared: str = "position embeddings", step: int = 1) -> str:
    """The position-embedding similarity tiles (they do not depend on the image), one for every
    `step`-th slot along each side."""
    gh, gw = grid
    tiles = f"{gh} × {gw} tiles (rows × columns)"
    if step > 1:
        shown = f"{len(range(0, gh, step))} × {len(range(0, gw, step))}"
        tiles = f"{shown} tiles of the {gh} × {gw} slots, one every {step} slots"
    return (
        f"Cosine similarity of the {compared}: {tiles}, tile (i, j) comparing slot (i, j) with every slot, "
        f"from −1 to 1; model: {model}."
    )


# -- what each layer holds: patch features in colour (PCA) and the logit lens (docs/analysis.md) --


@dataclass(frozen=True)
class LayerPca:
    """`patch_features`' result: the PCA of the patches of every image, and each image's grid."""

    pca: PatchPca  # on the CPU; rows: the images' patches one image after another, row-major
    grids: tuple[tuple[int, int], ...]


def patch_features(
    loaded: LoadedModel, tensors: Sequence[torch.Tensor], layer: int, remove_background: bool
) -> LayerPca:
    """Task (explorer/compute.py): the patch tokens leaving block `layer` (0-based) for each of
    `tensors` (1, 3, H, W), through the model's final norm as DINOv2's features are (its
    `x_norm_patchtokens`, and `get_intermediate_layers(norm=True)` for earlier layers), prefix
    tokens left out, and one `patch_pca` of all of them."""
    model = loaded.model
    patches, borders, grids = [], [], []
    with torch.inference_mode():
        for tensor in tensors:
            tokens = model.norm(model.hidden_states(to_model(model, tensor), upto=layer)[layer])  # (1, T, D)
            patches.append(tokens[0, model.prefix_tokens :].float())  # (N, D), row-major over the grid
            grids.append(model.patch_grid(*tensor.shape[-2:]))
            borders.append(grid_border(grids[-1]).to(tokens.device))
        pca = patch_pca(patches, borders, remove_background)
    on_cpu = {f.name: getattr(pca, f.name) for f in fields(pca)}
    on_cpu = {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in on_cpu.items()}
    return LayerPca(PatchPca(**on_cpu), tuple(grids))


def patch_features_cost(loaded: LoadedModel, tensors: Sequence[torch.Tensor], layer: int, *_: object) -> float:
    """GPU seconds of `patch_features`: each image's pass up to block `layer`, and two SVDs of
    all the patches (M rows of D features)."""
    model = loaded.model
    passes = sum(pass_seconds(model, t.shape[-2:]) for t in tensors) * (layer + 1) / model.config.depth
    rows = sum(math.prod(model.patch_grid(*t.shape[-2:])) for t in tensors)
    return passes + 2 * work_seconds(svd_flops(rows, model.config.dim))


def layer_predictions(loaded: LoadedModel, tensor: torch.Tensor) -> torch.Tensor:
    """Task (explorer/compute.py): (layers, classes) class probabilities read after every block
    of one image (1, 3, H, W): `vit.probes.logit_lens`."""
    return logit_lens(loaded.model, to_model(loaded.model, tensor))[0].cpu()


def layer_predictions_cost(loaded: LoadedModel, tensor: torch.Tensor) -> float:
    """GPU seconds of `layer_predictions`: one forward pass and the head after every block."""
    c = loaded.model.config
    return pass_seconds(loaded.model, tensor.shape[-2:]) + work_seconds(c.depth * 2 * c.dim * c.num_classes)


def pca_legend(pca: PatchPca) -> list[str]:
    """The label of each channel's colour bar: its component, its share of the variance, its units."""
    return [
        f"{channel} = colour component {i + 1} ({float(share):.0%} of the kept patches' variance): projection, "
        f"min-max scaled (0 = its smallest, {canvas.number(float(low))}; 1 = its largest, {canvas.number(float(high))})"
        for i, (channel, share, (low, high)) in enumerate(zip("RGB", pca.explained, pca.ranges.tolist(), strict=False))
    ]


def describe_pca(pca: PatchPca, images: int, prefix_names: Sequence[str]) -> str:
    """The PCA picture's note: how the background was removed (the threshold, its sign), what is left out."""
    patches, kept = len(pca.foreground), int(pca.foreground.sum())
    shares = ", ".join(f"{float(s):.0%}" for s in pca.first_explained)
    if bool(pca.removed.any()):
        how = (
            f"Background removed as in DINOv2 (Oquab et al. 2023, Fig. 1): per image, a first PCA over its patches; "
            f"its component 1 ({shares} of the variance) is thresholded at 0 (the image's mean patch) and the "
            f"patches above 0 are kept, {kept} of {patches}. Its sign is chosen so that the image's border patches, "
            f"where background usually is, score below 0 on average (turned for {int(pca.flipped.sum())} of "
            f"{len(pca.flipped)} images). A second PCA over the kept patches of all images gives the colours; the "
            f"other patches show the photo in {render.dim_tint('gray')}, no colour value."
        )
        whole = [str(i + 1) for i, removed in enumerate(pca.removed.tolist()) if not removed]
        if whole:
            how += f" Image {', '.join(whole)} keeps all its patches: fewer than {MIN_FOREGROUND} on one side."
    else:
        how = (
            f"No background removed (not asked for, or fewer than {MIN_FOREGROUND} patches on one side of the "
            f"threshold in every image): one PCA over all {patches} patches gives the colours."
        )
    parts = [how]
    if images > 1:
        parts.append(f"One PCA for all {images} images, so the same colour means the same direction in every image.")
    if prefix_names:
        parts.append(f"Prefix tokens ({_prefix_names(prefix_names)}) have no place on the grid and are left out.")
    parts.append("PCA signs: each component's largest entry is positive (as scikit-learn's PCA).")
    return " ".join(parts)


def _prefix_names(names: Sequence[str]) -> str:
    return ", ".join(render.short_token_name(n) for n in names)


def pca_view(
    pixels: Sequence[np.ndarray],
    names: Sequence[str],
    computed: LayerPca,
    layer: int,
    depth: int,
    prefix_names: Sequence[str] = (),
    text_px: int = canvas.TEXT_PX,
) -> Image.Image:
    """Patch features of `layer` (1-based) in colour, one column per image (`pixels`, the model
    inputs (H, W, 3), named `names`), with its RGB legend and note (describe_pca)."""
    pca = computed.pca
    room = (DISPLAY_WIDTH["pca"] - 80) // len(pixels) - canvas.GAP  # 80 px: the row labels "image", "PCA"
    tile = max(48, min(render.PCA_TILE_PX, room))
    photos, colours, keep, start = [], [], [], 0
    for image, grid in zip(pixels, computed.grids, strict=True):
        n = grid[0] * grid[1]
        photos.append(canvas.fit_to_grid(image, grid, tile))
        colours.append(pca.rgb[start : start + n].reshape(*grid, 3).numpy())  # (N, 3) -> (gh, gw, 3) row-major
        keep.append(pca.foreground[start : start + n].reshape(grid).numpy())
        start += n
    title = (
        f"Patch tokens of layer {layer} of {depth} in colour: their first three principal components as R, G, B "
        f"({', '.join(f'{float(s):.0%}' for s in pca.explained)} of the variance)"
    )
    note = describe_pca(pca, len(pixels), prefix_names)
    return render.pca_picture(photos, colours, keep, names, pca_legend(pca), title, note, text_px)


LENS_TOP = 5  # classes shown by the logit lens: the last layer's top 5
LENS_CAVEAT = (
    "Intermediate layers were never trained to be read this way: only the last layer's reading is the model's "
    "prediction. An earlier reading is what the classifier makes of an unfinished representation, not what the "
    "model 'thought' at that layer."
)


def logit_lens_view(
    probabilities: np.ndarray, class_names: Sequence[str], text_px: int = canvas.TEXT_PX
) -> Image.Image:
    """What each layer would answer (`layer_predictions`' (layers, classes) probabilities): the
    last layer's top LENS_TOP classes at every layer, and each layer's own top class."""
    layers, classes = probabilities.shape
    top = np.argsort(-probabilities[-1], kind="stable")[: min(LENS_TOP, classes)]
    names = [_class_name(class_names, i) for i in top]
    top1 = [_class_name(class_names, i) for i in probabilities.argmax(axis=1)]
    title = (
        "What each layer would answer (logit lens): the token the classifier reads, taken after each block and "
        "passed through the model's final norm and classifier head"
    )
    note = (
        f"{LENS_CAVEAT} Rows: the last layer's top {len(top)} classes, their probability after every layer; the other "
        f"{classes - len(top)} classes' share is left out (printed on top: each layer's own top class)."
    )
    return charts.logit_lens_chart(probabilities[:, top].T, names, top1, title, note, text_px)


def _class_name(class_names: Sequence[str], index: int) -> str:
    return class_names[index] if index < len(class_names) else f"class {index}"


def pca_alt(names: Sequence[str], computed: LayerPca, layer: int, depth: int, model: str) -> str:
    """The PCA picture."""
    background = (
        "background patches (component 1 of a first PCA below 0) shown as the pale photo"
        if bool(computed.pca.removed.any())
        else "no background removed"
    )
    return (
        f"Patch tokens of layer {layer} of {depth} in colour for {len(names)} image(s) ({', '.join(names)}): one PCA "
        f"over all their patches, components 1, 2, 3 as red, green and blue, each min-max scaled, {background}, "
        f"each image's colours under its photo; model: {model}."
    )


def logit_lens_alt(probabilities: np.ndarray, class_names: Sequence[str], model: str) -> str:
    """The logit lens chart: every layer's top class in words."""
    read = ", ".join(
        f"layer {i + 1}: {_class_name(class_names, int(row.argmax()))} {float(row.max()):.2f}"
        for i, row in enumerate(probabilities)
    )
    return (
        f"Heat map of the probability, 0 to 1, of the last layer's top {min(LENS_TOP, probabilities.shape[1])} classes "
        f"read after each of the {len(probabilities)} layers (logit lens; intermediate layers were never trained to "
        f"be read this way). Top class per layer: {read}; model: {model}."
    )
