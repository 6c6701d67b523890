"""A training run in chunks: each chunk resumes the run from its folder, trains until a time
budget or a number of steps is used up, saves the resumable state and returns a report.

On a ZeroGPU Space a GPU exists only inside one platform call of limited length, made in a
forked worker process (docs/space.md): a run longer than one call is a sequence of chunks.
Everything crosses the fork as files in the run folder (the config before the first chunk,
`last.safetensors` between chunks, a STOP request) and as a `ChunkReport` of plain values and
CPU tensors. A chunk saves its state before it returns, so the next chunk (in this process or
in another) continues bit for bit where it paused: inside an epoch, the engine saves the step,
the running totals and the RNG states with the model and optimizer (`engine.EpochPosition`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor

import vit
from vit.analysis import query_attention

from .config import TrainConfig, describe_device
from .data import DataError, load_split
from .device_data import eval_batch
from .engine import Hooks, Trainer
from .provenance import public_info
from .run_files import LAST, MODEL, RUN_CONFIG, STOP, write_atomically
from .sources import load_source

# Kept free at a chunk's end for what follows its last step: the epoch's validation, the probe
# and two atomic saves (DeiT-S: 88 MB of weights and 176 MB of AdamW state), at most a quarter of
# the budget.
SAVE_MARGIN_S = 8.0


LOG = logging.getLogger(__name__)
# An exception's type as Python writes it, at a message's start ("NoInternet: cannot load …") or
# inside it ("(URLError …)"): a name for a programmer, which the page never shows (issue 42).
_TYPE_NAME = re.compile(r"^[A-Z]\w*: |\b[A-Z]\w*(?:Error|Exception|Warning)\b:? ?")


def plain_message(error: Exception) -> str:
    """What `error`'s message says, without a type's name in it."""
    return _TYPE_NAME.sub("", str(error)).strip()


def failure(error: Exception) -> str:
    """A failed run's error as the page shows it, in a person's words: a DataError's message says
    why and what to do; any other error says what its message says, without its type's name
    ("NoInternet: cannot load …" reached the page, and "KeyError: 'x'"), which the server's log
    keeps, written here with the traceback."""
    if isinstance(error, DataError):
        return str(error)
    LOG.error("a training run failed", exc_info=error)
    said = plain_message(error)
    return f"the run stopped: {said}" if said else "the run stopped for a reason the server's log gives"


class ChunkRefused(RuntimeError):
    """The platform ran no chunk and will not for a while (e.g. the day's GPU time is used up).
    Nothing was lost: `reason` and `advice` are words for a person."""

    def __init__(self, reason: str, advice: str):
        super().__init__(f"{reason}; {advice}")
        self.reason, self.advice = reason, advice


@dataclass
class ChunkReport:
    """What one chunk did, in plain values and CPU tensors (it crosses a process boundary)."""

    epoch: int = 0  # finished epochs
    epochs: int = 0
    step: int = 0  # steps done in the current epoch
    steps_per_epoch: int = 0
    history: list[dict] = field(default_factory=list)  # every finished epoch's record, from the start
    step_losses: list[tuple[float, float]] = field(default_factory=list)  # this chunk's loss readings
    probe_image: Tensor | None = None  # (3, H, W) uint8: the first held-out image
    probe: list[tuple[int, Tensor]] = field(default_factory=list)  # this chunk's (epoch, CLS attention)
    device: str = ""
    finished: bool = False
    stopped: bool = False
    summary: dict = field(default_factory=dict)  # the engine's summary of an ended run (final accuracies)
    checkpoint: str | None = None  # the run's model file, once it has one
    message: str = ""
    error: str | None = None  # the chunk failed: the run cannot go on


def probe_attention(trainer: Trainer, image: Tensor) -> Tensor:
    """The CLS-token attention of `image` (3, H, W) uint8: (L, heads, gh, gw), on the CPU."""
    model = trainer.model
    was_training = model.training
    model.eval()
    with torch.no_grad():
        x = eval_batch(image[None].to(trainer.device), trainer.normalize, trainer.image_size)
        _, maps = model(x, need_weights=True)
    model.train(was_training)
    return query_attention(maps)[0].float().cpu()  # (L, H, gh, gw)


def new_reading(trainer: Trainer, readings: list[tuple[float, float]]) -> tuple[float, float] | None:
    """The trainer's running-loss reading if it is not the last of `readings` (it is refreshed
    every few steps, with no extra host-device sync)."""
    reading = getattr(trainer, "running_loss", None)
    return reading if reading is not None and (not readings or readings[-1] != reading) else None


def start_run(config: TrainConfig) -> Path:
    """Write the run's config into its folder for the first chunk, after reading its data and
    model once here, on the CPU: the data decoded and cached (`training.data`), pretrained
    weights downloaded, a checkpoint checked, so no chunk spends GPU time on them."""
    config.validate()
    load_split(config.data, "train", download=config.download)
    load_source(config.model)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / RUN_CONFIG, json.dumps(config.to_dict()))
    return out


# What the training state records beside the model's own info (engine.Trainer._save_last).
STATE_ONLY = ("optimizer", "scheduler", "rng", "position")


def stopped_model(out: str | Path) -> bool:
    """Write the run's model file from its last saved state, marked stopped, on the CPU: what a
    chunk that reads the STOP file writes (engine.Trainer._save_model), without asking the GPU
    for a chunk to do it (issue 44). False when no state was saved yet (no chunk has run)."""
    last = Path(out) / LAST
    if not last.is_file():
        return False
    model, meta = vit.load_checkpoint(last)
    info = public_info({k: v for k, v in meta.info.items() if k not in STATE_ONLY} | {"stopped": True})
    names, preprocessing = meta.class_names, meta.preprocessing
    vit.save_checkpoint(model, Path(out) / MODEL, class_names=names, preprocessing=preprocessing, **info)
    return True


def request_stop(out: str | Path) -> None:
    """Ask the run's running (or next) chunk to stop at its next step and save the model."""
    write_atomically(Path(out) / STOP, "stop\n")


def stop_requested(out: str | Path) -> Callable[[], bool]:
    """A check of the run's STOP file, cheap enough for every step (one stat)."""
    path = str(Path(out) / STOP)
    return lambda: os.path.exists(path)


class Budget:
    """`should_pause` of one chunk: True after `max_steps` steps, or when one more step as long
    as the longest so far would end inside the save margin of `seconds` (counted from its
    creation, so the chunk's setup counts too). Never before the chunk's first step: every
    chunk moves the run on."""

    def __init__(self, seconds: float | None = None, max_steps: int | None = None):
        now = time.perf_counter()
        self.deadline = None if seconds is None else now + seconds - min(SAVE_MARGIN_S, seconds / 4)
        self.max_steps = max_steps
        self.steps = -1  # steps done before the current call
        self.last: float | None = None
        self.longest = 0.0

    def __call__(self) -> bool:
        now = time.perf_counter()
        if self.last is not None:
            self.longest = max(self.longest, now - self.last)
        self.last, self.steps = now, self.steps + 1
        if self.steps == 0:
            return False
        if self.max_steps is not None and self.steps >= self.max_steps:
            return True
        return self.deadline is not None and now + self.longest > self.deadline


class _Recorder:
    """The chunk's hooks: loss readings, the probe image and its attention after each epoch."""

    def __init__(self) -> None:
        self.step_losses: list[tuple[float, float]] = []
        self.probe: list[tuple[int, Tensor]] = []
        self.probe_image: Tensor | None = None

    def on_start(self, trainer: Trainer) -> None:
        self.probe_image = trainer.val_set.images[0].cpu()  # the same image every epoch
        if trainer.step == 0:  # the run's first chunk: the attention before training
            self.probe.append((0, probe_attention(trainer, self.probe_image)))

    def on_step(self, trainer: Trainer, _step: int) -> None:
        reading = new_reading(trainer, self.step_losses)
        if reading is not None:
            self.step_losses.append(reading)

    def on_epoch(self, trainer: Trainer, _record: dict) -> None:
        self.probe.append((trainer.epoch, probe_attention(trainer, self.probe_image)))

    def report(self, trainer: Trainer, summary: dict, steps: int, seconds: float) -> ChunkReport:
        step = trainer.step - trainer.epoch * trainer.steps_per_epoch
        model = trainer.out / MODEL
        return ChunkReport(
            epoch=trainer.epoch,
            epochs=trainer.config.epochs,
            step=step,
            steps_per_epoch=trainer.steps_per_epoch,
            history=[dict(record) for record in trainer.history],
            step_losses=self.step_losses,
            probe_image=self.probe_image,
            probe=self.probe,
            device=describe_device(trainer.device),
            finished=trainer.final is not None,
            stopped=trainer.stopped,
            summary={} if trainer.paused else summary,
            checkpoint=str(model) if model.is_file() else None,
            message=f"{steps} steps in {seconds:.0f} s; saved at epoch {trainer.epoch + 1}, step {step}",
        )


def train_chunk(
    out_dir: str | Path,
    seconds: float | None = None,
    max_steps: int | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> ChunkReport:
    """Train the run in `out_dir` (made by `start_run`) from its last saved state until
    `seconds` or `max_steps` are used up, the run ends, or a stop is asked for (default: its
    STOP file); save the state and report. A failure comes back as the report's `error`:
    across a fork any other exception would arrive as its class name only."""
    started = time.perf_counter()
    out = Path(out_dir)
    budget = Budget(seconds, max_steps)
    recorder = _Recorder()
    hooks = Hooks(
        on_start=recorder.on_start,
        on_step=recorder.on_step,
        on_epoch=recorder.on_epoch,
        should_stop=should_stop or stop_requested(out),
        should_pause=budget,
    )
    try:
        config = TrainConfig.from_dict({**json.loads((out / RUN_CONFIG).read_text()), "out": str(out)})
        trainer = Trainer(config, resume=(out / LAST).is_file(), hooks=hooks, progress=False)
        first = trainer.step
        summary = trainer.run()
    except Exception as e:  # noqa: BLE001 - see the docstring
        return ChunkReport(error=failure(e), message="training failed")
    return recorder.report(trainer, summary, trainer.step - first, time.perf_counter() - started)
