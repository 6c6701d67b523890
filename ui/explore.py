"""The Explore tab: its components (`ExploreTab`), their layout, and which event runs which
handler of ui/explore_handlers.py under which API name. An event's inputs are the components
its handler's parameters name (`tab.event`); the "More views" tabs are laid out and wired from
their records (ui/explore_views.py)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import gradio as gr

from explorer import controls, page_maps, texts
from explorer.canvas import COLORMAPS
from explorer.catalog import ModelCatalog
from explorer.loaded import LoadedModel
from explorer.prompts import DEFAULT_PROMPTS, MAX_PROMPTS
from vit.preprocessing import CIFAR10_CLASSES

from . import common, concurrency, gate
from . import explore_handlers as h
from . import explore_views as ev
from .binding import Controls, TabComponents, bound, checked_first
from .common import EXAMPLES_DIR, SCALE_CHOICES, Server
from .lessons import PICTURES as LESSON_PICTURES
from .lessons import SAID as LESSON_SAID
from .lessons import TABLE as LESSON_TABLE
from .lessons import WORD_MAPS_ID as LESSON_MAPS
from .pictures import page_picture, word_maps
from .settings import for_visitors

EXAMPLES = tuple(EXAMPLES_DIR / f"{name}.jpg" for name in CIFAR10_CLASSES)
SESSION_TTL_S = 3600  # forget an idle session's cached forward pass after an hour
UPLOAD = Controls.of(h.Upload, h.upload)
KEPT = Controls.of(h.Kept, h.kept)
STYLE = common.STYLE.names  # the controls one MapStyle is built from
GIF_SCALE_CHOICES = [  # the first is the screen's: each layer on its own scale
    ("each layer its own scale, as on screen", "each layer"),
    ("one scale for all layers (brightness compares)", "all layers"),
]
SHOW_CHOICES = [
    ("weights from 0 (▼ marks uniform)", "weights"),
    ("relative to uniform (× 1/N)", "relative"),
    ("only the top X % of the mass", "top mass"),
]
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
ARROWS = {"up": "↑", "down": "↓", "left": "←", "right": "→"}
# Arrow keys move the query patch, Escape resets it: only while the Explore tab is in view with
# an image's grid on it (the buttons of a hidden tab stay in the page, and a key on another tab
# moved Explore's query unseen), and not while a text field or slider has the focus. Otherwise
# the keys keep their usual job (scrolling the page).
KEYBOARD_JS = """<script>
document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (target && (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable)) return;
  const ids = {ArrowUp: "query-up", ArrowDown: "query-down", ArrowLeft: "query-left", ArrowRight: "query-right",
               Escape: "query-reset"};
  const button = ids[event.key] && document.getElementById(ids[event.key]);
  const grid = document.querySelector("#input-view img");
  if (!button || !button.checkVisibility() || !grid || !grid.checkVisibility()) return;
  event.preventDefault();
  button.click();
});
</script>"""
# Names for screen readers that Gradio cannot give: gr.Examples draws each example as an unnamed
# button around an image with alt="" (named here by its class, the file name of
# examples/cifar10/<class>.jpg), and gr.Button has no aria-label (the arrows' text is a glyph).
ACCESSIBLE_NAMES_JS = """<script>
const BUTTON_NAMES = BUTTON_NAMES_JSON;
new MutationObserver(() => {
  for (const img of document.querySelectorAll("#examples button img:not([data-named])")) {
    // the examples' data: URLs end in "#<class>" (thumbnails); a file's URL, in its name
    const src = new URL(img.src);
    const file = src.hash.slice(1) || src.pathname.split("/").pop();
    const name = decodeURIComponent(file).replace(/[.][^.]*$/, "");
    img.alt = `${name} (example image)`;
    img.dataset.named = "1";
    img.closest("button").setAttribute("aria-label", `example: ${name}`);
  }
  for (const [id, name] of Object.entries(BUTTON_NAMES)) {
    const button = document.getElementById(id);
    if (button && button.getAttribute("aria-label") !== name) button.setAttribute("aria-label", name);
  }
}).observe(document.documentElement, {childList: true, subtree: true});
</script>""".replace("BUTTON_NAMES_JSON", json.dumps({f"query-{name}": f"move the query {name}" for name in MOVES}))
# The first screen's pictures, drawn in the page from the numbers an analysis sends (issue 41;
# explorer/page_maps.py says what is sent), by the ES modules of ui/js/ (main.js starts them), which
# ui/app.py serves as they are at PAGE_JS_ROUTE: no build step, nothing from elsewhere. What the
# server decides for them comes in the page's head as one JSON script (`page_config`).
PLAY_STEP_S = 0.8  # seconds per layer of "Play through layers"
WORD_MAPS_ID = "prompt-maps"  # a CLIP model's word maps, which follow the style as the style views do
PAGE_JS_DIR = Path(__file__).with_name("js")
PAGE_JS_ROUTE = "/page-js"
PAGE_CONFIG_ID = "page-maps-config"  # the JSON script's id, which ui/js/main.js reads


def page_config() -> dict[str, Any]:
    """What the server tells the page's modules: matplotlib's own table of each colour map, Play's
    step, and the pictures the server draws that follow the style (a selector, from the records)."""
    return {
        "colour_tables": page_maps.colour_tables(),
        "play_step_ms": round(PLAY_STEP_S * 1000),
        "rows_route": gate.ROUTE,  # where the page asks for a layer's rows (ui/rows_route.py)
        "class_route": gate.CLASS_ROUTE,  # class mode's actions and stream (ui/class_route.py)
        "follow_style": ", ".join(f"#{name} img" for name in (*ev.FOLLOW_STYLE, WORD_MAPS_ID)),
        # each "More views" tab's words and its picture's id: the view a teacher's page shows (ui/js/classmore.js)
        "more_views": [{"tab": more.tab, "id": more.elem_id} for more in ev.MORE.values()],
        "lesson_pictures": list(LESSON_PICTURES),  # the lessons' pictures' ids (ui/js/classlessons.js)
        "lesson_words": {"said": LESSON_SAID, "table": LESSON_TABLE},  # their words' classes (ui/js/classresult.js)
        "lesson_maps": LESSON_MAPS,  # lesson 4's word maps' gallery (ui/js/classmaps.js)
    }


# Gradio puts the head into the page once it has its config, and a module loads apart from it: the
# components' js_on_load wait on `window.pageMaps`, main.js's import, for window.attentionMaps and
# window.liveMaps. The address is made from the page's (js_on_load's code would resolve a relative
# one from Gradio's own assets).
PAGE_MAPS_JS = (
    f'<script type="application/json" id="{PAGE_CONFIG_ID}">'
    + json.dumps(page_config()).replace("</", "<\\/")
    + "</script>\n<script>"
    + f'window.pageMaps = import(new URL("{PAGE_JS_ROUTE.removeprefix("/")}/main.js", document.baseURI).href);'
    + "</script>"
)
HEAD_JS = KEYBOARD_JS + ACCESSIBLE_NAMES_JS + PAGE_MAPS_JS
# Each drawn picture hands itself to the page's Explore controller (ExploreMaps, ui/js/explore.js,
# whose instance is window.attentionMaps), with the events it raises: a clicked patch ("query"), and
# a style change that pictures drawn by the server follow too.
INPUT_VIEW_JS = """window.pageMaps.then(() => window.attentionMaps.attach("input", element, props,
  {query: () => trigger('query'), restyle: () => trigger('restyle')}));"""
HEADS_JS = """window.pageMaps.then(() => window.attentionMaps.attach("heads", element, props, {}));
watch('value', () => window.pageMaps.then(() => window.attentionMaps.load(props.value)));"""
CONTROLLER = "window.attentionMaps"  # what the page's own events call

# Class mode (issue 59; ui/js/classroom.js fills it in, as text only): the field a student types a code in
# (shown while the page is in no class), a student's banner with the way back to the teacher's view and the
# teacher's More view, the teacher's code, QR code and join address, the class's students, and the
# teacher's Eyes on me, Freeze and End. Hidden until the page is in a class.
# not a <form>: a press before the page's modules are loaded must not send the page away
CLASS_TYPED = """<div class="class-typed"><label>or join a class by its code <input id="class-typed-code"
maxlength="12" autocomplete="off" autocapitalize="characters" spellcheck="false" size="8"></label>
<button id="class-join-code" type="button">Join</button></div>"""
CLASS_PANEL = """<div class="class-panel">
<p class="class-notice" role="status"></p>
<div class="class-student" hidden><span class="class-banner" role="status"></span>
<button id="class-follow" type="button" hidden>Back to the teacher's view</button>
<div class="class-lent" hidden><p class="class-model"></p><p class="class-predictions"></p>
<p>Your own controls come back with an image of your own (an example or an upload) or when the class ends.</p>
</div></div>
<figure class="class-more" hidden><figcaption class="class-more-view"></figcaption><img alt=""></figure>
<div class="class-teacher" hidden>
<details open><summary>Join this class: its code and QR code</summary>
<p id="class-code" class="class-code"></p>
<canvas id="class-qr" role="img" aria-label="QR code of the address students join the class at"></canvas>
<p>or open <a class="class-join"></a></p><p class="class-reach" role="alert"></p></details>
<p class="class-count" role="status"></p>
<button id="class-eyes" type="button">Eyes on me</button> <button id="class-freeze" type="button">Freeze</button>
<button id="class-end" type="button">End the class</button>
</div>
<div id="class-gallery" hidden><h3>Show me yours: the class's gallery</h3>
<div class="cg-teacher" hidden><label>Question <input class="cg-question" maxlength="200" size="48"></label>
<label><input type="checkbox" class="cg-names"> show names</label>
<button class="cg-ask" type="button">Open the gallery</button> <button class="cg-close" type="button">Close it</button>
<p class="cg-count" role="status"></p><ul class="cg-waiting"></ul>
<label>Head <input class="cg-head" type="number" min="1" placeholder="mean" size="4"></label>
<button class="cg-show" type="button">Show the gallery</button>
<button class="cg-export" type="button">Export the gallery (PNG)</button></div>
<p class="cg-asked"></p>
<div class="cg-student" hidden><input type="file" accept="image/*" class="cg-file">
<button class="cg-send-file" type="button">Send this picture</button>
<button class="cg-send-view" type="button">Send the picture my page shows</button>
<p class="cg-sent" role="status"></p></div>
<p class="cg-title"></p><div class="cg-tiles"></div><img class="cg-bar" alt="The gallery's colour bar" hidden>
</div></div>"""
CLASS_JS = "window.pageMaps.then(() => { window.classroom.attach(element); window.classGallery.attach(element); });"

CLASSROOM = """A ViT cuts the image into square **patches** (the grid drawn over the
model input) and turns each into a token. An extra **CLS token** has no pixels of its own: it gathers
information from the patches through attention, and the classifier reads only it. Each map shows,
for one attention **head**, how strongly the query (CLS by default; click a patch, or use the arrow
keys, to change it) attends to every patch. Rows, columns, layers and heads count from 1.
Supervised ViTs spread attention over many patches, including the background, so single-head maps
look noisy; **rollout** combines all layers into one smoother map.
"""


@dataclass(frozen=True)
class ExploreTab(TabComponents):
    """Every component of the Explore tab, by name."""

    controls: ClassVar = (*ev.CONTROLS, UPLOAD, KEPT)

    # per-session state
    explanation_key: gr.State  # key of the forward pass every view reads (ui.common.ExplanationKey)
    export_name: gr.State  # "<image>-<model>", how export files begin
    query: gr.State  # None = CLS, else (row, col), 0-based
    current_model: gr.State
    on_screen: gr.State  # the "More views" tab on screen (explore_views.MORE_VIEWS), None while closed
    more_tab: gr.State  # the tab picked in "More views", shown when the accordion opens
    words_result: gr.State  # a CLIP model's words on screen, redrawn in a new style (explore_handlers.WordsResult)
    # model and image
    model_key: gr.Dropdown
    checkpoint: gr.File
    model_info: gr.Markdown
    image: gr.Image
    mode: gr.Radio
    input_view: gr.HTML  # the model input and its grid, drawn in the page; its value: the query it shows
    input_img: gr.Image  # the same drawn by the server, for API clients (/query_patch, /analyze)
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
    gif_scale: gr.Radio  # the GIF export's frames: each layer's own scale, or one for all
    query_md: gr.Markdown
    token: gr.Dropdown  # the query token picker
    reset: gr.Button
    up: gr.Button
    down: gr.Button
    left: gr.Button
    right: gr.Button
    play: gr.Button
    pause: gr.Button  # in Play's place while the layers play
    # views and exports; "More views" (an accordion of tabs) is drawn only when opened
    more: gr.Accordion
    more_tabs: dict[str, gr.Tab]  # by ui.explore_views.MORE_VIEWS name
    # Each "More views" view's picture, its own controls and what the session keeps of it (a state),
    # by name, as its module and ui/explore_views.py lay them out: read as fields (`tab.pca_layer`).
    more_parts: dict[str, gr.components.Component]
    heads: gr.HTML  # the head maps (#heads), drawn in the page from the numbers its value holds (explorer/page_maps.py)
    heads_img: gr.Image  # the same drawn by the server, for API clients (/heads, /restyle, /analyze)
    export_png: gr.Button
    export_gif: gr.Button
    export_file: gr.File
    show: gr.Radio
    keep_percent: gr.Slider
    # a CLIP model's words (ui.explore_handlers.compare_words): shown for CLIP models only
    words: gr.Column
    prompts: gr.Textbox
    prompts_button: gr.Button
    prompt_note: gr.Markdown
    prompt_maps: gr.Gallery
    # /query_patch: hidden inputs for API clients
    row: gr.Number
    column: gr.Number
    query_button: gr.Button
    # class mode (ui/js/classroom.js): Start a class, and the class's panel
    class_start: gr.Button
    class_panel: gr.HTML
    # the named endpoints whose pictures the page now draws itself: API clients only (_api_only_inputs)
    api_buttons: dict[str, gr.Button]

    def __getattr__(self, name: str) -> gr.components.Component:
        # Called only for a name that is no field: a "More views" part, so that a new view needs no
        # field here (issue 57), and handlers and events name its parts as they name the others.
        parts = self.__dict__.get("more_parts", {})
        if name not in parts:
            raise AttributeError(f"{type(self).__name__} has no component called {name!r}")
        return parts[name]


def _session_state(start: LoadedModel) -> dict[str, gr.State]:
    return {
        "explanation_key": gr.State(None, time_to_live=SESSION_TTL_S),
        "export_name": gr.State(None),
        "query": gr.State(None),
        "current_model": gr.State(start.key),
        "on_screen": gr.State(None),
        "more_tab": gr.State(ev.MORE_VIEWS[0]),
        "words_result": gr.State(None),
    }


def thumbnails(paths: Sequence[Path]) -> list[list[dict[str, str]]]:
    """The examples as the page's description (/config) shows them: each picture inline, a
    `data:` URL named by its file after "#" (ACCESSIBLE_NAMES_JS reads it), with no path. Gradio's
    own samples are FileData of its cached copies, whose paths and /file= URLs named its temp
    folder for anyone to read (issue 56); without FileData's `meta` Gradio adds no server address
    either. A click still loads the example: the page sends its index, and the server answers with
    the cached copy (gr.Examples' own samples, kept by it), the file the page is then given."""
    return [
        [{"url": f"data:image/jpeg;base64,{base64.b64encode(path.read_bytes()).decode()}#{path.stem}"}]
        for path in paths
    ]


def _image_column(catalog: ModelCatalog, start: LoadedModel) -> dict[str, Any]:
    # The picker first, on the first screen at 1280x720 (issue 61: it was under the style controls,
    # out of sight, and a teacher scrolled to find which model answered).
    model_key = gr.Dropdown(
        catalog.choices(), value=start.key, label="Model", elem_classes="picker", elem_id="model-picker"
    )
    image = gr.Image(
        type="filepath",
        elem_id="upload",
        sources=["upload", "clipboard", "webcam"],
        label="Image (upload, paste or webcam)",
        show_label=False,  # its badge covered the preview; the placeholder says what to do
        # plain text: Gradio shows an image's placeholder as typed, Markdown and all
        placeholder="Drop an image here or click to upload it, or pick an example below",
        buttons=[],
        alt_text="The image being explained",
        height=120,
    )
    # Named by class for screen readers by ACCESSIBLE_NAMES_JS.
    examples = gr.Examples(
        [[str(path)] for path in EXAMPLES],
        inputs=image,
        label="CIFAR-10 test images",
        examples_per_page=10,
        elem_id="examples",
    )
    examples.dataset.samples = thumbnails(EXAMPLES)
    label = gr.Label(num_top_classes=3, label="Top predictions", elem_id="predictions")
    classes = gr.Markdown(h.classes_note(start), label="Classes of the model", elem_id="classes")
    return {"model_key": model_key, "image": image, "label": label, "classes": classes}


def _query_column(start: LoadedModel) -> dict[str, Any]:
    caption = "**Model input with its patch grid**: click a patch to make it the query (or use the arrow keys)"
    input_view = page_picture(caption, "The model input with its patch grid", INPUT_VIEW_JS, elem_id="input-view")
    input_img = gr.Image(label=caption.replace("*", ""), visible=False)
    names = start.model.config.prefix_names
    query_md = gr.Markdown(texts.describe_query(None, "cls" in names), label="Query", elem_id="query")
    token = gr.Dropdown(
        controls.query_choices(names),
        value=controls.query_token(None, names),
        label="Query token",
        elem_id="query-token",
    )
    with gr.Row():
        moves = {
            name: gr.Button(arrow, size="sm", min_width=40, elem_id=f"query-{name}", elem_classes="arrow")
            for name, arrow in ARROWS.items()
        }
        reset = gr.Button("Reset (CLS)", size="sm", min_width=90, elem_id="query-reset")
    return {
        "input_view": input_view,
        "input_img": input_img,
        "query_md": query_md,
        "token": token,
        "reset": reset,
        **moves,
    }


def _heads_column(depth: int, classes: bool) -> dict[str, Any]:
    caption = "**Attention per head** in the chosen layer, for the query"
    alt = "Attention of every head in the chosen layer, for the query"
    heads = page_picture(caption, alt, HEADS_JS, elem_id="heads")
    heads_img = gr.Image(label=caption.replace("*", ""), visible=False)
    with gr.Row():
        layer = common.layer_slider(depth, depth, step=1, label="Layer (1 = first)", scale=4, elem_id="layer")
        play = gr.Button("▶ Play through layers", size="sm", scale=1, elem_id="play")
        pause = gr.Button("⏸ Pause", size="sm", scale=1, elem_id="pause")  # shown by the page while it plays
    # On the first screen, beside the maps it explains (a teacher opens it while they look at them).
    with gr.Accordion("How to read this", open=False, elem_id="how-to-read"):
        gr.Markdown(CLASSROOM)
    with gr.Row():
        export_png = gr.Button("Export PNG", size="sm", elem_id="export-png")
        export_gif = gr.Button("Export GIF through the layers", size="sm", elem_id="export-gif")
    export_file = gr.File(label="Export", interactive=False, height=60, elem_id="export")
    return _class_row(classes) | {
        "heads": heads,
        "heads_img": heads_img,
        "layer": layer,
        "play": play,
        "pause": pause,
        "export_png": export_png,
        "export_gif": export_gif,
        "export_file": export_file,
    }


def _style_controls() -> dict[str, Any]:
    with gr.Row(elem_id="style"):  # hidden on a student's page while it shows the teacher's image
        return {
            "cmap": gr.Dropdown(list(COLORMAPS), value="inferno", label="Colour map"),
            "opacity": gr.Slider(0.0, 1.0, value=0.6, step=0.05, label="Map opacity (0 to 1)"),
            "upsampling": gr.Radio(
                list(common.UPSAMPLING), value="nearest", label="Upsampling (nearest = honest patches)"
            ),
            "display": gr.Radio(list(common.DISPLAYS), value="overlay", label="Display"),
            "scale": gr.Radio(SCALE_CHOICES, value="layer", label="Colour scale (from 0)"),
            "gif_scale": gr.Radio(
                GIF_SCALE_CHOICES, value=h.GIF_SCALES[0], label="GIF through the layers: colour scale of its frames"
            ),
            "mode": gr.Radio(
                [("Centre crop (the model's own policy)", "crop"), ("Whole image (non-square grid)", "whole")],
                value="crop",
                label="Resize policy",
            ),
        }


def _model_about(catalog: ModelCatalog, start: LoadedModel) -> dict[str, Any]:
    """What the picked model is (its picker heads the image column), and a checkpoint to add to the picker."""
    with gr.Row():
        with gr.Column(scale=2):
            with gr.Accordion("Upload a checkpoint (.safetensors from this app's Train tab)", open=False):
                checkpoint = gr.File(file_types=[".safetensors"], label="Checkpoint")
        with gr.Column(scale=3):
            # The default model could not be had: the reason may name the Hub's cache folder.
            note = f"{for_visitors(catalog.note)}\n\n" if catalog.note else ""
            model_info = gr.Markdown(note + start.describe(), label="Model description", elem_id="model-info")
            numbers = gr.Markdown(label="Image and grid sizes", elem_id="numbers")
    return {"checkpoint": checkpoint, "model_info": model_info, "numbers": numbers}


def _map_display() -> dict[str, Any]:
    """How rollout and relevance are drawn: from 0 with uniform marked, relative to uniform,
    or the patches holding the top X % of the mass (docs/pictures.md)."""
    with gr.Row():
        return {
            "show": gr.Radio(SHOW_CHOICES, value="weights", label="Rollout and relevance show"),
            "keep_percent": gr.Slider(  # shown only for the top-mass choice, the one it changes
                5, 100, value=100 * controls.KEEP, step=5, label="Keep the top X % of the attention mass", visible=False
            ),
        }


def _more_views(start: LoadedModel) -> dict[str, Any]:
    kept = {name: gr.State(None) for name in ev.KEPT}  # what the session keeps of a view, by name
    more = gr.Accordion(ev.MORE_LABEL, open=False, elem_id="more")
    with more:
        display = _map_display()
        with gr.Tabs(overflow_behavior="wrap"):
            tabs, parts = _more_tabs(start)
    return {"more": more, **display, "more_tabs": tabs, "more_parts": kept | parts}


def _more_tabs(start: LoadedModel) -> tuple[dict[str, gr.Tab], dict[str, Any]]:
    """A tab for each of ui.explore_views.MORE, in order, holding what its record says: the tabs and
    their parts, by name."""
    tabs, parts = {}, {}
    for more in ev.MORE.values():
        with gr.Tab(more.tab) as tabs[more.name]:
            parts |= more.layout(start)
    return tabs, parts


def _words(start: LoadedModel) -> dict[str, Any]:
    """A CLIP model's words: a box of comma-separated prompts, ready to press, and a map per word."""
    with gr.Column(visible=start.text is not None, elem_id="words") as words:
        gr.Markdown(
            "**One picture, many words (CLIP)**: type what might be in the picture; CLIP scores each word "
            "(its probabilities replace the top predictions) and a map shows which patches made each score."
        )
        with gr.Row():
            prompts = gr.Textbox(
                DEFAULT_PROMPTS,
                label=f"Words to compare, separated by commas (2 to {MAX_PROMPTS})",
                scale=4,
                elem_id="prompts",
            )
            prompts_button = gr.Button("Compare these words", size="sm", scale=1, elem_id="compare-words")
        prompt_note = gr.Markdown(label="The template and what the probabilities compare", elem_id="prompt-note")
        prompt_maps = word_maps("**Relevance of each word** (Chefer et al. 2021)", elem_id=WORD_MAPS_ID)
    return {
        "words": words,
        "prompts": prompts,
        "prompts_button": prompts_button,
        "prompt_note": prompt_note,
        "prompt_maps": prompt_maps,
    }


# The named endpoints whose pictures the page draws itself, kept for API clients (drawn by the server).
API_ONLY = ("analyze", "heads", "restyle", "query_token", "reset_query", "export_png", "export_gif")


def _api_only_inputs() -> dict[str, Any]:
    """/query_patch for API clients: the same as clicking, with explicit grid coordinates; and a
    hidden trigger for each of API_ONLY."""
    return {
        "row": gr.Number(visible=False, precision=0, label="Row of the query patch (1 = top)"),
        "column": gr.Number(visible=False, precision=0, label="Column of the query patch (1 = left)"),
        "query_button": gr.Button(visible=False),
        "api_buttons": {name: gr.Button(visible=False) for name in API_ONLY},
    }


def _class_row(classes: bool) -> dict[str, Any]:
    """Start a class (not shown where the server allows no class: `--max-classes 0`), and the class's
    panel (CLASS_PANEL), under the exports, off the first screen that 1280x720 fits; a student's banner
    floats in sight over the page (ui/app.py's CSS)."""
    with gr.Row(equal_height=True, elem_id="class-row"):
        start = gr.Button("Start a class", size="sm", scale=0, min_width=160, elem_id="class-start", visible=classes)
        # the code typed where the server runs classes: with --max-classes 0, no class is ever found
        template = CLASS_PANEL.replace('<div class="class-panel">', '<div class="class-panel">' + CLASS_TYPED * classes)
        panel = gr.HTML(None, html_template=template, js_on_load=CLASS_JS, elem_id="class-panel", padding=False)
    return {"class_start": start, "class_panel": panel}


def layout(catalog: ModelCatalog, classes: bool = True) -> ExploreTab:
    """Place the tab's components inside the current Blocks and name them. The first row
    (upload, predictions, patch grid, head maps) fits a 1280x720 screen. The head maps' page asks
    for a layer's numbers on the rows route (ui/rows_route.py), which ui.app serves; `classes`: whether
    the server allows a class (Start a class)."""
    start = catalog.start()  # the operator's default model, or the bundled one if it cannot be had
    parts = _session_state(start)
    with gr.Row(equal_height=False):
        with gr.Column(scale=3, min_width=240):
            parts |= _image_column(catalog, start)
        with gr.Column(scale=4, min_width=300):
            parts |= _query_column(start)
        with gr.Column(scale=6, min_width=400):
            parts |= _heads_column(start.model.config.depth, classes)
    parts |= _words(start)
    parts |= _style_controls() | _model_about(catalog, start) | _more_views(start) | _api_only_inputs()
    return ExploreTab(**parts)  # a TypeError names any field left out or misspelt


# Every Explore event but the model picker's and the checkpoint upload's: the inputs arrive as
# plain numbers and strings (the image as its upload payload, decoded by explorer.images), and
# the handlers check them with ui.checks, which name the parameter and the allowed range.
RAW = {"preprocess": False}
CHEAP = {**RAW, **concurrency.CHEAP}  # redraws from the cached forward pass (ui/concurrency.py)
HEAVY = {**RAW, **concurrency.HEAVY}  # forward passes, loads, exports: two at a time, whole server
WORDS = {**RAW, **concurrency.WORDS}  # a CLIP model's word maps: one at a time, never a heavy slot


def _in_page(trigger: Callable, inputs: Any, outputs: Any, js: str) -> None:
    """An event the page handles itself (ui/js/explore.js): no function on the server, no request.
    Its inputs reach the page's code as they are (Gradio checks a choice's value only on the server)."""
    trigger(None, inputs, outputs, js=js, preprocess=False, api_visibility="private")


def _wire_analysis(tab: ExploreTab, server: Server) -> dict[str, Any]:
    """The page's analysis on a new image or resize policy, and /analyze for API clients; returns
    the page's event arguments for reuse."""
    api = {**tab.event(h.analyze, server), "outputs": tab.pick(*h.ANALYSIS_OUTPUTS), **HEAVY}
    tab.api_buttons["analyze"].click(**api, api_name="analyze").success(**_words_after(tab, server))
    analysis = {**tab.event(h.analyze_page, server), "outputs": tab.pick(*h.PAGE_ANALYSIS_OUTPUTS), **HEAVY}
    # Named: a script may ask for the numbers too (bench.visitors --page sends what the page sends).
    tab.mode.input(**analysis, api_name="analyze_page").success(**_words_after(tab, server))
    analysis["api_visibility"] = "private"
    # A new image: once per image (Gradio fires .change twice per upload), and a file that is no
    # image refused before the analysis, whose error would mark every output (explore_handlers).
    noted = tab.image.change(**tab.event(h.note_image, server), api_visibility="private", queue=False, **RAW)
    checked = noted.success(**tab.event(h.check_new_image), outputs=None, api_visibility="private", **CHEAP)
    analysed = checked.success(**analysis)
    analysed.success(**_words_after(tab, server))
    # A refused file leaves the views of the last image: the upload box shows that image again
    # (a path, not {field: value}: bound without the tab).
    keep_image = bound(h.keep_image, server)
    checked.failure(keep_image, tab.inputs(keep_image), tab.image, api_visibility="private", queue=False, **RAW)
    kept = [tab.image, *tab.pick(*h.PAGE_ANALYSIS_OUTPUTS)]
    analysed.failure(**tab.event(h.keep_analysis, server), outputs=kept, api_visibility="private", queue=False, **RAW)
    return analysis


def _wire_views(tab: ExploreTab, server: Server) -> None:
    """The layer and the style: the page redraws its maps itself (a layer typed past the model's
    depth comes back to the nearest one, with a sentence); the pictures the server draws that
    follow the style are redrawn when the page says one is on screen ("restyle")."""
    _in_page(tab.layer.input, tab.layer, tab.layer, f"(layer) => {CONTROLLER}.setLayer(layer)")
    style = f"(...style) => {{ {CONTROLLER}.setStyle(...style); }}"
    _in_page(partial(gr.on, _style_inputs(tab)), tab.pick(*STYLE), None, style)
    heads = {**tab.event(h.show_heads, server), "outputs": tab.heads_img}
    tab.api_buttons["heads"].click(**heads, api_name="heads", **CHEAP)
    restyled = tab.pick("heads_img", *ev.STYLE_VIEWS)
    tab.api_buttons["restyle"].click(**tab.event(h.restyle, server), outputs=restyled, api_name="restyle", **CHEAP)
    redrawn = {"api_visibility": "private", "trigger_mode": "always_last", **CHEAP}
    shown = tab.pick(*ev.STYLE_VIEWS, "prompt_maps", "relevance")
    tab.input_view.restyle(**tab.event(h.restyle_shown, server), outputs=shown, **redrawn)
    slider = tab.event(h.keep_slider)
    tab.show.change(**slider, outputs=tab.keep_percent, api_visibility="private", queue=False, **RAW)
    showing = [tab.show.input, tab.keep_percent.input]
    # so do a CLIP model's word maps, from their kept result, and relevance, from its kept map
    gr.on(showing, **tab.event(h.restyle_words, server), outputs=tab.prompt_maps, **redrawn)
    gr.on(showing, **tab.event(h.restyle_relevance, server), outputs=tab.relevance, **redrawn)


def _style_inputs(tab: ExploreTab) -> list:
    """The .input events of the style controls (STYLE)."""
    return [getattr(tab, name).input for name in STYLE]


def _wire_class(tab: ExploreTab) -> None:
    """Start a class: the page asks the class route (ui/class_route.py), no Gradio event on the server."""
    _in_page(tab.class_start.click, None, None, "() => window.classroom.start()")


def _wire_play(tab: ExploreTab) -> None:
    """Play steps the page's maps and the slider through the layers; Pause, or any change of
    what the maps show (the layer, the query, the style, the image), stops it (ui/js/explore.js)."""
    _in_page(tab.play.click, None, None, f"() => {CONTROLLER}.play()")
    _in_page(tab.pause.click, None, None, f"() => {CONTROLLER}.stop()")


def _wire_more(tab: ExploreTab, server: Server) -> None:
    """The "More views" tabs: a view is drawn when it comes on screen (its tab picked, or the
    accordion opened on it), and again when one of its own controls changes. API clients ask for one
    by its record's `api_name` (ui/explore_views.py), which takes that view's own controls only."""
    for more in ev.MORE.values():
        _wire_more_view(tab, server, more)
    tab.more.expand(  # the tab picked last (`more_tab`) comes on screen; relevance waits for its button
        **tab.event(h.open_more, server),
        outputs=tab.pick("on_screen", "more_tab", *ev.DRAWN_VIEWS),
        api_visibility="private",
        **CHEAP,
    )
    tab.more.collapse(**tab.event(h.hide_more), outputs=tab.on_screen, api_visibility="private", queue=False)


def _wire_more_view(tab: ExploreTab, server: Server, more: ev.MoreTab) -> None:
    """One view's events: its tab's opening and its own controls' change, each reading the record of
    its controls (`more.asked`) and nothing else. Its named endpoint is the change of its own
    controls where it has some (/rollout, /patch_pca), else its tab's opening (/overview, ...)."""
    pool = HEAVY if more.heavy else CHEAP  # a forward pass, not a redraw of the cached one
    named = {"api_name": more.api_name} if more.api_name is not None else {"api_visibility": "private"}
    opened = named
    if more.own_controls:
        # a heavy one's opening gets a private name, which tests/test_ui_concurrency.py checks the pool of
        opened = {"api_visibility": "private", **({"api_name": f"{more.name}_tab"} if more.heavy else {})}
        gr.on(
            [getattr(tab, name).input for name in more.own_controls],
            **tab.event(h.show_view, server, more.name, retyped={"asked": more.asked.kind}),
            outputs=getattr(tab, more.name),
            trigger_mode="always_last",
            **named,
            **pool,
        )
    outputs = tab.pick("on_screen", "more_tab", *([more.name] if more.picture is not None else []))
    select = tab.event(h.show_more, server, more.name, retyped={"asked": more.asked.kind})
    tab.more_tabs[more.name].select(**select, outputs=outputs, **opened, **pool)


def _wire_query(tab: ExploreTab, server: Server) -> None:
    """A click on a patch, the arrows (and their keys), Reset (and Escape) and the query picker
    change the query in the page, which redraws its maps and returns the caption, the picker's
    choice and its own state. /query_patch, /query_token and /reset_query do it on the server."""
    page = tab.pick("query_md", "token", "input_view")
    _in_page(tab.input_view.query, None, page, f"() => {CONTROLLER}.queryOutputs()")
    _in_page(tab.reset.click, None, page, f"() => {CONTROLLER}.reset()")
    _in_page(tab.token.input, tab.token, page, f"(token) => {CONTROLLER}.pick(token)")
    for name, (rows, columns) in MOVES.items():
        _in_page(getattr(tab, name).click, None, page, f"() => {CONTROLLER}.move({rows}, {columns})")
    outputs = {"outputs": tab.pick(*h.QUERY_OUTPUTS), **CHEAP}
    tab.query_button.click(**tab.event(h.choose_patch, server), **outputs, api_name="query_patch")
    tab.api_buttons["query_token"].click(**tab.event(h.choose_token, server), **outputs, api_name="query_token")
    tab.api_buttons["reset_query"].click(**tab.event(h.reset_query, server), **outputs, api_name="reset_query")


def _wire_relevance(tab: ExploreTab, server: Server) -> None:
    tab.relevance_button.click(
        **tab.event(h.show_relevance, server),
        outputs=tab.pick("relevance", "relevance_map"),
        api_name="relevance",
        **HEAVY,
    )


def _wire_words(tab: ExploreTab, server: Server) -> None:
    """/zero_shot: the words typed, scored by a CLIP model, with a map per word."""
    words = {
        **tab.event(h.compare_words, server),
        "outputs": tab.pick("label", "prompt_maps", "prompt_note", "words_result"),
        **WORDS,
    }
    # Checked first, as the lessons' buttons: a refusal (one word) is its toast, and the last
    # words' probabilities, note and maps stay, with no "Error" badge over them.
    check = tab.event(h.check_words, server)
    checked_first(tab.prompts_button.click, check["fn"], check["inputs"], **words, api_name="zero_shot")
    checked_first(tab.prompts.submit, check["fn"], check["inputs"], **words, api_visibility="private")


def _words_after(tab: ExploreTab, server: Server) -> dict[str, Any]:
    """The event arguments that draw a CLIP model's words after an analysis (nothing for other models)."""
    return {
        **tab.event(h.words_after, server),
        "outputs": tab.pick("label", "prompt_maps", "prompt_note", "words_result"),
        "api_visibility": "private",
        **WORDS,
    }


def _wire_exports(tab: ExploreTab, server: Server) -> None:
    """The page exports the query it shows (its `input_view` value); API clients, the session's."""
    export = {"outputs": tab.export_file, **HEAVY}
    for name, handler in (("png", h.make_png), ("gif", h.make_gif)):
        tab.api_buttons[f"export_{name}"].click(**tab.event(handler, server), **export, api_name=f"export_{name}")
    tab.export_png.click(**tab.event(h.export_page_png, server), **export, api_visibility="private")
    tab.export_gif.click(**tab.event(h.export_page_gif, server), **export, api_visibility="private")


def _wire_models(tab: ExploreTab, server: Server, analysis: dict[str, Any]) -> None:
    # .change, not .input: the checkpoint upload and the Train tab switch models by setting the picker.
    switched = tab.model_key.change(
        **tab.event(h.load_model, server),
        outputs=tab.pick("current_model", "model_info", "classes", "layer", *ev.MODEL_SWITCHED, "words"),
        api_name="load_model",
        show_progress="full",
        **HEAVY,
    )
    switched.success(**analysis).success(**_words_after(tab, server))
    # The picker's value, not {field: value}: a plain function, its inputs read from its signature.
    switched.failure(common.keep_model, tab.inputs(common.keep_model), tab.model_key, api_visibility="private")
    # Choices only, never the value: the picker says what is on this machine now, and loads nothing.
    picker = {"api_visibility": "private", "show_progress": "hidden", "queue": False}
    switched.then(**tab.event(h.model_choices, server), outputs=tab.model_key, **picker)
    tab.checkpoint.upload(
        **tab.event(h.upload_checkpoint, server),
        outputs=tab.model_key,
        api_name="upload_checkpoint",
        **concurrency.HEAVY,
    )


def build_explore_tab(server: Server) -> ExploreTab:
    """The Explore tab inside the current Blocks; the Train tab uses its model picker."""
    tab = layout(server.catalog, classes=server.settings.classes.classes > 0)
    analysis = _wire_analysis(tab, server)
    _wire_views(tab, server)
    _wire_play(tab)
    _wire_class(tab)
    _wire_query(tab, server)
    _wire_exports(tab, server)
    _wire_relevance(tab, server)
    _wire_words(tab, server)
    _wire_more(tab, server)
    _wire_models(tab, server, analysis)
    return tab
