"""One background training job at a time, for the app's Train tab (no UI code here).

The job runs `training.engine.Trainer` in a thread and keeps a snapshot the UI polls:
progress, per-epoch metrics, and the attention of a fixed probe image at every epoch.

A chunked job (`ChunkPlan`, for a ZeroGPU Space, where a GPU exists only inside one platform
call) has no thread: each `advance()` (the UI calls it from its status poll) runs the next
chunk of `training.chunks`, possibly in another process, and merges its report into the same
snapshot. A chunk cut short loses nothing: the run's last saved state stays, the next continues.

Either kind gives the server's run slot up when its registry's `watch` says its turn is over
(`TurnOver`: its visitor's page gone, or the run's time limit reached): a thread checks before every
step, a chunked job between chunks. Set aside, the run waits with its resumable save, and
`resume()` takes the slot again from there (a thread starts again from `last.safetensors`); at the
time limit it ends as a Stop would, its model saved.
"""

from __future__ import annotations

import copy
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torch import Tensor

from .chunks import (
    ChunkRefused,
    ChunkReport,
    failure,
    new_reading,
    plain_message,
    probe_attention,
    request_stop,
    start_run,
    stopped_model,
)
from .config import TrainConfig, describe_device, resolve_device
from .data import CIFAR10_NAME, list_image_folder
from .engine import Hooks, Trainer
from .run_files import LAST, MODEL, STOP

LOG = logging.getLogger(__name__)
MAX_STEP_LOSSES = 2000  # the live loss curve keeps its latest points
MAX_LOST_CHUNKS = 3  # chunks cut short in a row before a chunked run is said to have failed
# Seconds to wait before the next chunk after the first, second, ... chunk cut short in a row: a
# failing worker was asked for three chunks of GPU time in 1.3 s (issue 44), each charged to the
# visitor. Long enough for a worker the platform restarts; growing, as a failure that repeats is
# less likely to be a moment's.
RETRY_AFTER_S = (15.0, 45.0)
# Seconds to wait before asking again after the first, second, ... refusal in a row (no GPU time
# left, every GPU busy, the platform's queue timed out): a refusal costs no GPU time, so the run
# asks again by itself, less and less often, and never fails for it (issue 60). Five minutes at
# most: a visitor whose quota came back waits at most that long for the run to go on.
WAIT_RETRY_S = (15.0, 30.0, 60.0, 120.0, 300.0)


# A queued run's words until its turn (the registry's queue: place and wait beside them).
QUEUED = "it starts by itself when its turn comes, while this page is open"


class JobBusy(RuntimeError):
    """A training job is already running."""


@dataclass(frozen=True)
class TurnOver:
    """Why a run gives up the server's run slot now, in a person's words (the registry's policy,
    `JobRegistry._turn_over`): `ends` at the time limit (the run stops, its model saved), else
    it is set aside, saved, and goes on when its visitor is back."""

    reason: str  # "set aside after 2 minutes without your page", "stopped at the time limit of 30 minutes"
    advice: str  # what happens next, what the visitor may do
    ends: bool = False


# The registry's policy for one run, asked before each step (thread) or chunk: None while the turn goes on.
Watch = Callable[[], "TurnOver | None"]


@dataclass
class JobSnapshot:
    running: bool = False
    device: str = ""  # e.g. "cpu (no GPU found: ...)" or "cuda (NVIDIA H100 ...)"
    epoch: int = 0  # finished epochs
    epochs: int = 0
    step: int = 0  # steps done in the current epoch
    steps_per_epoch: int = 0
    history: list[dict] = field(default_factory=list)  # one record per finished epoch (see engine.Trainer.run)
    # (epochs done as a fraction, running train loss): every few steps, so a curve shows from the first seconds
    step_losses: list[tuple[float, float]] = field(default_factory=list)
    probe_image: Tensor | None = None  # (3, H, W) uint8: a fixed validation image
    probe: list[tuple[int, Tensor]] = field(default_factory=list)  # (epoch, (L, H, gh, gw) CLS attention)
    checkpoint: str | None = None  # latest model checkpoint, loadable by vit.load_checkpoint
    message: str = "no training job has run yet"
    error: str | None = None
    paused: bool = False  # a run waiting, saved: for GPU time (chunked), or set aside (`TurnOver`); `resume` goes on
    # a run stopped (Stop, or its time limit) or failed before its last epoch, saved where it stopped:
    # `go_on` continues it
    resumable: bool = False
    next_try_s: float = 0.0  # a chunked run backing off: seconds until it asks the platform again
    place: int = 0  # waiting in the registry's queue for a run slot: its place, 1 first (0: not queued)
    wait_s: float | None = None  # queued: the registry's estimate of the wait, in seconds


def run_state(snap: JobSnapshot) -> str:
    """One word for the run: idle, running, queued (for a run slot), waiting (for GPU time),
    stopped, failed or finished."""
    if snap.running:
        return "running"
    if snap.place:
        return "queued"
    if snap.paused:
        return "waiting"
    if snap.error:
        return "failed"
    if snap.message.startswith("stopped"):  # with its model, or stopped before a step had trained one
        return "stopped"
    return "finished" if snap.checkpoint else "idle"


@dataclass(frozen=True)
class ChunkPlan:
    """How a chunked job trains: `run(run folder, seconds)` trains one chunk of at most
    `seconds` and returns its report, here or in another process; it raises ChunkRefused when
    the platform will not run one for a while."""

    run: Callable[[str, float], ChunkReport]
    seconds: float
    clock: Callable[[], float] = time.monotonic  # when a chunk cut short may be tried again


def _job_config(
    model: str, data: str, epochs: int, lr: float, batch_size: int, out_dir: str, options: dict
) -> TrainConfig:
    """The TrainConfig for a UI job: UI-friendly defaults where the CLI's assume a full data set."""
    options = dict(options)
    if data != CIFAR10_NAME and Path(data).is_dir():
        _, files = list_image_folder(Path(data) / "train")  # raises DataError on a bad folder
        options.setdefault("holdout", min(TrainConfig.holdout, max(1, len(files) // 10)))  # 10%, capped
        options.setdefault("eval_test", (Path(data) / "test").is_dir())
    try:
        config = TrainConfig(
            model=model, data=data, epochs=epochs, lr=lr, batch_size=batch_size, out=out_dir, **options
        )
    except TypeError as e:  # an unknown option name
        raise ValueError(f"unknown training option: {e}") from e
    config.validate()
    return config


def _prepared(config: TrainConfig) -> JobSnapshot:
    """A chunked run's first state: its data and model read here, on the CPU (`start_run`), or
    the reason they cannot be, as a threaded run reports a failure to load them."""
    try:
        start_run(config)
    except Exception as e:  # noqa: BLE001 - any failure must reach the UI
        return JobSnapshot(epochs=config.epochs, error=failure(e), message="training failed")
    return JobSnapshot(running=True, epochs=config.epochs, message="waiting for the GPU")


def named_checkpoint(out: Path, model: str, history: list[dict]) -> Path:
    """Rename the run's OUT/model.safetensors after what it holds, e.g.
    `vit_cifar_nano_5epochs_acc41.safetensors` (model, finished epochs, last validation
    accuracy in %): a visitor's downloads folder fills with runs, not with model.safetensors."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(model).stem).strip("-.") or "model"
    accuracy = (
        f"_acc{round(100 * history[-1]['val_acc'])}" if history and history[-1].get("val_acc") is not None else ""
    )
    named = out / f"{stem}_{len(history)}epochs{accuracy}.safetensors"
    (out / MODEL).replace(named)
    return named


def epoch_message(record: dict, epochs: int) -> str:
    """A running job's message at the end of an epoch (the page says the epoch's numbers itself,
    and leaves this one out rather than say the epoch twice)."""
    val = "n/a" if record.get("val_acc") is None else f"{record['val_acc']:.2%}"
    return f"epoch {record.get('epoch')}/{epochs}: validation accuracy {val}"


class TrainingJob:
    """Start / stop / observe one training run: in a background thread, or in chunks (`chunks`);
    `watch`: when the run must give the server's run slot up (none: never)."""

    def __init__(self, chunks: ChunkPlan | None = None, watch: Watch | None = None) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._snapshot = JobSnapshot()
        self._config: TrainConfig | None = None
        self._chunks = chunks
        self._in_chunk = False  # a chunk of this run is training
        self._lost = 0  # chunks cut short in a row
        self._refused = 0  # chunks refused in a row (the run waits, backing off: WAIT_RETRY_S)
        self._fresh = False  # queued before its first step: a thread starts it from the beginning
        self._retry_at = 0.0  # after a chunk cut short or refused, no chunk before this (ChunkPlan.clock)
        self._watch = watch
        self._turn: TurnOver | None = None  # the thread's: what the watch said before the current step
        self._reason = ""  # why a paused run waits (the first half of its message)

    def start(
        self,
        *,
        model: str,
        data: str,
        epochs: int,
        lr: float,
        batch_size: int,
        out_dir: str,
        queued: bool = False,
        **options,
    ) -> None:
        """Validate the arguments (ValueError), then train in the background, or, chunked,
        prepare the run for its first chunk. `queued`: prepared, the run waits for a run slot
        (`resume` starts it). JobBusy if a job runs."""
        with self._lock:
            if self._snapshot.running or self._in_chunk:
                s = self._snapshot
                raise JobBusy(f"a training job is already running (epoch {s.epoch + 1}/{s.epochs}); stop it first")
            config = self._config = _job_config(model, data, epochs, lr, batch_size, out_dir, options)
            self._stop.clear()
            self._turn, self._fresh = None, queued
            if self._chunks is not None:
                self._snapshot, self._lost, self._refused, self._retry_at = _prepared(config), 0, 0, 0.0
            elif queued:
                self._snapshot = JobSnapshot(epochs=config.epochs)
            if queued and not self._snapshot.error:
                s = self._snapshot
                s.running, s.paused, s.message = False, True, QUEUED
            if self._chunks is not None or queued:
                return
            self._snapshot = JobSnapshot(
                running=True,
                device=describe_device(resolve_device(config.device)),
                epochs=config.epochs,
                message="loading data and model",
            )
            self._start_thread(config)

    def stop(self) -> None:
        """Ask the job to end at the next step; it saves the model before it finishes (a
        chunked run's STOP file reaches its chunk in whatever process trains it). A run no step
        is training (a chunked run between two chunks, any run waiting with its save) ends at once
        from its last save: no chunk is asked for (one more chunk's GPU request had only read the
        STOP file, issue 44)."""
        self._stop.set()
        with self._lock:
            s = self._snapshot
            training = self._in_chunk or (self._chunks is None and s.running)
            now = (s.running or s.paused) and not training
            if training:
                s.message = "stopping after the current step"
                if self._chunks is not None and self._config is not None:
                    request_stop(self._config.out)
        if now:
            self._end_from_save()

    def _end_from_save(self, turn: TurnOver | None = None) -> None:
        """End a run no step is training: its model is written from its last saved state, here on
        the CPU (`stopped_model`), as a step reading the stop would have written it."""
        s = self.snapshot()
        if stopped_model(self._config.out):
            self._end({"stopped": True, "epochs_done": s.epoch}, turn)
        else:
            self._update(message="stopped before its first chunk trained a step: there is no model to save")
        self._update(running=False, paused=False)

    def check_turn(self) -> TurnOver | None:
        """Between two chunks, give the run slot up when the watch says the run's turn is over:
        set aside, to go on at `resume`, or at the time limit ended from its last save; the turn
        acted on, or None. (A thread asks its watch before every step itself.)"""
        if self._chunks is None or self._watch is None:
            return None
        turn = self._watch()
        with self._lock:
            s = self._snapshot
            if turn is None or self._in_chunk or not s.running:
                return None
            if not turn.ends:
                s.running, s.paused = False, True
                self._say_waiting(turn.reason, turn.advice)
                return turn
            self._stop.set()  # as a Stop between chunks: no chunk is asked for
        self._end_from_save(turn)
        return turn

    def resume(self) -> None:
        """Take the run slot again for a run waiting with its save (the registry checks there is
        room): a chunked run's next `advance` trains from there; a thread starts again from
        `last.safetensors` at once, at the very step it was set aside."""
        with self._lock:
            s = self._snapshot
            if not s.paused or self._stop.is_set():
                return
            s.running, s.paused, self._turn = True, False, None
            fresh, self._fresh = self._fresh, False
            if self._chunks is not None:
                return
            s.message = "loading data and model" if fresh else f"going on from its save at {self._where()}"
            self._start_thread(self._config, resume=not fresh)

    def go_on(self) -> None:
        """Continue a stopped run (`JobSnapshot.resumable`) from its save, at the very step it stopped,
        as if it had never stopped: its history, probe and loss readings stay and the next epochs add
        to them (the Train tab offered only a new run from its model, "my run, 0 epochs", which
        starts its optimiser and schedule afresh). A thread starts again from `last.safetensors`; a
        chunked run's next `advance` trains from there. ValueError, in a person's words, when there
        is no such run, or its save is gone (deleted to make room on the disk)."""
        with self._lock:
            s, config = self._snapshot, self._config
            if not s.resumable or s.running or s.paused or config is None:
                raise ValueError("you have no stopped run to continue")
            if not (Path(config.out) / LAST).is_file():
                s.resumable = False
                raise ValueError("your stopped run's save is gone (deleted to make room on the disk): start a new run")
            self._stop.clear()
            self._turn, s.running, s.resumable, s.error = None, True, False, None
            s.message = f"going on from its save at {self._where()}"
            if self._chunks is not None:
                (Path(config.out) / STOP).unlink(missing_ok=True)  # the stopped chunk's request, read
                self._lost, self._refused, self._retry_at = 0, 0, 0.0
                return
            self._start_thread(config, resume=True)

    def _start_thread(self, config: TrainConfig, resume: bool = False) -> None:
        self._thread = threading.Thread(target=self._run, args=(config, resume), name="training-job", daemon=True)
        self._thread.start()

    def drop(self, why: str) -> None:
        """A waiting run whose folder its registry deletes (to make room on the disk): it ends,
        failed, with `why`; its files are gone, so nothing is offered."""
        with self._lock:
            s = self._snapshot
            if s.paused:
                s.paused, s.checkpoint, s.message = False, None, "training failed"
                s.error = f"{why}: it was deleted; start a new run"

    def wait_for_slot(self, advice: str) -> None:
        """A waiting run's visitor is back but the server's run slots are taken: say so."""
        with self._lock:
            if self._snapshot.paused and self._fresh:  # queued before its first step: nothing saved yet
                self._snapshot.message = advice
            elif self._snapshot.paused:
                self._say_waiting(self._reason, advice)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job ends (or `timeout` seconds pass); True if it has ended."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def snapshot(self) -> JobSnapshot:
        """A copy of the current state, safe to read while the job runs."""
        with self._lock:
            s = copy.copy(self._snapshot)
        s.history = [dict(record) for record in s.history]  # the job only ever replaces these lists
        s.probe = list(s.probe)
        s.step_losses = list(s.step_losses)
        if self._chunks is not None and (s.running or s.paused):
            s.next_try_s = max(0.0, self._retry_at - self._chunks.clock())
        return s

    def due(self) -> bool:
        """Whether a chunked run may ask the platform for a chunk now (not backing off)."""
        return self._chunks is None or self._chunks.clock() >= self._retry_at

    def _update(self, **changes) -> None:
        with self._lock:
            for name, value in changes.items():
                setattr(self._snapshot, name, value)

    def _end(self, summary: dict, turn: TurnOver | None = None) -> None:
        """The run ended (finished, stopped, or stopped by its `turn`, the time limit): name its
        model file after it and say so."""
        config = self._config
        checkpoint = str(named_checkpoint(Path(config.out), config.model, self.snapshot().history))
        stopped = turn is not None or summary["stopped"]
        # A stop saves the training state where it stopped (engine.Trainer._finish), which `go_on` reads.
        resumable = stopped and self.snapshot().epoch < config.epochs and (Path(config.out) / LAST).is_file()
        if turn is not None:
            message = f"{turn.reason}: the run is saved at {self._where()}, its model in {checkpoint}; {turn.advice}"
        elif summary["stopped"]:
            message = f"stopped during epoch {summary['epochs_done'] + 1}; model saved to {checkpoint}"
        else:
            accuracies = ", ".join(f"{k} {v:.2%}" for k, v in summary.items() if k.endswith("_acc") and v is not None)
            message = f"finished {summary['epochs_done']} epochs ({accuracies}); model saved to {checkpoint}"
        self._update(running=False, checkpoint=checkpoint, message=message, resumable=resumable)

    # -- chunks --------------------------------------------------------------------------

    def advance(self) -> None:
        """Train the next chunk of a chunked run, blocking until it returns; nothing when the
        job has no chunks, its run is over, or one of its chunks is training already."""
        with self._lock:
            s = self._snapshot
            if (
                self._chunks is None
                or self._in_chunk
                or not (s.running or s.paused)
                or self._stop.is_set()  # stopped between chunks: `stop` ends it
                or self._chunks.clock() < self._retry_at  # backing off after a chunk cut short or refused
            ):
                return
            self._in_chunk, s.running, s.paused = True, True, False
        try:
            report = self._chunks.run(str(self._config.out), self._chunks.seconds)
        except ChunkRefused as e:
            self._waiting(e)
        except Exception as e:  # noqa: BLE001 - the platform cut the chunk short; its last save stands
            self._cut_short(e)
        else:
            self._merge(report)
        finally:
            with self._lock:
                self._in_chunk = False
                s = self._snapshot
                unfinished = self._stop.is_set() and (s.running or s.paused)
        if unfinished:  # stopped during a chunk that ended before it read the STOP file (cut short, refused)
            self._end_from_save()

    def _where(self) -> str:
        s = self._snapshot
        return f"epoch {s.epoch + 1} step {s.step}"

    def _say_waiting(self, reason: str, advice: str) -> None:
        """A waiting run's message (with the lock held): why it waits, where it is saved, what next."""
        self._reason = reason
        self._snapshot.message = f"{reason}: the run is saved at {self._where()}; {advice}"

    def _waiting(self, refusal: ChunkRefused) -> None:
        """Refused before it trained: the run waits, saved, and asks again after a back-off."""
        with self._lock:
            s = self._snapshot
            s.running, s.paused = False, True
            self._refused += 1
            self._retry_at = self._chunks.clock() + WAIT_RETRY_S[min(self._refused, len(WAIT_RETRY_S)) - 1]
            self._say_waiting(refusal.reason, f"it goes on by itself while this page is open; {refusal.advice}")

    def _cut_short(self, error: Exception) -> None:
        with self._lock:
            self._lost += 1
            s, where = self._snapshot, self._where()
            if self._lost < MAX_LOST_CHUNKS:
                wait = RETRY_AFTER_S[min(self._lost, len(RETRY_AFTER_S)) - 1]
                self._retry_at = self._chunks.clock() + wait
                said = plain_message(error)
                s.message = f"the last chunk was cut short ({said}); nothing is lost, the next goes on from {where}"
                return
            s.running, s.message = False, "training failed"
            last = plain_message(error)
            s.error = f"{self._lost} chunks in a row were cut short (the last: {last}); the run is saved at {where}"
            # A failed run with its save goes on from there when asked (`go_on`): nothing is lost (issue 60).
            s.resumable = (Path(self._config.out) / LAST).is_file()
            if s.resumable:
                s.error += ": press Continue this run to go on from there"

    def _merge(self, report: ChunkReport) -> None:
        """Add a chunk's report to the snapshot; end the run when the chunk ended it."""
        if report.error:
            self._update(running=False, error=report.error, message="training failed")
            return
        with self._lock:
            self._lost = self._refused = 0
            s = self._snapshot
            s.device, s.epoch, s.epochs, s.step = report.device, report.epoch, report.epochs, report.step
            s.steps_per_epoch, s.history, s.checkpoint = report.steps_per_epoch, report.history, report.checkpoint
            s.step_losses = [*s.step_losses, *report.step_losses][-MAX_STEP_LOSSES:]
            s.probe_image = s.probe_image if report.probe_image is None else report.probe_image
            s.probe = [*s.probe, *report.probe]
            s.message = f"trained a chunk: {report.message}; the next chunk goes on from there"
        if report.finished or report.stopped:
            self._end(report.summary)

    # -- the thread ----------------------------------------------------------------------

    def _run(self, config: TrainConfig, resume: bool = False) -> None:
        hooks = Hooks(
            on_start=self._on_start,
            on_step=self._on_step,
            on_epoch=self._on_epoch,
            should_stop=self._should_stop,
            should_pause=self._should_pause,
        )
        try:
            summary = Trainer(config, resume=resume, hooks=hooks, progress=False).run()
        except Exception as e:  # noqa: BLE001 - any failure must reach the UI, not die with the thread
            self._update(running=False, error=failure(e), message="training failed")
            return
        if summary.get("paused"):  # the engine saved the resumable state, in-epoch position included
            LOG.info("a training run gave its slot up: %s", self._turn.reason)
            self._set_aside(self._turn)
        else:
            self._end(summary, self._turn if summary["stopped"] else None)

    def _should_stop(self) -> bool:
        """Before every step: a Stop, or the watch's time limit (asked here, once a step)."""
        if self._stop.is_set():
            return True
        self._turn = self._watch() if self._watch is not None else None
        return self._turn is not None and self._turn.ends

    def _should_pause(self) -> bool:
        return self._turn is not None and not self._turn.ends

    def _set_aside(self, turn: TurnOver) -> None:
        """The thread paused for `turn` and saved: the run waits, off the server's run slots."""
        with self._lock:
            stopped = self._stop.is_set()
            if not stopped:
                self._snapshot.running, self._snapshot.paused = False, True
                self._say_waiting(turn.reason, turn.advice)
        if stopped:  # Stop was pressed while the run saved to be set aside: it ends from that save
            self._end_from_save()

    def _on_step(self, trainer: Trainer, step: int) -> None:
        with self._lock:
            s = self._snapshot
            s.step = step
            if (reading := new_reading(trainer, s.step_losses)) is not None:
                s.step_losses = [*s.step_losses[-(MAX_STEP_LOSSES - 1) :], reading]

    def _on_start(self, trainer: Trainer) -> None:
        """The run's first step is next (its probe before training is taken), or a resumed run's
        next step: its probe, history and loss readings so far stay, and so does its message."""
        image = trainer.val_set.images[0].cpu()  # (3, H, W): the same image every epoch
        first: dict = {}
        if not trainer.step:
            first["probe"] = [(trainer.epoch, probe_attention(trainer, image))]
            held_out = f"{len(trainer.train_set):,} images ({len(trainer.val_set):,} held out for validation)"
            first["message"] = f"training on {held_out}"
        step = trainer.step - trainer.epoch * trainer.steps_per_epoch
        self._update(steps_per_epoch=trainer.steps_per_epoch, epoch=trainer.epoch, step=step, probe_image=image)
        self._update(**first)

    def _on_epoch(self, trainer: Trainer, record: dict) -> None:
        attention = probe_attention(trainer, self._snapshot.probe_image)
        with self._lock:
            s = self._snapshot
            s.epoch, s.step = trainer.epoch, 0
            s.history = [*s.history, dict(record)]
            s.probe = [*s.probe, (trainer.epoch, attention)]
            s.checkpoint = str(trainer.out / MODEL)
            s.message = epoch_message(record, s.epochs)
