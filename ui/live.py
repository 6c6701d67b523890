"""The Live tab: a webcam stream or an uploaded clip, with every head's map moving. Its
components (`LiveTab`), layout, and which event runs which handler of ui/live_handlers.py.

The webcam stream is Gradio's (`gr.Image(streaming=True)` with `.stream`): the browser sends a
JPEG frame every STREAM_EVERY_S seconds and Gradio keeps only the newest one while the
previous frame is drawn, so frames are dropped rather than queued. The stream has its own
queue (`concurrency_id="live"`), so it never takes the Explore tab's slots; how many streams
draw at once is `ui.streams.StreamSlots`' business (a busy message for the others).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gradio as gr

from explorer import controls
from explorer.canvas import COLORMAPS
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.loaded import LoadedModel
from explorer.video import VideoLimits

from . import concurrency, zerogpu
from . import live_handlers as h
from .binding import Controls, TabComponents
from .common import SCALE_CHOICES, Server, keep_model, layer_slider
from .pictures import SWIPE_CUE
from .streams import StreamSlots

STREAM_EVERY_S = 0.04  # the browser sends up to 25 frames a second; the server draws the newest
# Gradio holds a stream's worker until its next frame or its time limit: a visitor who sent one
# frame and then nothing held one of Live's workers for a whole 180 s turn, and the streams
# queued behind them filled the server's one queue (issue 28). Each stream event now lasts at
# most this long; the webcam opens the next at once, and the turn is kept by StreamSlots.
STREAM_EVENT_S = 10
WAITING_ROOM = 4  # streams beyond the drawing ones that get the busy message at once (the rest queue)
CONTROLS = Controls.of(h.LiveControls, h.live_controls)  # every control a frame or a clip is drawn with
# The header's Live button: after the tab opens, grant the webcam and press Record (as a
# teacher would), unless the stream already runs. Gradio's webcam has no API for this.
START_CAMERA_JS = """async () => {
  if (await window.liveCameraProblem()) return;  // said under the camera: nothing to start
  const root = () => document.getElementById("live-camera");
  const wait = async (find) => {
    for (let i = 0; i < 100; i++) {
      const found = root() && find(root());
      if (found) return found;
      await new Promise((r) => setTimeout(r, 100));
    }
    return null;
  };
  const ready = await wait(r => r.querySelector(".capture-button") || r.querySelector("div[title] > button"));
  if (ready && !ready.classList.contains("capture-button")) ready.click();
  const record = await wait(r => r.querySelector(".capture-button"));
  if (record && record.querySelector("svg.feather-circle")) record.click();
}"""
# The webcam button's names for screen readers (Gradio's is "capture photo" in both states).
RECORD_NAME = "Record: start the webcam stream"
STOP_NAME = "Stop the webcam stream"
# Gradio's webcam sends no event when Stop is pressed: without this, the last frame's readout
# ("5.8 frames/s ... your turn ends in 71 s") would stay as if the stream still ran. The readout
# follows the button, never the click: Stop pressed twice starts the stream again, and a Stop's
# late check once wrote "Stopped" over a stream restarted by Record, whose readout then never
# changed again (Gradio's text had been overwritten; issue 27). A frame drawn after Stop cannot
# hide "Stopped" either: every change of the readout is checked.
STOPPED_JS = """<script>
(() => {
  let clicked = false, watched = null;
  const sync = (byClick) => {
    const button = document.querySelector("#live-camera .capture-button");
    const box = document.getElementById("live-status");
    if (!clicked || !button || !box) return;
    const stopped = !!button.querySelector("svg.feather-circle");  // the button offers Record
    let note = document.getElementById("live-stopped");
    // Only a click shows "Stopped": between two of Gradio's stream events the button offers
    // Record for a moment while the camera keeps going.
    if (stopped && !note && byClick) {
      note = document.createElement("p");
      note.id = "live-stopped";
      note.textContent = "Stopped. Press Record under the camera to start again.";
      box.append(note);
    }
    if (!stopped && note) {
      note.remove();
      note = null;
    }
    // Gradio's own readout is hidden, never rewritten: its next frame's text still shows.
    for (const child of box.children) if (child !== note) child.style.display = note ? "none" : "";
    if (watched !== box) {
      new MutationObserver(() => sync(false)).observe(box, { childList: true, subtree: true, characterData: true });
      watched = box;
    }
  };
  // Why no camera can start, said where its readout is (Gradio's webcam only logs it to the
  // console, and a class saw nothing happen, a teacher's walk), or null when one may.
  window.liveCameraProblem = async () => {
    let said = null;
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      said = "This page cannot use a camera: a browser allows one only on an https:// address or on this " +
        "computer's own (localhost). Upload a clip below instead (Video in, attention video out).";
    } else {
      const devices = await navigator.mediaDevices.enumerateDevices().catch(() => []);
      if (!devices.some((d) => d.kind === "videoinput")) {
        said = "No camera found: plug one in (or allow this browser to use it) and press ▶ Live again, " +
          "or upload a clip below (Video in, attention video out).";
      }
    }
    const box = document.getElementById("live-status");
    let note = document.getElementById("live-no-camera");
    if (said && box && !note) {
      note = Object.assign(document.createElement("p"), { id: "live-no-camera", role: "alert" });
      box.append(note);
    }
    if (note) note.textContent = said || "";
    if (note && !said) note.remove();
    return said;
  };
  document.addEventListener("click", (event) => {
    if (event.target.closest("#live-camera")) setTimeout(() => window.liveCameraProblem(), 300);
    if (!event.target.closest("#live-camera .capture-button")) return;
    clicked = true;
    setTimeout(() => sync(true), 500);  // after the button has changed and the last frame in flight
  }, true);
  // Gradio names the streaming webcam's one button "capture photo" for screen readers, whether it
  // records or stops: it is named after what it does now, each time its icon (or Gradio) changes it.
  const name = () => {
    const button = document.querySelector("#live-camera .capture-button");
    if (!button) return;
    const now = button.querySelector("svg.feather-circle") ? RECORD_NAME : STOP_NAME;
    if (button.getAttribute("aria-label") !== now) button.setAttribute("aria-label", now);
  };
  new MutationObserver(name).observe(document.documentElement,
    { childList: true, subtree: true, attributes: true, attributeFilter: ["aria-label"] });
})();
</script>""".replace("RECORD_NAME", repr(RECORD_NAME)).replace("STOP_NAME", repr(STOP_NAME))
# Each frame's pictures, drawn in the page from the numbers the server sends (explorer/live.py,
# frame_numbers; ui/js/live.js, LiveMaps): the head maps first (the first screen shows them), the
# model input and rollout beside each other under them where they fit, each at its drawn size.
PICTURES_TEMPLATE = (
    '<div class="live-frame"><div data-part="heads"></div><div data-part="input"></div>'
    '<div data-part="rollout"></div></div>'
)
PICTURES_JS = """window.pageMaps.then(() => window.liveMaps.attach(element));
watch('value', () => window.pageMaps.then(() => window.liveMaps.frame(props.value)));"""
ABOUT = """**Live attention.** Hold an object up to the camera: each tile shows where the query looks in
one head of the chosen layer, frame by frame, and rollout combines all layers. The model sees the centre
square of the frame (its own preprocessing), shown with its patch grid. The readout says how many frames
per second reach you and where each frame's time goes; frames that arrive while one is drawn are
dropped, so the maps lag the camera by about one frame's drawing time. Each frame has its own
colour scale (the bar under the maps).
"""


@dataclass(frozen=True)
class LiveTab(TabComponents):
    """Every component of the Live tab, by name."""

    controls: ClassVar = (CONTROLS,)

    current_model: gr.State
    model_key: gr.Dropdown
    model_info: gr.Markdown
    frame: gr.Image  # the webcam, which streams the frames (`frame` on the API page)
    status: gr.Markdown
    pictures: gr.HTML
    layer: gr.Slider
    query_token: gr.Dropdown
    row: gr.Slider
    column: gr.Slider
    cmap: gr.Dropdown
    scale: gr.Radio
    clip: gr.Video
    make_video: gr.Button
    video_out: gr.Video
    video_note: gr.Markdown
    explore_model: gr.Dropdown  # the Explore tab's picker, whose model the header's Live button opens
    tabs: gr.Tabs  # the page's tabs, which that button moves to Live


def _stream(start: LoadedModel) -> dict[str, Any]:
    """The camera, its readout and the query's controls in one column beside the pictures: at
    1280 x 720 the layer and query controls were below the fold, under a row of other controls."""
    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=240):
            # the caption above the preview, not in Gradio's corner badge, which covered its top
            gr.Markdown("**Webcam**: ▶ Live above, or Record under the camera, starts it; Stop ends your turn")
            camera = gr.Image(
                sources=["webcam"],
                streaming=True,
                # not mirrored: the model sees what the camera sees, and so does the class
                webcam_options=gr.WebcamOptions(mirror=False),
                label="Webcam",
                show_label=False,
                elem_id="live-camera",
                height=200,  # with the readout and the query's controls under it, all on a 720 px screen
            )
            status = gr.Markdown(
                "Press ▶ Live above, or Record under the camera, to start.",
                label="Frames per second and top classes",
                elem_id="live-status",
            )
            query = _query(start)
        with gr.Column(scale=5, min_width=400):
            gr.Markdown(SWIPE_CUE, elem_classes="swipe-cue")  # a phone scrolls the pictures sideways
            pictures = gr.HTML(
                None,
                html_template=PICTURES_TEMPLATE,
                js_on_load=PICTURES_JS,
                elem_id="live-pictures",
                label="Live pictures: model input, head maps, rollout",
            )
    return {"frame": camera, "status": status, "pictures": pictures} | query


def _query(start: LoadedModel) -> dict[str, Any]:
    config, crop = start.model.config, start.preprocessing.crop_size
    rows, columns = start.model.patch_grid(crop, crop)
    names = config.prefix_names
    layer = layer_slider(config.depth, config.depth, step=1, label="Layer (1 = first)", elem_id="live-layer")
    query_token = gr.Dropdown(
        controls.query_choices(names),
        value=controls.query_token(None, names),
        label="Query token",
        elem_id="live-query",
    )
    # shown only while the query is a patch: beside the CLS query they would name a patch not drawn
    row = gr.Slider(1, rows, value=(rows + 1) // 2, step=1, label="Query patch row (1 = top)", visible=False)
    column = gr.Slider(
        1, columns, value=(columns + 1) // 2, step=1, label="Query patch column (1 = left)", visible=False
    )
    return {"layer": layer, "query_token": query_token, "row": row, "column": column}


def _controls(catalog: ModelCatalog, start: LoadedModel) -> dict[str, Any]:
    with gr.Row():
        model_key = gr.Dropdown(catalog.choices(), value=BUNDLED, label="Model", scale=2, elem_classes="picker")
        cmap = gr.Dropdown(list(COLORMAPS), value="inferno", label="Colour map")
        scale = gr.Radio(SCALE_CHOICES, value="layer", label="Colour scale (from 0)", scale=2)
        model_info = gr.Markdown(start.describe(), label="Model description")
    return {"model_key": model_key, "cmap": cmap, "scale": scale, "model_info": model_info}


def _video(limits: VideoLimits) -> dict[str, Any]:
    gr.Markdown(
        f"### Video in, attention video out\nUpload a short clip (MP4, MOV or WebM; at most {limits.max_seconds:g} s, "
        f"{limits.max_frames} frames and 1920 × 1080 px): you get an MP4 of every frame beside the chosen layer's head "
        "maps, with one colour scale for the whole clip, so the colours compare from frame to frame."
    )
    with gr.Row(equal_height=False):
        clip = gr.Video(sources=["upload"], label="Clip", elem_id="live-clip", height=240)
        with gr.Column():
            make_video = gr.Button("Make the attention video", variant="primary", elem_id="make-video")
            # the caption above the player, not in Gradio's corner badge, which would cover the frame's title
            gr.Markdown("**Attention video** (download: the button on the player)")
            video_out = gr.Video(label="Attention video", show_label=False, interactive=False)
            video_note = gr.Markdown(label="How the video was made", elem_id="video-note")
    return {"clip": clip, "make_video": make_video, "video_out": video_out, "video_note": video_note}


def layout(catalog: ModelCatalog, limits: VideoLimits, tabs: gr.Tabs, explore_model: gr.Dropdown) -> LiveTab:
    """Place the tab's components inside the current Blocks and name them, with the page's
    `tabs` and the Explore tab's picker, which the header's Live button reads and moves."""
    start = catalog.get(BUNDLED)
    parts = {"current_model": gr.State(BUNDLED)} | _stream(start) | _controls(catalog, start)
    gr.Markdown(ABOUT)
    if zerogpu.ON_ZEROGPU:
        gr.Markdown(zerogpu.LIVE_NOTE, elem_id="live-zerogpu")
    return LiveTab(**parts, **_video(limits), explore_model=explore_model, tabs=tabs)


def _wire_stream(tab: LiveTab, server: Server, slots: StreamSlots) -> None:
    tab.frame.stream(
        **tab.event(h.live_frame, server, slots, tab.frame),
        outputs=tab.pick("pictures", "status"),
        api_name="live_frame",
        stream_every=STREAM_EVERY_S,
        time_limit=STREAM_EVENT_S,  # a silent stream's worker is free within this (StreamSlots: its slot in idle_s)
        concurrency_id=concurrency.LIVE_ID,
        concurrency_limit=slots.limit + WAITING_ROOM,
        preprocess=False,  # the frame arrives as the browser's data: URL, decoded by explorer.live
        show_progress="hidden",
    )


def _wire_models(tab: LiveTab, server: Server, page_tab: gr.Tab) -> None:
    switched = tab.model_key.change(
        **tab.event(h.live_model, server),
        outputs=tab.pick("current_model", "model_info", "layer", "query_token", "row", "column"),
        api_name="live_model",
        show_progress="full",
        preprocess=False,  # the key is checked by the handler (Gradio's check echoed it whole)
        **concurrency.HEAVY,  # loads a model, maybe downloading it
    )
    switched.failure(keep_model, tab.inputs(keep_model), tab.model_key, api_visibility="private")
    # preprocess=False on every event with a picker among its inputs: Gradio's own check of a
    # choice echoes the value whole and unescaped; the handlers check what they use.
    tab.query_token.change(
        **tab.event(h.patch_sliders), outputs=tab.pick("row", "column"), api_visibility="private", preprocess=False
    )
    page_tab.select(**tab.event(h.live_choices, server), outputs=tab.pick("model_key"), api_visibility="private")


def _wire_video(tab: LiveTab, server: Server, limits: VideoLimits) -> None:
    tab.make_video.click(
        **tab.event(h.attention_video, server, limits),
        outputs=tab.pick("video_out", "video_note"),
        api_name="attention_video",
        preprocess=False,  # the clip's upload payload, checked by ui.common.uploaded_path
        **concurrency.VIDEO,  # a clip keeps a core busy for up to a minute: never one of Explore's heavy slots
    )


def build_live_tab(
    server: Server,
    page_tab: gr.Tab,
    tabs: gr.Tabs,
    open_button: gr.Button,
    explore_model: gr.Dropdown,
) -> LiveTab:
    """The Live tab inside `page_tab` (its gr.Tab), the current Blocks' context. `open_button` (on the first
    screen) opens it on `explore_model`'s model and starts the webcam."""
    limits = VideoLimits()
    tab = layout(server.catalog, limits, tabs, explore_model)
    settings = server.settings
    slots = StreamSlots(limit=settings.live_streams, turn_s=settings.live_turn_s)
    _wire_stream(tab, server, slots)
    _wire_models(tab, server, page_tab)
    _wire_video(tab, server, limits)
    opened = open_button.click(
        **tab.event(h.open_live, server),
        outputs=tab.pick("tabs", "model_key"),
        api_visibility="private",
        preprocess=False,
    )
    opened.then(None, js=START_CAMERA_JS, api_visibility="private")
    return tab
