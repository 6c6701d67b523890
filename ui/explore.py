"""The Explore tab: its components (`ExploreView`), their layout, and which event runs which
handler of ui/explore_handlers.py under which API name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from explorer import views
from explorer.catalog import BUNDLED, LoadedModel, ModelCatalog
from explorer.render import COLORMAPS
from vit.preprocessing import CIFAR10_CLASSES

from . import explore_handlers as h
from .binding import ComponentView, bound

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples" / "cifar10"  # see examples/cifar10/pick.py
SESSION_TTL_S = 3600  # forget an idle session's cached forward pass after an hour
STYLE = ("cmap", "opacity", "upsampling", "display", "scale")  # the controls one MapStyle is built from
SCALE_CHOICES = [
    ("one scale per layer (heads comparable)", "layer"),
    ("each head stretched to its own max", "head"),
    ("fixed 0 to 1", "fixed"),
]
PICTURE_PX = 330  # height of the input and head views: both fit a 1280x720 screen with the upload
# Arrow keys move the query patch, Escape resets it (unless a text field or slider has the focus).
KEYBOARD_JS = """<script>
document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (target && (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable)) return;
  const ids = {ArrowUp: "query-up", ArrowDown: "query-down", ArrowLeft: "query-left", ArrowRight: "query-right",
               Escape: "query-reset"};
  const button = ids[event.key] && document.getElementById(ids[event.key]);
  if (!button) return;
  event.preventDefault();
  button.click();
});
</script>"""
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
ARROWS = {"up": "↑", "down": "↓", "left": "←", "right": "→"}

CLASSROOM = """**How to read this.** A ViT cuts the image into square **patches** (the grid drawn over the
model input) and turns each into a token. An extra **CLS token** has no pixels of its own: it gathers
information from the patches through attention, and the classifier reads only it. Each map shows,
for one attention **head**, how strongly the query (CLS by default; click a patch, or use the arrow
keys, to change it) attends to every patch. Rows, columns, layers and heads count from 1.
Supervised ViTs spread attention over many patches, including the background, so single-head maps
look noisy; **rollout** combines all layers into one smoother map.
"""


@dataclass(frozen=True)
class ExploreView(ComponentView):
    """Every component of the Explore tab, by name."""

    # per-session state
    explanation: gr.State  # key of the forward pass every view reads (in explore_handlers.STORE)
    export_name: gr.State  # "<image>-<model>", how export files begin
    query: gr.State  # None = CLS, else (row, col), 0-based
    current_model: gr.State
    on_screen: gr.State  # the "More views" tab on screen (explore_handlers.MORE_VIEWS), None while closed
    more_tab: gr.State  # the tab picked in "More views", shown when the accordion opens
    # model and image
    model_key: gr.Dropdown
    checkpoint: gr.File
    model_info: gr.Markdown
    image: gr.Image
    mode: gr.Radio
    input_img: gr.Image
    numbers: gr.Markdown
    label: gr.Label
    classes: gr.Markdown
    # controls
    layer: gr.Slider
    cmap: gr.Dropdown
    opacity: gr.Slider
    upsampling: gr.Radio
    display: gr.Radio
    scale: gr.Radio
    query_md: gr.Markdown
    query_token: gr.Dropdown
    reset: gr.Button
    up: gr.Button
    down: gr.Button
    left: gr.Button
    right: gr.Button
    play: gr.Button
    # views and exports; "More views" (an accordion of tabs) is drawn only when opened
    more: gr.Accordion
    more_tabs: dict[str, gr.Tab]  # by MORE_VIEWS name
    heads: gr.Image
    export_png: gr.Button
    export_gif: gr.Button
    export_file: gr.File
    overview: gr.Image
    fusion: gr.Radio
    discard: gr.Slider
    rollout: gr.Image
    distance: gr.Image
    similarity: gr.Image
    relevance_class: gr.Dropdown
    relevance_button: gr.Button
    relevance: gr.Image
    # /query_patch: hidden inputs for API clients
    row: gr.Number
    col: gr.Number
    query_button: gr.Button


def _session_state() -> dict[str, gr.State]:
    return {
        "explanation": gr.State(None, time_to_live=SESSION_TTL_S),
        "export_name": gr.State(None),
        "query": gr.State(None),
        "current_model": gr.State(BUNDLED),
        "on_screen": gr.State(None),
        "more_tab": gr.State(h.MORE_VIEWS[0]),
    }


def _image_column(start: LoadedModel) -> dict[str, Any]:
    image = gr.Image(
        type="filepath",
        elem_id="upload",
        sources=["upload", "clipboard", "webcam"],
        label="Image (upload, paste or webcam)",
        height=190,
    )
    label = gr.Label(num_top_classes=3, label="Top predictions", elem_id="predictions")
    classes = gr.Markdown(h.classes_note(start), label="Classes of the model", elem_id="classes")
    examples = [[str(EXAMPLES_DIR / f"{name}.jpg")] for name in CIFAR10_CLASSES]
    gr.Examples(examples, inputs=image, label="CIFAR-10 test images, one per class", examples_per_page=10)
    return {"image": image, "label": label, "classes": classes}


def _query_column(start: LoadedModel) -> dict[str, Any]:
    caption = "**Model input with its patch grid**: click a patch to make it the query (or use the arrow keys)"
    input_img = _picture(caption, height=PICTURE_PX, elem_id="input-view")
    query_md = gr.Markdown(views.describe_query(None), label="Query", elem_id="query")
    names = start.model.config.prefix_names
    query_token = gr.Dropdown(
        views.query_choices(names), value=views.query_token(None, names), label="Query token", elem_id="query-token"
    )
    with gr.Row():
        moves = {name: gr.Button(ARROWS[name], size="sm", min_width=40, elem_id=f"query-{name}") for name in MOVES}
        reset = gr.Button("Reset (CLS)", size="sm", min_width=90, elem_id="query-reset")
    return {"input_img": input_img, "query_md": query_md, "query_token": query_token, "reset": reset, **moves}


def _heads_column(depth: int) -> dict[str, Any]:
    heads = _picture("**Attention per head** in the chosen layer, for the query", height=PICTURE_PX, elem_id="heads")
    with gr.Row():
        layer = gr.Slider(1, depth, value=depth, step=1, label="Layer (1 = first)", scale=4)
        play = gr.Button("▶ Play through layers", size="sm", scale=1, elem_id="play")
    with gr.Row():
        export_png = gr.Button("Export PNG", size="sm")
        export_gif = gr.Button("Export GIF through the layers", size="sm")
    export_file = gr.File(label="Export", interactive=False, height=60)
    return {
        "heads": heads,
        "layer": layer,
        "play": play,
        "export_png": export_png,
        "export_gif": export_gif,
        "export_file": export_file,
    }


def _style_controls() -> dict[str, Any]:
    with gr.Row():
        return {
            "cmap": gr.Dropdown(list(COLORMAPS), value="inferno", label="Colour map"),
            "opacity": gr.Slider(0.0, 1.0, value=0.6, step=0.05, label="Map opacity (0 to 1)"),
            "upsampling": gr.Radio(list(h.UPSAMPLING), value="nearest", label="Upsampling (nearest = honest patches)"),
            "display": gr.Radio(list(h.DISPLAYS), value="overlay", label="Display"),
            "scale": gr.Radio(SCALE_CHOICES, value="layer", label="Colour scale (from 0)"),
            "mode": gr.Radio(
                [("Centre crop (the model's own policy)", "crop"), ("Whole image (non-square grid)", "whole")],
                value="crop",
                label="Resize policy",
            ),
        }


def _model_picker(catalog: ModelCatalog, start: LoadedModel) -> dict[str, Any]:
    with gr.Row():
        with gr.Column(scale=2):
            model_key = gr.Dropdown(catalog.choices(), value=BUNDLED, label="Model")
            with gr.Accordion("Upload a checkpoint (.safetensors from this app's Train tab)", open=False):
                checkpoint = gr.File(file_types=[".safetensors"], label="Checkpoint")
        with gr.Column(scale=3):
            model_info = gr.Markdown(start.describe(), label="Model description")
            numbers = gr.Markdown(label="Image and grid sizes")
    return {"model_key": model_key, "checkpoint": checkpoint, "model_info": model_info, "numbers": numbers}


def _picture(caption: str, **kwargs: Any) -> gr.Image:
    """A picture with its caption above it, not in Gradio's corner badge, which would cover
    the title drawn on the picture. The label still names it in the API."""
    gr.Markdown(caption)
    return gr.Image(label=caption.replace("*", ""), show_label=False, **kwargs)


def _more_views(start: LoadedModel) -> dict[str, Any]:
    more = gr.Accordion(
        "More views: layers x heads, rollout, distance, position embeddings, relevance", open=False, elem_id="more"
    )
    with more, gr.Tabs():
        return {"more": more, **_more_tabs(start)}


def _more_tabs(start: LoadedModel) -> dict[str, Any]:
    tabs = {}
    with gr.Tab("Layers x heads") as tabs["overview"]:
        overview = _picture("**Attention of the default query (CLS)** in every head of every layer", elem_id="overview")
    with gr.Tab("Rollout") as tabs["rollout"]:
        with gr.Row():
            fusion = gr.Radio(list(h.FUSIONS), value="mean", label="Head fusion")
            discard = gr.Slider(
                0.0, h.DISCARD_MAX, value=0.0, step=0.05, label="Discard ratio (weakest attention zeroed)"
            )
        rollout = _picture("**Attention rollout** (Abnar & Zuidema, 2020)", elem_id="rollout")
    with gr.Tab("Mean attention distance") as tabs["distance"]:
        distance = _picture("**How far each head looks** (ViT paper Fig. 7, right)")
    with gr.Tab("Position embeddings") as tabs["similarity"]:
        similarity = _picture("**Position-embedding similarity** (ViT paper Fig. 7, centre)")
    with gr.Tab("Relevance (Chefer et al. 2021)") as tabs["relevance"]:
        relevance = _relevance_view(start)
    return {
        **relevance,
        "more_tabs": tabs,
        "overview": overview,
        "fusion": fusion,
        "discard": discard,
        "rollout": rollout,
        "distance": distance,
        "similarity": similarity,
    }


def _relevance_view(start: LoadedModel) -> dict[str, Any]:
    with gr.Row():
        classes = h.relevance_classes(start)
        relevance_class = gr.Dropdown(classes, value=h.PREDICTED, label="Class to explain", scale=3)
        relevance_button = gr.Button("Explain this class", size="sm")
    relevance = _picture("**Class-specific relevance** (Chefer, Gur & Wolf, 2021): which patches made this class")
    return {"relevance_class": relevance_class, "relevance_button": relevance_button, "relevance": relevance}


def _api_only_inputs() -> dict[str, Any]:
    """/query_patch for API clients: the same as clicking, with explicit grid coordinates."""
    return {
        "row": gr.Number(visible=False, precision=0, label="Row of the query patch (1 = top)"),
        "col": gr.Number(visible=False, precision=0, label="Column of the query patch (1 = left)"),
        "query_button": gr.Button(visible=False),
    }


def layout(catalog: ModelCatalog) -> ExploreView:
    """Place the tab's components inside the current Blocks and name them. The first row
    (upload, predictions, patch grid, head maps) fits a 1280x720 screen."""
    start = catalog.get(BUNDLED)
    parts = _session_state()
    with gr.Row(equal_height=False):
        with gr.Column(scale=3, min_width=240):
            parts |= _image_column(start)
        with gr.Column(scale=4, min_width=300):
            parts |= _query_column(start)
        with gr.Column(scale=6, min_width=400):
            parts |= _heads_column(start.model.config.depth)
    parts |= _style_controls() | _model_picker(catalog, start) | _more_views(start) | _api_only_inputs()
    gr.Markdown(CLASSROOM)
    return ExploreView(**parts)  # a TypeError names any field left out or misspelt


# Every Explore event but the model picker's and the checkpoint upload's: the inputs arrive as
# plain numbers and strings (the image as its upload payload, decoded by explorer.images), and
# the handlers check them with ui.checks, which name the parameter and the allowed range.
RAW = {"preprocess": False}
# Clicks, slider moves and restyles redraw one to three small pictures from the cached forward
# pass (~10 ms of drawing). Gradio gives each event its own slots; these share one pool of two
# (as the analyses have two), so clicks, the most frequent action, do not queue in their own
# two while the other redraws' slots sit idle, and at most four requests run at once on two
# cores (docs/benchmarks-app.md, "A class at once"). "Play" holds a slot for seconds: not here.
CHEAP = {**RAW, "concurrency_id": "views", "concurrency_limit": 2}


def _wire_analysis(view: ExploreView, catalog: ModelCatalog) -> dict[str, Any]:
    """/analyze on a new image or resize policy; returns its event arguments for reuse."""
    analysis = {
        "fn": bound(h.analyze, view, catalog),
        "inputs": view.pick("image", "on_screen", "model_key", "mode", "layer", "fusion", "discard", *STYLE),
        "outputs": view.pick(*h.ANALYSIS_OUTPUTS),
        **RAW,
    }
    gr.on([view.image.change, view.mode.input], **analysis, api_name="analyze")
    return analysis


def _wire_views(view: ExploreView) -> None:
    """Redraw on slider and style changes (never a new forward pass)."""
    view.layer.release(
        bound(h.show_heads, view),
        view.pick("explanation", "query", "layer", *STYLE),
        view.heads,
        api_name="heads",
        **CHEAP,
    )
    gr.on(
        [view.cmap.input, view.opacity.release, view.upsampling.input, view.display.input, view.scale.input],
        bound(h.restyle, view),
        view.pick("explanation", "on_screen", "query", "layer", "fusion", "discard", *STYLE),
        view.pick("heads", "overview", "rollout"),
        api_name="restyle",
        **CHEAP,
    )
    gr.on(
        [view.fusion.input, view.discard.release],
        bound(h.show_rollout, view),
        view.pick("explanation", "fusion", "discard", *STYLE),
        view.rollout,
        api_name="rollout",
        **CHEAP,
    )
    view.play.click(
        bound(h.play_layers, view),
        view.pick("explanation", "query", *STYLE),
        view.pick("layer", "heads"),
        api_visibility="private",
        **RAW,
    )


def _wire_more(view: ExploreView, catalog: ModelCatalog) -> None:
    """The "More views" tabs: a view is drawn when it comes on screen (its tab picked, or the
    accordion opened on it). API clients ask for one by name: /overview, /distance, /similarity
    (and /rollout, /relevance with their own controls)."""
    inputs = ("explanation", "current_model", "fusion", "discard", *STYLE)
    for name, tab in view.more_tabs.items():
        api = {"api_name": name} if name in ("overview", "distance", "similarity") else {"api_visibility": "private"}
        outputs = view.pick("on_screen", "more_tab", *([name] if name != "relevance" else []))
        tab.select(bound(h.show_more, view, catalog, name), view.pick(*inputs), outputs, **api, **CHEAP)
    view.more.expand(
        bound(h.show_more, view, catalog),
        view.pick("more_tab", *inputs),
        view.pick("on_screen", "more_tab", *h.IMAGE_VIEWS, "similarity"),  # relevance waits for its button
        api_visibility="private",
        **CHEAP,
    )
    view.more.collapse(bound(h.hide_more, view), None, view.on_screen, api_visibility="private", queue=False)


def _wire_query(view: ExploreView) -> None:
    outputs = view.pick(*h.QUERY_OUTPUTS)
    view.query_button.click(
        bound(h.query_patch, view),
        view.pick("explanation", "row", "col", "layer", *STYLE),
        outputs,
        api_name="query_patch",
        **CHEAP,
    )
    view.query_token.input(
        bound(h.query_token, view),
        view.pick("explanation", "query_token", "query", "layer", *STYLE),
        outputs,
        api_name="query_token",
        **RAW,
    )
    on_layer = view.pick("explanation", "layer", *STYLE)
    view.input_img.select(bound(h.click_patch, view), on_layer, outputs, api_visibility="private", **CHEAP)
    view.reset.click(bound(h.reset_query, view), on_layer, outputs, api_name="reset_query", **CHEAP)
    for name, step in MOVES.items():
        getattr(view, name).click(
            bound(h.move_query, view, step),
            view.pick("explanation", "query", "layer", *STYLE),
            outputs,
            api_visibility="private",
            **CHEAP,
        )


def _wire_relevance(view: ExploreView, catalog: ModelCatalog) -> None:
    view.relevance_button.click(
        bound(h.show_relevance, view, catalog),
        view.pick("explanation", "export_name", "relevance_class", *STYLE),
        view.relevance,
        api_name="relevance",
        **RAW,
    )


def _wire_exports(view: ExploreView) -> None:
    view.export_png.click(
        bound(h.export_png, view),
        view.pick("explanation", "export_name", "query", "layer", *STYLE),
        view.export_file,
        api_name="export_png",
        **RAW,
    )
    view.export_gif.click(
        bound(h.export_gif, view),
        view.pick("explanation", "export_name", "query", *STYLE),
        view.export_file,
        api_name="export_gif",
        **RAW,
    )


def _wire_models(view: ExploreView, catalog: ModelCatalog, analysis: dict[str, Any]) -> None:
    # .change, not .input: the checkpoint upload and the Train tab switch models by setting the picker.
    switched = view.model_key.change(
        bound(h.load_model, view, catalog),
        view.pick("model_key", "on_screen"),
        view.pick("current_model", "model_info", "classes", "layer", "similarity", "relevance_class"),
        api_name="load_model",
        show_progress="full",
    )
    switched.success(**analysis, api_visibility="private")
    switched.failure(h.keep_model, view.current_model, view.model_key, api_visibility="private")
    view.checkpoint.upload(
        bound(h.upload_checkpoint, view, catalog), view.checkpoint, view.model_key, api_name="upload_checkpoint"
    )


def build_explore_tab(catalog: ModelCatalog) -> ExploreView:
    """The Explore tab inside the current Blocks; the Train tab uses its model picker."""
    view = layout(catalog)
    analysis = _wire_analysis(view, catalog)
    _wire_views(view)
    _wire_query(view)
    _wire_exports(view)
    _wire_relevance(view, catalog)
    _wire_more(view, catalog)
    _wire_models(view, catalog, analysis)
    return view
