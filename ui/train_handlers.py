"""Handlers of the Train tab: named inputs in, `{field: value}` out (see ui/binding.py), around
`training.registry.JobRegistry` (which knows nothing of Gradio), the server's `runs`.

Each visitor (browser session or gradio_client) sees, stops and downloads only their own
run; a server-wide limit says "busy" when it is reached (docs/security.md). ui/train.py binds
each handler to the tab's `TrainTab` and the server's context (`ui.common.Server`: the runs,
the catalogue, the settings, the pictures' text size).

On a ZeroGPU Space no thread trains: runs go chunk by chunk (`ui.zerogpu.gpu_chunks`), each in
the platform's GPU worker, each started by a status poll of the visitor (docs/training.md,
"Chunks on ZeroGPU"). Everywhere else a background thread trains, as ever.
"""

from __future__ import annotations

import json
import logging
import math
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr
from PIL import Image

import vit
from explorer import compute, run_views
from explorer.catalog import ModelCatalog, ModelUnavailable, no_internet
from training.budget import (
    MAX_EVAL_BATCH,
    MemoryPlan,
    TrainingTooBig,
    data_shape,
    fit,
    gb,
    image_set_bytes,
    run_config,
    training_cost,
)
from training.data import cifar10_downloaded
from training.job import JobBusy, JobSnapshot, epoch_message, run_state
from training.registry import TrainLimits, minutes
from vit.messages import markdown_text, quoted
from vit.model import CONFIGS
from vit.pretrained import PRETRAINED

from . import zerogpu
from .checks import number, one_of, visitor_error
from .classroom import ClassError
from .common import Server, network, visitor_of
from .outputs import SERVED
from .pictures import with_alt
from .settings import SPACE_MODEL, ServerSettings, for_visitors, in_markdown

LOG = logging.getLogger(__name__)

POLL_S = 1.0  # the page's poll while its run trains: the progress bar moves every second
# A queued page's poll: its place and wait stay true, and its polls say the page is open (a
# silent queued page gives its place up after `TrainLimits.idle_s`, a closed one at once).
QUEUE_POLL_S = 5.0
# What this browser shows: (epochs, probes, loss readings, checkpoint listed, seconds to the next
# poll, 0 for none). A fresh page or a just-started run polls: a poll must follow and show its end.
NOTHING_SHOWN = (-1, -1, -1, "", POLL_S)

# The page's run token (ui.train.RUN_TOKEN_KEY), as `train_models` makes it and `run_visitor_of` accepts it.
RUN_TOKEN = re.compile(r"[0-9a-f]{32}")  # secrets.token_hex(16): 128 random bits
PRESETS = ["vit_cifar_nano", "vit_cifar_tiny", "vit_cifar_small", "vit_cifar_showcase"]
EXPLORE_TAB = "explore"  # the Explore tab's id in ui/app.py
STATE_COLOURS = {
    "running": "#2563eb",
    "waiting": "#7c3aed",
    "queued": "#7c3aed",
    "stopped": "#d97706",
    "failed": "#dc2626",
    "finished": "#16a34a",
}

# What a ZeroGPU visitor's GPU time buys fine-tuning SPACE_MODEL on CIFAR-10. Measured on one H100
# (bench/gpu_tasks.py): this trainer's step on ViT-S/16 at 224 px, batch 64, eager, 1,512 images a
# second, 41 TFLOP/s; scaled to a ZeroGPU slice's 60 of the H100's 132 SMs (spaces/zero/configs.json).
SLICE_TRAIN_FLOPS = 18e12
CIFAR10_TRAIN = 45_000  # CIFAR-10's 50,000 training images less the 5,000 held out for validation
CHUNK_OVERHEAD_S = 10  # of each chunk: loading data and model, and the save margin (assumed)


def fine_tune_estimate(model: str = SPACE_MODEL, seconds: tuple[int, ...] = (60, 120)) -> str:
    """Markdown: images a second and epochs of CIFAR-10 that GPU time buys, with the arithmetic."""
    config = CONFIGS[PRETRAINED[model].config]
    tokens = (config.image_size // config.patch_size) ** 2 + 1
    forward = compute.forward_flops(config, tokens)
    rate = SLICE_TRAIN_FLOPS / (3 * forward)  # backward ≈ twice the forward pass
    chunk = compute.gpu_seconds(zerogpu.CHUNK_S)
    chunks = 300 // chunk
    trained = chunks * (zerogpu.CHUNK_S - CHUNK_OVERHEAD_S)
    items = (
        f"- {s} s of training ≈ {rate * s:,.0f} images ≈ {rate * s / CIFAR10_TRAIN:.1f} epochs "
        f"of {CIFAR10_TRAIN:,} images"
        for s in (*seconds, trained)
    )
    return (
        f"**What your GPU time buys fine-tuning {model}, the model this tab offers first (an estimate from a "
        f"measurement on another GPU; a larger model trains fewer images a second).** {model} at "
        f"{config.image_size} px ({tokens} tokens): {forward / 1e9:.1f} GFLOP a forward pass, so ≈ 3 × "
        f"{forward / 1e9:.1f} = {3 * forward / 1e9:.1f} GFLOP to train on one image. This trainer sustained "
        f"41 TFLOP/s on a whole H100; the Space's share of a GPU is 60 of its 132 SMs, so about "
        f"{SLICE_TRAIN_FLOPS / 1e12:.0f} TFLOP/s here: ≈ {rate:,.0f} images a second.\n\n" + "\n".join(items) + "\n\n"
        f"A free account's 5 minutes a day are {chunks} chunks of {chunk} s ({zerogpu.CHUNK_S} s of training time "
        f"and {compute.FIXED_GPU_S:g} s to start the GPU); about {CHUNK_OVERHEAD_S} s of each go to loading "
        f"and saving, which leaves the {trained} s of the last line."
    )


class RunOptions(NamedTuple):
    """The run the form asks for, as it sends it (checked by `train_start` and the registry)."""

    model: str
    source: str
    folder: str
    epochs: float
    lr: float
    batch: float
    warmup: float | str | None


def run_options(
    model: str,
    source: str,
    folder: str,
    epochs: float,
    lr: float,
    batch: float,
    warmup: float | str | None = None,  # optional for API clients (the tab sends its box's text, maybe empty)
) -> RunOptions:
    """The form's controls as one value (for the binding: ui.binding.Controls)."""
    return RunOptions(model, source, folder, epochs, lr, batch, warmup)


def progress_html(done: int, total: int, text: str, state: str = "idle", next_try_s: float = 0.0) -> str:
    """A bar coloured by the run's state, with the state and `text` (escaped) under it; a run
    backing off says when it tries next, a countdown the page counts down itself (COUNTDOWN_JS)."""
    colour = STATE_COLOURS.get(state, "#9ca3af")
    width = 100 * min(done, total) / max(total, 1)
    seconds = math.ceil(next_try_s)
    countdown = f' · next try <span data-countdown="{seconds}">in {seconds} s</span>' if seconds > 0 else ""
    return (
        f'<div style="background:#e5e7eb;border-radius:4px"><div style="width:{width:.1f}%;height:12px;'
        f'background:{colour};border-radius:4px"></div></div>'
        f'<div><b style="color:{colour}">{state}</b>{f" · {for_visitors(text)}" if text else ""}{countdown}</div>'
    )


def progress_text(snap: JobSnapshot) -> tuple[int, int, str]:
    """(done, total, text) of the bar: epochs count from 1, as people do."""
    steps = max(snap.steps_per_epoch, 1)
    total = max(snap.epochs, 1) * steps
    done = min(snap.epoch * steps + snap.step, total)
    if snap.place:
        return done, total, queue_text(snap)
    if not snap.running:  # a stopped or failed run's bar stops where the run did
        return total if run_state(snap) == "finished" else done, total, "" if snap.error else snap.message
    epoch = f"epoch {min(snap.epoch + 1, snap.epochs)} of {snap.epochs}"
    if not snap.steps_per_epoch:  # data and model still loading: the number of steps is not known yet
        return done, total, f"{epoch}, preparing…"
    return done, total, f"{epoch}, step {snap.step} of {steps}"


def queue_text(snap: JobSnapshot) -> str:
    """A queued run's place and estimated wait, in a person's words (1 is next)."""
    wait = f"about {minutes(snap.wait_s)}" if snap.wait_s else "any moment"
    return f"place {snap.place} in the queue for a run slot, estimated wait {wait}; {snap.message}"


def describe(snap: JobSnapshot) -> str:
    """Markdown status of the run: device, error (escaped); the running run's message and last
    epoch. An ended run's message, with its last epoch's numbers, is on its progress bar
    (`progress_text`), so neither is said twice; the device says once that a CPU is slow."""
    lines = []
    if snap.device:
        lines.append(f"**device:** {in_markdown(snap.device)}")
    if snap.error:
        lines.append(f"**error:** {in_markdown(snap.error)}")
    # The job's message at an epoch's end says that epoch in other words: the line below says it once.
    elif (
        snap.message
        and snap.running
        and not (snap.history and snap.message == epoch_message(snap.history[-1], snap.epochs))
    ):
        lines.append(in_markdown(snap.message))
    if snap.history and snap.running:
        last = snap.history[-1]
        val = "n/a" if last.get("val_acc") is None else f"{last['val_acc']:.1%}"
        lines.append(f"epoch {last['epoch']}: train loss {last['train_loss']:.3f}, validation accuracy {val}")
    return "\n\n".join(lines)


def model_choices(catalog: ModelCatalog, visitor: str) -> list[tuple[str, str]]:
    """What a visitor may train: presets, pretrained weights on this machine, their own
    checkpoints, then the pretrained weights to download, marked as the Explore pickers mark
    them (offline: "not on this machine, and no internet to download it")."""
    here, away = catalog.pretrained_choices()
    names = [(name, name) for name in PRESETS] + [(label, name) for label, name in here]
    return names + [(f"checkpoint: {label}", key) for key, label in catalog.checkpoints(visitor)] + away


def cifar10_offline(catalog: ModelCatalog) -> bool:
    """Whether CIFAR-10 is not here and cannot come: not downloaded, and this machine offline
    (the catalogue's probe at start, or HF_HUB_OFFLINE)."""
    return catalog.online is False and not cifar10_downloaded()


# What the Train tab says of CIFAR-10 on a machine without the internet, in a teacher's words.
CIFAR10_OFFLINE = (
    "CIFAR-10 cannot be downloaded here: this machine has no internet. Pick “Local folder” and type a folder "
    "with train/<class>/ and test/<class>/ image folders (a few images of each class is enough), or run the "
    "app on a machine that is online."
)


def data_choices(settings: ServerSettings, offline: bool = False) -> list[tuple[str, str]]:
    """The data sources, the one that works here first: the operator's folder, CIFAR-10 once
    downloaded, a typed folder on a local server; CIFAR-10 still to download comes last
    (`offline`: marked as impossible to get here)."""
    operator = [(f"{settings.data_folder.name} (this server's folder)", "operator")] if settings.data_folder else []
    typed = [] if settings.public else [("Local folder", "folder")]
    if cifar10_downloaded():
        return [("CIFAR-10 (downloaded)", "cifar10"), *operator, *typed]
    cifar = "CIFAR-10 (cannot be downloaded here: no internet)" if offline else "CIFAR-10 (downloads once)"
    return [*operator, *typed, (cifar, "cifar10")]


def data_note(settings: ServerSettings, offline: bool = False) -> str:
    """What to do first when no data is on the server: the default must work offline."""
    if settings.data_folder or cifar10_downloaded():
        return ""
    if settings.public:
        return "**First step:** CIFAR-10 downloads on the first run; this server needs the internet for that."
    cifar = "CIFAR-10 cannot be downloaded here (no internet)." if offline else "Or pick CIFAR-10: it downloads once."
    return (
        "**First step:** no training data on this server yet. Type a folder holding `train/<class>/` and "
        f"`test/<class>/` image folders (a few images of each class is enough). {cifar}"
    )


def training_source(catalog: ModelCatalog, settings: ServerSettings, visitor: str, model: str) -> str:
    """The model spec to train from: a preset or pretrained name, or the visitor's own
    checkpoint file; a typed file only on a local server."""
    if model in PRESETS or model in vit.list_pretrained():
        return model
    if model.startswith("checkpoint:"):
        try:
            catalog.check_use(model, visitor)  # the one rule for checkpoint keys, one sentence
        except ModelUnavailable as e:
            raise visitor_error(str(e)) from e
        return str(catalog.checkpoint_file(model))
    if settings.public:
        raise visitor_error("pick a model from the list")
    return model


def warmup_epochs(value: float | str | None, most: int) -> float | None:
    """The warm-up box's epochs: a number (typed text or sent by an API client) from 0 to `most`;
    empty or None for the run's default, 10% of the run."""
    text = value.strip() if isinstance(value, str) else value
    if text in (None, ""):
        return None
    try:
        epochs = float(text) if isinstance(text, str) else text
    except ValueError:
        epochs = text  # `number` names the field and the typed text
    return number("warm-up epochs", epochs, 0.0, float(most))


def training_data(settings: ServerSettings, source: str, folder: str) -> str:
    if source == "cifar10":
        return "cifar10"
    if source == "operator" and settings.data_folder is not None:
        return str(settings.data_folder)
    if source == "folder" and not settings.public:
        if not (folder or "").strip():
            raise visitor_error("Enter the folder that holds train/ and test/ class folders.")
        return folder.strip()
    raise visitor_error(f"unknown data source {quoted(source)}: pick one from the list")


def memory_plan(
    limits: TrainLimits, spec: str, data: str, epochs: object, batch: object, lr: object
) -> tuple[MemoryPlan, str]:
    """The batch sizes a run gets within the server's memory budget for one run, estimated before
    it starts (`training.budget`), and a sentence for the status when the batch asked was scaled
    down. ValueError, in a teacher's words, when even one image at a time would not fit, or the
    run's checkpoints would not fit the runs folder's budget."""
    _, asked, _ = limits.check(epochs=epochs, batch_size=batch, lr=lr)
    images, side = data_shape(data)
    config = run_config(spec, side)
    if config is None:  # a local server's own weights file: not estimated
        return MemoryPlan(asked, MAX_EVAL_BATCH, 0, 0), ""
    cost = training_cost(config)
    name = Path(spec).name if Path(spec).is_file() else spec
    try:
        plan = fit(cost, asked, limits.memory_bytes, limits.disk_budget_bytes, image_set_bytes(images, side))
    except TrainingTooBig as e:
        raise ValueError(f"{name} cannot be trained on this server: {e}. Pick a smaller model.") from e
    if not plan.scaled_down:
        return plan, ""
    name, given = markdown_text(name), gb(limits.memory_bytes)  # a checkpoint's name may be a visitor's words
    if plan.batch == asked:  # only the evaluation was scaled down: the training batch is as asked
        return plan, (
            f"Evaluating {MAX_EVAL_BATCH} images at a time would need about {gb(plan.asked_bytes)} of memory for "
            f"{name} at {cost.image_size} px; this server gives one run {given}, so your run evaluates "
            f"{plan.eval_batch} images at a time (about {gb(plan.memory_bytes)}) and trains {asked} at a time, as "
            "asked.\n\n"
        )
    return plan, (
        f"Batch size {asked} would need about {gb(plan.asked_bytes)} of memory for {name} at {cost.image_size} px; "
        f"this server gives one run {given}, so your run trains {plan.batch} images at a time "
        f"(about {gb(plan.memory_bytes)}) and evaluates {plan.eval_batch} at a time.\n\n"
    )


def weights_here(catalog: ModelCatalog, spec: str) -> None:
    """ValueError, in a teacher's words, for pretrained weights neither on this machine nor
    downloadable (the machine offline, asked once): such a run said "started", then failed with
    "NoInternet: cannot load …" (issue 43). Checked before the run is registered."""
    if spec not in PRETRAINED or vit.is_pretrained_cached(spec):
        return
    if catalog.online is None:
        catalog.check_downloads()
    if catalog.online is False:
        raise ValueError(no_internet(spec))


def run_visitor_of(run_token: str | None, request: gr.Request | None) -> str:
    """The visitor as the Train runs know them (`run_visitor`, the registry's key): the page's run
    token (RUN_TOKEN_KEY), which outlives a reload, else `visitor_of` the request (whose models
    their runs join)."""
    if isinstance(run_token, str) and RUN_TOKEN.fullmatch(run_token):
        return f"run token {run_token}"
    return visitor_of(request)


class PlannedRun(NamedTuple):
    """A run `train_start` may start: whose it is (`visitor`, whose models it joins; `run_visitor`,
    the same visitor as the registry knows them: `run_visitor_of`), what `JobRegistry.start` is
    asked (`asked`), and the memory note said above its status (`said`)."""

    visitor: str
    run_visitor: str
    asked: dict[str, Any]
    said: str


def planned_run(
    server: Server, run: RunOptions, request: gr.Request | None = None, run_token: str | None = None
) -> PlannedRun:
    """Every check of a Train start, starting nothing: the numbers, the data, the model's weights,
    the memory a batch needs, and the registry's room for this visitor's run (`JobRegistry.check_start`).
    A visitor's error for the first that fails. Both Start's first step (`check_start`) and
    `train_start` run it, so the toast and the start refuse the very same runs."""
    runs, catalog, settings = server.runs, server.catalog, server.settings
    visitor, run_visitor = visitor_of(request), run_visitor_of(run_token, request)
    source = one_of("data source", run.source, [value for _, value in data_choices(settings)])
    warmup = warmup_epochs(run.warmup, settings.train.max_epochs)
    spec = training_source(catalog, settings, visitor, str(run.model))
    data = training_data(settings, source, run.folder)
    epochs, lr, batch = run.epochs, run.lr, run.batch
    try:
        if source == "cifar10" and cifar10_offline(catalog):  # after the numbers' checks, which name the field
            runs.limits.check(epochs=epochs, batch_size=batch, lr=lr)
            raise ValueError(CIFAR10_OFFLINE)
        plan, said = memory_plan(settings.train, spec, data, epochs, batch, lr)
        weights_here(catalog, spec)
        runs.check_start(run_visitor, epochs=epochs, batch_size=plan.batch, lr=lr)
    except (JobBusy, ValueError) as e:
        raise visitor_error(str(e)) from e
    asked = {
        "model": spec,
        "data": data,
        "epochs": epochs,
        "batch_size": plan.batch,
        "lr": lr,
        "warmup_epochs": warmup,
        "eval_batch_size": plan.eval_batch,
        "disk_bytes": plan.disk_bytes,
    }
    return PlannedRun(visitor, run_visitor, asked, said)


def train_start(
    server: Server, run: RunOptions, request: gr.Request | None = None, run_token: str | None = None
) -> dict:
    """Start this visitor's training run in the background (the old run's pictures are cleared).
    `warmup`: epochs of warm-up, shorter than the run; empty (None) for 10% of the run. The
    run belongs to the page's `run_token` (`train_models` gives it one), or to the session."""
    planned = planned_run(server, run, request, run_token)
    keep_saved_run(server, planned.run_visitor, planned.visitor)
    try:  # the registry checks again under its lock: another visitor may have taken the last slot since
        server.runs.start(planned.run_visitor, **planned.asked)
    except (JobBusy, ValueError) as e:
        raise visitor_error(str(e)) from e
    snap = server.runs.snapshot(planned.run_visitor)
    state = "queued" if snap.place else "started"
    return {
        "status": f"{state}\n\n{planned.said}{describe(snap)}",
        "progress": progress_html(*progress_text(snap), run_state(snap), snap.next_try_s),
        "seen": (*NOTHING_SHOWN[:4], poll_after(snap)),
        "curves": None,
        "probe": None,
        "checkpoint": None,
        "note": gr.Markdown(visible=False),
        **run_buttons(snap),
    }


def keep_saved_run(server: Server, run_visitor: str, visitor: str) -> None:
    """Before a new run replaces the visitor's saved one: a run waiting with its save ends from it,
    and its model joins the visitor's models, so it stays to download and to explore (the page
    asked "continue it or start a new one" first: `run_buttons`)."""
    saved = server.runs.set_down(run_visitor)
    if saved is None:
        return
    try:
        server.catalog.register(str(saved), visitor, label=run_label(server.runs.snapshot(run_visitor)))
    except ModelUnavailable as e:  # said by the poll that lists it, never hidden; the new run still starts
        LOG.warning("a saved run's model was not listed: %s", e)


def run_buttons(snap: JobSnapshot) -> dict:
    """Start, or, with a saved run, the page's question: "Continue this run at epoch E" (a stopped
    or failed run) beside "Start a new run (your saved run stays downloadable)" (issue 60: Start
    began a new run and orphaned the saved one without a word). A run waiting with its save goes on
    by itself, so it is offered no Continue."""
    saved = snap.resumable or (snap.paused and not snap.place)
    epoch = f"Continue this run at epoch {min(snap.epoch + 1, max(snap.epochs, 1))}"
    return {
        "start": gr.Button(interactive=not (snap.running or snap.place), visible=not saved),
        "start_new": gr.Button(visible=saved),
        "continue_run": gr.Button(epoch, visible=snap.resumable),
    }


def check_start(
    server: Server, run: RunOptions, request: gr.Request | None = None, run_token: str | None = None
) -> None:
    """Start's first step, with no outputs (ui.binding.checked_first): `train_start`'s checks
    (`planned_run`), so a refused run (an empty folder box, a number out of range, a model that
    cannot be had, no room for it) is said in a toast, and the status, progress and pictures stay
    as they were."""
    planned_run(server, run, request, run_token)


def first_step(folder: str) -> dict:
    """The "First step" note says to type a folder: hidden once one is typed."""
    return {"note": gr.Markdown(visible=not (folder or "").strip())}


def train_status(server: Server, seen: tuple, request: gr.Request, run_token: str | None = None) -> dict:
    """This visitor's run; the curves and probe only when they changed since `seen`; a
    finished run's checkpoint joins the visitor's model list. On ZeroGPU the poll first trains
    the run's next chunk, if one is due (it returns after the chunk, up to zerogpu.CHUNK_S + 3 s later)."""
    runs, catalog = server.runs, server.catalog
    visitor, run_visitor = visitor_of(request), run_visitor_of(run_token, request)
    if request is not None and getattr(request, "session_hash", None):
        runs.page_seen(request.session_hash, run_visitor)
    runs.advance(run_visitor)
    snap = runs.snapshot(run_visitor)
    seen = tuple(seen) if seen and len(seen) == len(NOTHING_SHOWN) else NOTHING_SHOWN
    now = (len(snap.history), len(snap.probe), len(snap.step_losses), seen[3], poll_after(snap))
    curves_fresh, probe_fresh = (now[0], now[2]) != (seen[0], seen[2]), now[1] != seen[1]
    listed, refused = gr.skip(), ""
    # A run stopped before its first checkpoint has no file: nothing to list. A file that fails
    # its checks is said, never hidden.
    if not snap.running and snap.checkpoint and seen[3] != snap.checkpoint and Path(snap.checkpoint).is_file():
        try:
            catalog.register(snap.checkpoint, visitor, label=run_label(snap))
            listed = gr.Dropdown(choices=model_choices(catalog, visitor))
        except ModelUnavailable as e:
            refused = f"\n\n**The run's checkpoint was not added to your models:** {in_markdown(str(e))}"
        now = (*now[:3], snap.checkpoint, now[4])
    drawable, drawings = snap.history or snap.step_losses, {}
    curves = drawn(
        lambda: with_alt(
            kept(drawings, "curves", run_views.curves(snap.history, snap.step_losses, server.text_px)),
            run_views.curves_alt(snap.history, snap.step_losses),
        ),
        curves_fresh and bool(drawable),
    )
    probe = drawn(
        lambda: with_alt(
            kept(drawings, "probe", run_views.probe(snap.probe_image, snap.probe, server.text_px)),
            run_views.probe_alt(snap.probe, server.text_px),
        ),
        probe_fresh and bool(snap.probe) and snap.probe_image is not None,
    )
    server.class_runs.polled(run_visitor, snap, drawings)  # a class watching the run: pushed, these pictures too
    # Offered once the run has ended: a running run's model.safetensors is renamed when it ends,
    # and a poll that handed Gradio the old name just then failed (the file gone before Gradio
    # read it, one full test run in six). An ended run's file keeps its name.
    ended_model = None if snap.running else runs.checkpoint(run_visitor)
    return {
        "seen": now,
        "status": describe(snap) + refused,
        "progress": progress_html(*progress_text(snap), run_state(snap), snap.next_try_s),
        "curves": curves,
        "probe": probe,
        "checkpoint": ended_model and SERVED.copy(ended_model),
        "model": listed,
        **run_buttons(snap),
    }


def poll_after(snap: JobSnapshot) -> float:
    """Seconds until the page's next poll, 0 for none: every second while the run trains; when
    it backs off, at its next try (no request a second in between: the countdown counts on the
    page); queued, every QUEUE_POLL_S; a run waiting for a slot, every second."""
    if snap.next_try_s > 0 and (snap.running or snap.paused):
        return max(POLL_S, math.ceil(snap.next_try_s))
    if snap.place:
        return QUEUE_POLL_S
    return POLL_S if snap.running or snap.paused else 0.0


def kept(drawings: dict[str, Image.Image], which: str, image: Image.Image) -> Image.Image:
    """`image`, kept in `drawings` as `which`: a class watching the run is sent the very drawing (ui/class_run.py)."""
    drawings[which] = image
    return image


def run_label(snap: JobSnapshot) -> str:
    """How the model lists name a run's checkpoint (the same name, however it gets listed)."""
    return f"my run, {snap.epoch} epoch{'' if snap.epoch == 1 else 's'}"


def drawn(draw: Callable[[], gr.Image], fresh: bool) -> gr.Image | Any:
    """A picture for the poll, or none (gr.skip) when unchanged or when drawing it fails: a
    picture that cannot be drawn must never keep the run's status and end off the page (a
    too-tall probe once failed every poll, leaving "running" shown after the run had ended)."""
    if not fresh:
        return gr.skip()
    try:
        return draw()
    except Exception:  # noqa: BLE001 - any failure: the status still goes out, the log keeps the traceback
        LOG.exception("a Train tab picture could not be drawn")
        return gr.skip()


def keep_polling(seen: tuple) -> dict:
    """The timer runs while the page shows a running run (kept out of the API: it only drives
    the page). It reads what the last poll showed, never the job again: a run that ended
    between that poll and this call would stop the timer with "running" left on the page."""
    shown = tuple(seen) if seen and len(seen) == len(NOTHING_SHOWN) else NOTHING_SHOWN
    every = float(shown[4] or 0)
    return {"timer": gr.Timer(value=max(every, POLL_S), active=every > 0)}


def ask_to_stop(server: Server, request: gr.Request, run_token: str | None = None) -> dict:
    """Stop asks first, a running epoch being lost work, when there is a run to stop: with none it
    had asked "Yes, stop my run / No, keep training" under an idle status (a teacher's walk)."""
    snap = server.runs.snapshot(run_visitor_of(run_token, request))
    if not (snap.running or snap.paused):
        return {"status": "you have no run to stop", "confirm": gr.Row(visible=False)}
    return {"confirm": gr.Row(visible=True)}


def keep_training() -> dict:
    return {"confirm": gr.Row(visible=False)}


def train_stop(server: Server, request: gr.Request, run_token: str | None = None) -> dict:
    """Stop this visitor's run; it saves its current state as a checkpoint. A run no step was
    training (waiting, queued, between chunks) has ended by the time this returns, and says so;
    the page's poll that follows (ui/train.py) shows "stopped" and its checkpoint at once (it kept
    "stopping…" over "waiting", issue 60); a training one ends at its next step."""
    run_visitor = run_visitor_of(run_token, request)
    if not server.runs.stop(run_visitor):
        return {"status": "you have no run to stop", "confirm": gr.Row(visible=False)}
    snap = server.runs.snapshot(run_visitor)
    said = "stopping: the current state will be saved as a checkpoint" if snap.running else "stopped"
    return {"status": said, "confirm": gr.Row(visible=False)}


def train_share(
    server: Server, quiet: bool, class_member: str, request: gr.Request | None = None, run_token: str | None = None
) -> None:
    """Share this page's run with the class it leads ("Share this run with the class", or, `quiet`, after
    each Start and Continue): its students watch it (ui/class_run.py). `class_member`: what the page keeps
    of its class (ui/js/classroom.js: code and teacher's key), read from the browser's storage by the event's JS.
    A page that leads no class shares nothing (`quiet`) or is told how to."""
    try:
        member = json.loads(class_member or "null")
    except ValueError:
        member = None
    if not (isinstance(member, dict) and member.get("key")):
        if quiet:
            return
        raise visitor_error("This page leads no class: start a class on the Explore tab first, then share the run.")
    try:
        said = server.class_runs.share(
            member.get("code"), member["key"], run_visitor_of(run_token, request), network(server, request)
        )
    except ClassError as e:
        raise visitor_error(str(e)) from e
    gr.Info(said)


def train_page_closed(server: Server, request: gr.Request) -> None:
    """The page closed (Gradio's unload): its queue place and its run's slot are given up at once,
    the run's save kept (`JobRegistry.page_closed`)."""
    if getattr(request, "session_hash", None):
        server.runs.page_closed(request.session_hash)


def check_continue(server: Server, request: gr.Request | None = None, run_token: str | None = None) -> None:
    """Continue's first step, with no outputs (ui.binding.checked_first): a run that may not go on
    now (the server's run slots taken, no stopped run) is said in a toast, and the page stays."""
    try:
        server.runs.check_go_on(run_visitor_of(run_token, request))
    except (JobBusy, ValueError) as e:
        raise visitor_error(str(e)) from e


def train_continue(server: Server, request: gr.Request | None = None, run_token: str | None = None) -> dict:
    """Continue this visitor's stopped run from its save, at the very step it stopped: the same run,
    its curves and probe going on (a new run from its model, "my run, 0 epochs", would start its
    optimiser and learning-rate schedule afresh)."""
    run_visitor = run_visitor_of(run_token, request)
    try:
        server.runs.go_on(run_visitor)
    except (JobBusy, ValueError) as e:
        raise visitor_error(str(e)) from e
    snap = server.runs.snapshot(run_visitor)
    return {
        "status": describe(snap),
        "progress": progress_html(*progress_text(snap), run_state(snap), snap.next_try_s),
        "seen": (*NOTHING_SHOWN[:4], poll_after(snap)),  # what is on the page stays; the poll follows the run
        "checkpoint": None,
        **run_buttons(snap),
    }


def train_models(server: Server, request: gr.Request, run_token: str | None = None) -> dict:
    """On opening the tab: the model picker as the catalogue is now, so weights another tab has
    downloaded since the page was built no longer say "(pretrained, downloads once)" (issue 42),
    and the page's run token, a new one if it has none yet (its first visit, or another server's
    secret, which the browser's copy cannot be read with)."""
    fresh = isinstance(run_token, str) and RUN_TOKEN.fullmatch(run_token)
    token = run_token if fresh else secrets.token_hex(16)
    return {
        "model": gr.Dropdown(choices=model_choices(server.catalog, visitor_of(request))),
        "stored_token": token,
        "run_token": token,
    }


def train_open_in_explore(server: Server, request: gr.Request, run_token: str | None = None) -> dict:
    """Point the Explore tab's model picker at this visitor's latest checkpoint."""
    runs, catalog = server.runs, server.catalog
    visitor, run_visitor = visitor_of(request), run_visitor_of(run_token, request)
    path = runs.checkpoint(run_visitor)
    if path is None:
        raise visitor_error("No checkpoint yet: train (or stop a run) first.")
    try:
        key = catalog.register(path, visitor, label=run_label(runs.snapshot(run_visitor)))
    except ModelUnavailable as e:
        raise visitor_error(str(e)) from e
    return {"explore_model": gr.Dropdown(choices=catalog.choices(visitor), value=key)}


def show_explore() -> dict:
    """After "Open this checkpoint in Explore": go there (kept out of the API: it only moves the page)."""
    return {"tabs": gr.Tabs(selected=EXPLORE_TAB)}
