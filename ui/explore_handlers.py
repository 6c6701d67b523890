"""Handlers of the Explore tab: module-level functions from named inputs to `{component: value}`.

ui/explore.py binds each to the tab's `ExploreView` (and, where needed, the model catalogue)
with `ui.binding.bound`. A handler reads its inputs by name, builds one `MapStyle` from the
four style controls, asks `explorer.views` for pictures and returns them by component name
through `ExploreView.update`, so a new view is one more name, not one more tuple slot.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gradio as gr
import numpy as np

from explorer import render, views
from explorer.catalog import BUNDLED, LoadedModel, ModelCatalog, ModelUnavailable
from explorer.explain import (
    REQUEST_FACTOR,
    Explanation,
    ExplanationStore,
    ExplanationTooLarge,
    ModelInput,
    explain,
    model_input,
)
from explorer.images import ImageError, check_image, load_image
from explorer.prompts import PromptError, ZeroShot, parse_prompts, zero_shot
from explorer.render import COLORMAPS, SCALES, MapStyle
from explorer.uploads import UploadRefused, checked_upload
from training.registry import owner_id
from vit.analysis import Query
from vit.messages import shown

from . import downloads, zerogpu
from .checks import number, one_of, visitor_error, whole_number, yes_no
from .outputs import UPLOADS, cache_path, saved, upload_folder
from .pictures import TEXT as PICTURE_TEXT
from .pictures import with_alt
from .settings import for_visitors

if TYPE_CHECKING:
    from .explore import ExploreView

MODES = ("crop", "whole")
FUSIONS = ("mean", "max", "min")
UPSAMPLING = ("nearest", "smooth")
DISPLAYS = ("overlay", "raw")
DISCARD_MAX = 0.95
PLAY_STEP_S = 0.8  # seconds per layer of "play through layers", as the GIF export
GIF_SCALES = ("each layer", "all layers")  # the GIF's frames: as on screen, or one scale for all layers

# What /analyze redraws, by ExploreView field: the session's explanation key first.
ANALYSIS_OUTPUTS = (
    "explanation_key",
    "export_name",
    "query",
    "input_img",
    "numbers",
    "label",
    "layer",
    "heads",
    "overview",
    "rollout",
    "distance",
    "pca",
    "logit_lens",
    "query_token",
    "relevance",
    "relevance_map",
    "query_md",
    "export_file",  # an export of the previous image is cleared
)
# The views under "More views", by ExploreView field: each is drawn only while on screen (the
# accordion open on its tab), when its tab or the accordion opens, so an analysis costs what the
# visitor sees (a ViT-S's 12 x 6 overview cost more than its forward pass: docs/benchmarks-app.md).
MORE_VIEWS = ("overview", "rollout", "distance", "similarity", "relevance", "pca", "logit_lens")
IMAGE_VIEWS = ("overview", "rollout", "distance", "pca", "logit_lens")  # those that change with the image
MODEL_VIEWS = ("pca", "logit_lens")  # those that run the model again (a GPU task): heavy work, not a redraw
QUERY_OUTPUTS = ("query", "input_img", "heads", "query_md", "query_token")
PREDICTED = "predicted class"  # the relevance picker's first choice: explain whatever the model predicts
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples" / "cifar10"  # see examples/cifar10/pick.py
# The examples one PCA may be fitted on beside the image: the six animal classes of CIFAR-10, whose
# parts (heads, legs, bodies) a good model's features match across images (DINOv2 Fig. 1).
PCA_EXAMPLES = ("bird", "cat", "deer", "dog", "frog", "horse")
NO_LENS = (
    "This model has no classifier head (a feature extractor such as DINO or DINOv2), so there are no classes to "
    "read after each layer: the logit lens needs a model with classes, e.g. the bundled model, DeiT or ViT-B/16."
)


@dataclass(frozen=True)
class PcaChoice:
    """The PCA tab's controls: the layer (1-based; None: the last), whether the animal examples
    are fitted with the image, whether the background is removed."""

    layer: object = None
    examples: bool = False
    background: bool = True


def map_style(cmap: str, opacity: float, upsampling: str, display: str, scale: str = "layer") -> MapStyle:
    """The one MapStyle the five style controls describe (gr.Error for values they cannot take)."""
    return MapStyle(
        cmap=one_of("colour map", cmap, COLORMAPS),
        opacity=number("opacity", opacity, 0.0, 1.0),
        smooth=one_of("upsampling", upsampling, UPSAMPLING) == "smooth",
        raw=one_of("display", display, DISPLAYS) == "raw",
        scale=one_of("colour scale", scale, SCALES),
        text_px=PICTURE_TEXT.px,  # larger in the presentation mode
    )


def map_show(show: str, keep_percent: float) -> tuple[str, float]:
    """How rollout and relevance are drawn (views.SHOWS) and the kept share of the mass, 0 to 1."""
    return one_of("show", show, views.SHOWS), number("keep percent", keep_percent, 1.0, 100.0) / 100


def check_layer(layer: object, depth: int) -> int:
    """A 1-based layer number of a model `depth` layers deep."""
    return whole_number("layer", layer, 1, depth)


def layer_slider(depth: int, value: int, **kwargs: Any) -> gr.Slider:
    """The layer slider for a model `depth` layers deep. Gradio refuses a slider whose minimum
    is not below its maximum, so a one-layer model gets a hidden one (0 to 1, at 1): there is
    nothing to choose, and the handlers still accept only layer 1."""
    return gr.Slider(minimum=1 if depth > 1 else 0, maximum=depth, value=value, visible=depth > 1, **kwargs)


SLUG_CHARS = 60  # of an upload's or a model's name in an export's name (ui.outputs bounds the whole)


def slug(text: str) -> str:
    """`text` as a safe piece of a file name, at most SLUG_CHARS long: a 230-character upload
    name made every export's name too long for the file system."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:SLUG_CHARS].strip("-.") or "x"


def export_name(payload: dict, model_key: str, catalog: ModelCatalog) -> str:
    """How export files of this analysis begin: image-model (file names without folder and
    extension; pretrained weights by name)."""
    image = Path(payload.get("orig_name") or payload["path"]).stem
    kind, _, name = model_key.partition(":")
    model = catalog.bundled_path.stem if model_key == BUNDLED else Path(name).stem if kind == "checkpoint" else name
    return f"{slug(image)}-{slug(model)}"


def query_name(query: Query) -> str:
    """The query in a file name, 1-based: "cls", a prefix token ("dist", "reg1") or "row3-col7"."""
    if query is None or isinstance(query, str):
        return query or "cls"
    return f"row{query[0] + 1}-col{query[1] + 1}"


def relevance_classes(loaded: LoadedModel) -> list[str]:
    """The relevance class picker's choices for a model: the predicted class, then every class
    by name (none but the first for a model without a classifier, which the handler refuses)."""
    return [PREDICTED, *loaded.meta.class_names]


# Every session's forward passes, in one cache bounded in bytes (docs/security.md); a
# session's state holds only the key of its current entry. ui.app sets the budget.
STORE = ExplanationStore()
ExplanationKey = tuple[str, str, int, str]  # (upload file, model key, model id, mode)
# The relevance on screen, kept in the session so that a new style or "show" redraws it without
# another backward pass: (its explanation's key, the class picked, (the map, the class explained)).
RelevanceMap = tuple[ExplanationKey, str, tuple[np.ndarray, int]]
# A CLIP model's words on screen, kept likewise: (their explanation's key, the words' scores and maps).
WordsResult = tuple[ExplanationKey, ZeroShot]


def uploaded_path(payload: dict | None) -> str:
    """The upload inside an image payload that reached us undecoded (preprocess=False), so
    the app decodes it itself (explorer.images) and every bad file gets a clear message.
    Whatever path a client sent, only a file inside Gradio's upload folder is accepted."""
    try:
        path = checked_upload(payload.get("path") if isinstance(payload, dict) else None, upload_folder())
        UPLOADS.admit(path)  # the disk budget holds when the file arrives, not a minute later
        return str(path)
    except UploadRefused as e:
        raise visitor_error(str(e)) from e


def classes_note(loaded: LoadedModel, shown: int = 20) -> str:
    """Markdown: the classes the model can answer with (the first `shown` of them)."""
    names = loaded.meta.class_names
    if not names:
        return (
            "**No classes:** this model has no classifier head (a feature extractor such as DINO, DINOv2 or "
            "DINOv3), so it makes no predictions. Every attention map works; relevance needs a model with classes."
        )
    listed = ", ".join(names[:shown]) + (f", … ({len(names) - shown} more)" if len(names) > shown else "")
    always = "The model always answers with one of them, even for a picture of something else."
    return f"**{len(names)} classes:** {listed}. {always}"


def require(key: ExplanationKey | None) -> Explanation:
    """The session's current explanation, from the server-wide store."""
    if key is None:
        raise visitor_error("No image analysed yet in this session: upload an image first.")
    ex = STORE.peek(key)
    if ex is None:
        raise visitor_error("This analysis was dropped from the server's memory to make room: upload the image again.")
    return ex


def owner(request: gr.Request | None) -> str:
    """Who is asking: a digest of the browser (or gradio_client) session."""
    return owner_id(request.session_hash if request is not None and request.session_hash else "anonymous")


def model_name(model_key: str) -> str:
    """The model as an alt text names it: pretrained weights by name, never a server path."""
    kind, _, name = model_key.partition(":")
    return {"bundled": "the bundled model", "checkpoint": "a checkpoint"}.get(kind, name or model_key)


# Each view as its component's value, with the alt text explorer.views writes for it.
def input_picture(ex: Explanation, key: ExplanationKey, query: Query = None) -> gr.Image:
    return with_alt(views.input_view(ex, query), views.input_alt(ex, query, model_name(key[1])))


def heads_picture(ex: Explanation, key: ExplanationKey, query: Query, layer: int, style: MapStyle) -> gr.Image:
    alt = views.heads_alt(ex, query, layer, model_name(key[1]))
    return with_alt(views.heads(ex, query, layer, style), alt)


def overview_picture(ex: Explanation, key: ExplanationKey, style: MapStyle) -> gr.Image:
    return with_alt(views.overview(ex, style), views.overview_alt(ex, model_name(key[1])))


def rollout_picture(
    ex: Explanation,
    key: ExplanationKey,
    fusion: str,
    discard: float,
    style: MapStyle,
    show: str = "weights",
    keep: float = views.KEEP,
) -> gr.Image:
    alt = views.rollout_alt(ex, fusion, discard, show, keep, model_name(key[1]))
    return with_alt(views.rollout(ex, fusion, discard, style, show, keep), alt)


def distance_picture(ex: Explanation, key: ExplanationKey) -> gr.Image:
    return with_alt(views.distance_chart(ex), views.distance_alt(ex, model_name(key[1])))


def pca_inputs(loaded: LoadedModel, ex: Explanation, examples: bool) -> list[tuple[str, ModelInput]]:
    """The images one PCA is fitted on: the explanation's model input, then (with `examples`)
    each of PCA_EXAMPLES as the model's own preprocessing gives it."""
    inputs = [("this image", ex.input)]
    for name in PCA_EXAMPLES if examples else ():
        image = load_image(str(EXAMPLES_DIR / f"{name}.jpg"))
        inputs.append((name, model_input(image, loaded.preprocessing, loaded.model.config.patch_size)))
    return inputs


def pca_picture(loaded: LoadedModel, ex: Explanation, key: ExplanationKey, choice: PcaChoice) -> gr.Image:
    """Patch features of the chosen layer in colour (DINOv2 Fig. 1), on the GPU where there is one."""
    layer = ex.depth if choice.layer is None else check_layer(choice.layer, ex.depth)
    examples = yes_no("with the examples", choice.examples)
    background = yes_no("remove the background", choice.background)
    names, inputs = zip(*pca_inputs(loaded, ex, examples), strict=True)
    computed = zerogpu.PATCH_PCA(loaded, [i.tensor for i in inputs], layer - 1, background)
    pixels = [i.pixels for i in inputs]
    picture = views.pca_view(pixels, names, computed, layer, ex.depth, ex.prefix_names, PICTURE_TEXT.px)
    return with_alt(picture, views.pca_alt(names, computed, layer, ex.depth, model_name(key[1])))


def logit_lens_picture(loaded: LoadedModel, ex: Explanation, key: ExplanationKey) -> gr.Image | None:
    """What each layer would answer; for a model without a classifier head, nothing and NO_LENS."""
    if loaded.model.config.num_classes < 1:
        gr.Warning(NO_LENS)
        return None
    probabilities = zerogpu.LOGIT_LENS(loaded, ex.input.tensor).numpy()
    names = loaded.meta.class_names
    alt = views.logit_lens_alt(probabilities, names, model_name(key[1]))
    return with_alt(views.logit_lens_view(probabilities, names, PICTURE_TEXT.px), alt)


def similarity_picture(loaded: LoadedModel) -> gr.Image:
    compared = views.position_words(loaded.model)
    alt = views.similarity_alt(loaded.model.config.grid, model_name(loaded.key), compared)
    return with_alt(render.position_similarity_tiles(loaded.position_similarity(), compared=compared), alt)


def full_analysis(
    loaded: LoadedModel,
    path: str,
    mode: str,
    layer: int,
    fusion: str,
    discard: float,
    style: MapStyle,
    store: ExplanationStore | None = STORE,
    show: str = "weights",
    keep: float = views.KEEP,
    max_request_bytes: int | None = None,
    on_screen: str | None = None,
    pca: PcaChoice = PcaChoice(),  # noqa: B008 - frozen, never changed
) -> dict[str, Any]:
    """Decode an image, run the model once, and draw the views a visitor sees: ANALYSIS_OUTPUTS
    by name (all but export_name, which needs the upload's name); of IMAGE_VIEWS only the one
    `on_screen` (a MORE_VIEWS name or None), the others None until opened (`show_more`).
    A (file, model, mode) any session has seen recently is not run again (`store`; None: no
    caching, as the benchmark measures). Raises ImageError for unusable files,
    ExplanationTooLarge past the store's memory budget or when the request would compute more
    than `max_request_bytes` (REQUEST_FACTOR x its maps; whole mode can hold 16 x crop's maps)."""
    budgets = [store.max_bytes] if store else []
    if max_request_bytes is not None:
        budgets.append(max_request_bytes // REQUEST_FACTOR)
    budget = min(budgets, default=None)

    def forward_pass() -> Explanation:
        pre = loaded.preprocessing
        image, forward = load_image(path), partial(zerogpu.FORWARD, loaded)
        return explain(loaded.model, loaded.meta.class_names, pre, image, mode, max_bytes=budget, forward=forward)

    # Gradio names uploads by content, so the path identifies the image; the model object
    # (not just its key) tells apart two catalogues' "bundled" models in one process.
    key = (path, loaded.key, id(loaded.model), mode)
    ex = store.get(key, forward_pass) if store else forward_pass()
    return {
        "explanation_key": key,
        "query": None,  # the query goes back to the CLS token, and the caption says so
        "query_md": views.describe_query(None, ex.has_cls),
        "input_img": input_picture(ex, key),
        "numbers": views.describe_input(ex),
        "label": ex.probabilities,
        "layer": layer_slider(ex.depth, layer),
        "heads": heads_picture(ex, key, None, layer, style),
        **image_views(on_screen, ex, key, fusion, discard, style, show, keep, loaded=loaded, pca=pca),
        "query_token": gr.Dropdown(
            choices=views.query_choices(ex.prefix_names), value=views.query_token(None, ex.prefix_names)
        ),
        "relevance": None,  # drawn on request: it costs a forward and a backward pass
        "relevance_map": None,
        "export_file": None,
    }


def cleared(prefix_names: tuple[str, ...]) -> dict[str, Any]:
    """ANALYSIS_OUTPUTS (but the layer slider) once the image is removed: no picture, prediction,
    export or explanation of it is left, and the caption is back at its start text."""
    return {
        **dict.fromkeys(("explanation_key", "export_name", "query", "input_img", "label", "heads")),
        **dict.fromkeys(("relevance", "relevance_map")),
        **dict.fromkeys((*IMAGE_VIEWS, "export_file")),
        "numbers": "",
        "query_md": views.describe_query(None, "cls" in prefix_names),
        "query_token": gr.Dropdown(
            choices=views.query_choices(prefix_names), value=views.query_token(None, prefix_names)
        ),
    }


def image_views(
    on_screen: str | None,
    ex: Explanation,
    key: ExplanationKey,
    fusion: str,
    discard: float,
    style: MapStyle,
    show: str = "weights",
    keep: float = views.KEEP,
    names: tuple[str, ...] = IMAGE_VIEWS,
    loaded: LoadedModel | None = None,
    pca: PcaChoice = PcaChoice(),  # noqa: B008 - frozen, never changed
) -> dict[str, gr.Image | None]:
    """`names` (of IMAGE_VIEWS) by field: the one `on_screen` drawn with its alt text, the others
    None (so no picture of an earlier image or style is left in a closed tab; opening it draws it).
    The PCA and the logit lens run the model (`loaded`, the explanation's) once more."""
    draw = {
        "overview": lambda: overview_picture(ex, key, style),
        "rollout": lambda: rollout_picture(ex, key, fusion, discard, style, show, keep),
        "distance": lambda: distance_picture(ex, key),
        "pca": lambda: pca_picture(loaded, ex, key, pca),
        "logit_lens": lambda: logit_lens_picture(loaded, ex, key),
    }
    return {name: draw[name]() if name == on_screen else None for name in names}


def analyze(
    view: ExploreView,
    catalog: ModelCatalog,
    image: dict | None,
    on_screen: str | None,
    model_key: str,
    mode: str,
    layer: float,
    fusion: str,
    discard: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    show: str = "weights",
    keep_percent: float = 100 * views.KEEP,
    pca_layer: float | None = None,
    pca_examples: bool = False,
    pca_background: bool = True,
    request: gr.Request | None = None,
) -> dict:
    """Analyse an uploaded image with the chosen model and draw the views on screen; with no
    image (removed with its ×), clear every output that described the last one. `pca_layer`
    (1-based; None: the last), `pca_examples` and `pca_background` are the PCA tab's controls."""
    visitor = owner(request)
    if image is None:
        return view.update(**cleared(load_or_error(catalog, model_key, visitor).model.config.prefix_names))
    mode, fusion = one_of("resize mode", mode, MODES), one_of("head fusion", fusion, FUSIONS)
    discard = number("discard ratio", discard, 0.0, DISCARD_MAX)
    style = map_style(cmap, opacity, upsampling, display, scale)
    try:
        loaded = catalog.get(model_key, owner=visitor)
        layer = check_layer(layer, loaded.model.config.depth)
        display = map_show(show, keep_percent)
        path, limit = uploaded_path(image), catalog.serving.request_bytes
        pictures = full_analysis(
            loaded,
            path,
            mode,
            layer,
            fusion,
            discard,
            style,
            show=display[0],
            keep=display[1],
            max_request_bytes=limit,
            on_screen=on_screen,
            pca=PcaChoice(pca_layer, pca_examples, pca_background),
        )
    except (ImageError, ModelUnavailable, ExplanationTooLarge) as e:
        raise visitor_error(str(e)) from e
    return view.update(**pictures, export_name=export_name(image, model_key, catalog))


class ShownImages:
    """The image path each browser session last took up (the `size` most recent sessions), so
    that Gradio's two .change events for one upload (it sets the value twice, a few
    milliseconds apart, so a session state read by the second may not hold the first's write
    yet) start one analysis. The lock makes exactly one of two concurrent requests the new one."""

    def __init__(self, size: int = 4096):
        self.paths: OrderedDict[str, str | None] = OrderedDict()
        self.size, self.lock = size, threading.Lock()

    def is_new(self, session: str, path: str | None) -> bool:
        """Whether `path` is not the session's last image; it is from now on."""
        with self.lock:
            new = self.paths.get(session, "") != path  # "" matches no path and no removal (None)
            self.paths[session] = path
            self.paths.move_to_end(session)
            while len(self.paths) > self.size:
                self.paths.popitem(last=False)
            return new


SHOWN = ShownImages()


def note_image(image: dict | None, request: gr.Request) -> None:
    """The first step of an analysis on the image's .change: the same upload path as this
    session's last (Gradio's second .change for one upload) stops here silently, so an image
    is analysed, and a bad file's message shown, once."""
    path = image.get("path") if isinstance(image, dict) else None
    if not SHOWN.is_new(owner(request), path if isinstance(path, str) else None):
        raise visitor_error("this image is already shown", visible=False, print_exception=False)


def check_new_image(image: dict | None) -> None:
    """The second step: a file that is no image (or of refused sides) gets its message here,
    from its header, so the views and controls of the last image stay as they were (an error
    in `analyze` marks each of its outputs)."""
    if image is None:
        return
    try:
        check_image(uploaded_path(image))
    except ImageError as e:
        raise visitor_error(str(e)) from e


def show_heads(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    query: Query,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
) -> dict:
    """Every head's attention map for the current query in one layer (1-based)."""
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    return view.update(heads=heads_picture(ex, explanation_key, query, check_layer(layer, ex.depth), style))


def restyle(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    on_screen: str | None,
    query: Query,
    layer: float,
    fusion: str,
    discard: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    show: str = "weights",
    keep_percent: float = 100 * views.KEEP,
) -> dict:
    """Redraw the head maps in a new style, and the layers x heads overview or rollout if on
    screen (the other None: drawn in the new style when opened)."""
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    layer = check_layer(layer, ex.depth)
    fusion, discard = one_of("head fusion", fusion, FUSIONS), number("discard ratio", discard, 0.0, DISCARD_MAX)
    shown = image_views(
        on_screen, ex, explanation_key, fusion, discard, style, *map_show(show, keep_percent), ("overview", "rollout")
    )
    return view.update(heads=heads_picture(ex, explanation_key, query, layer, style), **shown)


def keep_slider(view: ExploreView, show: str) -> dict:
    """The "keep the top X %" slider, shown only for the "top mass" choice: the only one it changes."""
    return view.update(keep_percent=gr.Slider(visible=show == "top mass"))


def show_rollout(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    fusion: str,
    discard: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    show: str = "weights",
    keep_percent: float = 100 * views.KEEP,
) -> dict:
    """Attention rollout through all layers with a head fusion and discard ratio, drawn as
    `show` says (views.SHOWS; `keep_percent` of the mass for "top mass")."""
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    fusion, discard = one_of("head fusion", fusion, FUSIONS), number("discard ratio", discard, 0.0, DISCARD_MAX)
    return view.update(
        rollout=rollout_picture(ex, explanation_key, fusion, discard, style, *map_show(show, keep_percent))
    )


def show_more(
    view: ExploreView,
    catalog: ModelCatalog,
    name: str,
    explanation_key: ExplanationKey | None,
    current_model: str,
    fusion: str,
    discard: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    show: str = "weights",
    keep_percent: float = 100 * views.KEEP,
    pca_layer: float | None = None,
    pca_examples: bool = False,
    pca_background: bool = True,
) -> dict:
    """The "More views" tab `name` comes on screen (its tab picked, or the accordion opened on
    it): remember it, and draw its view (position similarity for the current model; an image's
    view once there is one; relevance waits for its button, as it costs a backward pass)."""
    name = one_of("view", name, MORE_VIEWS)
    on_screen = view.update(on_screen=name, more_tab=name)
    if name == "similarity":
        return on_screen | view.update(similarity=similarity_picture(load_or_error(catalog, current_model)))
    if name not in IMAGE_VIEWS or explanation_key is None:
        return on_screen
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    fusion, discard = one_of("head fusion", fusion, FUSIONS), number("discard ratio", discard, 0.0, DISCARD_MAX)
    loaded, pca = load_or_error(catalog, explanation_key[1]), PcaChoice(pca_layer, pca_examples, pca_background)
    display = map_show(show, keep_percent)
    drawn = image_views(name, ex, explanation_key, fusion, discard, style, *display, (name,), loaded=loaded, pca=pca)
    return on_screen | view.update(**drawn)


def show_pca(
    view: ExploreView,
    catalog: ModelCatalog,
    explanation_key: ExplanationKey | None,
    pca_layer: float,
    pca_examples: bool,
    pca_background: bool,
) -> dict:
    """Patch features in colour (DINOv2 Fig. 1): the patch tokens leaving `pca_layer` (1 =
    first) on their first three principal components as R, G, B; one PCA fitted on this image
    alone or, with `pca_examples`, on it and the six animal examples together; with
    `pca_background`, the background removed by thresholding the first component at 0."""
    ex = require(explanation_key)
    loaded = load_or_error(catalog, explanation_key[1])
    return view.update(pca=pca_picture(loaded, ex, explanation_key, PcaChoice(pca_layer, pca_examples, pca_background)))


def hide_more(view: ExploreView) -> dict:
    """The "More views" accordion closed: nothing of it is on screen, so analyses draw none of it."""
    return view.update(on_screen=None)


def load_or_error(catalog: ModelCatalog, key: str, visitor: str | None = None) -> LoadedModel:
    """The catalogue's model for `key` (for `visitor`: ModelCatalog.check_use), or a visitor's
    error with its message."""
    try:
        return catalog.get(key, owner=visitor)
    except ModelUnavailable as e:
        raise visitor_error(str(e)) from e


def show_query(view: ExploreView, key: ExplanationKey, query: Query, layer: object, style: MapStyle) -> dict:
    """QUERY_OUTPUTS after the query changes: the query, the marked input, the head maps, the caption."""
    ex = require(key)
    return view.update(
        query=query,
        input_img=input_picture(ex, key, query),
        heads=heads_picture(ex, key, query, check_layer(layer, ex.depth), style),
        query_md=views.describe_query(query, ex.has_cls),
        query_token=views.query_token(query, ex.prefix_names),
    )


def query_patch(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    row: float,
    column: float,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
) -> dict:
    """Make the patch at (row, column) the query, as a click on it would. Rows and columns
    count from 1, as the page shows them: row 1 is the top, column 1 the left edge."""
    ex = require(explanation_key)
    gh, gw = ex.grid
    patch = whole_number("row", row, 1, gh) - 1, whole_number("column", column, 1, gw) - 1
    return show_query(view, explanation_key, patch, layer, map_style(cmap, opacity, upsampling, display, scale))


def query_token(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    token: str,
    query: Query,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
) -> dict:
    """Make a token the query: 'cls', 'dist' (DeiT's distillation token), 'reg1', 'reg2', ...
    (registers, counted from 1), 'mean' (models without CLS) or 'patch' (keeps the current
    patch, else the centre one; /query_patch picks any). The model's own tokens only."""
    ex = require(explanation_key)
    tokens = [value for _, value in views.query_choices(ex.prefix_names)]
    token = one_of("query token", token, tokens)
    if token == views.PATCH:
        gh, gw = ex.grid
        chosen: Query = query if isinstance(query, tuple) else (gh // 2, gw // 2)
    else:
        chosen = None if token in ("cls", views.MEAN) else token
    return show_query(view, explanation_key, chosen, layer, map_style(cmap, opacity, upsampling, display, scale))


def show_relevance(
    view: ExploreView,
    catalog: ModelCatalog,
    explanation_key: ExplanationKey | None,
    name: str | None,
    target: str,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    show: str = "weights",
    keep_percent: float = 100 * views.KEEP,
) -> dict:
    """Class-specific relevance (Chefer et al. 2021) of every patch for `target`: "predicted
    class" or one of the model's class names. Refused for a model without a classifier head."""
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    loaded = load_or_error(catalog, explanation_key[1])
    if loaded.model.config.num_classes < 1:
        raise visitor_error(
            "this model has no classifier head, so it makes no predictions and there is no class to explain: "
            "relevance needs a supervised model (e.g. DeiT or ViT-B/16); rollout works for every model"
        )
    target = one_of("class", target, relevance_classes(loaded))
    index = None if target == PREDICTED else loaded.meta.class_names.index(target)
    drawn: RelevanceMap = (explanation_key, target, zerogpu.RELEVANCE(loaded, ex.input.tensor, index))
    picture = relevance_picture(loaded, ex, name, drawn, style, *map_show(show, keep_percent))
    return view.update(relevance=picture, relevance_map=drawn)


def compare_words(
    view: ExploreView,
    catalog: ModelCatalog,
    explanation_key: ExplanationKey | None,
    prompts: str,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    show: str = "weights",
    keep_percent: float = 100 * views.KEEP,
) -> dict:
    """A CLIP model's zero-shot probabilities over `prompts` (comma-separated words, each put into
    CLIP's template) in place of the top classes, and for each its relevance map (Chefer et al.
    2021, the image-text similarity as the score): one forward and one backward pass per word."""
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    loaded = load_or_error(catalog, explanation_key[1])
    if loaded.text is None:
        raise visitor_error(
            f"{loaded.label} answers with its own classes, not with words: pick a CLIP model "
            "(vit_base_patch16_clip_224.openai) to compare words"
        )
    try:
        words = parse_prompts(prompts)
    except PromptError as e:
        raise visitor_error(str(e)) from e
    zs = zero_shot(loaded, words, zerogpu.PROMPTS(loaded, ex.input.tensor, words))
    show, keep = map_show(show, keep_percent)
    model = model_name(loaded.key)
    maps = word_maps(ex.input.pixels, ex.grid, zs, style, show, keep, model)
    kept: WordsResult = (explanation_key, zs)
    return view.update(label=zs.probabilities, prompt_maps=maps, prompt_note=views.prompt_note(zs), words_result=kept)


def restyle_words(
    view: ExploreView,
    catalog: ModelCatalog,
    explanation_key: ExplanationKey | None,
    words_result: WordsResult | None,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    show: str = "weights",
    keep_percent: float = 100 * views.KEEP,
) -> dict:
    """The word maps on screen follow the style and "show", redrawn from their kept result (no
    backward pass); with none on screen, or ones of another image, nothing changes."""
    if words_result is None or explanation_key is None or words_result[0] != explanation_key:
        return gr.skip()
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    show, keep = map_show(show, keep_percent)
    return view.update(
        prompt_maps=word_maps(
            ex.input.pixels, ex.grid, words_result[1], style, show, keep, model_name(explanation_key[1])
        )
    )


def word_maps(
    pixels: np.ndarray, grid: tuple[int, int], zs: ZeroShot, style: MapStyle, show: str, keep: float, model: str
) -> list[tuple[str, str]]:
    """A gallery's value: each prompt's relevance map (a file) with its alt text as its caption."""
    return [
        (
            saved(views.prompt_relevance(pixels, grid, zs, i, style, show, keep)),
            views.prompt_alt(grid, zs, i, show, keep, model),
        )
        for i in range(len(zs.prompts))
    ]


def words_after(
    view: ExploreView,
    catalog: ModelCatalog,
    explanation_key: ExplanationKey | None,
    prompts: str,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    show: str = "weights",
    keep_percent: float = 100 * views.KEEP,
) -> dict:
    """After an analysis with a CLIP model, its words at once (`compare_words`); after the image
    was removed, no word maps (the analysis cleared the probabilities); else nothing."""
    if explanation_key is None:
        return view.update(prompt_maps=None, prompt_note="", words_result=None)
    if load_or_error(catalog, explanation_key[1]).text is None:
        return gr.skip()
    style = (cmap, opacity, upsampling, display, scale, show, keep_percent)
    return compare_words(view, catalog, explanation_key, prompts, *style)


def relevance_picture(
    loaded: LoadedModel, ex: Explanation, name: str | None, drawn: RelevanceMap, style: MapStyle, show: str, keep: float
) -> gr.Image:
    """The relevance map `drawn` computed, as `show` and `style` say, with its alt text and file name."""
    _, target, computed = drawn
    index = None if target == PREDICTED else loaded.meta.class_names.index(target)
    picture = views.relevance(loaded.model, loaded.meta.class_names, ex, index, style, show, keep, computed=computed)
    alt = views.relevance_alt(ex, None if index is None else target, show, keep, model_name(loaded.key))
    return with_alt(picture, alt, f"{name or 'attention'}_relevance_{slug(target)}.png")


def restyle_relevance(
    view: ExploreView,
    catalog: ModelCatalog,
    explanation_key: ExplanationKey | None,
    relevance_map: RelevanceMap | None,
    name: str | None,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    show: str = "weights",
    keep_percent: float = 100 * views.KEEP,
) -> dict:
    """The relevance on screen follows the style and "Rollout and relevance show" (as rollout
    does), redrawn from its kept map; with none on screen, nothing changes."""
    if relevance_map is None or explanation_key is None or relevance_map[0] != explanation_key:
        return gr.skip()
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    loaded = load_or_error(catalog, explanation_key[1])
    picture = relevance_picture(loaded, ex, name, relevance_map, style, *map_show(show, keep_percent))
    return view.update(relevance=picture)


def click_patch(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    evt: gr.SelectData,
) -> dict:
    """A click on the input view: the patch under it becomes the query."""
    ex = require(explanation_key)
    patch = views.clicked_patch(ex, *evt.index)  # evt.index: (x, y) in image pixels
    return show_query(view, explanation_key, patch, layer, map_style(cmap, opacity, upsampling, display, scale))


def move_query(
    view: ExploreView,
    step: tuple[int, int],
    explanation_key: ExplanationKey | None,
    query: Query,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
) -> dict:
    """Move the query patch one `step` (rows, columns), stopping at the edges. From the CLS
    token (or another prefix token) any arrow goes to the first patch, row 1, column 1: the
    token after the prefix in the model's sequence, where reading the grid starts (the centre
    once made "↑" from CLS land on row 5, below where it started)."""
    ex = require(explanation_key)
    gh, gw = ex.grid
    if not isinstance(query, tuple):
        patch = 0, 0
    else:
        patch = min(max(query[0] + step[0], 0), gh - 1), min(max(query[1] + step[1], 0), gw - 1)
    return show_query(view, explanation_key, patch, layer, map_style(cmap, opacity, upsampling, display, scale))


def reset_query(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
) -> dict:
    """Back to the default query (the CLS token)."""
    return show_query(view, explanation_key, None, layer, map_style(cmap, opacity, upsampling, display, scale))


def play_layers(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    query: Query,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
) -> Iterator[dict]:
    """Step the layer slider to the last layer, redrawing the head maps, from the layer after
    `layer` (from the first when `layer` is the last): Play after Pause goes on where it
    stopped. Pause shows instead of Play while it plays."""
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    current = check_layer(layer, ex.depth)
    for shown_layer in range(current + 1 if current < ex.depth else 1, ex.depth + 1):
        heads = heads_picture(ex, explanation_key, query, shown_layer, style)
        yield view.update(layer=shown_layer, heads=heads, **playing(True))
        time.sleep(PLAY_STEP_S)
    yield view.update(**playing(False))


def playing(on: bool) -> dict[str, gr.Button]:
    """Play and Pause, one of them on the page: Pause while the layers play."""
    return {"play": gr.Button(visible=not on), "pause": gr.Button(visible=on)}


def stop_playing(view: ExploreView) -> dict:
    """Pause pressed, or the layer, query, style or image changed while playing: the play is
    cancelled (ui/explore.py) so the slider and the maps show the same layer; Play comes back."""
    return view.update(**playing(False))


def fit_layer(view: ExploreView, catalog: ModelCatalog, current_model: str, layer: object) -> dict:
    """A layer typed in the slider's box outside 1 to the model's depth comes back to the
    nearest layer, with a message, before the maps are drawn (which would refuse it). API
    clients calling /heads still get the refusal."""
    depth = load_or_error(catalog, current_model).model.config.depth
    number = layer if isinstance(layer, int | float) and not isinstance(layer, bool) else math.nan
    if math.isfinite(number) and number == int(number) and 1 <= number <= depth:
        return gr.skip()
    nearest = min(max(round(number), 1), depth) if math.isfinite(number) else depth
    typed = f"{number:g}" if math.isfinite(number) else shown(layer)
    gr.Warning(for_visitors(f"There is no layer {typed}: this model has layers 1 to {depth}. Showing layer {nearest}."))
    return view.update(layer=nearest)


def keep_image(explanation_key: ExplanationKey | None, request: gr.Request) -> str | None:
    """After a refused upload, the upload box shows again the image the views on the page
    belong to (empty if none): marked as shown, so putting it back starts no analysis."""
    path = explanation_key[0] if explanation_key is not None else None
    SHOWN.is_new(owner(request), path)
    return path


def export_png(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    name: str | None,
    query: Query,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
) -> dict:
    """The head maps of one layer (1-based) as a PNG file named by image, model, layer and query."""
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    layer = check_layer(layer, ex.depth)
    picture = views.heads(ex, query, layer, style)
    return view.update(export_file=saved(picture, f"{name or 'attention'}_layer{layer}_{query_name(query)}.png"))


def export_gif(
    view: ExploreView,
    explanation_key: ExplanationKey | None,
    name: str | None,
    query: Query,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    scale: str,
    gif_scale: str = GIF_SCALES[0],
) -> dict:
    """The head maps of every layer as an animated GIF named by image, model, layers and query:
    each frame as the screen draws its layer ("each layer"), or all on one scale, the largest
    weight of all layers ("all layers"), every frame with the colour bar of its scale."""
    ex, style = require(explanation_key), map_style(cmap, opacity, upsampling, display, scale)
    one_scale = one_of("GIF scale", gif_scale, GIF_SCALES) == "all layers"
    scaled = "_one-scale" if one_scale else ""
    path = cache_path(f"{name or 'attention'}_layers1-{ex.depth}_{query_name(query)}{scaled}.gif")
    render.save_gif(views.layer_frames(ex, query, style, one_scale=one_scale), path, cmap=style.cmap)
    UPLOADS.added(path.stat().st_size)  # counted against the upload folder's budget, as every view
    return view.update(export_file=str(path))


def picked_model(catalog: ModelCatalog, model_key: object, request: gr.Request | None) -> str:
    """`model_key` if it is one of this visitor's picker choices, else an app message. The model
    pickers' events run with preprocess=False: Gradio's own choice check echoed a 10 MB key
    whole, and HTML in it unescaped."""
    try:
        catalog.check_use(model_key, owner(request))  # the one rule for checkpoint keys, one sentence
    except ModelUnavailable as e:
        raise visitor_error(str(e), duration=None) from e
    if not isinstance(model_key, str) or model_key not in {key for _, key in catalog.choices(owner(request))}:
        raise visitor_error(f"unknown model {shown(model_key)}: pick one from the list")
    return model_key


def load_model(
    view: ExploreView,
    catalog: ModelCatalog,
    model_key: str,
    on_screen: str | None,
    request: gr.Request,
    progress: gr.Progress = gr.Progress(),  # noqa: B008 - Gradio's way to show a download's bytes
) -> dict:
    """Switch the Explore tab to another model (downloading pretrained weights once, its bytes
    and percent shown while it downloads): one of this visitor's picker choices."""
    loaded = downloads.load(catalog, picked_model(catalog, model_key, request), progress)
    depth = loaded.model.config.depth
    return view.update(
        current_model=model_key,
        model_info=loaded.describe(),
        classes=classes_note(loaded),
        layer=layer_slider(depth, depth),  # the analysis that follows starts at the last layer
        pca_layer=layer_slider(depth, depth),
        # drawn now only if on screen; else None, drawn for this model when opened (show_more)
        similarity=similarity_picture(loaded) if on_screen == "similarity" else None,
        relevance_class=gr.Dropdown(choices=relevance_classes(loaded), value=PREDICTED),
        words=gr.Column(visible=loaded.text is not None),  # the words box, for CLIP models only
    )


def keep_model(current_model: str) -> str:
    """After a failed switch: the picker goes back to the model that works."""
    return current_model


def upload_checkpoint(view: ExploreView, catalog: ModelCatalog, checkpoint: str | None, request: gr.Request) -> dict:
    """Validate an uploaded .safetensors checkpoint, add it to this visitor's picker and select it."""
    if checkpoint is None:
        return gr.skip()
    visitor = owner(request)
    try:
        path = checked_upload(checkpoint, upload_folder())
        UPLOADS.admit(path)
        key = catalog.register(path, visitor, label=f"upload {path.name}")
    except (UploadRefused, ModelUnavailable) as e:
        raise visitor_error(str(e)) from e
    return view.update(model_key=gr.Dropdown(choices=catalog.choices(visitor), value=key))
