"""The Train tab: Gradio wiring around `training.job.TrainingJob` (which knows nothing of Gradio).

One job per server: training saturates the machine, so a second Start while one runs is
refused with a message. A timer polls the job's snapshot once a second while it runs.
Handlers are module-level functions bound to the tab's `TrainView` and the job.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from PIL import Image

import vit
from explorer import render
from explorer.catalog import ModelCatalog
from explorer.render import MapStyle
from training.job import JobBusy, JobSnapshot, TrainingJob

from .binding import bound
from .checks import number, one_of, whole_number
from .outputs import saved

POLL_S = 1.0
PROBE_PX = 64
NOTHING_SHOWN = (-1, -1)
PRESETS = ["vit_cifar_nano", "vit_cifar_tiny", "vit_cifar_small", "vit_cifar_showcase"]
STATUS_OUTPUTS = ("seen", "status", "progress", "curves", "probe", "checkpoint")
SOURCES = ("cifar10", "folder")


@dataclass(frozen=True)
class TrainView:
    """Every component of the Train tab, by name."""

    model: gr.Dropdown
    source: gr.Radio
    folder: gr.Textbox
    epochs: gr.Number
    lr: gr.Number
    batch: gr.Number
    start: gr.Button
    stop: gr.Button
    status: gr.Markdown
    progress: gr.HTML
    curves: gr.Image
    probe: gr.Image
    checkpoint: gr.File
    open_in_explore: gr.Button
    timer: gr.Timer
    seen: gr.State  # (epochs, probes) this browser already shows: redraw only on change

    def pick(self, *names: str) -> list[gr.components.Component]:
        """The components called `names`, in that order (an event's inputs or outputs)."""
        return [getattr(self, name) for name in names]

    def update(self, **values: Any) -> dict[gr.components.Component, Any]:
        """A handler's result, {component: value}, from values given by component name."""
        return {getattr(self, name): value for name, value in values.items()}


def progress_html(done: int, total: int, text: str) -> str:
    return f'<progress value="{done}" max="{max(total, 1)}" style="width:100%"></progress><div>{text}</div>'


def describe(snap: JobSnapshot) -> str:
    """Markdown status of the job: device (with a note when it is only a CPU), message, last epoch."""
    lines = [f"**job:** {'running' if snap.running else 'not running'}"]
    if snap.device:
        lines.append(f"**device:** {snap.device}")
        if snap.device.startswith("cpu"):
            lines.append("Only a CPU is available: training is slow here, so keep models and data small.")
    if snap.message:
        lines.append(snap.message)
    if snap.error:
        lines.append(f"**error:** {snap.error}")
    if snap.history:
        last = snap.history[-1]
        val = "n/a" if last.get("val_acc") is None else f"{last['val_acc']:.1%}"
        lines.append(f"epoch {last['epoch']}: train loss {last['train_loss']:.3f}, validation accuracy {val}")
    return "\n\n".join(lines)


def probe_picture(snap: JobSnapshot) -> Image.Image:
    """The probe image's per-head CLS attention (last layer), one row per epoch."""
    image = snap.probe_image.permute(1, 2, 0).numpy()
    grid = tuple(snap.probe[0][1].shape[-2:])
    base = render.fit_to_grid(image, grid, PROBE_PX)
    return render.probe_strip(base, [(epoch, maps.numpy()) for epoch, maps in snap.probe], MapStyle())


def _options(catalog: ModelCatalog) -> dict[str, Any]:
    with gr.Row():
        model = gr.Dropdown(
            PRESETS + vit.list_pretrained() + [str(p) for p in catalog.checkpoint_paths()],
            value="vit_cifar_nano",
            allow_custom_value=True,
            label="Model: a preset (from scratch), pretrained weights (fine-tune) or a checkpoint path",
        )
        source = gr.Radio(
            [("CIFAR-10 (downloads)", "cifar10"), ("Local folder", "folder")], value="cifar10", label="Data"
        )
        folder = gr.Textbox(label="Folder with train/<class>/ and test/<class>/ images", placeholder="/path/to/data")
    with gr.Row():
        epochs = gr.Number(5, precision=0, minimum=1, label="Epochs")
        lr = gr.Number(1e-3, minimum=0, label="Learning rate")
        batch = gr.Number(128, precision=0, minimum=1, label="Batch size")
    with gr.Row():
        start = gr.Button("Start", variant="primary")
        stop = gr.Button("Stop (saves a checkpoint)", variant="stop")
    return {
        "model": model,
        "source": source,
        "folder": folder,
        "epochs": epochs,
        "lr": lr,
        "batch": batch,
        "start": start,
        "stop": stop,
    }


def _monitor() -> dict[str, Any]:
    status = gr.Markdown(label="Training status")
    progress = gr.HTML(progress_html(0, 1, "idle"), label="Progress", elem_id="train-progress")
    with gr.Row():
        curves = gr.Image(label="Loss and accuracy", format="png")
        probe = gr.Image(label="Probe image: per-head CLS attention, epoch by epoch", format="png")
    with gr.Row():
        checkpoint = gr.File(label="Checkpoint (download)", height=70)
        open_in_explore = gr.Button("Open this checkpoint in Explore")
    return {
        "status": status,
        "progress": progress,
        "curves": curves,
        "probe": probe,
        "checkpoint": checkpoint,
        "open_in_explore": open_in_explore,
        "timer": gr.Timer(POLL_S, active=False),
        "seen": gr.State(NOTHING_SHOWN),
    }


def train_start(
    view: TrainView,
    job: TrainingJob,
    catalog: ModelCatalog,
    model: str,
    source: str,
    folder: str,
    epochs: float,
    lr: float,
    batch: float,
) -> dict:
    """Start training in the background (one job per server)."""
    source = one_of("data source", source, SOURCES)
    epochs, batch = whole_number("epochs", epochs, 1), whole_number("batch size", batch, 1)
    lr = number("learning rate", lr, 0.0)
    data = "cifar10" if source == "cifar10" else (folder or "").strip()
    if not data:
        raise gr.Error("Enter the folder that holds train/ and test/ class folders.")
    out_dir = catalog.runs_dir / time.strftime("train-%Y%m%d-%H%M%S")
    try:
        job.start(model=model, data=data, epochs=epochs, lr=lr, batch_size=batch, out_dir=str(out_dir))
    except JobBusy as e:
        raise gr.Error(f"A training run is already in progress; stop it first. ({e})") from e
    except ValueError as e:
        raise gr.Error(str(e)) from e
    return view.update(status=f"started: writing to `{out_dir}`\n\n{describe(job.snapshot())}", seen=NOTHING_SHOWN)


def train_status(view: TrainView, job: TrainingJob, seen: tuple[int, int]) -> dict:
    """The job's progress; the curves and probe pictures only when they changed since `seen`."""
    snap = job.snapshot()
    steps = max(snap.steps_per_epoch, 1)
    total = snap.epochs * steps
    if snap.running:
        text = f"epoch {snap.epoch}/{snap.epochs}, step {snap.step}/{snap.steps_per_epoch}"
        done = min(snap.epoch * steps + snap.step, total)
    else:
        text, done = (snap.error or snap.message or "idle"), total
    now = (len(snap.history), len(snap.probe))
    fresh = now != seen
    return view.update(
        seen=now,
        status=describe(snap),
        progress=progress_html(done, total, text),
        curves=saved(render.training_curves(snap.history)) if fresh and snap.history else gr.skip(),
        probe=saved(probe_picture(snap)) if fresh and snap.probe and snap.probe_image is not None else gr.skip(),
        checkpoint=snap.checkpoint if snap.checkpoint and Path(snap.checkpoint).is_file() else None,
    )


def keep_polling(job: TrainingJob) -> gr.Timer:
    """The timer runs while the job does (kept out of the API: it only drives the page)."""
    return gr.Timer(active=job.snapshot().running)


def train_stop(view: TrainView, job: TrainingJob) -> dict:
    """Stop the running job; it saves its current state as a checkpoint."""
    job.stop()
    return view.update(status="stopping: the current state will be saved as a checkpoint")


def train_open_in_explore(job: TrainingJob, catalog: ModelCatalog) -> gr.Dropdown:
    """Point the Explore tab's model picker at the job's latest checkpoint."""
    snap = job.snapshot()
    if not snap.checkpoint:
        raise gr.Error("No checkpoint yet: train (or stop a run) first.")
    return gr.Dropdown(choices=catalog.choices(), value=f"checkpoint:{Path(snap.checkpoint).resolve()}")


def _wire(view: TrainView, job: TrainingJob, catalog: ModelCatalog, explore_picker: gr.Dropdown, tab: gr.Tab) -> None:
    options = view.pick("model", "source", "folder", "epochs", "lr", "batch")
    polling = {"fn": bound(keep_polling, job), "inputs": None, "outputs": view.timer, "api_visibility": "private"}
    # preprocess=False: train_start checks its numbers itself (ui.checks) and names the field.
    started = view.start.click(
        bound(train_start, view, job, catalog),
        options,
        view.pick("status", "seen"),
        api_name="train_start",
        preprocess=False,
    )
    started.success(**polling)
    # Its own queue slot: progress stays live while analyses fill the shared ones.
    watch = {
        "fn": bound(train_status, view, job),
        "inputs": view.seen,
        "outputs": view.pick(*STATUS_OUTPUTS),
        "show_progress": "hidden",
        "concurrency_id": "train_status",
    }
    view.timer.tick(**watch, api_name="train_status").then(**polling)
    tab.select(**watch, api_visibility="private").then(**polling)  # also restarts the timer
    view.stop.click(bound(train_stop, view, job), None, view.status, api_name="train_stop")
    view.open_in_explore.click(
        bound(train_open_in_explore, job, catalog), None, explore_picker, api_name="train_open_in_explore"
    )


def build_train_tab(catalog: ModelCatalog, explore_picker: gr.Dropdown, tab: gr.Tab) -> TrainView:
    """Build the tab inside the current Blocks. `explore_picker` is the Explore tab's model
    dropdown: "Open in Explore" points it at the finished checkpoint. Opening `tab` shows the
    current job, even one started from another browser."""
    view = TrainView(**_options(catalog), **_monitor())
    _wire(view, TrainingJob(), catalog, explore_picker, tab)
    return view
