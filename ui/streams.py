"""Live webcam streams on a shared server: a server-wide limit, turns of bounded length, and
at most one frame per visitor in flight: server policy of ui/ (its last floor, docs/architecture.md),
with no Gradio, no model and no picture; ui/live.py holds them, ui/live_handlers.py asks before every frame.

A free Space's two vCPUs serve one or two live streams; more would slow every one of them
(and Explore's visitors). So at most `limit` visitors (each named by a digest of its
browser session) hold a slot at once. A slot lasts one turn (`turn_s` seconds of
streaming) and is given back when its turn is over or when no frame came for `idle_s`
seconds (the visitor pressed Stop or left). Visitors whose frames arrive while every slot is
held wait in the order they first asked, and are told how long in seconds; a free slot goes
to the one who has waited longest, so a visitor whose turn ended queues behind them.

Frames are never queued: Gradio keeps only the newest frame of a stream, and a frame of a
visitor whose previous frame is still being drawn is skipped (`Admission.skip`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

EMA_WEIGHT = 0.2  # weight of the newest frame interval in the frames-per-second readout


@dataclass
class _Slot:
    started: float
    last_seen: float
    busy: bool = False
    frames: int = 0
    interval: float | None = None  # moving average of seconds between frames shown
    last_shown: float | None = None


@dataclass(frozen=True)
class Admission:
    """The answer for one frame: draw it (`admitted`), skip it (the visitor's previous frame
    is still being drawn), or wait `wait_s` seconds for a slot (`admitted` and `skip` False)."""

    admitted: bool
    skip: bool = False
    wait_s: int = 0
    position: int = 0  # 1 = next to get a slot


@dataclass
class StreamSlots:
    """At most `limit` live streams at once on the whole server (see the module docstring)."""

    limit: int = 1
    turn_s: float = 180.0
    idle_s: float = 3.0
    clock: Callable[[], float] = time.monotonic
    _slots: dict[str, _Slot] = field(default_factory=dict)
    _waiting: dict[str, tuple[float, float]] = field(default_factory=dict)  # visitor -> (first asked, last asked)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"the live stream limit must be at least 1, got {self.limit}")

    def begin(self, visitor: str) -> Admission:
        """Ask to draw one frame of `visitor`'s stream. When admitted, call `end` after drawing
        it, also when drawing fails (try/finally): the slot stays busy until then."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            slot = self._slots.get(visitor)
            if slot is None and self._first_in_line(visitor, now):
                self._waiting.pop(visitor, None)
                slot = self._slots[visitor] = _Slot(started=now, last_seen=now)
            if slot is None:
                return self._wait(visitor, now)
            slot.last_seen = now
            if slot.busy:
                return Admission(admitted=False, skip=True)
            slot.busy = True
            return Admission(admitted=True)

    def end(self, visitor: str) -> float | None:
        """A frame of `visitor` has been drawn; returns the frames per second shown (None until
        two frames have been)."""
        with self._lock:
            now = self.clock()
            slot = self._slots.get(visitor)
            if slot is None:
                return None
            slot.busy, slot.last_seen, slot.frames = False, now, slot.frames + 1
            if slot.last_shown is not None:
                gap = now - slot.last_shown
                slot.interval = gap if slot.interval is None else (1 - EMA_WEIGHT) * slot.interval + EMA_WEIGHT * gap
            slot.last_shown = now
            return 1.0 / slot.interval if slot.interval else None

    def seconds_left(self, visitor: str) -> int:
        """Seconds left in `visitor`'s turn (0 without a slot)."""
        with self._lock:
            slot = self._slots.get(visitor)
            return max(0, math.ceil(slot.started + self.turn_s - self.clock())) if slot else 0

    def active(self) -> int:
        """Streams holding a slot now."""
        with self._lock:
            self._expire(self.clock())
            return len(self._slots)

    def _expire(self, now: float) -> None:
        """Give back the slots whose turn is over or whose visitor stopped sending frames, and
        forget waiters who stopped asking."""
        for visitor, slot in list(self._slots.items()):
            if slot.busy:  # a frame is being drawn (a slow model may take longer than idle_s)
                continue
            over = now - slot.started >= self.turn_s
            if over or now - slot.last_seen >= self.idle_s:
                del self._slots[visitor]
                if over:  # the turn is over: back of the line
                    self._waiting[visitor] = (now, now)
        for visitor, (_, last) in list(self._waiting.items()):
            if now - last >= self.idle_s:
                del self._waiting[visitor]

    def _first_in_line(self, visitor: str, now: float) -> bool:
        """Record that `visitor` asks; True if no one else has been waiting longer for a slot."""
        first = self._waiting.get(visitor, (now, now))[0]
        self._waiting[visitor] = (first, now)
        return self._rank(visitor) < self.limit - len(self._slots)

    def _rank(self, visitor: str) -> int:
        """How many waiters asked before `visitor` (0 = first in line; ties by name)."""
        first = self._waiting[visitor][0]
        return sum(1 for other, (asked, _) in self._waiting.items() if (asked, other) < (first, visitor))

    def _wait(self, visitor: str, now: float) -> Admission:
        """How long `visitor` waits: the k-th in line gets the k-th slot to come free, a slot
        freeing when its turn ends (one turn later for each round of `limit` waiters)."""
        k = self._rank(visitor)
        ends = sorted(s.started + self.turn_s for s in self._slots.values()) or [now]
        rounds, index = divmod(k, len(ends))
        wait = ends[index] + rounds * self.turn_s - now
        return Admission(admitted=False, wait_s=max(1, math.ceil(wait)), position=k + 1)
