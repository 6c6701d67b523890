"""The ViT attention explorer: Gradio wiring only.

    python app.py                      # http://127.0.0.1:7860, the bundled CIFAR-10 model
    python app.py --model ckpt.safetensors --port 7861

Every view has an API name, so scripts can drive the app with `gradio_client` (see README).
The maths lives in `vit.analysis`, the pictures in `vit.render`, and the one cached forward
pass per image in `explorer.explain`.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import gradio as gr
import torch

from explorer import views
from explorer.explain import Explanation, RecentExplanations, explain
from explorer.images import ImageError, load_image
from explorer.models import BUNDLED, BUNDLED_PATH, LoadedModel, ModelCatalog, ModelUnavailable
from explorer.outputs import cache_path, saved
from train_tab import build_train_tab
from vit import render
from vit.render import COLORMAPS, MapStyle

EXAMPLES = ["cheetah1.jpg", "lion.jpg", "tower.jpg", "groot.jpeg"]
MAX_UPLOAD = "20mb"
SESSION_TTL_S = 3600  # forget an idle session's cached forward pass after an hour

CLASSROOM = """**How to read this.** A ViT cuts the image into square **patches** (the grid on the
left) and turns each into a token. An extra **CLS token** has no pixels of its own: it gathers
information from the patches through attention, and the classifier reads only it. Each map shows,
for one attention **head**, how strongly the query (CLS by default; click a patch to change it)
attends to every patch. Supervised ViTs spread attention over many patches, including the
background, so single-head maps look noisy; **rollout** combines all layers into one smoother map.
"""


def uploaded_path(payload: dict | None) -> str | None:
    """The file path inside an image payload that reached us undecoded (preprocess=False):
    the app decodes uploads itself (explorer.images), so every bad file gets a clear
    message. Gradio has already checked the path lies in its upload folder."""
    return None if payload is None else payload["path"]


def style(cmap: str, opacity: float, upsampling: str, display: str) -> MapStyle:
    return MapStyle(cmap=cmap, opacity=opacity, smooth=upsampling == "smooth", raw=display == "raw")


def require(ex: Explanation | None) -> Explanation:
    if ex is None:
        raise gr.Error("No image analysed yet in this session: upload an image first.")
    return ex


def show_query(ex: Explanation, query: views.Query, layer: int, s: MapStyle) -> tuple:
    """Outputs after the query changes: the query, the marked input, the head maps, the caption."""
    return (
        query,
        saved(views.input_view(ex, query)),
        saved(views.heads(ex, query, layer, s)),
        views.describe_query(query, ex.has_cls),
    )


def full_analysis(
    loaded: LoadedModel,
    path: str,
    mode: str,
    layer: int,
    fusion: str,
    discard: float,
    s: MapStyle,
    recent: RecentExplanations | None = None,
) -> tuple:
    """Decode an image, run the model once, and draw every view: the outputs of /analyze
    (the session's Explanation first). With `recent`, a (file, model, mode) seen before in
    this session is not run again. Raises ImageError for unusable files."""

    def forward_pass() -> Explanation:
        return explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, load_image(path), mode)

    # Gradio names uploads by content, so the path identifies the image.
    ex = recent.get((path, loaded.key, mode), forward_pass) if recent else forward_pass()
    layer = min(layer, ex.depth)
    return (
        ex,
        None,  # the query goes back to the CLS token
        saved(views.input_view(ex)),
        views.describe_input(ex),
        ex.probabilities,
        gr.Slider(maximum=ex.depth, value=layer),
        saved(views.heads(ex, None, layer, s)),
        saved(views.overview(ex, s)),
        saved(views.rollout(ex, fusion, discard, s)),
        saved(views.distance_chart(ex)),
    )


def build_explore_tab(catalog: ModelCatalog) -> gr.Dropdown:
    """The Explore tab. Returns the model picker so the Train tab can add its checkpoints."""
    explanation = gr.State(None, time_to_live=SESSION_TTL_S)  # the forward pass every view reads
    recent = gr.State(RecentExplanations(), time_to_live=SESSION_TTL_S)  # deep-copied: one cache per session
    query = gr.State(None)  # None = CLS, else (row, col)
    current_model = gr.State(BUNDLED)
    start = catalog.get(BUNDLED)

    with gr.Row():
        with gr.Column(scale=2):
            model_key = gr.Dropdown(catalog.choices(), value=BUNDLED, label="Model")
            with gr.Accordion("Upload a checkpoint (.safetensors from this app's Train tab)", open=False):
                checkpoint = gr.File(file_types=[".safetensors"], label="Checkpoint")
            model_info = gr.Markdown(start.describe())
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
        with gr.Column(scale=3):
            input_img = gr.Image(
                label="Model input with its patch grid (click a patch)", height=400, elem_id="input-view"
            )
            numbers = gr.Markdown()
            label = gr.Label(num_top_classes=5, label="Top predictions", elem_id="predictions")

    with gr.Row():
        layer = gr.Slider(1, start.model.config.depth, value=start.model.config.depth, step=1, label="Layer")
        cmap = gr.Dropdown(list(COLORMAPS), value="inferno", label="Colormap")
        opacity = gr.Slider(0.0, 1.0, value=0.6, step=0.05, label="Map opacity")
        upsampling = gr.Radio(["nearest", "smooth"], value="nearest", label="Upsampling (nearest = honest patches)")
        display = gr.Radio(["overlay", "raw"], value="overlay", label="Display")
    styles = [cmap, opacity, upsampling, display]

    with gr.Row():
        query_md = gr.Markdown(views.describe_query(None), elem_id="query")
        reset = gr.Button("Reset query to the default (CLS)", size="sm")
    heads = gr.Image(label="Attention per head, chosen layer", elem_id="heads")
    with gr.Row():
        with gr.Column(scale=1, min_width=200):
            export_png = gr.Button("Export PNG of this grid", size="sm")
            export_gif = gr.Button("Export GIF through the layers", size="sm")
        export_file = gr.File(label="Export", interactive=False, height=90, scale=2)

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

    def run_analysis(payload, key, mode, layer, fusion_, discard_, cmap_, opacity_, upsampling_, display_, recent_):
        if payload is None:
            return [gr.skip()] * 10
        try:
            loaded = catalog.get(key)
            st = style(cmap_, opacity_, upsampling_, display_)
            return full_analysis(loaded, uploaded_path(payload), mode, int(layer), fusion_, discard_, st, recent_)
        except (ImageError, ModelUnavailable) as e:
            raise gr.Error(str(e)) from e

    analysis_outputs = [explanation, query, input_img, numbers, label, layer, heads, overview, rollout, distance]
    analysis_inputs = [image, model_key, mode, layer, fusion, discard, *styles, recent]
    # preprocess=False: the image arrives as its upload payload, not decoded by Gradio.
    analyze = dict(fn=run_analysis, inputs=analysis_inputs, outputs=analysis_outputs, preprocess=False)
    gr.on([image.change, mode.input], **analyze, api_name="analyze")

    def show_heads(ex, q, layer, *s):
        return saved(views.heads(require(ex), q, int(layer), style(*s)))

    layer.release(show_heads, [explanation, query, layer, *styles], heads, api_name="heads")

    def restyle(ex, q, layer, fusion_, discard_, *s):
        ex, st = require(ex), style(*s)
        return (
            saved(views.heads(ex, q, int(layer), st)),
            saved(views.overview(ex, st)),
            saved(views.rollout(ex, fusion_, discard_, st)),
        )

    gr.on(
        [cmap.input, opacity.release, upsampling.input, display.input],
        restyle,
        [explanation, query, layer, fusion, discard, *styles],
        [heads, overview, rollout],
        api_name="restyle",
    )

    def show_rollout(ex, fusion_, discard_, *s):
        return saved(views.rollout(require(ex), fusion_, float(discard_), style(*s)))

    rollout_inputs = [explanation, fusion, discard, *styles]
    gr.on([fusion.input, discard.release], show_rollout, rollout_inputs, rollout, api_name="rollout")

    def set_query(ex, row, col, layer, *s):
        ex = require(ex)
        gh, gw = ex.grid
        if not (0 <= int(row) < gh and 0 <= int(col) < gw):
            raise gr.Error(f"patch ({row}, {col}) is outside the {gh}x{gw} grid (rows and columns count from 0)")
        return show_query(ex, (int(row), int(col)), int(layer), style(*s))

    query_outputs = [query, input_img, heads, query_md]
    # For API clients: the same as clicking, with explicit grid coordinates (0-based).
    row_in, col_in = gr.Number(visible=False, precision=0), gr.Number(visible=False, precision=0)
    api_only = gr.Button(visible=False)
    api_only.click(set_query, [explanation, row_in, col_in, layer, *styles], query_outputs, api_name="query_patch")

    def click(ex, layer, cmap_, opacity_, upsampling_, display_, evt: gr.SelectData):
        ex = require(ex)
        row, col = views.clicked_patch(ex, *evt.index)  # evt.index: (x, y) in image pixels
        return set_query(ex, row, col, layer, cmap_, opacity_, upsampling_, display_)

    input_img.select(click, [explanation, layer, *styles], query_outputs, api_visibility="private")

    def clear_query(ex, layer, *s):
        return show_query(require(ex), None, int(layer), style(*s))

    reset.click(clear_query, [explanation, layer, *styles], query_outputs, api_name="reset_query")

    def save_png(ex, q, layer, *s):
        return saved(views.heads(require(ex), q, int(layer), style(*s)), f"attention-layer{int(layer)}.png")

    def save_gif(ex, q, *s):
        path = cache_path("attention-layers.gif")
        render.save_gif(views.layer_frames(require(ex), q, style(*s)), path)
        return str(path)

    export_png.click(save_png, [explanation, query, layer, *styles], export_file, api_name="export_png")
    export_gif.click(save_gif, [explanation, query, *styles], export_file, api_name="export_gif")

    def switch_model(key, progress=gr.Progress(track_tqdm=True)):  # noqa: B008 - Gradio's way to show download bars
        try:
            loaded = catalog.get(key)
        except ModelUnavailable as e:
            raise gr.Error(str(e), duration=None) from e
        return key, loaded.describe(), saved(render.position_similarity_tiles(loaded.position_similarity()))

    # .change, not .input: the checkpoint upload and the Train tab switch models by setting the picker.
    switched = model_key.change(
        switch_model,
        model_key,
        [current_model, model_info, similarity],
        api_name="load_model",
        show_progress="full",
    )
    switched.success(**analyze, api_visibility="private")
    switched.failure(lambda key: key, current_model, model_key, api_visibility="private")  # back to the working one

    def add_checkpoint(file):
        if file is None:
            return gr.skip()
        try:
            key = catalog.register_upload(file)
        except ModelUnavailable as e:
            raise gr.Error(str(e)) from e
        return gr.Dropdown(choices=catalog.choices(), value=key)

    checkpoint.upload(add_checkpoint, checkpoint, model_key, api_name="upload_checkpoint")
    return model_key


def build_demo(catalog: ModelCatalog) -> gr.Blocks:
    # analytics off: the app must start and run with no network at all
    # delete_cache: every 10 minutes, drop rendered views and uploads older than an hour
    with gr.Blocks(title="ViT attention explorer", analytics_enabled=False, delete_cache=(600, 3600)) as demo:
        gr.Markdown("# ViT attention explorer\nWhat does each head of a Vision Transformer look at?")
        with gr.Tab("Explore"):
            model_key = build_explore_tab(catalog)
        with gr.Tab("Train") as train:
            build_train_tab(catalog, model_key, train)
    # Two analyses at a time on a 2-core machine; up to 64 waiting, then new requests are refused.
    demo.queue(default_concurrency_limit=2, max_size=64)
    return demo


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default=env.get("GRADIO_SERVER_NAME", "127.0.0.1"), help="bind address")
    p.add_argument("--port", type=int, default=int(env.get("GRADIO_SERVER_PORT", "7860")))
    p.add_argument("--share", action="store_true", help="create a public gradio.live link")
    p.add_argument("--model", default=env.get("VIT_EXPLORER_MODEL"), help="default checkpoint (else the bundled one)")
    p.add_argument("--runs-dir", default=env.get("VIT_EXPLORER_RUNS", "runs"), help="where training writes")
    p.add_argument(
        "--torch-threads",
        type=int,
        default=int(env.get("VIT_EXPLORER_TORCH_THREADS", "1")),
        help="intra-op threads per request (default 1: two requests run side by side on two cores)",
    )
    args = p.parse_args(argv)
    if args.model and not Path(args.model).is_file():  # only the bundled model may be missing (untrained fallback)
        p.error(f"--model {args.model}: no such file")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # One thread per request: on a small shared machine, intra-op threads fight the other
    # request (and anything else running) and made the nano model's forward pass ~100x slower.
    torch.set_num_threads(args.torch_threads)
    started = time.perf_counter()
    demo = build_demo(ModelCatalog(args.model or BUNDLED_PATH, args.runs_dir))
    print(f"built in {time.perf_counter() - started:.1f} s", flush=True)
    demo.launch(
        server_name=args.host,
        server_port=args.port,
        share=args.share,
        max_file_size=MAX_UPLOAD,
        theme=gr.themes.Soft(),
        prevent_thread_lock=True,
    )
    # The page is served; now pay for torchvision's slow import (preprocessing needs it)
    # before the first upload arrives instead of during it.
    import torchvision  # noqa: F401

    demo.block_thread()


if __name__ == "__main__":
    main()
