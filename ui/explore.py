"""The Explore tab: its components (`ExploreView`), their layout, and which event runs which
handler of ui/explore_handlers.py under which API name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from explorer import render, views
from explorer.catalog import BUNDLED, LoadedModel, ModelCatalog
from explorer.render import COLORMAPS

from . import explore_handlers as h
from .binding import bound

EXAMPLES = ["cheetah1.jpg", "lion.jpg", "tower.jpg", "groot.jpeg"]
SESSION_TTL_S = 3600  # forget an idle session's cached forward pass after an hour
STYLE = ("cmap", "opacity", "upsampling", "display")  # the controls one MapStyle is built from

CLASSROOM = """**How to read this.** A ViT cuts the image into square **patches** (the grid on the
left) and turns each into a token. An extra **CLS token** has no pixels of its own: it gathers
information from the patches through attention, and the classifier reads only it. Each map shows,
for one attention **head**, how strongly the query (CLS by default; click a patch to change it)
attends to every patch. Supervised ViTs spread attention over many patches, including the
background, so single-head maps look noisy; **rollout** combines all layers into one smoother map.
"""


@dataclass(frozen=True)
class ExploreView:
    """Every component of the Explore tab, by name."""

    # per-session state
    explanation: gr.State  # key of the forward pass every view reads (in explore_handlers.STORE)
    query: gr.State  # None = CLS, else (row, col), 0-based
    current_model: gr.State
    # model and image
    model_key: gr.Dropdown
    checkpoint: gr.File
    model_info: gr.Markdown
    image: gr.Image
    mode: gr.Radio
    input_img: gr.Image
    numbers: gr.Markdown
    label: gr.Label
    # controls
    layer: gr.Slider
    cmap: gr.Dropdown
    opacity: gr.Slider
    upsampling: gr.Radio
    display: gr.Radio
    query_md: gr.Markdown
    reset: gr.Button
    # views and exports
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
    # /query_patch: hidden inputs for API clients
    row: gr.Number
    col: gr.Number
    query_button: gr.Button

    def pick(self, *names: str) -> list[gr.components.Component]:
        """The components called `names`, in that order (an event's inputs or outputs)."""
        return [getattr(self, name) for name in names]

    def update(self, **values: Any) -> dict[gr.components.Component, Any]:
        """A handler's result, {component: value}, from values given by component name."""
        return {getattr(self, name): value for name, value in values.items()}


def _session_state() -> dict[str, gr.State]:
    return {
        "explanation": gr.State(None, time_to_live=SESSION_TTL_S),
        "query": gr.State(None),
        "current_model": gr.State(BUNDLED),
    }


def _model_picker(catalog: ModelCatalog, start: LoadedModel) -> dict[str, Any]:
    model_key = gr.Dropdown(catalog.choices(), value=BUNDLED, label="Model")
    with gr.Accordion("Upload a checkpoint (.safetensors from this app's Train tab)", open=False):
        checkpoint = gr.File(file_types=[".safetensors"], label="Checkpoint")
    return {"model_key": model_key, "checkpoint": checkpoint, "model_info": gr.Markdown(start.describe())}


def _image_input() -> dict[str, Any]:
    image = gr.Image(
        type="filepath",
        elem_id="upload",
        sources=["upload", "clipboard", "webcam"],
        label="Image (upload, paste or webcam)",
        height=300,
    )
    gr.Examples([[gr.media.get_image(name)] for name in EXAMPLES], inputs=image)
    mode = gr.Radio(
        [("Centre crop (the model's own policy)", "crop"), ("Whole image (non-square grid)", "whole")],
        value="crop",
        label="Resize policy",
    )
    gr.Markdown(CLASSROOM)
    return {"image": image, "mode": mode}


def _model_input_view() -> dict[str, Any]:
    return {
        "input_img": gr.Image(
            label="Model input with its patch grid (click a patch)", height=400, elem_id="input-view"
        ),
        "numbers": gr.Markdown(),
        "label": gr.Label(num_top_classes=5, label="Top predictions", elem_id="predictions"),
    }


def _style_controls(depth: int) -> dict[str, Any]:
    with gr.Row():
        return {
            "layer": gr.Slider(1, depth, value=depth, step=1, label="Layer"),
            "cmap": gr.Dropdown(list(COLORMAPS), value="inferno", label="Colormap"),
            "opacity": gr.Slider(0.0, 1.0, value=0.6, step=0.05, label="Map opacity"),
            "upsampling": gr.Radio(
                ["nearest", "smooth"], value="nearest", label="Upsampling (nearest = honest patches)"
            ),
            "display": gr.Radio(["overlay", "raw"], value="overlay", label="Display"),
        }


def _heads_and_exports() -> dict[str, Any]:
    with gr.Row():
        query_md = gr.Markdown(views.describe_query(None), elem_id="query")
        reset = gr.Button("Reset query to the default (CLS)", size="sm")
    heads = gr.Image(label="Attention per head, chosen layer", elem_id="heads")
    with gr.Row():
        with gr.Column(scale=1, min_width=200):
            export_png = gr.Button("Export PNG of this grid", size="sm")
            export_gif = gr.Button("Export GIF through the layers", size="sm")
        export_file = gr.File(label="Export", interactive=False, height=90, scale=2)
    return {
        "query_md": query_md,
        "reset": reset,
        "heads": heads,
        "export_png": export_png,
        "export_gif": export_gif,
        "export_file": export_file,
    }


def _more_views(start: LoadedModel) -> dict[str, Any]:
    with gr.Tab("Layers x heads"):
        overview = gr.Image(label="Attention of the default query (CLS) in every head of every layer")
    with gr.Tab("Rollout"):
        with gr.Row():
            fusion = gr.Radio(["mean", "max", "min"], value="mean", label="Head fusion")
            discard = gr.Slider(0.0, 0.95, value=0.0, step=0.05, label="Discard ratio (weakest attention zeroed)")
        rollout = gr.Image(label="Attention rollout (Abnar & Zuidema, 2020)")
    with gr.Tab("Mean attention distance"):
        distance = gr.Image(label="How far each head looks (ViT paper Fig. 7, right)")
    with gr.Tab("Position embeddings"):
        similarity = gr.Image(
            render.position_similarity_tiles(start.position_similarity()),
            label="Position-embedding similarity (ViT paper Fig. 7, centre)",
        )
    return {
        "overview": overview,
        "fusion": fusion,
        "discard": discard,
        "rollout": rollout,
        "distance": distance,
        "similarity": similarity,
    }


def _api_only_inputs() -> dict[str, Any]:
    """/query_patch for API clients: the same as clicking, with explicit grid coordinates."""
    return {
        "row": gr.Number(visible=False, precision=0),
        "col": gr.Number(visible=False, precision=0),
        "query_button": gr.Button(visible=False),
    }


def layout(catalog: ModelCatalog) -> ExploreView:
    """Place the tab's components inside the current Blocks and name them."""
    start = catalog.get(BUNDLED)
    parts = _session_state()
    with gr.Row():
        with gr.Column(scale=2):
            parts |= _model_picker(catalog, start) | _image_input()
        with gr.Column(scale=3):
            parts |= _model_input_view()
    parts |= _style_controls(start.model.config.depth) | _heads_and_exports() | _more_views(start)
    parts |= _api_only_inputs()
    return ExploreView(**parts)  # a TypeError names any field left out or misspelt


def _wire_analysis(view: ExploreView, catalog: ModelCatalog) -> dict[str, Any]:
    """/analyze on a new image or resize policy; returns its event arguments for reuse."""
    inputs = view.pick("image", "model_key", "mode", "layer", "fusion", "discard", *STYLE)
    # preprocess=False: the image arrives as its upload payload, not decoded by Gradio.
    analysis = {
        "fn": bound(h.analyze, view, catalog),
        "inputs": inputs,
        "outputs": view.pick(*h.ANALYSIS_OUTPUTS),
        "preprocess": False,
    }
    gr.on([view.image.change, view.mode.input], **analysis, api_name="analyze")
    return analysis


def _wire_views(view: ExploreView) -> None:
    """Redraw on slider and style changes (never a new forward pass)."""
    view.layer.release(
        bound(h.show_heads, view), view.pick("explanation", "query", "layer", *STYLE), view.heads, api_name="heads"
    )
    gr.on(
        [view.cmap.input, view.opacity.release, view.upsampling.input, view.display.input],
        bound(h.restyle, view),
        view.pick("explanation", "query", "layer", "fusion", "discard", *STYLE),
        view.pick("heads", "overview", "rollout"),
        api_name="restyle",
    )
    gr.on(
        [view.fusion.input, view.discard.release],
        bound(h.show_rollout, view),
        view.pick("explanation", "fusion", "discard", *STYLE),
        view.rollout,
        api_name="rollout",
    )


def _wire_query(view: ExploreView) -> None:
    outputs = view.pick(*h.QUERY_OUTPUTS)
    view.query_button.click(
        bound(h.query_patch, view),
        view.pick("explanation", "row", "col", "layer", *STYLE),
        outputs,
        api_name="query_patch",
    )
    view.input_img.select(
        bound(h.click_patch, view), view.pick("explanation", "layer", *STYLE), outputs, api_visibility="private"
    )
    view.reset.click(
        bound(h.reset_query, view), view.pick("explanation", "layer", *STYLE), outputs, api_name="reset_query"
    )


def _wire_exports(view: ExploreView) -> None:
    view.export_png.click(
        bound(h.export_png, view),
        view.pick("explanation", "query", "layer", *STYLE),
        view.export_file,
        api_name="export_png",
    )
    view.export_gif.click(
        bound(h.export_gif, view), view.pick("explanation", "query", *STYLE), view.export_file, api_name="export_gif"
    )


def _wire_models(view: ExploreView, catalog: ModelCatalog, analysis: dict[str, Any]) -> None:
    # .change, not .input: the checkpoint upload and the Train tab switch models by setting the picker.
    switched = view.model_key.change(
        bound(h.load_model, view, catalog),
        view.model_key,
        view.pick("current_model", "model_info", "similarity"),
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
    _wire_models(view, catalog, analysis)
    return view
