"""What the views say in words, Gradio-free: the Markdown beside the pictures (the sizes, the
query, rollout's convention, the PCA's note, a CLIP model's words), the pictures' titles and
the alt text of every Explore picture (docs/pictures.md). Counts are 1-based, as people read them.
"""

from __future__ import annotations

from vit.analysis import Query
from vit.clip import as_typed, sentence
from vit.messages import markdown_text

from . import render
from .controls import Fusion, Showing, token_label
from .explain import Explanation
from .prompts import ZeroShot


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


def heads_title(ex: Explanation, label: str, layer_number: int | str) -> str:
    """The head maps' title: the layer as people count it (from 1, or the page's placeholder) and
    the query as pictures name it (`query_label`)."""
    return f"layer {layer_number} of {ex.depth}, query: {label}"


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


def _sentence_shown(template: str, prompt: str) -> str:
    """Markdown of the sentence the text tower read for `prompt` (vit.clip.sentence): the visitor's
    words escaped, the template's own marks as they are."""
    if not as_typed(template, prompt):
        return template.format(markdown_text(prompt))
    return markdown_text(prompt) + sentence(template, prompt)[len(prompt) :]  # the ending it was given


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
    # the example is a word the template really wrapped, as the tower read it (it printed "a photo
    # of a photo of a cat." for a typed "a photo of a cat"); the rule for the others is said beside it
    wrapped = next((p for p in zs.prompts if not as_typed(zs.template, p)), zs.prompts[0])
    opening = zs.template.partition("{}")[0].strip()
    return (
        (f"**{left_out}** " if left_out else "") + f"Each word was put into CLIP's template **“{zs.template}”** "
        f"(e.g. “{_sentence_shown(zs.template, wrapped)}”); words that already begin with “{opening}” "
        "were read as typed, not put into it again. "
        "The probabilities are a softmax over the words typed only: CLIP picks the best of *these* words, so it "
        f"answers even when none fits the picture. Each map shows which patches raised that word's similarity.{cut}"
    )


# Alt texts (docs/pictures.md): what each picture shows, in words, for screen readers and for
# anyone who cannot see it: the view, the layer, the query and the model, 1-based.


def on_grid(ex: Explanation, model: str) -> str:
    """How every alt text of a picture of an analysis ends: the model and the patch grid."""
    gh, gw = ex.grid
    return f"model: {model}, on the {gh} × {gw} patch grid (rows × columns)"


def input_alt(ex: Explanation, query: Query, model: str) -> str:
    """The clickable model input."""
    (h, w, _), who = ex.input.pixels.shape, query_label(ex, query)
    marked = f"; the query, {who}, is outlined" if isinstance(query, tuple) else f"; the query is {who}"
    return f"The model input, {w} × {h} pixels, with its patch grid drawn over it{marked}; {on_grid(ex, model)}."


def heads_alt(ex: Explanation, query: Query, layer_number: int, model: str) -> str:
    """The head maps of one layer (`layer_number`: from 1, as written), and the PNG export."""
    return (
        f"Attention maps of the {ex.heads} heads of layer {layer_number} of {ex.depth}, one tile each, for the query "
        f"{query_label(ex, query)}: where it looks over the image, with a colour bar; {on_grid(ex, model)}."
    )


def rollout_alt(ex: Explanation, fusion: Fusion, showing: Showing, model: str) -> str:
    """The rollout map, its heads fused as `fusion` says, drawn as `showing` says."""
    return (
        f"Attention rollout of the query {query_label(ex, None)} through all {ex.depth} layers "
        f"({fusion.head_fusion} over heads, discard ratio {fusion.discard:.2f}), drawn as {_drawn_as(showing)}; "
        f"{on_grid(ex, model)}."
    )


def relevance_alt(ex: Explanation, class_name: str | None, showing: Showing, model: str) -> str:
    """The class-relevance map for `class_name` (None: the predicted class, the explanation's
    top class, as `relevance` picks it), drawn as `showing` says."""
    which = (
        f"the chosen class '{class_name}'" if class_name else f"the predicted class '{next(iter(ex.probabilities))}'"
    )
    drawn = _drawn_as(showing)
    return f"Relevance of each patch for {which} (Chefer et al. 2021), drawn as {drawn}; {on_grid(ex, model)}."


def prompt_alt(grid: tuple[int, int], zs: ZeroShot, index: int, showing: Showing, model: str) -> str:
    """The relevance map of one prompt on a (gh, gw) `grid`, drawn as `showing` says."""
    prompt, (gh, gw) = zs.prompts[index], grid
    return (
        f"Relevance of each patch for the words '{prompt}' (probability {zs.probabilities[prompt]:.0%} among "
        f"{len(zs.prompts)} prompts; Chefer et al. 2021), drawn as {_drawn_as(showing)}; model: {model}, on the "
        f"{gh} × {gw} patch grid (rows × columns)."
    )


def _drawn_as(showing: Showing) -> str:
    return {
        "weights": "weights from 0 with uniform marked on the colour bar",
        "relative": "multiples of uniform (blue below, white at, red above)",
        "top mass": f"only the patches holding the top {showing.keep:.0%} of its mass, the rest as the photo in a "
        "light tint",
    }[showing.show]
