"""Which browser sessions Gradio keeps when it must drop one, and what a dropped one gets back
(docs/security.md, "Requests and sessions").

Gradio keeps at most `limits.SESSIONS` sessions and drops the least recently used, so 510 fresh
sessions, one cheap request each, used to push every idle student's analysis out: their next
click said "No image analysed yet in this session". Now each network (an address: a visitor, or
a school behind one router) may hold SESSION_SHARE of the sessions before its own are the first
dropped, and a dropped session's small values (the key of its analysis in the content-keyed
`ExplanationStore`, its model, its query) are parked and put back when it next asks.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from gradio.state_holder import StateHolder
from gradio.utils import LRUCache

from explorer.explain import ExplanationKey

# A network may hold a quarter of the sessions (125 of 500) before the drops start with its own:
# a class of 30 behind one router, each student with a few tabs or reloads, fits. Uploads share
# their room the same way (ui.uploads.SENDER_SHARE).
SESSION_SHARE = 0.25
# What the parked values of dropped sessions may take: a session parks its analysis's key, model
# and query, under a kilobyte; 8 MiB holds about 10,000 of them (20 × the sessions kept).
PARKED_BYTES = 8 * 2**20
PARKED_VALUE_CHARS = 512  # a longer string is not one of the values worth parking
# The networks of at most this many sessions are remembered, kept or not (a few MB).
NETWORKS = 20_000


class SessionShares:
    """Drops a session when Gradio's store is full, before Gradio would drop its least recently
    used one: first a session no request named (Gradio's one-shot API calls), or one of a network
    holding more than its share, the least recently used of them; else the least recently used.
    The request middleware (`ui.limits.RequestLimits`) calls `admit` before Gradio reads each
    request that names a session; Gradio's own cap stays a few sessions above as the backstop."""

    def __init__(self, holder: Callable[[], StateHolder | None], capacity: int, share: float = SESSION_SHARE):
        self.holder, self.capacity, self.share = holder, capacity, max(1, int(share * capacity))
        self.networks: OrderedDict[str, str | None] = OrderedDict()  # session -> its network
        self.parked = ParkedValues(PARKED_BYTES)
        self.lock = threading.Lock()

    def admit(self, session: str, network: str | None) -> None:
        """A request of `session` from `network` is about to reach Gradio: note where it comes from,
        make room for it if it is new, and give a dropped session back its parked values."""
        holder = self.holder()
        if holder is None:
            return
        with self.lock:
            self.networks[session] = network
            self.networks.move_to_end(session)
            while len(self.networks) > NETWORKS:
                self.networks.popitem(last=False)
            new = session not in holder.session_data
            while len(holder.session_data) > self.capacity - new:  # room for a new one; the backstop's extras go
                self._drop(holder, self._victim(holder, keep=session))
            values = self.parked.take(session) if new else {}
        if values:
            state = holder[session]  # the session Gradio would make for this request, made now
            for component, value in values.items():
                state[component] = value

    def _victim(self, holder: StateHolder, keep: str) -> str:
        """The session to drop, by the rule in the class's docstring; never `keep`, the asking one."""
        # list() copies Gradio's dict in one step; a loop over it would meet Gradio's request threads,
        # which add sessions without its lock ("mutated during iteration")
        held = [s for s in list(holder.session_data) if s != keep]  # least recently used first
        counts = Counter(self.networks.get(s) for s in held)
        for session in held:
            network = self.networks.get(session)
            if network is None or counts[network] > self.share:
                return session
        return held[0]

    def _drop(self, holder: StateHolder, session: str) -> None:
        with holder.lock:
            state = holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)
        if state is not None:
            values = list(state.state_data.items())  # one step: a request of that session may still write
            self.parked.put(session, {k: v for k, v in values if worth_parking(v)})


def worth_parking(value: Any) -> bool:
    """Whether a session's value is small and plain enough to keep after the session is dropped:
    an analysis's key, a name, a number, a query, not a picture or a tensor."""
    if value is None or isinstance(value, bool | int | float | ExplanationKey):
        return True
    if isinstance(value, str):
        return len(value) <= PARKED_VALUE_CHARS
    if isinstance(value, tuple) and len(value) <= 4:
        return all(worth_parking(v) for v in value)
    return False


class ParkedValues:
    """The values of dropped sessions, by session, the most recent within `max_bytes`."""

    def __init__(self, max_bytes: int):
        self.values: OrderedDict[str, dict[int, Any]] = OrderedDict()
        self.sizes: dict[str, int] = {}
        self.max_bytes, self.nbytes = max_bytes, 0

    def put(self, session: str, values: dict[int, Any]) -> None:
        self.take(session)
        if not any(v is not None for v in values.values()):
            return  # a session that had nothing: nothing to give back
        size = sys.getsizeof(session) + sum(_size(v) for v in values.values())
        self.values[session], self.sizes[session] = values, size
        self.nbytes += size
        while self.nbytes > self.max_bytes:
            oldest, _ = self.values.popitem(last=False)
            self.nbytes -= self.sizes.pop(oldest)

    def take(self, session: str) -> dict[int, Any]:
        """The values parked for `session` ({} if none), no longer parked."""
        values = self.values.pop(session, {})
        self.nbytes -= self.sizes.pop(session, 0)
        return values


def _size(value: Any) -> int:
    """Bytes `value` takes, roughly: the object and, for a key or a tuple, what it holds."""
    if isinstance(value, ExplanationKey):
        return sys.getsizeof(value) + sum(_size(v) for v in vars(value).values())
    if isinstance(value, tuple):
        return sys.getsizeof(value) + sum(_size(v) for v in value)
    return sys.getsizeof(value)


class WaitingSessionsKept(LRUCache):
    """Gradio's queue keeps each session's messages (`Queue.pending_messages_per_session`) in an
    LRU of 2,000 sessions, and a new session dropped the oldest even while its event waited or
    ran: the next message to it raised KeyError inside the queue's processing task, which ended
    it, and every event after waited for good (the soak: about 2,200 new sessions in four minutes
    stopped the server at minute 13). This one drops the least recently used session with no
    event waiting or running (`waiting`); while every one has one it grows, by at most the
    queue's own size (`demo.queue(max_size=...)`)."""

    def __init__(self, max_size: int, waiting: Callable[[str], bool]):
        super().__init__(max_size)
        self.waiting = waiting

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self:
            self.move_to_end(key)
        elif len(self) >= self.max_size:
            idle = next((session for session in self if not self.waiting(session)), None)
            if idle is not None:
                del self[idle]
        OrderedDict.__setitem__(self, key, value)


def keep_waiting_sessions(demo: Any) -> None:
    """Give `demo`'s queue (made by `demo.queue`) a WaitingSessionsKept for its sessions' messages."""
    queue = demo._queue
    old = queue.pending_messages_per_session
    kept = WaitingSessionsKept(old.max_size, lambda session: bool(queue.pending_event_ids_session.get(session)))
    kept.update(old)
    queue.pending_messages_per_session = kept
