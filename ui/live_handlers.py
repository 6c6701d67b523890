"""Handlers of the Live tab: module-level functions from named inputs to `{field: value}`.

ui/live.py binds each to the tab's `LiveTab`, the server's context (`ui.common.Server`) and its
`ui.streams.StreamSlots`. A webcam frame's numbers come from explorer/live.py (the page draws
its pictures: ui/js/live.js, LiveMaps), a clip's video from explorer/video.py; these handlers
check the controls and write the readouts.
"""

from __future__ import annotations

import html
import time
from typing import NamedTuple

import gradio as gr

from explorer import controls, live, video
from explorer.canvas import MapStyle
from explorer.catalog import ModelCatalog, ModelUnavailable
from explorer.explain import ExplanationTooLarge
from explorer.loaded import LoadedModel
from vit.analysis import Query
from vit.messages import markdown_text

from . import zerogpu
from .checks import visitor_error, whole_number
from .common import (
    Server,
    check_layer,
    check_query,
    colour_map_style,
    export_stem,
    layer_slider,
    model_name,
    picked_model,
    query_name,
    uploaded_path,
    visitor_of,
)
from .limits import forget_frame
from .outputs import UPLOADS, cache_path
from .settings import in_markdown
from .streams import Admission, StreamSlots

WAIT_POLL_S = 1.0  # a stream waiting for a slot asks once a second, not at the webcam's frame rate


def live_query(loaded: LoadedModel, token: str, row: object, column: object) -> Query:
    """The query the controls describe: a prefix token of the model ('cls', 'reg1', ...), the
    mean of the patches (a model without CLS), or the patch at (row, column), both 1-based."""
    crop = loaded.preprocessing.crop_size
    rows, columns = loaded.model.patch_grid(crop, crop)
    return check_query(
        token,
        loaded.model.config.prefix_names,
        lambda: (whole_number("row", row, 1, rows) - 1, whole_number("column", column, 1, columns) - 1),
    )


class LiveControls(NamedTuple):
    """The Live tab's controls as the page sends them, unchecked: what they mean depends on the
    model they name (its layers, its tokens, its grid), so `live_request` checks them."""

    model_key: str
    layer: float
    query_token: str
    row: float
    column: float
    cmap: str
    scale: str


def live_controls(
    model_key: str, layer: float, query_token: str, row: float, column: float, cmap: str, scale: str
) -> LiveControls:
    """The Live controls as one value (for the binding: ui.binding.Controls)."""
    return LiveControls(model_key, layer, query_token, row, column, cmap, scale)


def live_request(
    catalog: ModelCatalog, controls: LiveControls, visitor: str | None
) -> tuple[LoadedModel, int, Query, MapStyle]:
    """What the Live controls ask for, checked: the model (for `visitor`: ModelCatalog.check_use),
    its layer (1-based), the query and the style; gr.Error (or ModelUnavailable) naming the first
    value out of range."""
    loaded = catalog.get(controls.model_key, visitor=visitor)
    layer = check_layer(controls.layer, loaded.model.config.depth)
    query = live_query(loaded, controls.query_token, controls.row, controls.column)
    return loaded, layer, query, colour_map_style(controls.cmap, controls.scale)


def status_text(frame: live.LiveFrame, fps: float | None, seconds_left: int) -> str:
    """Markdown: frames per second shown, where each frame's time goes on the server (the page
    draws the pictures), the turn, the top classes (as their checkpoint names them, shown as written:
    a visitor's upload names its classes)."""
    rate = f"**{fps:.1f} frames/s** shown" if fps else "first frame shown"
    cost = f"model {frame.model_ms:.0f} ms + numbers {frame.numbers_ms:.0f} ms per frame, drawn in your browser"
    top = " · ".join(f"{markdown_text(name)} {p:.0%}" for name, p in frame.predictions.items())
    return f"{rate} · {cost} · your turn ends in {seconds_left} s" + (f"\n\nTop classes: {top}" if top else "")


def busy_text(admission: Admission, limit: int) -> str:
    streams = "one live stream" if limit == 1 else f"{limit} live streams"
    return (
        f"**Live view busy, try again in {admission.wait_s} s**: this server draws {streams} at a time. "
        f"You are number {admission.position} in line; keep the camera on and your stream starts by itself."
    )


def live_frame(
    server: Server,
    slots: StreamSlots,
    camera: gr.Image,
    frame: dict | None,
    controls: LiveControls,
    request: gr.Request,
) -> dict:
    """One webcam frame: the chosen layer's head maps and rollout, or a busy message. A frame
    arriving while this visitor's previous one is drawn is skipped, never queued. The controls
    are checked here, not at the binding: a refusal must reach the status line, not end the
    stream (the webcam would start another, and meet the same refusal 25 times a second)."""
    forget_frame(request, camera)  # `frame` holds it for this call; the session keeps none
    if not frame:
        return {}
    visitor = visitor_of(request)
    admission = slots.begin(visitor)
    if admission.skip:
        return {}
    if not admission.admitted:
        time.sleep(WAIT_POLL_S)
        return {"status": busy_text(admission, slots.limit)}
    try:
        loaded, layer, query, style = live_request(server.catalog, controls, visitor)
        if refusal := zerogpu.live_refusal(loaded):
            raise visitor_error(refusal)
        url = frame.get("url") if isinstance(frame, dict) else None
        image = live.decode_frame(url)
        model = model_name(controls.model_key)
        shown = live.live_frame(loaded, image, query, layer - 1, style, server.store.max_bytes, server.text_px, model)
    except (gr.Error, live.FrameError, ModelUnavailable, ExplanationTooLarge) as e:
        # In the status line, not as an error: an error ends the stream, and the webcam starts
        # a new one with the next frame, so the visitor would see the same error 25 times a second.
        # gr.Error's message is HTML-escaped already (ui.checks.visitor_error): read back as written
        why = html.unescape(e.message) if isinstance(e, gr.Error) else str(e)
        return {"status": f"**Cannot draw this frame:** {in_markdown(why)}"}
    finally:
        fps = slots.end(visitor)
    return {"pictures": shown.numbers, "status": status_text(shown, fps, slots.seconds_left(visitor))}


def live_model(
    server: Server,
    model_key: str,
    request: gr.Request,
    progress: gr.Progress = gr.Progress(track_tqdm=True),  # noqa: B008 - Gradio's way to show download bars
) -> dict:
    """Switch the Live tab to another model (downloading pretrained weights once): its layers,
    its query tokens and its patch grid. The key is one of this visitor's picker choices."""
    try:
        loaded = server.catalog.get(picked_model(server.catalog, model_key, request))
    except ModelUnavailable as e:
        raise visitor_error(str(e)) from e
    if refusal := zerogpu.live_refusal(loaded):
        raise visitor_error(refusal)
    depth, names = loaded.model.config.depth, loaded.model.config.prefix_names
    crop = loaded.preprocessing.crop_size
    rows, columns = loaded.model.patch_grid(crop, crop)
    return {
        "current_model": model_key,
        "model_info": loaded.describe(),
        "layer": layer_slider(depth, depth),
        "query_token": gr.Dropdown(choices=controls.query_choices(names), value=controls.query_token(None, names)),
        "row": gr.Slider(maximum=rows, value=(rows + 1) // 2, visible=False),  # the query is back to its start
        "column": gr.Slider(maximum=columns, value=(columns + 1) // 2, visible=False),
    }


def patch_sliders(query_token: str) -> dict:
    """The row and column sliders are shown only while the query is a patch."""
    shown = query_token == controls.PATCH
    return {"row": gr.Slider(visible=shown), "column": gr.Slider(visible=shown)}


def open_live(server: Server, explore_model: str, request: gr.Request) -> dict:
    """The header's Live button: open the Live tab on the model Explore shows."""
    catalog = server.catalog
    model_key = picked_model(catalog, explore_model, request)
    return {
        "tabs": gr.Tabs(selected="live"),
        "model_key": gr.Dropdown(choices=catalog.choices(visitor_of(request)), value=model_key),
    }


def live_choices(server: Server, request: gr.Request) -> dict:
    """Opening the tab: the picker lists this visitor's own checkpoints too."""
    return {"model_key": gr.Dropdown(choices=server.catalog.choices(visitor_of(request)))}


def attention_video(
    server: Server,
    limits: video.VideoLimits,
    clip: dict | None,
    controls: LiveControls,
    progress: gr.Progress = gr.Progress(),  # noqa: B008 - Gradio's way to show a progress bar
    request: gr.Request | None = None,
) -> dict:
    """An MP4 of the clip beside the chosen layer's head maps, one colour scale for the whole
    clip, named by clip, model, layer and query (e.g. `clip-vit_cifar10_tiny-layer9-cls.mp4`)."""
    if not clip:
        raise visitor_error("Upload a short video clip first (MP4, MOV or WebM).")
    path = uploaded_path(clip)
    try:
        loaded, layer, query, style = live_request(server.catalog, controls, visitor_of(request))
        name = export_stem(clip, controls.model_key, server.catalog)
        out = cache_path(f"{name}-layer{layer}-{query_name(query)}.mp4")

        def report(stage: str, done: int, total: int) -> None:
            progress((done, total or None), desc=stage, unit="frames")

        started = time.perf_counter()
        made = video.attention_video(
            loaded,
            path,
            out,
            query,
            layer - 1,
            style,
            limits,
            report,
            server.store.max_request_bytes,
            zerogpu.CLIP,
            server.text_px,
        )
    except (video.VideoError, ModelUnavailable, ExplanationTooLarge) as e:
        raise visitor_error(str(e)) from e
    UPLOADS.added(out.stat().st_size)  # counted against the upload folder's budget, as every view
    return {"video_out": str(out), "video_note": video_text(made, time.perf_counter() - started)}


def video_text(made: video.VideoReport, seconds: float) -> str:
    """Markdown: what the video holds and where its making time went."""
    clip = made.frames / made.info.fps
    stages = ", ".join(f"{stage} {s:.1f} s" for stage, s in made.seconds.items())
    return (
        f"{made.frames} frames at {made.info.fps:.3g} frames/s ({clip:.1f} s of video) made in {seconds:.1f} s "
        f"({seconds / clip:.1f}× real time): {stages}. One colour scale for the whole clip (the colour bar)."
    )
