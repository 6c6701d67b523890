"""The Train tab: its components (`TrainTab`), layout, and which event runs which handler of
ui/train_handlers.py (each event's inputs read from its handler's parameters: `TabComponents.event`).

A timer polls the visitor's run once a second while it runs, less often while it waits (at its
next try, or every few seconds in the queue); opening the page, on any tab, and opening the tab
read the page's run token and show the visitor's run, which goes on by itself (docs/security.md).
Closing the page gives its queue place and its run slot up (`wire_page`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import gradio as gr

from explorer.catalog import ModelCatalog

from . import concurrency, zerogpu
from . import train_handlers as h
from .binding import Controls, TabComponents, checked_first
from .common import Server
from .pictures import picture
from .settings import SPACE_MODEL, ServerSettings

POLL_S = h.POLL_S
# A run's visitor is the run token the page keeps in the browser's local storage (gr.BrowserState,
# encrypted with the server's secret), not the page's session: after a reload, or on a page
# opened again later, the Train tab finds the visitor's run (issue 44). Another visitor's browser
# holds another token; an API client without one is its session, as before.
RUN_TOKEN_KEY = "vit-explorer-train-run"
BUTTONS = ("start", "start_new", "continue_run")  # ui.train_handlers.run_buttons
STATUS_OUTPUTS = ("seen", "status", "progress", "curves", "probe", "checkpoint", "model", *BUTTONS)
STARTED_OUTPUTS = ("status", "progress", "seen", "curves", "probe", "checkpoint", "note", *BUTTONS)
# The countdown of a run backing off ("next try in 45 s"), counted on the page: its polls wait for
# the try (ui.train_handlers.poll_after), so the server sends no number a second. Each new
# countdown element starts from the seconds the server wrote into it.
COUNTDOWN_JS = """<script>
setInterval(() => {
  for (const el of document.querySelectorAll("[data-countdown]")) {
    el.dataset.shownAt ||= String(Date.now());
    const left = Math.ceil(Number(el.dataset.countdown) - (Date.now() - Number(el.dataset.shownAt)) / 1000);
    el.textContent = left > 0 ? `in ${left} s` : "now";
  }
}, 1000);
</script>"""
STATUS_SLOTS = 2  # polls at once on the whole server that only read a run (Gradio's default)
# What the page keeps of its class (ui/js/classroom.js's KEPT: a teacher's code and key), read in the
# browser for `h.train_share`: the key never leaves the teacher's page but to the server, as the class's own
# requests send it; the run token (a gr.State) is filled in by the server.
SHARE_JS = "(member, token) => [window.localStorage.getItem('vit-class') || '', token]"

RUN = Controls.of(h.RunOptions, h.run_options)
# Train together (issue 59; ui/js/classrun.js fills it in, as text only): on a student's page, the run the
# teacher shares with the class, its state in a sentence, its progress and the pictures the teacher's tab shows.
CLASS_RUN_PANEL = """<div class="class-run" hidden role="region" aria-label="The teacher's training run">
<h3>The teacher's training run</h3>
<p>Your class watches the run your teacher trains: you cannot stop or change it. Your own runs are below.</p>
<p class="class-run-said" role="status"></p>
<div class="class-run-bar"><div></div></div>
<div class="class-run-pictures"><img class="class-run-curves" hidden alt=""><img class="class-run-probe" hidden alt="">
</div></div>"""
CLASS_RUN_JS = "window.pageMaps.then(() => window.classRun.attach(element));"


@dataclass(frozen=True)
class TrainTab(TabComponents):
    """Every component of the Train tab, by name."""

    controls: ClassVar = (RUN,)

    model: gr.Dropdown
    source: gr.Radio
    folder: gr.Textbox
    note: gr.Markdown  # the "First step" note: hidden once a folder is typed or a run starts
    gpu_time: gr.Markdown  # on ZeroGPU, what a visitor's GPU time buys (an estimate)
    epochs: gr.Number
    lr: gr.Number
    batch: gr.Number
    warmup: gr.Textbox  # a Number cannot be empty: Gradio draws None as 0, which means "no warm-up"
    start: gr.Button
    stop: gr.Button
    start_new: gr.Button  # with a saved run, instead of Start: a new run, the saved one kept
    continue_run: gr.Button  # shown while the visitor's run is stopped with its save: it goes on from there
    share: gr.Button  # "Share this run with the class": shown on a page leading a class (ui/js/classrun.js)
    class_member: gr.Textbox  # hidden: the page's class as SHARE_JS reads it
    confirm: gr.Row  # "really stop?", shown by Stop
    confirm_stop: gr.Button
    keep_training: gr.Button
    status: gr.Markdown
    progress: gr.HTML
    curves: gr.Image
    probe: gr.Image
    checkpoint: gr.File
    open_in_explore: gr.Button
    timer: gr.Timer
    seen: gr.State
    stored_token: gr.BrowserState  # the run token, in the browser's local storage
    run_token: gr.State  # the same, read from there when the tab opens
    explore_model: gr.Dropdown  # the Explore tab's picker, which "Open in Explore" points at the run
    tabs: gr.Tabs  # the page's tabs, to show Explore


@dataclass(frozen=True)
class Defaults:
    """What the tab offers first: a small model from scratch; on ZeroGPU, fine-tuning the
    Space's ImageNet model on CIFAR-10 for as long as a free visitor's GPU time lasts."""

    model: str = "vit_cifar_nano"
    source: str | None = None  # None: the first data source that works here
    epochs: int = 5
    lr: float = 1e-3

    @classmethod
    def here(cls) -> Defaults:
        return cls(SPACE_MODEL, "cifar10", 2, 1e-4) if zerogpu.ON_ZEROGPU else cls()


def _options(catalog: ModelCatalog, settings: ServerSettings) -> dict[str, Any]:
    first = Defaults.here()
    with gr.Row():
        model = gr.Dropdown(
            h.model_choices(catalog, "*"),
            value=first.model,
            allow_custom_value=not settings.public,  # a local user may type a weights file
            label="Model: a preset (from scratch), pretrained weights (fine-tune) or a checkpoint",
            elem_classes="picker",
        )
        choices = h.data_choices(settings, h.cifar10_offline(catalog))
        source = gr.Radio(choices, value=first.source or choices[0][1], label="Data")
        folder = gr.Textbox(
            label="Folder with train/<class>/ and test/<class>/ images",
            placeholder="/path/to/data",
            visible=not settings.public,
        )
    note = gr.Markdown(h.data_note(settings, h.cifar10_offline(catalog)), label="First step")
    gpu_time = gr.Markdown(h.fine_tune_estimate() if zerogpu.ON_ZEROGPU else "", visible=zerogpu.ON_ZEROGPU)
    limits = settings.train
    with gr.Row():
        epochs = gr.Number(first.epochs, precision=0, minimum=1, maximum=limits.max_epochs, label="Epochs")
        lr = gr.Number(first.lr, minimum=0, maximum=limits.max_lr, label="Learning rate")
        batch = gr.Number(128, precision=0, minimum=1, maximum=limits.max_batch_size, label="Batch size")
        warmup = gr.Textbox(
            "",
            placeholder="10% of the run",
            label="Warm-up epochs (empty: 10% of the run; 0: none; shorter than the run)",
        )
    with gr.Row():
        start = gr.Button("Start", variant="primary", elem_id="train-start")
        stop = gr.Button("Stop (saves a checkpoint)", variant="stop")
        start_new = gr.Button(
            "Start a new run (your saved run stays downloadable)", visible=False, elem_id="train-start-new"
        )
        continue_run = gr.Button("Continue this run", visible=False, elem_id="train-continue")
        share = gr.Button("Share this run with the class", elem_id="train-share")
    class_member = gr.Textbox(visible=False)
    with gr.Row(visible=False) as confirm:
        confirm_stop = gr.Button("Yes, stop my run", variant="stop", size="sm")
        keep_training = gr.Button("No, keep training", size="sm")
    names = ("model", "source", "folder", "epochs", "lr", "batch", "warmup", "start", "stop", "continue_run")
    values = (model, source, folder, epochs, lr, batch, warmup, start, stop, continue_run)
    names, values = (*names, "note", "gpu_time", "start_new"), (*values, note, gpu_time, start_new)
    names, values = (*names, "confirm_stop", "keep_training"), (*values, confirm_stop, keep_training)
    names, values = (*names, "share", "class_member"), (*values, share, class_member)
    return dict(zip(names, values, strict=True)) | {"confirm": confirm}


def _monitor() -> dict[str, Any]:
    # The run's state and its results side by side, under the form: the checkpoint's download
    # and "Open in Explore" were ~3,600 px down on a phone, under the pictures.
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            status = gr.Markdown(label="Training status", elem_id="train-status")
            progress = gr.HTML(h.progress_html(0, 1, "no run yet"), label="Progress", elem_id="train-progress")
        with gr.Column(scale=2, min_width=240):
            checkpoint = gr.File(label="Checkpoint of your run (download)", height=70, elem_id="train-checkpoint")
            open_in_explore = gr.Button("Open this checkpoint in Explore")
    with gr.Row():
        with gr.Column():
            curves = picture("**Loss and accuracy**", "Training loss and accuracy: no run yet", elem_id="curves")
        with gr.Column():
            probe = picture(
                "**Probe image**: per-head CLS attention (last layer), before training and after each epoch",
                "Probe image: no run yet",
                elem_id="probe",
            )
    return {
        "status": status,
        "progress": progress,
        "curves": curves,
        "probe": probe,
        "checkpoint": checkpoint,
        "open_in_explore": open_in_explore,
        "timer": gr.Timer(h.POLL_S, active=False),
        "seen": gr.State(h.NOTHING_SHOWN),
        # Rendered on the page, not in this tab (`wire_page`): a tab's components mount when it is first
        # opened, so at the page's load the token read "" and a new one replaced the stored one.
        "stored_token": gr.BrowserState("", storage_key=RUN_TOKEN_KEY, render=False),
        "run_token": gr.State(None),  # the stored token, for the handlers (a State is not an API parameter)
    }


def _polling(tab: TrainTab) -> dict[str, Any]:
    """The event that sets the timer after a poll (`h.keep_polling`). Every step of the poll hides
    Gradio's status tracker: its "processing 0.3/0.3s" and "queue: 1/1" would come and go over the
    progress bar once a second."""
    polling = {**tab.event(h.keep_polling), "outputs": tab.pick("timer"), "api_visibility": "private"}
    return polling | {"show_progress": "hidden"}


def _watch(tab: TrainTab, server: Server) -> dict[str, Any]:
    """The status poll (`h.train_status`), in its own queue slots: progress stays live while
    analyses fill the shared ones."""
    return {
        **tab.event(h.train_status, server),
        "outputs": tab.pick(*STATUS_OUTPUTS),
        "show_progress": "hidden",
        "concurrency_id": "train_status",
        # On ZeroGPU a poll may hold a slot for a whole chunk: one more slot per run allowed at once.
        "concurrency_limit": STATUS_SLOTS + (server.settings.train.max_concurrent if server.runs.chunks else 0),
    }


def show_run(trigger: Callable[..., Any], tab: TrainTab, server: Server) -> None:
    """On `trigger` (the page's load, the tab's select): the picker redrawn and the run token read
    first, then the status shows the visitor's run, after a reload too, and a run still going, or
    waiting to go on, restarts the timer."""
    tokened = trigger(
        **tab.event(h.train_models, server, run_token="stored_token"),
        outputs=tab.pick("model", "stored_token", "run_token"),
        api_visibility="private",
        queue=False,
        show_progress="hidden",
    )
    tokened.then(**_watch(tab, server), api_visibility="private").then(**_polling(tab))


def _shared(tab: TrainTab, server: Server, quiet: bool) -> dict[str, Any]:
    """The event that shares the page's run with the class it leads (`h.train_share`): on its button, and
    `quiet` after each Start and Continue, so a teacher leading a class has nothing more to press."""
    shared = {**tab.event(h.train_share, server, quiet), "js": SHARE_JS, "api_visibility": "private"}
    return shared | {"show_progress": "hidden", **concurrency.CHEAP}


def _wire(tab: TrainTab, server: Server, page_tab: gr.Tab) -> None:
    polling = _polling(tab)
    tab.share.click(**_shared(tab, server, quiet=False))
    check = tab.event(h.check_start, server)
    # preprocess=False: the numbers are checked once, by the registry (TrainLimits.check), naming the field.
    # "Start a new run" is Start's other wording, shown when the visitor has a saved run (h.run_buttons).
    for button, api_name in ((tab.start, "train_start"), (tab.start_new, "train_start_new")):
        started = checked_first(
            button.click,
            check["fn"],
            check["inputs"],
            **tab.event(h.train_start, server),
            outputs=tab.pick(*STARTED_OUTPUTS),
            api_name=api_name,
            preprocess=False,
        )
        started.success(**polling)
        started.success(**_shared(tab, server, quiet=True))
    # A stopped run goes on from its save, the same run: its curves and probe go on.
    go_on = tab.event(h.check_continue, server)
    continued = checked_first(
        tab.continue_run.click,
        go_on["fn"],
        go_on["inputs"],
        **tab.event(h.train_continue, server),
        outputs=tab.pick("status", "progress", "seen", "checkpoint", *BUTTONS),
        api_name="train_continue",
    )
    continued.success(**polling)
    continued.success(**_shared(tab, server, quiet=True))
    tab.timer.tick(**_watch(tab, server), api_name="train_status").then(**polling)
    show_run(page_tab.select, tab, server)
    tab.folder.change(**tab.event(h.first_step), outputs=tab.pick("note"), api_visibility="private")
    asked = {"outputs": tab.pick("status", "confirm"), "api_visibility": "private", "queue": False}
    tab.stop.click(**tab.event(h.ask_to_stop, server), **asked)
    tab.keep_training.click(**tab.event(h.keep_training), outputs=tab.pick("confirm"), api_visibility="private")
    stopped = tab.confirm_stop.click(
        **tab.event(h.train_stop, server), outputs=tab.pick("status", "confirm"), api_name="train_stop"
    )
    # At once, the run as it is now: a run that waited has ended, "stopped" with its checkpoint (issue 60).
    stopped.then(**_watch(tab, server), api_visibility="private").then(**polling)
    opened = tab.open_in_explore.click(
        **tab.event(h.train_open_in_explore, server),
        outputs=tab.pick("explore_model"),
        api_name="train_open_in_explore",
        **concurrency.HEAVY,
    )
    opened.success(**tab.event(h.show_explore), outputs=tab.pick("tabs"), api_visibility="private")


@dataclass(frozen=True)
class PageTabs:
    """The page's tabs (`all`, whose Explore tab has the id EXPLORE_TAB) and the Train tab in them."""

    all: gr.Tabs
    train: gr.Tab


def wire_page(demo: gr.Blocks, tab: TrainTab, server: Server) -> None:
    """The page's own events for the Train tab: on opening, on whichever tab, the visitor's run is
    shown and polled, so a run saved while its visitor was away goes on by itself (issue 60: only
    selecting the Train tab again did it); on closing, its queue place and run slot are given up."""
    tab.stored_token.render()  # mounted with the page, so its load reads the stored token
    show_run(demo.load, tab, server)
    demo.unload(tab.bind(h.train_page_closed, server))


def build_train_tab(server: Server, explore_picker: gr.Dropdown, tabs: PageTabs) -> TrainTab:
    """Build the tab inside the current Blocks. `explore_picker` is the Explore tab's model
    dropdown: "Open in Explore" points it at the visitor's checkpoint and shows that tab.
    Opening the Train tab shows the visitor's run (in shared mode, the one run)."""
    pointed = {"explore_model": explore_picker, "tabs": tabs.all}
    gr.HTML(None, html_template=CLASS_RUN_PANEL, js_on_load=CLASS_RUN_JS, elem_id="class-run", padding=False)
    tab = TrainTab(**_options(server.catalog, server.settings), **_monitor(), **pointed)
    _wire(tab, server, tabs.train)
    return tab
