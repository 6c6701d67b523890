"""The whole page: the four tabs (Explore, Live, Train, Lessons) in one Blocks, with the queue and
the limits on requests, sessions and the cache; launch serves it."""

from __future__ import annotations

import copy
import functools
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import gradio as gr
from gradio.components.base import Component
from starlette.middleware import Middleware
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from explorer import canvas
from explorer.catalog import ModelCatalog
from explorer.explain import ExplanationStore

from .class_route import class_routes
from .common import Server, example_contents
from .explore import HEAD_JS, PAGE_JS_DIR, PAGE_JS_ROUTE, build_explore_tab
from .heap import CollectorPauses, give_back_freed_memory, heap_use, ready_the_collector
from .lessons import build_lessons_tab
from .limits import (
    REFUSALS,
    SESSIONS,
    SESSIONS_SPARE,
    UPLOAD_LINES,
    AppEvents,
    RequestLimits,
    event_files,
    frame_fns,
    live_waiting,
)
from .live import STOPPED_JS, build_live_tab
from .outputs import UPLOADS, forget_deleted_files
from .rows_route import rows_route
from .sessions import SessionShares, keep_waiting_sessions
from .settings import ServerSettings
from .train import COUNTDOWN_JS, PageTabs, build_train_tab, wire_page
from .train_handlers import EXPLORE_TAB

MAX_UPLOAD = "20mb"
# Legible on a projector: no text under 12 px (Gradio draws small buttons, slider ends and
# captions at 10-12 px), arrow glyphs large, a one-line title, the upload prompt wrapped (not
# cut). On a phone (issue 27) the title takes the whole width and breaks between words, the Live
# button stays one line high under it, and every picture (issue 42: the logit lens, distance, PCA)
# keeps its drawn size and scrolls sideways under a cue ("swipe"), instead of shrinking its text to
# a few pixels; a model picker, and each control of a `phone-lines` row (the PCA's checkboxes, whose
# labels were cut), takes a line of its own, so that its words show whole. A 1280 x 720
# projector at 150 % browser zoom (853 x 480 CSS px) or a small landscape screen keeps the model
# input and the head maps side by side on the first screen, sized to its height, with the image
# and the examples under them (the three columns had dropped to two and the maps off the screen).
CSS = """
#title h1 { font-size: 24px; margin: 0; }
.arrow { font-size: 22px !important; line-height: 1; }
.gradio-container button, .gradio-container span, .gradio-container label { font-size: max(12px, 1em); }
#examples .gallery { gap: 6px; }
#examples .gallery-item .container { width: 46px; height: 46px; }
#examples .gallery-item img { width: 100%; height: 100%; object-fit: cover; }
/* Explore's model picker, at the top of the image column: compact, so that the top predictions stay
   on a 1280x720 screen under it (its name keeps the column's whole width). */
#model-picker { padding: 6px 10px; }
#model-picker [data-testid="block-info"] { margin-bottom: 4px; }
#upload p, #lesson-image p { white-space: normal; overflow: visible; text-overflow: clip; text-align: center; }
.swipe-cue { display: none; }
/* The pictures the page draws (ui/js/): as gr.Image shows one, never enlarged, in a box
   330 px high that fits the input and the head maps on a 1280x720 screen with the upload. */
.page-frame { display: flex; justify-content: center; align-items: center; height: 330px; }
.page-frame img { max-width: 100%; max-height: 100%; object-fit: scale-down; cursor: crosshair; }
#heads .page-frame img { cursor: default; }
/* The head maps' box grows to a picture taller than 330 px (a model with registers, whose tiles
   have a caption line per prefix token), which it would otherwise shrink, words and all. */
#heads .page-frame { height: auto; min-height: 330px; position: relative; }
/* The captions' buttons, for the keyboard (ui/js/pointing.js): seen only when one has the focus, and the mouse
   passes through them to the picture, where a click on a caption points at its head the same way. */
.head-points, .head-points button { position: absolute; pointer-events: none; }
.head-points button { background: none; border: 0; padding: 0; margin: 0; min-width: 0; }
.head-points button:focus-visible { outline: 3px solid var(--color-accent); outline-offset: 1px; }
/* CLIP's maps (ui/pictures.word_maps) at their drawn size, as many a line as fit (on a phone, one
   a line): Gradio's gallery fits each into a square box with its alt text as a caption over the
   map's bottom, and Gradio 6 wraps each in a .gallery-item the row's whole width, in a box 450 px
   high that scrolls on its own (the five maps had stood one a line, only the first in view). */
.gradio-container .word-maps .grid-wrap { height: auto; min-height: 0; max-height: none; overflow-y: visible; }
.gradio-container .word-maps .grid-wrap { padding: 0; }  /* a 322-px map fits a phone's 326-px column */
.gradio-container .word-maps .grid-container { display: flex; flex-wrap: wrap; align-items: flex-start; }
.gradio-container .word-maps .gallery-item { flex: none; width: auto; height: auto; }
.gradio-container .word-maps .thumbnail-item { flex: none; width: auto; height: auto; aspect-ratio: auto; }
.gradio-container .word-maps .thumbnail-lg > img { width: auto; height: auto; max-width: none; object-fit: none; }
.gradio-container .word-maps .caption-label { display: none; }
/* Live's pictures (ui/live.py, drawn by ui/js/live.js) at their drawn size, side by side where they fit;
   the head maps wrap their tiles to the frame's width, as Explore's do (on a phone, the input and rollout scroll). */
.live-frame { display: flex; flex-wrap: wrap; gap: 8px; align-items: flex-start; }
.live-frame > div { max-width: 100%; }
.live-frame canvas { display: block; max-width: 100%; height: auto; }
.maps-status { margin: 4px 0 0 0; }
.maps-status:empty { display: none; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
body:not(.playing-layers) #pause, body.playing-layers #play { display: none; }  /* ui/js/explore.js plays */
/* Class mode (ui/explore.py's CLASS_PANEL): the code read from the back of a room, the QR code beside it. */
#class-row { align-items: center; }
#class-start[hidden] { display: none; }
.class-panel .class-code { font: 700 64px monospace; letter-spacing: 0.15em; margin: 0; }
.class-panel .class-reach { font-weight: 700; color: var(--error-text-color); }
.class-panel .class-reach:empty { display: none; }
.class-panel canvas { display: block; width: 240px; height: 240px; image-rendering: pixelated; }
.class-panel button { padding: 4px 12px; margin: 2px; border: 1px solid var(--border-color-primary); }
.class-panel .class-notice:empty { display: none; }
/* A student's banner, always in sight, over the page, with its way back: at the foot of the left column, under the
   examples, where a student's page on the teacher's image shows nothing (at the top right it covered the head maps'
   top row on a 1280 x 720 laptop); its notices at the bottom right. */
.class-panel .class-student, .class-panel .class-notice { position: fixed; bottom: 8px; right: 8px; z-index: 50;
  max-width: 360px; padding: 8px 12px; background: var(--background-fill-primary);
  border: 2px solid var(--color-accent); border-radius: 8px; }
.class-panel .class-student { right: auto; left: 8px; max-width: 300px; max-height: 45vh; overflow-y: auto; }
.class-panel .class-notice { bottom: 64px; }
/* Over the page, they never take its taps: a tap on a patch under the banner still picks that patch (on a phone it
   covered the map, and the tap went to the banner); only the way back, shown while exploring alone, takes one. */
.class-panel .class-student, .class-panel .class-notice { pointer-events: none; }
.class-panel .class-student button { pointer-events: auto; }
/* On a phone the banner spans the foot of the screen, at most a third of it, and leaves the maps in sight
   (at the top right it covered the head maps of a 390 x 844 phone); its notices come at the top. */
@media (max-width: 600px) {
  .class-panel .class-student { top: auto; bottom: 8px; left: 8px; right: 8px; max-width: none; max-height: 33vh;
    overflow-y: auto; }
  .class-panel .class-notice { top: 8px; bottom: auto; left: 8px; max-width: none; }
}
.class-panel .class-student[hidden] { display: none; }
/* A student's page while it shows the teacher's image (ui/js/classroom.js): what would speak of the
   student's own image or run on it is hidden, and the panel says the teacher's model and predictions. The
   examples, and the upload while it holds no picture of the student's, stay: one is a way to explore on one's own. */
body.on-teachers-image :is(#upload:has(img), #model-picker, #predictions, #classes, #query-token, #style, #model-info,
  #numbers, #words, #more, #export-png, #export-gif, #export) { display: none !important; }
.class-panel .class-lent[hidden] { display: none; }
/* The class's gallery (ui/js/gallery.js): the server's tiles side by side, small, wrapping. */
#class-gallery[hidden], #class-gallery [hidden] { display: none; }
#class-gallery .cg-tiles { display: flex; flex-wrap: wrap; gap: 8px; }
#class-gallery figure { margin: 0; }
#class-gallery .cg-waiting img { height: 64px; vertical-align: middle; }
/* Train together (ui/train.py's CLASS_RUN_PANEL, ui/js/classrun.js): the teacher's run on a student's Train tab,
   and "Share this run with the class" only on a page that leads a class. */
body:not(.class-lead) #train-share { display: none; }
.class-run[hidden], .class-run img[hidden] { display: none; }
.class-run { border: 2px solid var(--color-accent); border-radius: 8px; padding: 8px 12px; }
.class-run-bar { background: #e5e7eb; border-radius: 4px; }
.class-run-bar > div { height: 12px; background: #2563eb; border-radius: 4px; }
.class-run-pictures { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
.class-run-pictures img { max-width: 100%; height: auto; }
/* The field a code is typed in, beside Start a class; the teacher's More view on a student's page, whole. */
.class-panel .class-typed[hidden], .class-panel .class-more[hidden] { display: none; }
.class-panel .class-typed input { font: 700 18px monospace; text-transform: uppercase; padding: 2px 6px;
  border: 1px solid var(--border-color-primary); }
.class-panel .class-more { margin: 8px 0; } .class-panel .class-more img { max-width: 100%; }
.lesson-class .class-lesson[hidden], #lesson-class-start[hidden] { display: none; }
.lesson-class .class-lesson img { max-width: 100%; } .lesson-class-code:empty { display: none; }
.class-lesson-maps { display: flex; flex-wrap: wrap; gap: 8px; } .class-lesson-maps figure { margin: 0; }
.class-lesson-said dt { font-weight: bold; } .class-lesson-tables td { padding: 2px 8px; }
#lesson-class-start { padding: 4px 12px; border: 1px solid var(--border-color-primary); }
/* Toasts at the bottom of the screen, not over the forms at the top (the Train tab's folder field). */
.toast-wrap { top: auto !important; bottom: var(--size-3); }
@media (max-width: 640px) {
  #header { flex-wrap: wrap; align-items: flex-start; }
  #header > * { flex: 1 1 100% !important; min-width: 0 !important; }
  #title h1 { font-size: 22px; overflow-wrap: normal; word-break: normal; hyphens: none; }
  #open-live { height: auto !important; }
  .swipe-cue { display: block; }
  .wide-picture .image-frame { overflow-x: auto; justify-content: flex-start; }
  .wide-picture img { max-width: none; width: auto; height: auto; }
  .wide-picture .page-frame { height: auto; max-height: none; }
  .wide-picture .page-frame img { max-height: none; }
  /* Not ".gradio-container .word-maps" here: Gradio puts ".gradio-container... .contain" before each
     selector of an @media block, which a .gradio-container inside .contain then never matched. */
  .word-maps .grid-wrap { overflow-x: auto; }
  /* each of Live's pictures scrolls on its own where wider than the screen (the rollout), never the
     head maps, which wrap their tiles to it (ui/js/layout.js) */
  .live-frame > div { overflow-x: auto; }
  .live-frame canvas { max-width: none; }
  .picker, .phone-lines > *, .phone-lines .form > * { flex: 1 1 100% !important; min-width: 100% !important; }
}
@media (min-width: 641px) and (max-width: 1100px) and (max-height: 600px) {
  #header { flex-wrap: nowrap; align-items: center; }
  #title h1 { font-size: 16px; }
  #open-live { height: auto !important; min-width: 0 !important; flex: 0 0 auto !important; }
  .row:has(> .column > #input-view) { flex-wrap: wrap; }
  .row:has(> .column > #input-view) > .column { min-width: 0 !important; flex: 1 1 0 !important; }
  .row:has(> .column > #input-view) > .column:has(#upload) { order: 2; flex: 1 1 100% !important; }
  #input-view .page-frame, #heads .page-frame { height: calc(100vh - 265px) !important; min-height: 0; }
  #input-view img, #heads img { width: auto !important; height: auto !important; max-width: 100%; max-height: 100%; }
  /* A box of fixed height: the head maps keep the server's tiles a row and are shrunk to fit, as
     fewer a row would make them taller and shrink them more (ui/js/explore.js, headsRoom). */
  #heads .page-frame { --maps-shrink: 1; }
}
"""
# The presentation mode (`--present`, docs/app.md): every text at least 18 px at 1280x720, on the
# page (Gradio's size variables, and a floor for the rest) and in the pictures (canvas.PRESENT_TEXT_PX,
# set by build_page), while the input, its grid and the head maps stay on the first screen: the
# head maps' box grows to their taller picture, which it would otherwise shrink.
PRESENT_CSS = """
.gradio-container {
  --text-xxs: 18px; --text-xs: 18px; --text-sm: 18px; --text-md: 18px; --text-lg: 20px; --text-xl: 22px;
  --text-xxl: 24px; --block-label-text-size: 18px; --block-info-text-size: 18px; --block-title-text-size: 18px;
  --button-small-text-size: 18px; --button-medium-text-size: 18px; --button-large-text-size: 20px;
  --input-text-size: 18px; --checkbox-label-text-size: 18px; --section-header-text-size: 18px;
  --prose-text-size: 18px; --table-text-size: 18px;
}
.gradio-container * { font-size: max(18px, 1em); }
#heads .page-frame { height: auto !important; --maps-shrink: 0; }
.class-panel canvas { width: 360px; height: 360px; } /* the class's QR code, read from the back of the room */
"""
PRUNE_EVERY_S = 60
# Gradio records up to 10,000 events for its /monitoring page and, after every event, summarises
# all of them with pandas in a pool thread: 10 ms an event once full, and memory that filled
# over a class period's first 20 minutes (docs/security.md, the soak). The page is off
# (`served_limits`), so Gradio keeps one event's record and never summarises them.
QUIET_MONITORING = {"GRADIO_ANALYTICS_MAX_EVENTS": "1", "GRADIO_ANALYTICS_CACHE_FREQUENCY": str(2**62)}


@functools.cache  # once per process: a second call would wrap the wrapper
def describe_components_once() -> str:
    """Describe each of Gradio's data models once, not once per component built. Gradio builds a
    new component for the session whenever an event updates one's properties (every picture an
    API call returns carries its alt text; an output a handler leaves as it is gets `gr.skip()`,
    an update too) and describes it anew (`Component.api_info`: pydantic's JSON schema of its
    data model, cached only per instance, gradio-app/gradio#11975). Each description cost 1.5 to
    4 ms, and its schema generator left a reference cycle of 82 objects (the generator and 64
    bound methods) that only a full collection frees: 900 a minute in a class period, Python's
    blocks growing between full collections (docs/security.md, issue 56). The description
    depends on the data model alone; each new component gets a copy of the first, so none is
    shared. Returns what was done, for the log."""
    describe = Component.api_info
    described: dict[type, dict[str, Any]] = {}

    @functools.wraps(describe)
    def api_info(self: Component) -> dict[str, Any]:
        model = self.data_model
        if model is not None and getattr(self, "_api_info_cache", None) is None:
            if model in described:
                self._api_info_cache = copy.deepcopy(described[model])
            else:  # the first of its model: described by Gradio, a copy kept for the next
                described[model] = copy.deepcopy(describe(self))
        return describe(self)  # from Gradio's per-instance cache

    Component.api_info = api_info
    return "components: each data model's API description made once, copied to each component Gradio builds"


def server_for(catalog: ModelCatalog, settings: ServerSettings | None = None) -> Server:
    """What the server holds for all its visitors over one model catalogue, within `settings`: the
    store of analyses in its budget, the training runs, the pictures' text size (`settings.present`:
    the presentation mode's)."""
    settings = settings or ServerSettings()
    # the app's examples are public: every network shares their analyses; any other picture's only
    # its own network's sessions do (no visitor learns from the time whether another analysed it)
    store = ExplanationStore(settings.cache_bytes, catalog.serving.request_bytes, public=example_contents())
    text_px = canvas.PRESENT_TEXT_PX if settings.present else canvas.TEXT_PX
    return Server(catalog, store, settings=settings, text_px=text_px)


def build_demo(catalog: ModelCatalog, settings: ServerSettings | None = None) -> gr.Blocks:
    """The app's Blocks (not launched) over one model catalogue, within `settings` (`build_page`)."""
    return build_page(server_for(catalog, settings))


def build_page(server: Server) -> gr.Blocks:
    """The app's Blocks (not launched): the Explore, Live, Train and Lessons tabs over `server`."""
    settings = server.settings
    describe_components_once()  # before the page's components are described
    # analytics off: the app must start and run with no network at all
    # delete_cache: every 10 minutes, drop rendered views and uploads older than an hour
    with gr.Blocks(title="ViT attention explorer", analytics_enabled=False, delete_cache=(600, 3600)) as demo:
        with gr.Row(equal_height=True, elem_id="header"):
            gr.Markdown(
                "# ViT attention explorer: what does each head of a Vision Transformer look at?", elem_id="title"
            )
            open_live = gr.Button(
                "▶ Live: webcam attention", variant="primary", size="sm", scale=0, min_width=200, elem_id="open-live"
            )
        with gr.Tabs(overflow_behavior="wrap") as tabs:
            with gr.Tab("Explore", id=EXPLORE_TAB):
                explore = build_explore_tab(server)
            with gr.Tab("Live", id="live") as live:
                build_live_tab(server, live, tabs, open_live, explore.model_key)
            with gr.Tab("Train") as train:
                train_tab = build_train_tab(server, explore.model_key, PageTabs(tabs, train))
            with gr.Tab("Lessons", elem_id="lessons") as lessons:  # found by class mode (ui/js/classlessons.js)
                build_lessons_tab(server, lessons, explore.image)
        wire_page(demo, train_tab, server)
    for name, value in QUIET_MONITORING.items():  # read when the queue is made
        os.environ.setdefault(name, value)
    # Heavy events share one pool (ui/concurrency.py); the rest keep 2 slots each. Up to 64
    # requests wait, then new ones are refused.
    demo.queue(default_concurrency_limit=2, max_size=64)
    keep_waiting_sessions(demo)  # Gradio's queue dropped a waiting event's session and stopped
    UPLOADS.budget_bytes = settings.uploads_bytes  # the process's one upload folder: set here only
    UPLOADS.protect(demo.blocks.values())
    return demo


def holdings(demo: gr.Blocks, server: Server) -> str:
    """One line for the operator's log: what the server holds in memory against its budgets."""
    store, catalog, mib = server.store, server.catalog, 2**20
    runs = server.runs.running()
    return (
        f"holding: {len(demo.state_holder.session_data)} sessions (at most {SESSIONS}), "
        f"{store.nbytes / mib:.0f} MiB of analyses (at most {store.max_bytes / mib:.0f} MiB), "
        f"{catalog.loaded_bytes() / mib:.0f} MiB of models ({len(catalog.loaded_keys())} loaded), "
        f"{runs} training run{'s' * (runs != 1)} running, {server.classes.held()}"
    )


def keep_within_budgets(demo: gr.Blocks, server: Server) -> threading.Thread:
    """A daemon that, every minute, keeps Gradio's upload folder (uploads and rendered views)
    under its budget (`ServerSettings.uploads_bytes`, set by `build_page`), oldest files first
    (Gradio's own clean-up only bounds their age; uploads are also checked when they reach a
    handler, `UPLOADS.admit`) and Gradio's list of
    the files it served to those still there (`forget_deleted_files`), gives freed memory back,
    prints how many refusals and upload lines the log left out (`ui.limits.REFUSALS`,
    `UPLOAD_LINES`), and (a public server) what it holds for the operator's log."""
    report = server.settings.public
    pauses = CollectorPauses.watch() if report else None

    def run() -> None:
        while True:
            UPLOADS.prune()
            forget_deleted_files(demo)
            give_back_freed_memory()
            for unwritten in (REFUSALS.said(), UPLOAD_LINES.said()):
                if unwritten:
                    print(unwritten, flush=True)
            if report:
                print(holdings(demo, server), flush=True)
                print(heap_use() or "heap: not measured (no glibc)", flush=True)
                print(pauses.said(), flush=True)
            time.sleep(PRUNE_EVERY_S)

    thread = threading.Thread(target=run, name="budgets", daemon=True)
    thread.start()
    return thread


def served_limits(demo: gr.Blocks, trusted_hops: int = 0, routes: Sequence[BaseRoute] = ()) -> dict[str, Any]:
    """`demo.launch` arguments that bound what requests bring and sessions keep (ui/limits.py):
    the request limits as middleware, before Gradio reads a byte, the sessions Gradio keeps, and
    no monitoring page (whose records `QUIET_MONITORING` stops). `trusted_hops`: the proxies in
    front of the server (`ServerSettings.trusted_hops`), which name a request's network. `routes`:
    the app's own routes (the rows route, ui/rows_route.py), served on Gradio's app before its own
    and behind the same middleware."""
    middleware = Middleware(
        RequestLimits,
        uploads=UPLOADS,
        events=AppEvents(frozenset(frame_fns(demo)), event_files(demo), lambda: live_waiting(demo)),
        trusted_hops=trusted_hops,
        sessions=SessionShares(lambda: getattr(demo, "state_holder", None), SESSIONS),
    )
    return {
        "app_kwargs": {"middleware": [middleware], "routes": list(routes)},
        "state_session_capacity": SESSIONS + SESSIONS_SPARE,
        "enable_monitoring": False,  # no /monitoring page: a public server's timings are its own
    }


class PageScripts(StaticFiles):
    """The page's own modules (ui/js/), served as the files they are. Each answer tells the browser
    to ask again next time (an unchanged file is then a 304 by its ETag), so a page never runs an
    updated server's new modules beside an old one from its cache."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers["Cache-Control"] = "no-cache"
        return response


def page_scripts() -> Mount:
    """The route of the page's modules (ui/js/ at PAGE_JS_ROUTE, which ui/explore.py's head imports),
    beside Gradio's routes: ES modules the browser loads as they are, no build step."""
    return Mount(PAGE_JS_ROUTE, app=PageScripts(directory=PAGE_JS_DIR), name="page-js")


def launch(demo: gr.Blocks, server: Server, host: str, port: int, share: bool = False) -> None:
    """Serve `demo`, built over `server` (its settings: budgets, proxies, the presentation mode's
    CSS), and block; torchvision's slow import is paid after the page is up."""
    settings = server.settings
    hops = settings.trusted_hops
    # the app's own routes: the rows the page asks for, class mode's, and the page's own modules
    routes = [rows_route(server), *class_routes(server, hops, listening=host), page_scripts()]
    demo.launch(
        **served_limits(demo, hops, routes),
        server_name=host,
        server_port=port,
        share=share,
        max_file_size=MAX_UPLOAD,
        theme=gr.themes.Soft(),
        head=HEAD_JS + STOPPED_JS + COUNTDOWN_JS,
        css=CSS + (PRESENT_CSS if settings.present else ""),
        prevent_thread_lock=True,
    )
    keep_within_budgets(demo, server)
    # The page is served; now pay for the slow imports before a visitor's first request
    # instead of during it: torchvision (preprocessing), and torch._dynamo, which the first
    # optimizer built imports (torch.optim's constructors do): 3 s on the 2-core machine that
    # the first Start of the Train tab used to wait for.
    import torch._dynamo  # noqa: F401
    import torchvision  # noqa: F401

    print(describe_components_once(), flush=True)  # installed by build_page; said once
    print(ready_the_collector(), flush=True)
    demo.block_thread()
