"""Handlers of the Explore tab: module-level functions from named inputs to `{field: value}`.

ui/explore.py binds each to the tab's `ExploreTab` and the server's context (`ui.common.Server`)
with `ExploreTab.bind`. A handler takes the style controls as one `MapStyle` (rollout's fusion
and how a single map shows as one value each, or all three as one `controls.Drawing`; a "More
views" view's own controls as its record's `asked`, several views' as one `ViewsAsked`: ui.common
and ui/explore_views.py parse them at the binding), asks `explorer.views` for pictures (the "More
views" through their records, ui/explore_views.py) and returns them by field name, which the
binding applies to the ExploreTab, so a new view is one more name, not one more tuple slot.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import gradio as gr
import numpy as np

from explorer import controls, page_maps, render, texts, views
from explorer.canvas import MapStyle
from explorer.catalog import ModelUnavailable
from explorer.controls import Drawing, Showing
from explorer.explain import (
    Explanation,
    ExplanationStore,
    ExplanationTooLarge,
    explain_file,
)
from explorer.images import ImageError
from explorer.loaded import LoadedModel
from explorer.more_views import relevance as relevance_view
from explorer.prompts import PromptError, ZeroShot, affordable_words, parse_prompts, zero_shot
from vit.analysis import Query
from vit.messages import markdown_text, quoted

from . import downloads, zerogpu
from .checks import one_of, visitor_error, whole_number
from .common import (
    ExplanationKey,
    Server,
    check_layer,
    check_query,
    check_upload_header,
    export_stem,
    layer_slider,
    load_or_error,
    model_name,
    network,
    picked_model,
    query_name,
    slug,
    uploaded_path,
    visitor_of,
    word_maps,
)
from .explore_views import (
    IMAGE_VIEWS,
    KEPT,
    MORE,
    MORE_VIEWS,
    ON_REQUEST,
    PREDICTED,
    STYLE_VIEWS,
    DrawnAsked,
    ImageAsked,
    ModelAsked,
    StyleAsked,
    draw_on_screen,
    relevance_classes,
    run_task,
    switched_model,
    view_scene,
)
from .outputs import UPLOADS, cache_path, saved, upload_folder
from .pictures import with_alt
from .uploads import UploadRefused, checked_upload

MODES = ("crop", "whole")
GIF_SCALES = ("each layer", "all layers")  # the GIF's frames: as on screen, or one scale for all layers
# What a question for rows is told whose handle names no analysis kept: dropped, or never sent to
# any page (a forged handle learns nothing from other words)
ROWS_DROPPED = "This analysis was dropped from the server's memory to make room: upload the image again."

# What /analyze draws, by ExploreTab field: the first screen (the session's explanation key
# first), and no "More views" view: each is a call of its own (docs/app.md, 2026-11-28). What the
# session keeps of a view drawn on request (relevance's map) is dropped with the last image.
ANALYSIS_OUTPUTS = (
    "explanation_key",
    "export_name",
    "query",
    "input_img",
    "numbers",
    "label",
    "layer",
    "heads_img",
    "token",
    "query_md",
    "export_file",  # an export of the previous image is cleared
    *KEPT,
)
QUERY_OUTPUTS = ("query", "input_img", "heads_img", "query_md", "token")
# What the page's own analysis returns: the model input and the head maps as the numbers the
# page draws them from ("heads": explorer/page_maps.py, ui/js/), not as pictures, and the
# "More views": the one on screen drawn, the others cleared (in the order /analyze_page had).
PAGE_ANALYSIS_OUTPUTS = (
    "explanation_key",
    "export_name",
    "query",
    "numbers",
    "label",
    "layer",
    *IMAGE_VIEWS,  # each drawn only while on screen (the accordion open on its tab): see `page_analysis`
    "token",
    *ON_REQUEST,  # relevance and its kept map: drawn when its button is pressed, cleared here
    "query_md",
    "export_file",
    "heads",
)


class Upload(NamedTuple):
    """What one forward pass is of: the image's upload payload (None once removed), the model's
    key and the resize mode, as the controls send them (checked by `analyze`)."""

    image: dict | None
    model_key: str
    mode: str


def upload(image: dict | None, model_key: str, mode: str) -> Upload:
    """The image, model and resize controls as one value (for the binding: ui.binding.Controls)."""
    return Upload(image, model_key, mode)


# The relevance on screen, kept in the session so that a new style or "show" redraws it without
# another backward pass: (its explanation's key, the class picked, (the map, the class explained)).
RelevanceMap = tuple[ExplanationKey, str, tuple[np.ndarray, int]]
# A CLIP model's words on screen, kept likewise: (their explanation's key, the words' scores and maps).
WordsResult = tuple[ExplanationKey, ZeroShot]


def classes_note(loaded: LoadedModel, listed: int = 20) -> str:
    """Markdown: the classes the model can answer with (the first `listed` of them)."""
    names = loaded.meta.class_names
    if not names:
        return (
            "**No classes:** this model has no classifier head (a feature extractor such as DINO, DINOv2 or "
            "DINOv3), so it makes no predictions. Every attention map works; relevance needs a model with classes."
        )
    more = f", … ({len(names) - listed} more)" if len(names) > listed else ""
    always = "The model always answers with one of them, even for a picture of something else."
    # A checkpoint's names are its author's words (a visitor may upload one): shown as written.
    shown_names = ", ".join(markdown_text(name) for name in names[:listed])
    return f"**{len(names)} classes:** {shown_names}{more}. {always}"


# What "Top predictions" says for a model without classes (DINO, DINOv2, DINOv3): its empty box
# looked broken on a projector (issue 61); a CLIP model's box waits for its words' probabilities.
NO_CLASSES = "No classifier: this model predicts no classes. Its attention is still shown."


def predictions(loaded: LoadedModel, ex: Explanation) -> dict[str, float] | str:
    """The "Top predictions" box's value: the top classes, or for a model without classes (not
    CLIP, whose words answer instead) a sentence saying there are none and why the maps still work."""
    if ex.probabilities or loaded.text is not None:
        return ex.probabilities
    return NO_CLASSES


# The first screen's views as their components' values, with the alt text explorer.texts writes for each
# (the "More views" are ui/explore_views.py's).
def input_picture(ex: Explanation, key: ExplanationKey, query: Query = None) -> gr.Image:
    return with_alt(views.input_view(ex, query), texts.input_alt(ex, query, model_name(key.model_key)))


def heads_picture(
    ex: Explanation, key: ExplanationKey, query: Query, layer: int, style: MapStyle, text_px: int
) -> gr.Image:
    """The head maps of `layer`, counted from 1 as people do (explorer's views count from 0), their
    text `text_px` high."""
    alt = texts.heads_alt(ex, query, layer, model_name(key.model_key))
    return with_alt(views.heads(ex, query, layer - 1, style, text_px=text_px), alt)


def full_analysis(
    loaded: LoadedModel,
    path: str,
    mode: str,
    layer: int,
    text_px: int,
    style: MapStyle = MapStyle(),  # noqa: B008 - frozen, never changed
    store: ExplanationStore | None = None,
    network: str | None = None,
) -> dict[str, Any]:
    """Analyse an image file (`explorer.explain.explain_file`: within the store's budget, once
    per file, model and mode) and draw the first screen: ANALYSIS_OUTPUTS by name (all but
    export_name, which needs the upload's name), text `text_px` high (the Server's). `network`:
    whose sessions share the pass (`ExplanationStore.sharing`). Raises ImageError for unusable
    files, ExplanationTooLarge past the store's budget."""
    key, ex = explain_file(loaded, path, mode, store, forward=partial(zerogpu.FORWARD, loaded), network=network)
    return described(loaded, ex, key, layer) | {
        "input_img": input_picture(ex, key),
        "heads_img": heads_picture(ex, key, None, layer, style, text_px),
        **dict.fromkeys(KEPT),
    }


def page_analysis(
    server: Server,
    loaded: LoadedModel,
    path: str,
    mode: str,
    layer: int,
    on_screen: str | None,
    asked: ImageAsked,
    network: str | None = None,
) -> dict[str, Any]:
    """`full_analysis` for the page (PAGE_ANALYSIS_OUTPUTS): the input and the head maps as the
    numbers it draws them from, under a handle of the server's `pages`; of IMAGE_VIEWS only the one
    `on_screen` (a MORE_VIEWS name or None) drawn, from its record in `asked`, the others None until
    opened (`show_more`)."""
    forward = partial(zerogpu.FORWARD, loaded)
    key, ex = explain_file(loaded, path, mode, server.store, forward=forward, network=network)
    heads = page_maps.page_maps(ex, model_name(key.model_key), layer - 1, server.text_px, server.pages.handle(key))
    scene = view_scene(loaded, server.text_px, ex, key)
    return (
        described(loaded, ex, key, layer)
        | {"heads": heads}
        | draw_on_screen(IMAGE_VIEWS, on_screen, scene, asked)
        | dict.fromkeys(ON_REQUEST)  # drawn on request: relevance costs a forward and a backward pass
    )


def described(loaded: LoadedModel, ex: Explanation, key: ExplanationKey, layer: int) -> dict[str, Any]:
    """What every analysis shows of the image in words and controls, by field."""
    return {
        "explanation_key": key,
        "query": None,  # the query goes back to the CLS token, and the caption says so
        "query_md": texts.describe_query(None, ex.has_cls),
        "numbers": texts.describe_input(ex),
        "label": predictions(loaded, ex),
        "layer": layer_slider(ex.depth, layer),
        "token": gr.Dropdown(
            choices=controls.query_choices(ex.prefix_names), value=controls.query_token(None, ex.prefix_names)
        ),
        "export_file": None,
    }


def cleared(prefix_names: tuple[str, ...], page: bool = False) -> dict[str, Any]:
    """ANALYSIS_OUTPUTS (with `page`, PAGE_ANALYSIS_OUTPUTS), but the layer slider, once the
    image is removed: no picture, prediction, export or explanation of it is left, and the
    caption is back at its start text."""
    return {
        **dict.fromkeys(("explanation_key", "export_name", "query", "label")),
        **dict.fromkeys((*IMAGE_VIEWS, *ON_REQUEST, "heads") if page else ("input_img", "heads_img", *KEPT)),
        "export_file": None,
        "numbers": "",
        "query_md": texts.describe_query(None, "cls" in prefix_names),
        "token": gr.Dropdown(
            choices=controls.query_choices(prefix_names), value=controls.query_token(None, prefix_names)
        ),
    }


def analyze(server: Server, given: Upload, layer: float, style: MapStyle, request: gr.Request | None = None) -> dict:
    """Analyse an uploaded image with the chosen model and draw the first screen (the model input,
    the head maps of `layer`, 1-based, in `style`); with no image (removed with its ×), clear every
    output that described the last one. Each "More views" view is a call of its own."""
    return analysed(server, given, layer, request, style=style)


def analyze_page(
    server: Server,
    on_screen: str | None,
    given: Upload,
    layer: float,
    asked: ImageAsked,
    request: gr.Request | None = None,
) -> dict:
    """The page's analysis: as /analyze, with the model input and the head maps sent as the
    numbers the page draws them from (PAGE_ANALYSIS_OUTPUTS; explorer/page_maps.py says what
    they are): "Attention per head ..." is then a JSON value, not a picture. The "More views" view
    on screen is drawn with its own controls (`asked`), the others cleared."""
    return analysed(server, given, layer, request, page=(on_screen, asked))


def analysed(
    server: Server,
    given: Upload,
    layer: float,
    request: gr.Request | None,
    style: MapStyle = MapStyle(),  # noqa: B008 - frozen, never changed
    page: tuple[str | None, ImageAsked] | None = None,
) -> dict:
    """`analyze` for API clients, or for the page (`page`: the view on screen and the views'
    records, for `page_analysis`)."""
    catalog, visitor = server.catalog, visitor_of(request)
    if given.image is None:
        return cleared(load_or_error(catalog, given.model_key, visitor).model.config.prefix_names, page is not None)
    mode = one_of("resize mode", given.mode, MODES)
    try:
        loaded = catalog.get(given.model_key, visitor=visitor)
        layer = check_layer(layer, loaded.model.config.depth)
        path, shared = uploaded_path(given.image), network(server, request)
        if page is None:
            pictures = full_analysis(loaded, path, mode, layer, server.text_px, style, server.store, shared)
        else:
            pictures = page_analysis(server, loaded, path, mode, layer, *page, shared)
    except (ImageError, ModelUnavailable, ExplanationTooLarge) as e:
        raise visitor_error(str(e)) from e
    return pictures | {"export_name": export_stem(given.image, given.model_key, catalog)}


def layer_rows(server: Server, asked: object) -> dict:
    """The page's question for rows of one layer, {"handle": ..., "layer": 1-based, "band": 0-based
    or "tokens", "parts": [names of page_maps.PARTS], by default the layer scale's} (ui/js/rows.js,
    on the rows route, ui/rows_route.py, for a band of patch rows or the token queries' rows, or
    parts of them, it has not got): the rows as bytes (explorer/page_maps.layer_rows), or
    {"error": a sentence the page shows under the maps, "status": the HTTP status it comes with}:
    404 for a handle that names no analysis kept (dropped, or never sent to any page: the same
    words), 400 for a question of another shape. Each band's parts are encoded once
    (`PageHandles.rows`)."""
    asked = asked if isinstance(asked, dict) else {}
    key = server.pages.key(asked.get("handle"))
    ex = server.store.peek(key) if key is not None else None
    if ex is None:
        return {"error": ROWS_DROPPED, "status": 404}
    layer, band, bands = asked.get("layer"), asked.get("band", 0), page_maps.page_shape(ex).bands
    if not isinstance(layer, int) or isinstance(layer, bool) or not 1 <= layer <= ex.depth:
        return {"error": f"There is no layer {quoted(layer)}: this model has layers 1 to {ex.depth}.", "status": 400}
    if band != page_maps.TOKENS and (not isinstance(band, int) or isinstance(band, bool) or not 0 <= band < bands):
        why = f"There is no band {quoted(band)}: this analysis sends a layer in bands 0 to {bands - 1}."
        return {"error": why, "status": 400}
    if (parts := page_maps.known_parts(asked.get("parts", list(page_maps.DEFAULT_PARTS)))) is None:
        return {"error": f"The parts asked for are not {', '.join(page_maps.PARTS)}, each at most once.", "status": 400}
    encode = partial(page_maps.layer_rows, ex, layer - 1, band, parts)
    return server.pages.rows(key, (layer, band, parts), encode)


def note_image(server: Server, image: dict | None, request: gr.Request) -> None:
    """The first step of an analysis on the image's .change: the same upload path as this
    session's last (Gradio's second .change for one upload) stops here silently, so an image
    is analysed, and a bad file's message shown, once."""
    path = image.get("path") if isinstance(image, dict) else None
    if not server.seen_uploads.is_new(visitor_of(request), path if isinstance(path, str) else None):
        raise visitor_error("this image is already shown", visible=False, print_exception=False)


def check_new_image(image: dict | None) -> None:
    """The second step: a file that is no image (or of refused sides) gets its message here,
    from its header, so the views and controls of the last image stay as they were (an error
    in `analyze` marks each of its outputs)."""
    if image is not None:
        check_upload_header(image)


def show_heads(
    server: Server, explanation_key: ExplanationKey | None, query: Query, layer: float, style: MapStyle
) -> dict:
    """Every head's attention map for the current query in one layer (1-based)."""
    ex = server.require(explanation_key)
    return {"heads_img": heads_picture(ex, explanation_key, query, check_layer(layer, ex.depth), style, server.text_px)}


def restyle(
    server: Server,
    explanation_key: ExplanationKey | None,
    on_screen: str | None,
    query: Query,
    layer: float,
    asked: StyleAsked,
    style: MapStyle,
) -> dict:
    """Redraw the head maps in a new style, and the style views (STYLE_VIEWS: the layers x heads
    overview, rollout) if on screen, from their own controls' records in `asked` (the others None:
    drawn in the new style when opened)."""
    ex = server.require(explanation_key)
    layer = check_layer(layer, ex.depth)
    shown_views = draw_on_screen(STYLE_VIEWS, on_screen, view_scene(None, server.text_px, ex, explanation_key), asked)
    heads = heads_picture(ex, explanation_key, query, layer, style, server.text_px)
    return {"heads_img": heads, **shown_views}


class Kept(NamedTuple):
    """What the session keeps of the pictures drawn on request, to redraw them in a new style:
    a CLIP model's words and the relevance (None: none on screen)."""

    words_result: WordsResult | None
    relevance_map: RelevanceMap | None


def kept(words_result: WordsResult | None, relevance_map: RelevanceMap | None) -> Kept:
    """The session's two kept results as one value (for the binding: ui.binding.Controls)."""
    return Kept(words_result, relevance_map)


def restyle_shown(
    server: Server,
    explanation_key: ExplanationKey | None,
    on_screen: str | None,
    shown: Kept,
    export_name: str | None,
    asked: StyleAsked,
    drawing: Drawing,
) -> dict:
    """After a style change on the page, which redraws its own input and head maps, the pictures
    the server draws that follow the style: the style view on screen (the others None: drawn in the
    new style when opened), a CLIP model's word maps and the relevance if shown (`restyle_words`,
    `restyle_relevance`, in `drawing`'s style and showing), all in one request."""
    if explanation_key is None:
        return {}
    ex = server.require(explanation_key)
    style, showing = drawing.style, drawing.showing
    return (
        draw_on_screen(STYLE_VIEWS, on_screen, view_scene(None, server.text_px, ex, explanation_key), asked)
        | restyle_words(server, explanation_key, shown.words_result, style, showing)
        | restyle_relevance(server, explanation_key, shown.relevance_map, export_name, style, showing)
    )


def keep_slider(show: str) -> dict:
    """The "keep the top X %" slider, shown only for the "top mass" choice: the only one it changes."""
    return {"keep_percent": gr.Slider(visible=show == "top mass")}


def show_view(
    server: Server, more_tab: str, explanation_key: ExplanationKey | None, current_model: str, asked: Any
) -> dict:
    """The "More views" view `more_tab` drawn from its own controls' record `asked` (its record's
    `asked`, parsed at the binding): a view of the model alone for the current model, an image's
    view for the image analysed (refused before any upload)."""
    more = MORE[one_of("view", more_tab, MORE_VIEWS)]
    if not more.image:
        return {more.name: more.draw(view_scene(load_or_error(server.catalog, current_model), server.text_px), asked)}
    ex, loaded = server.require(explanation_key), load_or_error(server.catalog, explanation_key.model_key)
    return {more.name: more.draw(view_scene(loaded, server.text_px, ex, explanation_key), asked)}


def show_more(
    server: Server, more_tab: str, explanation_key: ExplanationKey | None, current_model: str, asked: Any
) -> dict:
    """The "More views" tab `more_tab` comes on screen (its tab picked, or the accordion opened on
    it): remember it, and draw its view from its own controls' record `asked` (`show_view`) once it
    can be (an image's view once there is one; relevance waits for its button, as it costs a
    backward pass)."""
    more = MORE[one_of("view", more_tab, MORE_VIEWS)]
    on_screen = {"on_screen": more.name, "more_tab": more.name}
    if more.picture is None or (more.image and explanation_key is None):
        return on_screen
    return on_screen | show_view(server, more.name, explanation_key, current_model, asked)


def open_more(
    server: Server, more_tab: str, explanation_key: ExplanationKey | None, current_model: str, asked: DrawnAsked
) -> dict:
    """The "More views" accordion opened: the tab picked last comes on screen (`show_more`), drawn
    from its record in `asked`."""
    name = one_of("view", more_tab, MORE_VIEWS)
    return show_more(server, name, explanation_key, current_model, asked.get(name))


def hide_more() -> dict:
    """The "More views" accordion closed: nothing of it is on screen, so analyses draw none of it."""
    return {"on_screen": None}


def show_query(server: Server, key: ExplanationKey, query: Query, layer: object, style: MapStyle) -> dict:
    """QUERY_OUTPUTS after the query changes: the query, the marked input, the head maps, the caption."""
    ex = server.require(key)
    return {
        "query": query,
        "input_img": input_picture(ex, key, query),
        "heads_img": heads_picture(ex, key, query, check_layer(layer, ex.depth), style, server.text_px),
        "query_md": texts.describe_query(query, ex.has_cls),
        "token": controls.query_token(query, ex.prefix_names),
    }


def choose_patch(
    server: Server,
    explanation_key: ExplanationKey | None,
    row: float,
    column: float,
    layer: float,
    style: MapStyle,
) -> dict:
    """Make the patch at (row, column) the query, as a click on it would. Rows and columns
    count from 1, as the page shows them: row 1 is the top, column 1 the left edge."""
    gh, gw = server.require(explanation_key).grid
    patch = whole_number("row", row, 1, gh) - 1, whole_number("column", column, 1, gw) - 1
    return show_query(server, explanation_key, patch, layer, style)


def choose_token(
    server: Server,
    explanation_key: ExplanationKey | None,
    token: str,
    query: Query,
    layer: float,
    style: MapStyle,
) -> dict:
    """Make a token the query: 'cls', 'dist' (DeiT's distillation token), 'reg1', 'reg2', ...
    (registers, counted from 1), 'mean' (models without CLS) or 'patch' (keeps the current
    patch, else the centre one; /query_patch picks any). The model's own tokens only."""
    ex = server.require(explanation_key)
    gh, gw = ex.grid
    chosen = check_query(token, ex.prefix_names, lambda: query if isinstance(query, tuple) else (gh // 2, gw // 2))
    return show_query(server, explanation_key, chosen, layer, style)


def show_relevance(
    server: Server,
    explanation_key: ExplanationKey | None,
    export_name: str | None,
    target: str,
    style: MapStyle,
    showing: Showing,
) -> dict:
    """Class-specific relevance (Chefer et al. 2021) of every patch for `target`: "predicted
    class" or one of the model's class names. Refused for a model without a classifier head."""
    ex = server.require(explanation_key)
    loaded = load_or_error(server.catalog, explanation_key.model_key)
    if loaded.model.config.num_classes < 1:
        raise visitor_error(
            "this model has no classifier head, so it makes no predictions and there is no class to explain: "
            "relevance needs a supervised model (e.g. DeiT or ViT-B/16); rollout works for every model"
        )
    target = one_of("class", target, relevance_classes(loaded))
    index = None if target == PREDICTED else loaded.meta.class_names.index(target)
    drawn: RelevanceMap = (explanation_key, target, run_task(relevance_view.TASK, loaded, ex.input.tensor, index))
    picture = relevance_picture(loaded, ex, export_name, drawn, style, showing, server.text_px)
    return {"relevance": picture, "relevance_map": drawn}


def compare_words(
    server: Server, explanation_key: ExplanationKey | None, prompts: str, style: MapStyle, showing: Showing
) -> dict:
    """A CLIP model's zero-shot probabilities over `prompts` (comma-separated words, each put into
    CLIP's template) in place of the top classes, and for each its relevance map (Chefer et al.
    2021, the image-text similarity as the score): one forward and one backward pass per word, the
    first words that fit the memory one request may use (`affordable_words`)."""
    ex = server.require(explanation_key)
    loaded = load_or_error(server.catalog, explanation_key.model_key)
    if loaded.text is None:
        raise visitor_error(
            f"{loaded.label} answers with its own classes, not with words: pick a CLIP model "
            "(vit_base_patch16_clip_224.openai) to compare words"
        )
    size, budget = ex.input.tensor.shape[-2:], server.store.max_request_bytes
    try:
        words, left_out = affordable_words(loaded, size, parse_prompts(prompts), budget)  # before any pass
    except PromptError as e:
        raise visitor_error(str(e)) from e
    zs = zero_shot(loaded, words, zerogpu.PROMPTS(loaded, ex.input.tensor, words))
    maps = word_maps(ex.input.pixels, ex.grid, zs, style, showing, model_name(loaded.key), server.text_px)
    kept: WordsResult = (explanation_key, zs)
    note = texts.prompt_note(zs, left_out)
    return {"label": zs.probabilities, "prompt_maps": maps, "prompt_note": note, "words_result": kept}


def restyle_words(
    server: Server,
    explanation_key: ExplanationKey | None,
    words_result: WordsResult | None,
    style: MapStyle,
    showing: Showing,
) -> dict:
    """The word maps on screen follow the style and "show", redrawn from their kept result (no
    backward pass); with none on screen, or ones of another image, nothing changes."""
    if words_result is None or explanation_key is None or words_result[0] != explanation_key:
        return {}
    ex = server.require(explanation_key)
    model = model_name(explanation_key.model_key)
    return {"prompt_maps": word_maps(ex.input.pixels, ex.grid, words_result[1], style, showing, model, server.text_px)}


def check_words(server: Server, explanation_key: ExplanationKey | None, prompts: str) -> None:
    """The words' first step (`ui.binding.checked_first`): an image analysed, and words CLIP can
    compare. A refusal is its toast alone: raised in `compare_words`, it had marked the template
    sentence, the maps and Top predictions with red "Error" badges, which a new example kept."""
    server.require(explanation_key)
    try:
        parse_prompts(prompts)
    except PromptError as e:
        raise visitor_error(str(e)) from e


def words_after(
    server: Server, explanation_key: ExplanationKey | None, prompts: str, style: MapStyle, showing: Showing
) -> dict:
    """After an analysis with a CLIP model, its words at once (`compare_words`); after the image
    was removed, no word maps (the analysis cleared the probabilities); else nothing. Words CLIP
    cannot compare (one word) get the note's sentence saying what to type, not an error: no
    toast, but one "Error" badge on each output, came back with every new example."""
    if explanation_key is None:
        return {"prompt_maps": None, "prompt_note": "", "words_result": None}
    if load_or_error(server.catalog, explanation_key.model_key).text is None:
        return {}
    try:
        parse_prompts(prompts)
    except PromptError as e:
        return {
            "prompt_maps": None,
            "prompt_note": f"**No words compared:** {markdown_text(str(e))}.",
            "words_result": None,
        }
    return compare_words(server, explanation_key, prompts, style, showing)


def relevance_picture(
    loaded: LoadedModel,
    ex: Explanation,
    export_name: str | None,
    drawn: RelevanceMap,
    style: MapStyle,
    showing: Showing,
    text_px: int,
) -> gr.Image:
    """The relevance map `drawn` computed, as `showing` and `style` say (text `text_px` high), with its alt
    text and file name."""
    _, target, computed = drawn
    index = None if target == PREDICTED else loaded.meta.class_names.index(target)
    names = loaded.meta.class_names
    picture = views.relevance(loaded.model, names, ex, index, style, showing, computed, text_px)
    alt = texts.relevance_alt(ex, None if index is None else target, showing, model_name(loaded.key))
    return with_alt(picture, alt, f"{export_name or 'attention'}_relevance_{slug(target)}.png")


def restyle_relevance(
    server: Server,
    explanation_key: ExplanationKey | None,
    relevance_map: RelevanceMap | None,
    export_name: str | None,
    style: MapStyle,
    showing: Showing,
) -> dict:
    """The relevance on screen follows the style and "Rollout and relevance show" (as rollout
    does), redrawn from its kept map; with none on screen, nothing changes."""
    if relevance_map is None or explanation_key is None or relevance_map[0] != explanation_key:
        return {}
    ex = server.require(explanation_key)
    loaded = load_or_error(server.catalog, explanation_key.model_key)
    return {"relevance": relevance_picture(loaded, ex, export_name, relevance_map, style, showing, server.text_px)}


def click_patch(
    server: Server, explanation_key: ExplanationKey | None, layer: float, style: MapStyle, evt: gr.SelectData
) -> dict:
    """A click on the input view: the patch under it becomes the query."""
    patch = views.clicked_patch(server.require(explanation_key), *evt.index)  # evt.index: (x, y) in image pixels
    return show_query(server, explanation_key, patch, layer, style)


def move_query(
    server: Server,
    step: tuple[int, int],
    explanation_key: ExplanationKey | None,
    query: Query,
    layer: float,
    style: MapStyle,
) -> dict:
    """Move the query patch one `step` (rows, columns), stopping at the edges. From the CLS
    token (or another prefix token) any arrow goes to the first patch, row 1, column 1: the
    token after the prefix in the model's sequence, where reading the grid starts (the centre
    once made "↑" from CLS land on row 5, below where it started)."""
    gh, gw = server.require(explanation_key).grid
    if not isinstance(query, tuple):
        patch = 0, 0
    else:
        patch = min(max(query[0] + step[0], 0), gh - 1), min(max(query[1] + step[1], 0), gw - 1)
    return show_query(server, explanation_key, patch, layer, style)


def reset_query(server: Server, explanation_key: ExplanationKey | None, layer: float, style: MapStyle) -> dict:
    """Back to the default query (the CLS token)."""
    return show_query(server, explanation_key, None, layer, style)


def keep_image(server: Server, explanation_key: ExplanationKey | None, request: gr.Request) -> str | None:
    """After a refused upload, the upload box shows again the image the views on the page
    belong to (empty if none): marked as seen, so putting it back starts no analysis."""
    path = explanation_key.path if explanation_key is not None else None
    server.seen_uploads.is_new(visitor_of(request), path)
    return path


def keep_analysis(server: Server, explanation_key: ExplanationKey | None, request: gr.Request) -> dict:
    """After an analysis that failed past the header's check (a truncated file decodes no
    pixels): the upload box shows the image the views belong to, and each view of the page's
    analysis is written again as it was, which takes away the bare "Error" badge Gradio left."""
    return {"image": keep_image(server, explanation_key, request), **dict.fromkeys(PAGE_ANALYSIS_OUTPUTS, gr.skip())}


def make_png(
    server: Server,
    explanation_key: ExplanationKey | None,
    export_name: str | None,
    query: Query,
    layer: float,
    style: MapStyle,
) -> dict:
    """The head maps of one layer (1-based) as a PNG file named by image, model, layer and query."""
    return {"export_file": png_file(server, explanation_key, export_name, query, layer, style)}


def png_file(
    server: Server,
    explanation_key: ExplanationKey | None,
    export_name: str | None,
    query: Query,
    layer: object,
    style: MapStyle,
    columns: int | None = None,
) -> str:
    """`make_png`'s file; `columns` (the page's, `page_columns`): at most that many tiles a row."""
    ex = server.require(explanation_key)
    layer = check_layer(layer, ex.depth)
    picture = views.heads(ex, query, layer - 1, style, columns, server.text_px)
    return saved(picture, f"{export_name or 'attention'}_layer{layer}_{query_name(query)}.png")


def page_query(server: Server, explanation_key: ExplanationKey | None, input_view: object) -> Query:
    """The query the page shows, from its state (ui/js/explore.js, `share`): {"query": "default", a token
    ('dist', 'reg1', ...) or [row, column] counting from 1}; anything else is refused."""
    ex = server.require(explanation_key)
    chosen = input_view.get("query", "default") if isinstance(input_view, dict) else "default"
    gh, gw = ex.grid
    if isinstance(chosen, list) and len(chosen) == 2:
        return whole_number("row", chosen[0], 1, gh) - 1, whole_number("column", chosen[1], 1, gw) - 1
    if chosen == "default":
        return None
    return check_query(chosen, ex.prefix_names, lambda: (gh // 2, gw // 2))


def export_page_png(
    server: Server,
    explanation_key: ExplanationKey | None,
    export_name: str | None,
    input_view: object,
    layer: float,
    style: MapStyle,
) -> dict:
    """Export PNG on the page: `make_png` of the query the page shows (`page_query`), its tiles
    wrapped as the page wraps them (`page_columns`), so the file is the picture on the screen."""
    query = page_query(server, explanation_key, input_view)
    columns = page_columns(server, explanation_key, input_view)
    return {"export_file": png_file(server, explanation_key, export_name, query, layer, style, columns)}


def page_columns(server: Server, explanation_key: ExplanationKey | None, input_view: object) -> int | None:
    """The head maps' tiles a row on the page, from its state: {"columns": n} where it wrapped
    them into a narrow frame (a phone; ui/js/layout.js, fittingColumns), else None."""
    columns = input_view.get("columns") if isinstance(input_view, dict) else None
    return None if columns is None else whole_number("columns", columns, 1, server.require(explanation_key).heads)


def export_page_gif(
    server: Server,
    explanation_key: ExplanationKey | None,
    export_name: str | None,
    input_view: object,
    style: MapStyle,
    gif_scale: str = GIF_SCALES[0],
) -> dict:
    """Export GIF on the page: `make_gif` of the query the page shows (`page_query`)."""
    query = page_query(server, explanation_key, input_view)
    return make_gif(server, explanation_key, export_name, query, style, gif_scale)


def make_gif(
    server: Server,
    explanation_key: ExplanationKey | None,
    export_name: str | None,
    query: Query,
    style: MapStyle,
    gif_scale: str = GIF_SCALES[0],
) -> dict:
    """The head maps of every layer as an animated GIF named by image, model, layers and query:
    each frame as the screen draws its layer ("each layer"), or all on one scale, the largest
    weight of all layers ("all layers"), every frame with the colour bar of its scale."""
    ex = server.require(explanation_key)
    one_scale = one_of("GIF scale", gif_scale, GIF_SCALES) == "all layers"
    scaled = "_one-scale" if one_scale else ""
    path = cache_path(f"{export_name or 'attention'}_layers1-{ex.depth}_{query_name(query)}{scaled}.gif")
    render.save_gif(
        views.layer_frames(ex, query, style, one_scale=one_scale, text_px=server.text_px), path, cmap=style.cmap
    )
    UPLOADS.added(path.stat().st_size)  # counted against the upload folder's budget, as every view
    return {"export_file": str(path)}


def load_model(
    server: Server,
    model_key: str,
    on_screen: str | None,
    asked: ModelAsked,
    request: gr.Request,
    progress: gr.Progress = gr.Progress(),  # noqa: B008 - Gradio's way to show a download's bytes
) -> dict:
    """Switch the Explore tab to another model (downloading pretrained weights once, its bytes
    and percent shown while it downloads): one of this visitor's picker choices."""
    catalog = server.catalog
    loaded = downloads.load(catalog, picked_model(catalog, model_key, request), progress)
    depth = loaded.model.config.depth
    return {
        "current_model": model_key,
        "model_info": loaded.describe(),
        "classes": classes_note(loaded),
        "layer": layer_slider(depth, depth),  # the analysis that follows starts at the last layer
        # a view drawn now only if on screen; else None, drawn for this model when opened (show_more)
        **switched_model(loaded, on_screen, view_scene(loaded, server.text_px), asked),
        "words": gr.Column(visible=loaded.text is not None),  # the words box, for CLIP models only
    }


def model_choices(server: Server, request: gr.Request) -> dict:
    """After a model loads: the picker as the catalogue is now (weights just downloaded are no
    longer "downloads once"; a failed download offline marks what cannot be had)."""
    return {"model_key": gr.Dropdown(choices=server.catalog.choices(visitor_of(request)))}


def upload_checkpoint(server: Server, checkpoint: str | None, request: gr.Request) -> dict:
    """Validate an uploaded .safetensors checkpoint, add it to this visitor's picker and select it."""
    if checkpoint is None:
        return {}
    visitor = visitor_of(request)
    try:
        path = checked_upload(checkpoint, upload_folder())
        UPLOADS.admit(path)
        key = server.catalog.register(path, visitor, label=f"upload {path.name}")
    except (UploadRefused, ModelUnavailable) as e:
        raise visitor_error(str(e)) from e
    return {"model_key": gr.Dropdown(choices=server.catalog.choices(visitor), value=key)}
