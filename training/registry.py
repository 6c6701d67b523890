"""Training runs on a shared server: one job per visitor, a server-wide limit, bounded inputs
and a disk budget (no UI code here; docs/security.md has the threat model).

Each visitor (named by a digest of its browser session: ui.common.visitor_of) sees, stops and
downloads only their own run. At most `max_concurrent` runs train at once across the
server; a visitor asking for one more waits in a fair queue (one place a visitor, at most
`max_queue` places, first come first served) with its place and an estimated wait, and the run
starts when its turn comes and its visitor's page polls. A run holds its slot only while its
visitor's page polls (a closed page gives it up at once: `page_closed`) and for at most
`TrainLimits.time_limit_s` a turn (`_turn_over`).
In `shared` mode (a
teacher's projector) everyone sees the one run, and only the visitor who started it may
stop it. Run folders are unique, private (0700), marked as the app's (`APP_RUN_MARKER`) and
pruned oldest-finished-first when the app's runs outgrow their disk budget. A folder without
the marker (a `python -m training --out runs/...` run beside them) is never counted nor deleted.
"""

from __future__ import annotations

import hashlib
import logging
import math
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from vit.messages import quoted

from .checks import check_lr
from .job import QUEUED, ChunkPlan, JobBusy, JobSnapshot, TrainingJob, TurnOver
from .run_files import LAST

SHARED_KEY = "shared"
# Written into every run folder the registry creates: only folders holding it may be pruned.
APP_RUN_MARKER = ".made-by-vit-explorer-app"
MARKER_TEXT = "A Train-tab run of the app: it deletes this folder when its runs outgrow their disk budget.\n"
log = logging.getLogger(__name__)


# A run whose visitor's page has not polled (`advance`) for this long has left (closed or reloaded the
# page) and is set aside with its save, so that it no longer holds one of the server's run slots: on
# ZeroGPU it held it for as long as the Space ran (issue 44); off ZeroGPU one API call that never
# polled again held the only slot for hours (issue 56). Two minutes: a poll that trains a chunk
# blocks for it, a 53 s GPU request at most (ui.zerogpu's CHUNK_S, 45 s, plus a worker's start), the
# page polls again within a second after (ui.train.POLL_S), and a browser polls a hidden tab at
# least once a minute, so a present visitor is never taken for gone. `TrainLimits.idle_s` (the app's
# --train-idle-s) changes it.
VISITOR_GONE_S = 120.0
# A run's longest turn at a run slot, from its start or from going on after it waited: then it stops,
# its model saved, and the slot is free for another visitor. Half an hour: the Train tab's default
# run (vit_cifar_nano, 5 epochs of CIFAR-10's 45,000 images) takes about 16 minutes on one core at
# 238 images a second (docs/benchmarks-training.md), and a class sharing one slot gets a turn each
# half hour, not one run of 200 epochs for the afternoon. `TrainLimits.time_limit_s` (the app's
# --train-limit-s) changes it.
RUN_LIMIT_S = 1800.0


@dataclass(frozen=True)
class TrainLimits:
    """The ranges a visitor may ask for (documented in docs/security.md)."""

    max_epochs: int = 200
    max_batch_size: int = 1024
    max_lr: float = 1.0
    max_concurrent: int = 1  # runs training at once on the whole server
    disk_budget_bytes: int = 3 * 1024**3  # the whole runs folder: one ViT-B/16 run at its fullest, 2.4 GB
    memory_bytes: int = 3 * 1024**3  # what one run may allocate (training.budget estimates it before it starts)
    idle_s: float = VISITOR_GONE_S  # a run whose page has not polled for this long is set aside
    time_limit_s: float = RUN_LIMIT_S  # a run's longest turn at a run slot: then it stops, saved
    max_queue: int = 30  # visitors waiting for a run slot at once: a class (issue 60)

    def check(self, *, epochs: object, batch_size: object, lr: object) -> tuple[int, int, float]:
        """(epochs, batch_size, lr) as numbers, or ValueError naming the field and its range."""
        epochs_i = _whole(epochs, "epochs", 1, self.max_epochs)
        batch_i = _whole(batch_size, "batch size", 1, self.max_batch_size)
        return epochs_i, batch_i, check_lr(lr, self.max_lr, "learning rate")


def _whole(value: object, name: str, low: int, high: int) -> int:
    try:
        number = math.nan if isinstance(value, bool) else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a bool is no number here: `epochs=true` once trained 1 epoch
        number = math.nan
    if not (math.isfinite(number) and number == int(number) and low <= number <= high):
        raise ValueError(f"{name} must be a whole number from {low} to {high}, got {quoted(value)}")
    return int(number)


# A turn at a run slot shorter than this was refused at once (no GPU time left, say), not a
# run's use of the slot: the queue's estimate leaves it out.
TURN_COUNTED_S = 10.0


def minutes(seconds: float) -> str:
    """A wait in a person's words, rounded up to whole minutes: "1 minute", "12 minutes"."""
    whole = max(1, math.ceil(seconds / 60))
    return f"{whole} minute{'' if whole == 1 else 's'}"


def duration(seconds: float) -> str:
    """Seconds in a person's words: "2 minutes", "90 s"."""
    minutes = seconds / 60
    if seconds >= 60 and minutes == round(minutes):
        return f"{minutes:g} minute{'' if minutes == 1 else 's'}"
    return f"{seconds:g} s"


def visitor_id(visitor: str) -> str:
    """A short digest of a visitor's name: run folders never reveal the name itself."""
    return hashlib.sha256(visitor.encode()).hexdigest()[:16]


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class JobRegistry:
    """Per-visitor training jobs under one runs folder."""

    def __init__(
        self,
        runs_dir: str | Path,
        limits: TrainLimits | None = None,
        shared: bool = False,
        chunks: ChunkPlan | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.runs_dir = Path(runs_dir).resolve()
        self.limits = limits or TrainLimits()
        self.shared = shared
        self.chunks = chunks  # runs train chunk by chunk, at each poll (`advance`), instead of in threads
        # What the idle time and the time limit are measured with (a test's fake clock); chunked, the plan's
        self.clock = clock or (chunks.clock if chunks is not None else time.monotonic)
        self._jobs: dict[str, TrainingJob] = {}
        self._polled: dict[str, float] = {}  # run key -> when its page last asked (`clock`)
        self._since: dict[str, float] = {}  # run key -> when its run's turn at a slot began (`clock`)
        self._starters: dict[str, str] = {}  # run key -> the visitor that started it (shared mode)
        self._folders: dict[str, Path] = {}  # run key -> its current run folder
        self._queue: list[str] = []  # run keys waiting for a run slot, first first
        self._turns: list[float] = []  # how long the latest turns at a run slot lasted (the queue's estimate)
        self._pages: dict[str, str] = {}  # an open page -> the visitor it polls for (`page_seen`)
        self._closed: set[str] = set()  # run keys whose every page has closed (`page_closed`)
        self._lock = threading.Lock()

    def _key(self, visitor: str) -> str:
        return SHARED_KEY if self.shared else visitor_id(visitor)

    def running(self) -> int:
        return sum(job.snapshot().running for job in self._jobs.values())

    def start(
        self,
        visitor: str,
        *,
        model: str,
        data: str,
        epochs: object,
        batch_size: object,
        lr: object,
        warmup_epochs: float | None = None,
        eval_batch_size: int | None = None,
        disk_bytes: int = 0,
    ) -> Path:
        """Start `visitor`'s run in a fresh private folder and return that folder. Raises
        ValueError (bad arguments, e.g. a warm-up as long as the run), JobBusy (own run or the
        server's limit). `warmup_epochs` None: TrainConfig's default, 10% of the run;
        `eval_batch_size` None: TrainConfig's default; `disk_bytes`: what the run's checkpoints
        will write (training.budget), made room for before it starts."""
        with self._lock:
            key, (epochs_i, batch_i, rate) = self._admitted(visitor, epochs, batch_size, lr)
            self._replace_waiting(key)
            queued = not self._slot_free(key)
            self._make_room(disk_bytes)
            out = self.runs_dir / f"{visitor_id(visitor)}-{uuid.uuid4().hex[:12]}"
            out.mkdir(mode=0o700, parents=True)
            (out / APP_RUN_MARKER).write_text(MARKER_TEXT)
            job = self._jobs[key] = TrainingJob(self.chunks, watch=partial(self._turn_over, key))
            self._polled[key] = self.clock()
            self._starters[key], self._folders[key] = visitor, out
            self._closed.discard(key)
            if queued:
                self._queue.append(key)
            else:
                self._since[key] = self.clock()  # its turn at a slot begins
            job.start(
                model=model,
                data=data,
                epochs=epochs_i,
                lr=rate,
                batch_size=batch_i,
                out_dir=str(out),
                warmup_epochs=warmup_epochs,
                queued=queued,
                **({} if eval_batch_size is None else {"eval_batch_size": eval_batch_size}),
            )
        return out

    def _replace_waiting(self, key: str) -> None:
        """A new run replaces the visitor's run waiting with its save (the page asked first): that
        run ends from its save, its model kept to download; a queued one gives its place up."""
        job = self._jobs.get(key)
        if job is not None and job.snapshot().paused:
            job.stop()
        if key in self._queue:
            self._queue.remove(key)

    def _slot_free(self, key: str) -> bool:
        """Whether `key` may take a run slot now: one is free and nobody is ahead in the queue."""
        ahead = self._queue[: self._queue.index(key)] if key in self._queue else self._queue
        return self.running() < self.limits.max_concurrent and not ahead

    def check_start(self, visitor: str, *, epochs: object, batch_size: object, lr: object) -> None:
        """Raise as `start` would before it starts anything, when `visitor` may not start such a
        run now: ValueError for a number out of the limits, JobBusy for its own run still going or
        the server's limit reached; nothing starts (the Train tab's first step). `start` makes the
        very same checks (`_admitted`), so the two cannot drift apart."""
        with self._lock:
            self._admitted(visitor, epochs, batch_size, lr)

    def _admitted(
        self, visitor: str, epochs: object, batch_size: object, lr: object
    ) -> tuple[str, tuple[int, int, float]]:
        """`visitor`'s run key and the run's numbers (epochs, batch size, learning rate) checked
        against the limits, when such a run may start now (with the lock held): every check of
        `start` before it changes anything, and all of `check_start`'s."""
        numbers = self.limits.check(epochs=epochs, batch_size=batch_size, lr=lr)
        key = self._key(visitor)
        self._check_room(key)
        return key, numbers

    def _check_room(self, key: str) -> None:
        """JobBusy when `key` may neither train now nor queue: its own run still going, or the
        server's run slots taken and its queue full."""
        self._set_aside_the_left()
        job = self._jobs.get(key)
        if job is not None and job.snapshot().running:
            raise JobBusy("your training run is still going: stop it first")
        if not self._slot_free(key) and key not in self._queue and len(self._queue) >= self.limits.max_queue:
            raise JobBusy(
                f"the queue for training is full: {len(self._queue)} visitors are waiting for the server's "
                f"{self.limits.max_concurrent} run slot(s); try again in about {minutes(self._wait(len(self._queue)))}"
            )

    def snapshot(self, visitor: str) -> JobSnapshot:
        """`visitor`'s run as its page shows it; queued, with its place and estimated wait."""
        key = self._key(visitor)
        job = self._jobs.get(key)
        if job is None:
            return JobSnapshot()
        snap = job.snapshot()
        if key in self._queue:
            snap.place = self._queue.index(key) + 1
            snap.wait_s = self._wait(snap.place)
        return snap

    def _typical_turn(self) -> float:
        """How long a run keeps a slot here: the median of the latest turns, the time limit before any."""
        latest = sorted(self._turns[-9:])
        return latest[len(latest) // 2] if latest else self.limits.time_limit_s

    def _wait(self, place: int) -> float:
        """The estimated wait at `place` (1 first): what is left of the running turns, at most a
        typical turn each, and a typical turn for each run ahead in the queue, over the slots."""
        now, typical = self.clock(), self._typical_turn()
        running = [k for k, job in self._jobs.items() if job.snapshot().running]
        left = sum(max(0.0, min(typical, self.limits.time_limit_s) - (now - self._since.get(k, now))) for k in running)
        return (left + (place - 1) * typical) / self.limits.max_concurrent

    def page_seen(self, page: str, visitor: str) -> None:
        """The open page `page` (Gradio's visitor) polls for `visitor`'s run (`page_closed`)."""
        self._pages[page] = visitor

    def page_closed(self, page: str) -> None:
        """The page `page` closed (Gradio's unload): when no other page of its visitor is open, the
        visitor's queue place is given up and its run's slot too, at once (set aside with its save,
        to go on when the visitor is back), not after `limits.idle_s` of silence."""
        visitor = self._pages.pop(page, None)
        if visitor is None or visitor in self._pages.values():
            return
        key = self._key(visitor)
        with self._lock:
            self._closed.add(key)
            if key in self._queue:
                self._queue.remove(key)
        self._set_aside_the_left()

    def advance(self, visitor: str) -> None:
        """`visitor`'s page polls: a run waiting with its save goes on when the server's limit has
        room (a thread at once; chunked, with this call); a chunked run then trains its next
        chunk if one is due (blocks for it)."""
        key = self._key(visitor)
        job = self._jobs.get(key)
        if job is None:
            return
        self._polled[key] = self.clock()
        self._closed.discard(key)
        self._set_aside_the_left()
        with self._lock:  # two visitors back at once: one takes the free slot, the other queues
            if job.snapshot().paused:
                if not job.due():  # backing off after a refusal: no slot taken, no GPU asked
                    return
                if not self._slot_free(key):
                    if key not in self._queue:  # a waiting run back for a slot queues as a new one does
                        self._queue.append(key)
                    job.wait_for_slot(QUEUED)
                    return
                if key in self._queue:
                    self._queue.remove(key)
                self._since[key] = self.clock()  # a new turn
                job.resume()
        job.advance()

    def _turn_over(self, key: str) -> TurnOver | None:
        """The one policy for every run, threaded or chunked: why the run of `key` must give its
        slot up now (its visitor's page silent for `limits.idle_s`, its turn past
        `limits.time_limit_s`), or None. Asked by a thread before each step, between chunks
        by `_set_aside_the_left`."""
        now, idle, limit = self.clock(), self.limits.idle_s, self.limits.time_limit_s
        if key in self._closed:
            return TurnOver(
                "set aside when your page closed",
                "another visitor may train meanwhile; it goes on by itself when you open the page again",
            )
        if now - self._polled.get(key, now) > idle:
            return TurnOver(
                f"set aside after {duration(idle)} without your page",
                "another visitor may train meanwhile; it goes on by itself when you open the page again",
            )
        if now - self._since.get(key, now) >= limit:
            return TurnOver(
                f"stopped at the time limit of {duration(limit)} a run has on this server",
                "to train it further, press Continue this run (it goes on from there, when a run slot is free) "
                "or start a new run from its checkpoint (it is in your model list)",
                ends=True,
            )
        return None

    def _set_aside_the_left(self) -> None:
        """Give up the slots of the chunked runs whose turn is over (`_turn_over`): those of
        visitors who left are set aside, those past the time limit end. A thread asks itself."""
        now = self.clock()
        for key, job in list(self._jobs.items()):
            if (turn := job.check_turn()) is not None:
                log.info("a chunked training run gave its slot up: %s", turn.reason)
            if key in self._since and not job.snapshot().running:
                turn_s = now - self._since.pop(key)
                if turn_s >= TURN_COUNTED_S:
                    self._turns = [*self._turns[-99:], turn_s]
        # A queued visitor whose page is silent gives its place up (a closed page's at once: `page_closed`)
        self._queue = [k for k in self._queue if now - self._polled.get(k, now) <= self.limits.idle_s]

    def stop(self, visitor: str) -> bool:
        """Stop `visitor`'s run, training or waiting for GPU time; False if it has none going on
        (or, shared, did not start it)."""
        key = self._key(visitor)
        job = self._jobs.get(key)
        if job is None or not _live(job.snapshot()) or self._starters.get(key) != visitor:
            return False
        job.stop()
        with self._lock:
            if key in self._queue:
                self._queue.remove(key)
        return True

    def set_down(self, visitor: str) -> Path | None:
        """Before `visitor` starts a new run: its run waiting with its save ends from it (a queued
        one gives its place up); the model file of its run, if it has one, to keep."""
        key = self._key(visitor)
        if self._starters.get(key) == visitor:
            with self._lock:
                self._replace_waiting(key)
        return self.checkpoint(visitor)

    def check_go_on(self, visitor: str) -> None:
        """Raise as `go_on` would when `visitor`'s stopped run may not go on now; nothing starts
        (the Train tab's first step)."""
        with self._lock:
            self._resumable(visitor)

    def _resumable(self, visitor: str) -> JobSnapshot:
        key = self._key(visitor)
        job = self._jobs.get(key)
        snap = job.snapshot() if job is not None else JobSnapshot()
        if not snap.resumable or self._starters.get(key) != visitor:
            raise ValueError("you have no stopped run to continue")
        self._check_room(key)
        return snap

    def go_on(self, visitor: str) -> None:
        """Continue `visitor`'s stopped run from where it stopped, in its own folder (`TrainingJob.go_on`),
        as a new turn at a run slot. Raises ValueError (no stopped run of theirs, or its save is gone)
        or JobBusy (the server's limit, or its disk budget, as `start` would)."""
        key = self._key(visitor)
        with self._lock:
            snap = self._resumable(visitor)
            # Room for its largest file once more: a save writes each file anew beside the old one
            # before it replaces it (vit/checkpoint.py), and its training state is three times its
            # model; never by deleting its own folder, which an ended run's is to the others.
            folder = self._folders[key]
            files = [folder / LAST, *([Path(snap.checkpoint)] if snap.checkpoint else [])]
            self._make_room(max((f.stat().st_size for f in files if f.is_file()), default=0), keep=folder)
            self._polled[key] = self._since[key] = self.clock()  # a new turn
            self._jobs[key].go_on()

    def checkpoint(self, visitor: str) -> Path | None:
        """The latest model file of `visitor`'s run, if it exists."""
        path = self.snapshot(visitor).checkpoint
        return Path(path) if path and Path(path).is_file() else None

    def _app_runs(self) -> list[Path]:
        """The run folders this app made (they hold APP_RUN_MARKER), oldest first; never a
        symlink, never a folder someone else (the training CLI, the operator) put there."""
        folders = (p for p in self.runs_dir.iterdir() if p.is_dir() and not p.is_symlink())
        return sorted((p for p in folders if (p / APP_RUN_MARKER).is_file()), key=lambda p: p.stat().st_mtime)

    def _make_room(self, room: int = 0, keep: Path | None = None) -> None:
        """Delete the app's oldest finished runs, then the oldest runs waiting with their save
        (set aside, or waiting for GPU time), until its runs fit the budget with `room` bytes to
        spare for the new run's checkpoints (called with the lock held, before a new run starts:
        made room for only down to the budget, issue 56's soak found the runs folder at 345 MB of
        268 when a 190 MB run started beside it). Raises JobBusy when what cannot be deleted
        (running runs, or a failed delete) alone fills it. A waiting run is a run deleted last, not never: each
        visitor who leaves sets one aside, and kept for ever they would fill the budget (six
        DeiT-S runs, one every 2 minutes) and refuse every Start. `keep`: a folder never deleted (a
        stopped run about to go on)."""
        self.runs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        snaps = {self._folders[k].resolve(): (job, job.snapshot()) for k, job in self._jobs.items()}
        waiting = {folder: job for folder, (job, snap) in snaps.items() if snap.paused}
        folders = self._app_runs()
        used = sum(folder_bytes(p) for p in folders)
        kept = keep.resolve() if keep is not None else None
        ended = [p for p in folders if not (p.resolve() in snaps and _live(snaps[p.resolve()][1]))]
        ended = [p for p in ended if p.resolve() != kept]
        budget = self.limits.disk_budget_bytes - room
        for folder in [*ended, *(p for p in folders if p.resolve() in waiting)]:
            if used <= budget:
                return
            if (job := waiting.get(folder.resolve())) is not None:
                job.drop("your run waited with its save until the server needed its disk space for newer runs")
            used -= _delete(folder)
        if used > budget:
            raise JobBusy("the server's disk budget for training runs is full; try again later")


def _live(snap: JobSnapshot) -> bool:
    """A run whose folder must stay: training, or waiting for GPU time to go on."""
    return snap.running or snap.paused


def _delete(folder: Path) -> int:
    """Delete a run folder; the bytes actually freed (a failed delete frees only what went)."""
    before = folder_bytes(folder)
    try:
        shutil.rmtree(folder)
    except OSError as e:
        log.warning("could not delete the old run %s: %s", folder.name, e)
    return before - (folder_bytes(folder) if folder.exists() else 0)
