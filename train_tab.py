"""The Train tab: Gradio wiring around `training.job.TrainingJob` (which knows nothing of Gradio).

One job per server: training saturates the machine, so a second Start while one runs is
refused with a message. A timer polls the job's snapshot once a second while it runs.
"""

from __future__ import annotations

import time
from pathlib import Path

import gradio as gr
from PIL import Image

import vit
from explorer.models import ModelCatalog
from explorer.outputs import saved
from training.job import JobBusy, JobSnapshot, TrainingJob
from vit import render
from vit.render import MapStyle

POLL_S = 1.0
PROBE_PX = 64
NOTHING_SHOWN = (-1, -1)
PRESETS = ["vit_cifar_nano", "vit_cifar_tiny", "vit_cifar_small", "vit_cifar_showcase"]


def progress_html(done: int, total: int, text: str) -> str:
    return f'<progress value="{done}" max="{max(total, 1)}" style="width:100%"></progress><div>{text}</div>'


def describe(snap: JobSnapshot) -> str:
    """Markdown status of the job: device (with a note when it is only a CPU), message, last epoch."""
    lines = []
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


def build_train_tab(catalog: ModelCatalog, explore_picker: gr.Dropdown, tab: gr.Tab) -> None:
    """Build the tab inside the current Blocks. `explore_picker` is the Explore tab's model
    dropdown: "Open in Explore" points it at the finished checkpoint. Opening `tab` shows the
    current job, even one started from another browser."""
    job = TrainingJob()

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
    status = gr.Markdown()
    progress = gr.HTML(progress_html(0, 1, "idle"))
    with gr.Row():
        curves = gr.Image(label="Loss and accuracy", format="png")
        probe = gr.Image(label="Probe image: per-head CLS attention, epoch by epoch", format="png")
    with gr.Row():
        checkpoint = gr.File(label="Checkpoint (download)", height=70)
        open_in_explore = gr.Button("Open this checkpoint in Explore")
    timer = gr.Timer(POLL_S, active=False)

    def start_job(model_name, data_source, data_folder, n_epochs, rate, batch_size):
        data = "cifar10" if data_source == "cifar10" else (data_folder or "").strip()
        if not data:
            raise gr.Error("Enter the folder that holds train/ and test/ class folders.")
        out_dir = catalog.runs_dir / time.strftime("train-%Y%m%d-%H%M%S")
        try:
            job.start(
                model=model_name,
                data=data,
                epochs=int(n_epochs),
                lr=float(rate),
                batch_size=int(batch_size),
                out_dir=str(out_dir),
            )
        except JobBusy as e:
            raise gr.Error(f"A training run is already in progress; stop it first. ({e})") from e
        except ValueError as e:
            raise gr.Error(str(e)) from e
        return f"started: writing to `{out_dir}`\n\n{describe(job.snapshot())}", gr.Timer(active=True), NOTHING_SHOWN

    seen = gr.State(NOTHING_SHOWN)  # (epochs, probes) this browser already shows: redraw only on change
    start.click(start_job, [model, source, folder, epochs, lr, batch], [status, timer, seen], api_name="train_start")

    def poll(shown):
        snap = job.snapshot()
        steps = max(snap.steps_per_epoch, 1)
        total = snap.epochs * steps
        if snap.running:
            text = f"epoch {snap.epoch}/{snap.epochs}, step {snap.step}/{snap.steps_per_epoch}"
            done = min(snap.epoch * steps + snap.step, total)
        else:
            text, done = (snap.error or snap.message or "idle"), total
        now = (len(snap.history), len(snap.probe))
        fresh = now != shown
        return (
            now,
            describe(snap),
            progress_html(done, total, text),
            saved(render.training_curves(snap.history)) if fresh and snap.history else gr.skip(),
            saved(_probe(snap)) if fresh and snap.probe and snap.probe_image is not None else gr.skip(),
            snap.checkpoint if snap.checkpoint and Path(snap.checkpoint).is_file() else None,
            gr.Timer(active=snap.running),
        )

    outputs = [seen, status, progress, curves, probe, checkpoint, timer]
    # Its own queue slot: progress stays live while analyses fill the shared ones.
    watch = dict(fn=poll, inputs=seen, outputs=outputs, show_progress="hidden", concurrency_id="train_status")
    timer.tick(**watch, api_name="train_status")
    tab.select(**watch, api_visibility="private")  # also restarts the timer

    def stop_job():
        job.stop()
        return "stopping: the current state will be saved as a checkpoint"

    stop.click(stop_job, None, status, api_name="train_stop")

    def use_checkpoint():
        snap = job.snapshot()
        if not snap.checkpoint:
            raise gr.Error("No checkpoint yet: train (or stop a run) first.")
        return gr.Dropdown(choices=catalog.choices(), value=f"checkpoint:{Path(snap.checkpoint).resolve()}")

    open_in_explore.click(use_checkpoint, None, explore_picker, api_name="train_open_in_explore")


def _probe(snap) -> Image.Image:
    image = snap.probe_image.permute(1, 2, 0).numpy()
    grid = tuple(snap.probe[0][1].shape[-2:])
    base = render.fit_to_grid(image, grid, PROBE_PX)
    return render.probe_strip(base, [(epoch, maps.numpy()) for epoch, maps in snap.probe], MapStyle())
