"""Train together (issue 59): the run a teacher trains on the Train tab, watched by every page of the
teacher's class, its curves and its probe image's attention as it learns, whether or not the teacher's
page is there to poll it. No Gradio and no event loop here: ui/train_handlers.py shares the run and tells
each poll of it, ui/class_route.py serves the pictures and pushes each change on the class's event stream.

- The teacher shares the run (`ClassRuns.share`, with the teacher's key): the class watches whatever run
  that teacher's page trains, a new run or one continued. Which run that is (the registry's visitor, the
  page's run token) stays here: a page of the class is told only its progress and reads its pictures by
  the class's code, so a student can neither name nor stop, change or continue it (the Train tab's Stop
  and Continue act only on the run of the page that asks, training.registry).
- The teacher's page polls its run every second while it trains (ui/train.py): each poll hands `polled`
  its snapshot and the pictures it drew for the teacher's page (explorer.run_views: the Train tab draws
  a picture when its numbers changed). When what a page shows of the run changed (the state, the epoch
  and step, how many numbers each picture draws), the summary goes into the class's state
  (`Classroom.show_run`, with a version of its own) and the class's bell rings (`ring`: its streams wake
  and send it); the teacher's pictures are kept for the class, encoded once (PNG).
- The server watches the run too, so the class does not depend on the teacher's page: a class whose run
  trains has a watcher (`watching`: one thread of its own, started by the share or a poll; at most one a
  class, none for a class whose run does not train), which looks at the run every second. While the
  teacher's page polls (its last poll within AWAY_S) it stands aside: those polls push, with the pictures
  they drew, so nothing is drawn twice (and either way a change is pushed once: the summary is compared
  with the last under the lock, and a look older than the teacher's latest poll is dropped). When the
  page is away (closed, asleep, a background tab its browser throttles to a poll a minute) it reads the
  run (`Runs.snapshot`), draws the pictures whose numbers changed once for the class (`drawn_png`, as
  for a page's early ask below) and pushes the change as a poll would; no forward pass, no Gradio
  worker, nothing per student. It ends when the run no longer trains (finished, stopped, failed, or set
  aside when the teacher's page closed: training.registry, issue 60; such a run goes on only at a poll
  of the teacher's page, which starts a watcher again), when the class ends, or when the teacher shares
  a run that does not train.
- A page asks for a picture (`picture`) when the count of its numbers changed, and is sent the one kept
  for that count: the teacher's page's drawing or the watcher's, or (a page that asks before either drew
  it) one drawn once for the class by the same functions. 30 students cost no drawing of their own, and
  one encoding an update.

Memory: a class keeps its run's two latest pictures (PNG: about 20 KB each at the default text size,
a 5-epoch run; measured 2026-11-29) and its last summary (about 0.4 KB); both go when the class ends.
Threads: a watcher a class whose shared run trains, so at most the server's classes (`--max-classes`, 8);
an idle look costs a dict read, an away one a snapshot's copy (lists, no tensors copied) and, when the
numbers changed, the drawing the teacher's poll would have made (the curves of a 5-epoch run: about 0.1 s
of a core, the probe 0.01 s; measured 2026-11-29).
"""

from __future__ import annotations

import io
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from PIL import Image

from explorer import run_views
from training.job import JobSnapshot, run_state

from .classroom import ClassError, Classroom, clean_code

PICTURES = ("curves", "probe")
WATCH_S = 1.0  # a class's watcher reads its run at most once a second, as the teacher's page polls it (ui.train.POLL_S)
# The teacher's page polls every second while its run trains: silent this long, it is away (closed, asleep,
# a background tab its browser throttles), and the class's watcher pushes in its place.
AWAY_S = 2.5
LOG = logging.getLogger(__name__)
NOTHING_YET = "The teacher's run has not drawn this picture yet: it comes with the run's first numbers."


class Runs(Protocol):
    """What the classes read of the server's runs (training.registry.JobRegistry)."""

    def snapshot(self, visitor: str) -> JobSnapshot: ...


def run_said(snap: JobSnapshot) -> str:
    """The teacher's run as a sentence a student reads: its state, where it is, its last epoch."""
    state, epochs = run_state(snap), max(snap.epochs, 1)
    said = {
        "queued": "The teacher's run is waiting for a run slot on the server.",
        "waiting": "The teacher's run is waiting to go on: it goes on by itself.",
        "failed": "The teacher's run failed: the teacher's Train tab says why.",
        "stopped": f"The teacher stopped the run after {snap.epoch} of {epochs} epochs.",
        "finished": f"The teacher's run has finished: {snap.epoch} of {epochs} epochs trained.",
        "idle": "The teacher's run has not started yet.",
    }.get(state)
    if said is None:  # running
        where = f"epoch {min(snap.epoch + 1, epochs)} of {epochs}"
        steps = f", step {snap.step} of {snap.steps_per_epoch}" if snap.steps_per_epoch else " (its data is loading)"
        said = f"The teacher's run is training: {where}{steps}."
    if snap.history:
        last = snap.history[-1]
        accuracy = "" if last.get("val_acc") is None else f", validation accuracy {last['val_acc']:.1%}"
        said += f" After epoch {last['epoch']}: training loss {last['train_loss']:.3f}{accuracy}."
    return said


def run_summary(snap: JobSnapshot, text_px: int) -> dict[str, Any]:
    """What a page of the class is pushed of the run: its state (a word and a sentence), its progress
    (steps done of all), how many numbers each picture draws (a page asks for a picture again when its
    count changed) and the pictures' alt texts."""
    steps = max(snap.steps_per_epoch, 1)
    total = max(snap.epochs, 1) * steps
    state = run_state(snap)
    done = total if state == "finished" else min(snap.epoch * steps + snap.step, total)
    alt = {
        "curves": run_views.curves_alt(snap.history, snap.step_losses),
        "probe": run_views.probe_alt(snap.probe, text_px) if snap.probe else "",
    }
    return {"state": state, "said": run_said(snap), "done": done, "total": total, "pictures": counts(snap), "alt": alt}


def drawn_png(snap: JobSnapshot, which: str, text_px: int) -> bytes:
    """The Train tab's picture `which` of the run (explorer.run_views), as PNG."""
    if which == "curves" and (snap.history or snap.step_losses):
        return png(run_views.curves(snap.history, snap.step_losses, text_px))
    if which == "probe" and snap.probe and snap.probe_image is not None:
        return png(run_views.probe(snap.probe_image, snap.probe, text_px))
    raise ClassError(NOTHING_YET, 404)


def png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)  # fast: sent to a class on its LAN, not stored
    return out.getvalue()


def counts(snap: JobSnapshot) -> dict[str, int]:
    """How many numbers each picture of the run draws: a picture changes when its count does."""
    return {"curves": len(snap.history) + len(snap.step_losses), "probe": len(snap.probe)}


class ClassRuns:
    """The runs the server's classes watch: a class's code to its teacher's run, each class's last
    summary and pictures, and its watcher while the run trains. `ring(code)` wakes the class's streams,
    from any thread (ui/class_route.py sets it)."""

    def __init__(
        self,
        classes: Classroom,
        runs: Runs,
        text_px: int,
        every_s: float = WATCH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.classes, self.runs, self.text_px, self.every_s, self.clock = classes, runs, text_px, every_s, clock
        self.watched: dict[str, str] = {}  # class code: the run's visitor in the registry (never sent to a page)
        self.shown: dict[str, dict[str, Any]] = {}  # class code: the run's summary last pushed, with its version
        self.drawn: dict[tuple[str, str], tuple[int, bytes]] = {}  # (code, picture): (its count, its PNG)
        self.polled_at: dict[str, float] = {}  # class code: when the teacher's page last handed its run here
        self.watchers: dict[str, threading.Event] = {}  # class code: its watcher's stop (a thread each: `watching`)
        self.ring: Callable[[str], None] = lambda code: None
        self.lock = threading.Lock()
        self.drawing = threading.Lock()  # one drawing at a time: the class's other pages wait for it, then read it

    def share(self, code: object, key: object, run_visitor: str, network: str | None) -> str:
        """The teacher (`key`) shares the run of `run_visitor` (the teacher's page's) with the class."""
        shared = self.classes.teacher_code(code, key, network)
        with self.lock:
            self.watched[shared] = run_visitor
            self.polled_at[shared] = self.clock()  # the teacher's page is there: it shares from its Train tab
        self.update(shared)
        self.watch(shared)
        return f"Class {shared} watches this run: its students see its curves and probe on their Train tab."

    def polled(self, run_visitor: str, snap: JobSnapshot, drawn: dict[str, Image.Image]) -> None:
        """The teacher's page polled the run of `run_visitor` (`snap`) and drew `drawn` (picture: image):
        each class watching it is pushed what changed, and keeps those pictures, encoded once."""
        with self.lock:
            codes = [code for code, visitor in self.watched.items() if visitor == run_visitor]
            self.polled_at |= dict.fromkeys(codes, self.clock())
        if not codes:
            return
        pictures = {which: png(image) for which, image in drawn.items()}
        for code in codes:
            self.update(code, snap, pictures)
            self.watch(code)  # a run set aside goes on at its teacher's poll: watched again

    def watch(self, code: str) -> None:
        """The class's watcher, started unless one watches already or its run does not train (`watching`)."""
        with self.lock:
            if code in self.watchers or (self.shown.get(code) or {}).get("state") != "running":
                return
            stop = self.watchers[code] = threading.Event()
        threading.Thread(target=self.watching, args=(code, stop), name="class run watcher", daemon=True).start()

    def watching(self, code: str, stop: threading.Event) -> None:
        """A class's watcher (a thread of its own, one a class whose run trains, none else): every `every_s`
        it looks at the run (`look`), so the class sees the run move on while its teacher's page is away. It
        ends when the run no longer trains (a poll of the teacher's page, which a set-aside or queued run waits
        for to go on, starts another), the class ends, or `forget` stops it."""
        try:
            while not stop.wait(self.every_s):
                self.look(code)
                with self.lock:
                    if self.watchers.get(code) is stop and (self.shown.get(code) or {}).get("state") != "running":
                        del self.watchers[code]
                    if self.watchers.get(code) is not stop:
                        return
        finally:
            with self.lock:
                if self.watchers.get(code) is stop:  # it failed (the log has why): the teacher's next poll restarts it
                    del self.watchers[code]

    def look(self, code: str) -> None:
        """The watcher's look at the class's run: none while the teacher's page polls it (its polls push, with
        the pictures it drew: nothing drawn twice); else the run read, the pictures whose numbers changed drawn
        once for the class, and what changed pushed, as the teacher's poll would have."""
        if not self.classes.is_open(code):
            self.forget(code)
            return
        with self.lock:
            visitor, polled = self.watched.get(code), self.polled_at.get(code, -math.inf)
        read = self.clock()
        if visitor is None or read - polled < AWAY_S:
            return
        snap = self.runs.snapshot(visitor)
        self.update(code, snap, self.drawings(code, snap), read)

    def drawings(self, code: str, snap: JobSnapshot) -> dict[str, bytes]:
        """The pictures of `snap` whose numbers differ from those of the class's kept ones, drawn (PNG)."""
        now = counts(snap)
        with self.lock:
            stale = [which for which in PICTURES if now[which] and self.drawn.get((code, which), (0,))[0] != now[which]]
        pictures = {}
        for which in stale:
            try:
                pictures[which] = drawn_png(snap, which, self.text_px)
            except ClassError:  # its numbers, not yet its image: a page asking is told so (`picture`)
                continue
            except Exception:  # noqa: BLE001 - as the Train tab's: the run's state still goes out, the log keeps why
                LOG.exception("a class run's picture could not be drawn")
        return pictures

    def update(
        self,
        code: str,
        snap: JobSnapshot | None = None,
        pictures: dict[str, bytes] | None = None,
        read: float | None = None,
    ) -> None:
        """The class's run summary (of `snap`, else read now) pushed (a new version, the bell rung) if it
        changed; `pictures` (PNG) drawn of `snap` kept for the class. `read`: when the watcher read `snap`,
        dropped if the teacher's page polled since (its push is as new, or newer)."""
        with self.lock:
            visitor = self.watched.get(code)
        if visitor is None:
            return
        summary = run_summary(snap or self.runs.snapshot(visitor), self.text_px)
        count = summary["pictures"]
        with self.lock:
            if read is not None and self.polled_at.get(code, -math.inf) >= read:
                return
            last = self.shown.get(code)
            if last is not None and any(count[which] < last["pictures"][which] for which in PICTURES):
                for which in PICTURES:  # a new run of the teacher's: the last one's pictures are not its own
                    self.drawn.pop((code, which), None)
            self.drawn |= {(code, which): (count[which], data) for which, data in (pictures or {}).items()}
            if last is not None and {**last, "version": 0} == {**summary, "version": 0}:
                return
            summary["version"] = (last or {}).get("version", 0) + 1
            self.shown[code] = summary
        if self.classes.show_run(code, summary):
            self.ring(code)
        else:  # the class has ended: what it kept goes
            self.forget(code)

    def forget(self, code: str) -> None:
        """The class has ended: what it kept goes, and its watcher stops."""
        with self.lock:
            self.watched.pop(code, None)
            self.shown.pop(code, None)
            self.polled_at.pop(code, None)
            if (stop := self.watchers.pop(code, None)) is not None:
                stop.set()
            for which in PICTURES:
                self.drawn.pop((code, which), None)

    def picture(self, asked: dict, network: str | None) -> bytes:
        """Picture `asked["picture"]` (curves or probe) of the run the class of `asked["code"]` watches,
        for its teacher (`key`) or a student (`token`): the teacher's page's drawing kept for the class, or
        one drawn here once (a page that asks before the teacher's poll drew it)."""
        which = asked.get("picture")
        if which not in PICTURES:
            raise ClassError("A class run's picture is curves or probe.", 400)
        self.classes.followed(asked.get("code"), asked.get("key"), asked.get("token"), network)  # a member's
        code = clean_code(asked.get("code")) or ""
        with self.drawing:
            with self.lock:
                visitor, shown = self.watched.get(code), self.shown.get(code)
                kept = self.drawn.get((code, which))
            if visitor is None or shown is None:
                raise ClassError("The teacher shares no training run with the class.", 404)
            if kept is not None and kept[0] >= shown["pictures"][which]:  # the one the page was told of, or newer
                return kept[1]
            snap = self.runs.snapshot(visitor)  # not drawn by the teacher's page (yet): drawn here, once
            data = drawn_png(snap, which, self.text_px)
            with self.lock:
                if code in self.watched:  # not kept for a class that ended meanwhile
                    self.drawn[(code, which)] = counts(snap)[which], data
            return data
