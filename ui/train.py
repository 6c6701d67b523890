"""The Train tab: its components (`TrainView`), layout, and which event runs which handler of
ui/train_handlers.py (each event's inputs read from its handler's parameters: `ComponentView.event`).

A timer polls the visitor's run once a second while it runs; opening the tab reads the page's
run token and shows the visitor's run (docs/security.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gradio as gr

from explorer.catalog import ModelCatalog

from . import concurrency, zerogpu
from . import train_handlers as h
from .binding import ComponentView, Controls, checked_first
from .common import Server
from .pictures import picture
from .settings import SPACE_MODEL, ServerSettings

POLL_S = 1.0
# A run's owner is the run token the page keeps in the browser's local storage (gr.BrowserState,
# encrypted with the server's secret), not the page's session: after a reload, or on a page
# opened again later, the Train tab finds the visitor's run (issue 44). Another visitor's browser
# holds another token; an API client without one is its session, as before.
RUN_TOKEN_KEY = "vit-explorer-train-run"
STATUS_OUTPUTS = ("seen", "status", "progress", "curves", "probe", "checkpoint", "model", "start", "continue_run")
STARTED_OUTPUTS = ("status", "progress", "seen", "curves", "probe", "checkpoint", "note", "start", "continue_run")
STATUS_SLOTS = 2  # polls at once on the whole server that only read a run (Gradio's default)

RUN = Controls.of(h.RunOptions, h.run_options)


@dataclass(frozen=True)
class TrainView(ComponentView):
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
    continue_run: gr.Button  # shown while the visitor's run is stopped with its save: it goes on from there
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
        continue_run = gr.Button("Continue this run", visible=False, elem_id="train-continue")
    with gr.Row(visible=False) as confirm:
        confirm_stop = gr.Button("Yes, stop my run", variant="stop", size="sm")
        keep_training = gr.Button("No, keep training", size="sm")
    names = ("model", "source", "folder", "epochs", "lr", "batch", "warmup", "start", "stop", "continue_run")
    values = (model, source, folder, epochs, lr, batch, warmup, start, stop, continue_run)
    names, values = (*names, "note", "gpu_time"), (*values, note, gpu_time)
    names, values = (*names, "confirm_stop", "keep_training"), (*values, confirm_stop, keep_training)
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
        "timer": gr.Timer(POLL_S, active=False),
        "seen": gr.State(h.NOTHING_SHOWN),
        "stored_token": gr.BrowserState("", storage_key=RUN_TOKEN_KEY),
        "run_token": gr.State(None),  # the stored token, for the handlers (a State is not an API parameter)
    }


def _wire(view: TrainView, server: Server, train_tab: gr.Tab) -> None:
    # Every step of the poll hides Gradio's status tracker: its "processing 0.3/0.3s" and "queue: 1/1"
    # would come and go over the progress bar once a second.
    polling = {**view.event(h.keep_polling), "outputs": view.pick("timer"), "api_visibility": "private"}
    polling["show_progress"] = "hidden"
    check = view.event(h.check_start, server)
    # preprocess=False: the numbers are checked once, by the registry (TrainLimits.check), naming the field.
    started = checked_first(
        view.start.click,
        check["fn"],
        check["inputs"],
        **view.event(h.train_start, server),
        outputs=view.pick(*STARTED_OUTPUTS),
        api_name="train_start",
        preprocess=False,
    )
    started.success(**polling)
    # A stopped run goes on from its save, the same run: its curves and probe go on.
    go_on = view.event(h.check_continue, server)
    continued = checked_first(
        view.continue_run.click,
        go_on["fn"],
        go_on["inputs"],
        **view.event(h.train_continue, server),
        outputs=view.pick("status", "progress", "seen", "checkpoint", "start", "continue_run"),
        api_name="train_continue",
    )
    continued.success(**polling)
    # Its own queue slot: progress stays live while analyses fill the shared ones.
    watch = {
        **view.event(h.train_status, server),
        "outputs": view.pick(*STATUS_OUTPUTS),
        "show_progress": "hidden",
        "concurrency_id": "train_status",
        # On ZeroGPU a poll may hold a slot for a whole chunk: one more slot per run allowed at once.
        "concurrency_limit": STATUS_SLOTS + (server.settings.train.max_concurrent if server.runs.chunks else 0),
    }
    view.timer.tick(**watch, api_name="train_status").then(**polling)
    redrawn = {"api_visibility": "private", "queue": False, "show_progress": "hidden"}
    # The picker redrawn and the run token read first: the status then shows the visitor's run,
    # after a reload too, and a run still going restarts the timer.
    tokened = train_tab.select(
        **view.event(h.train_models, server, run_token="stored_token"),
        outputs=view.pick("model", "stored_token", "run_token"),
        **redrawn,
    )
    tokened.then(**watch, api_visibility="private").then(**polling)
    view.folder.change(**view.event(h.first_step), outputs=view.pick("note"), api_visibility="private")
    asked = {"outputs": view.pick("status", "confirm"), "api_visibility": "private", "queue": False}
    view.stop.click(**view.event(h.ask_to_stop, server), **asked)
    view.keep_training.click(**view.event(h.keep_training), outputs=view.pick("confirm"), api_visibility="private")
    view.confirm_stop.click(
        **view.event(h.train_stop, server), outputs=view.pick("status", "confirm"), api_name="train_stop"
    )
    opened = view.open_in_explore.click(
        **view.event(h.train_open_in_explore, server),
        outputs=view.pick("explore_model"),
        api_name="train_open_in_explore",
        **concurrency.HEAVY,
    )
    opened.success(**view.event(h.show_explore), outputs=view.pick("tabs"), api_visibility="private")


@dataclass(frozen=True)
class PageTabs:
    """The page's tabs (`all`, whose Explore tab has the id EXPLORE_TAB) and the Train tab in them."""

    all: gr.Tabs
    train: gr.Tab


def build_train_tab(server: Server, explore_picker: gr.Dropdown, tabs: PageTabs) -> TrainView:
    """Build the tab inside the current Blocks. `explore_picker` is the Explore tab's model
    dropdown: "Open in Explore" points it at the visitor's checkpoint and shows that tab.
    Opening the Train tab shows the visitor's run (in shared mode, the one run)."""
    pointed = {"explore_model": explore_picker, "tabs": tabs.all}
    view = TrainView(**_options(server.catalog, server.settings), **_monitor(), **pointed)
    _wire(view, server, tabs.train)
    return view
