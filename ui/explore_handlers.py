"""Handlers of the Explore tab: module-level functions from named inputs to `{component: value}`.

ui/explore.py binds each to the tab's `ExploreView` (and, where needed, the model catalogue)
with `ui.binding.bound`. A handler reads its inputs by name, builds one `MapStyle` from the
four style controls, asks `explorer.views` for pictures and returns them by component name
through `ExploreView.update`, so a new view is one more name, not one more tuple slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gradio as gr

from explorer import render, views
from explorer.catalog import LoadedModel, ModelCatalog, ModelUnavailable
from explorer.explain import Explanation, ExplanationStore, ExplanationTooLarge, explain
from explorer.images import ImageError, load_image
from explorer.render import MapStyle
from explorer.uploads import UploadRefused, checked_upload
from training.registry import owner_id
from vit.analysis import Query

from .outputs import cache_path, saved, upload_folder

if TYPE_CHECKING:
    from .explore import ExploreView

# What /analyze redraws, by ExploreView field: the session's Explanation first.
ANALYSIS_OUTPUTS = (
    "explanation",
    "query",
    "input_img",
    "numbers",
    "label",
    "layer",
    "heads",
    "overview",
    "rollout",
    "distance",
)
QUERY_OUTPUTS = ("query", "input_img", "heads", "query_md")


def map_style(cmap: str, opacity: float, upsampling: str, display: str) -> MapStyle:
    """The one MapStyle the four style controls describe."""
    return MapStyle(cmap=cmap, opacity=opacity, smooth=upsampling == "smooth", raw=display == "raw")


# Every session's forward passes, in one cache bounded in bytes (docs/security.md); a
# session's state holds only the key of its current entry. ui.app sets the budget.
STORE = ExplanationStore()
ExplanationKey = tuple[str, str, int, str]  # (upload file, model key, model id, mode)


def uploaded_path(payload: dict | None) -> str:
    """The upload inside an image payload that reached us undecoded (preprocess=False), so
    the app decodes it itself (explorer.images) and every bad file gets a clear message.
    Whatever path a client sent, only a file inside Gradio's upload folder is accepted."""
    try:
        return str(checked_upload(payload.get("path") if isinstance(payload, dict) else None, upload_folder()))
    except UploadRefused as e:
        raise gr.Error(str(e)) from e


def require(key: ExplanationKey | None) -> Explanation:
    """The session's current explanation, from the server-wide store."""
    if key is None:
        raise gr.Error("No image analysed yet in this session: upload an image first.")
    ex = STORE.peek(key)
    if ex is None:
        raise gr.Error("This analysis was dropped from the server's memory to make room: upload the image again.")
    return ex


def owner(request: gr.Request | None) -> str:
    """Who is asking: a digest of the browser (or gradio_client) session."""
    return owner_id(request.session_hash if request is not None and request.session_hash else "anonymous")


def full_analysis(
    loaded: LoadedModel,
    path: str,
    mode: str,
    layer: int,
    fusion: str,
    discard: float,
    style: MapStyle,
    store: ExplanationStore | None = STORE,
) -> dict[str, Any]:
    """Decode an image, run the model once, and draw every view: ANALYSIS_OUTPUTS by name.
    A (file, model, mode) any session has seen recently is not run again (`store`; None: no
    caching, as the benchmark measures). Raises ImageError for unusable files,
    ExplanationTooLarge past the store's memory budget."""
    budget = store.max_bytes if store else None

    def forward_pass() -> Explanation:
        pre = loaded.preprocessing
        return explain(loaded.model, loaded.meta.class_names, pre, load_image(path), mode, max_bytes=budget)

    # Gradio names uploads by content, so the path identifies the image; the model object
    # (not just its key) tells apart two catalogues' "bundled" models in one process.
    key = (path, loaded.key, id(loaded.model), mode)
    ex = store.get(key, forward_pass) if store else forward_pass()
    layer = min(layer, ex.depth)
    return {
        "explanation": key,
        "query": None,  # the query goes back to the CLS token
        "input_img": saved(views.input_view(ex)),
        "numbers": views.describe_input(ex),
        "label": ex.probabilities,
        "layer": gr.Slider(maximum=ex.depth, value=layer),
        "heads": saved(views.heads(ex, None, layer, style)),
        "overview": saved(views.overview(ex, style)),
        "rollout": saved(views.rollout(ex, fusion, discard, style)),
        "distance": saved(views.distance_chart(ex)),
    }


def analyze(
    view: ExploreView,
    catalog: ModelCatalog,
    image: dict | None,
    model_key: str,
    mode: str,
    layer: float,
    fusion: str,
    discard: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
) -> dict:
    """Analyse an uploaded image with the chosen model and draw every view."""
    if image is None:
        return gr.skip()
    try:
        loaded = catalog.get(model_key)
        style = map_style(cmap, opacity, upsampling, display)
        pictures = full_analysis(loaded, uploaded_path(image), mode, int(layer), fusion, discard, style)
    except (ImageError, ModelUnavailable, ExplanationTooLarge) as e:
        raise gr.Error(str(e)) from e
    return view.update(**pictures)


def show_heads(
    view: ExploreView,
    explanation: Explanation | None,
    query: Query,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
) -> dict:
    """Every head's attention map for the current query in one layer."""
    style = map_style(cmap, opacity, upsampling, display)
    return view.update(heads=saved(views.heads(require(explanation), query, int(layer), style)))


def restyle(
    view: ExploreView,
    explanation: Explanation | None,
    query: Query,
    layer: float,
    fusion: str,
    discard: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
) -> dict:
    """Redraw the head maps, the layers x heads overview and rollout in a new style."""
    ex, style = require(explanation), map_style(cmap, opacity, upsampling, display)
    return view.update(
        heads=saved(views.heads(ex, query, int(layer), style)),
        overview=saved(views.overview(ex, style)),
        rollout=saved(views.rollout(ex, fusion, discard, style)),
    )


def show_rollout(
    view: ExploreView,
    explanation: Explanation | None,
    fusion: str,
    discard: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
) -> dict:
    """Attention rollout through all layers with a head fusion and discard ratio."""
    style = map_style(cmap, opacity, upsampling, display)
    return view.update(rollout=saved(views.rollout(require(explanation), fusion, float(discard), style)))


def show_query(view: ExploreView, ex: Explanation, query: Query, layer: int, style: MapStyle) -> dict:
    """QUERY_OUTPUTS after the query changes: the query, the marked input, the head maps, the caption."""
    return view.update(
        query=query,
        input_img=saved(views.input_view(ex, query)),
        heads=saved(views.heads(ex, query, layer, style)),
        query_md=views.describe_query(query, ex.has_cls),
    )


def query_patch(
    view: ExploreView,
    explanation: Explanation | None,
    row: float,
    col: float,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
) -> dict:
    """Make the patch at (row, col) of the grid the query (0-based), as a click on it would."""
    ex = require(explanation)
    gh, gw = ex.grid
    if not (0 <= int(row) < gh and 0 <= int(col) < gw):
        raise gr.Error(f"patch ({row}, {col}) is outside the {gh}x{gw} grid (rows and columns count from 0)")
    return show_query(view, ex, (int(row), int(col)), int(layer), map_style(cmap, opacity, upsampling, display))


def click_patch(
    view: ExploreView,
    explanation: Explanation | None,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
    evt: gr.SelectData,
) -> dict:
    """A click on the input view: the patch under it becomes the query."""
    ex = require(explanation)
    row, col = views.clicked_patch(ex, *evt.index)  # evt.index: (x, y) in image pixels
    return query_patch(view, ex, row, col, layer, cmap, opacity, upsampling, display)


def reset_query(
    view: ExploreView,
    explanation: Explanation | None,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
) -> dict:
    """Back to the default query (the CLS token)."""
    return show_query(view, require(explanation), None, int(layer), map_style(cmap, opacity, upsampling, display))


def export_png(
    view: ExploreView,
    explanation: Explanation | None,
    query: Query,
    layer: float,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
) -> dict:
    """The head maps of one layer as a PNG file."""
    picture = views.heads(require(explanation), query, int(layer), map_style(cmap, opacity, upsampling, display))
    return view.update(export_file=saved(picture, f"attention-layer{int(layer)}.png"))


def export_gif(
    view: ExploreView,
    explanation: Explanation | None,
    query: Query,
    cmap: str,
    opacity: float,
    upsampling: str,
    display: str,
) -> dict:
    """The head maps of every layer as an animated GIF."""
    path = cache_path("attention-layers.gif")
    style = map_style(cmap, opacity, upsampling, display)
    render.save_gif(views.layer_frames(require(explanation), query, style), path)
    return view.update(export_file=str(path))


def load_model(
    view: ExploreView,
    catalog: ModelCatalog,
    model_key: str,
    progress: gr.Progress = gr.Progress(track_tqdm=True),  # noqa: B008 - Gradio's way to show download bars
) -> dict:
    """Switch the Explore tab to another model (downloading pretrained weights once)."""
    try:
        loaded = catalog.get(model_key)
    except ModelUnavailable as e:
        raise gr.Error(str(e), duration=None) from e
    return view.update(
        current_model=model_key,
        model_info=loaded.describe(),
        similarity=saved(render.position_similarity_tiles(loaded.position_similarity())),
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
        key = catalog.register(path, visitor, label=f"upload {path.name}")
    except (UploadRefused, ModelUnavailable) as e:
        raise gr.Error(str(e)) from e
    return view.update(model_key=gr.Dropdown(choices=catalog.choices(visitor), value=key))
