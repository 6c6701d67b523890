"""The gate: admission for the page's questions for numbers: the rows route (ROUTE, ui/rows_route.py), which
the page asks for a band of a layer's patch rows or a layer's token rows (docs/security.md), and
class mode's actions (CLASS_ROUTE, ui/class_route.py), which are small but may read an analysis.

They run outside Gradio's queue, each as soon as it comes, in Gradio's thread pool (40 threads
shared with every event), and a reply was sent whole into the connection's buffer: a page's
eight questions at once for a 48 × 48 grid's layer took +7 GB, and four replies nobody read held
+618 MiB for as long as their sockets stayed open (issue 56, then on Gradio's server function
route, /gradio_api/component_server). Here (a part of `ui.limits.RequestLimits`, before the
route reads the request):

- at most IN_FLIGHT run or send at once, PER_NETWORK of them from one network (the trusted
  address, `ui.limits.sender`): a class behind one router shares it, and one network never takes
  every place; a request waits up to WAIT_S for a place, then is refused in words (HTTP 429);
- a reply is sent CHUNK_BYTES at a time, each chunk once the reader took the last (uvicorn waits
  for its buffer to drain), so a place is held until the reply is read; a reader that takes no
  chunk for STALL_S is dropped, the rest of its reply freed;
- one network's replies are paced to PACE_BYTES_S after a first BURST_BYTES: a page's band comes at
  once, but a network asking band after new band (an encode and 2 MB each) no longer keeps the
  event loop and a core sending (110 MB/s, another network's analysis 2.4 x slower, issue 56).
- and each band the server encodes for a network is charged to that pace as the CPU seconds it
  took over ENCODE_SHARE (a virtual clock in bytes, PACE_BYTES_S a second): issue 58's bands
  are small (0.02 MB for a 48 x 48 grid), replies under a chunk were not paced, and a network asking
  new band after new band kept a core encoding: another network's analysis 2.08 x slower. Bands
  already encoded (a class asking one analysis's) cost no charge.

So what replies hold is at most IN_FLIGHT × explorer.page_budget.BAND_BYTES, whoever asks. The
event loop runs this code one coroutine at a time: the counts need no lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from typing import Any

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]

ROUTE = "/page_maps/rows"  # ui/rows_route.py serves it; the page asks it (ui/js/rows.js, `fetchRows`)
CLASS_ROUTE = "/class"  # class mode's POSTs, CLASS_ROUTE/<action> (ui/class_route.py), take places here too
IN_FLIGHT = 16  # every network's questions running or sending at once (Gradio's pool: 40 threads)
PER_NETWORK = 8  # one network's (a class of 30 behind one router asks a few at a time)
WAIT_S = 20.0
CHUNK_BYTES = 64 * 2**10  # uvicorn's buffer drains below 16 KiB before it takes more
STALL_S = 30.0  # a school Wi-Fi share of 1.5 Mbit/s reads 64 KiB in 0.4 s
# A school's whole Wi-Fi share is a few MB/s (issue 58: 1.5 Mbit/s a student), less than a network's pace.
PACE_BYTES_S = 8 * 10**6
BURST_BYTES = 4 * 10**6  # two bands at once, unpaced
# A network's encodes may keep at most this share of one core busy (beyond its burst): a class
# behind one router asking new bands shares it, as it shares the pace.
ENCODE_SHARE = 0.125
ENCODED_HEADER = "X-Encoded-Seconds"  # ui/rows_route.py's, for the gate only
BUSY = "The server is answering many questions for numbers at once: try the layer again in a moment."
CLASS_BUSY = "The server is answering many questions at once: the class's page tries again in a moment."


def gated(path: str) -> bool:
    """Whether a POST to `path` (its trailing slash cut) runs in a place of the gate: the rows
    route's, and class mode's actions (its event stream is a GET, which holds no thread)."""
    return path == ROUTE or path.startswith(CLASS_ROUTE + "/")


class StalledReader(Exception):
    """The client took no chunk of its reply for STALL_S."""


class RouteGate:
    """The places of the page's questions for rows (the module's docstring says why)."""

    def __init__(
        self,
        in_flight: int = IN_FLIGHT,
        per_network: int = PER_NETWORK,
        wait_s: float = WAIT_S,
        stall_s: float = STALL_S,
    ) -> None:
        self.in_flight, self.per_network, self.wait_s, self.stall_s = in_flight, per_network, wait_s, stall_s
        self.running: dict[str | None, int] = {}  # network: its questions running or sending
        self.changed: asyncio.Condition | None = None  # made on the event loop, at the first question
        self.paced: dict[str | None, float] = {}  # network: when its replies so far are due, at the pace

    def _room(self, network: str | None) -> bool:
        return sum(self.running.values()) < self.in_flight and self.running.get(network, 0) < self.per_network

    async def admit(self, network: str | None) -> bool:
        """Take a place for `network`'s question, waiting up to `wait_s`; False if none came."""
        self.changed = self.changed or asyncio.Condition()
        async with self.changed:
            try:
                await asyncio.wait_for(self.changed.wait_for(lambda: self._room(network)), self.wait_s)
            except TimeoutError:
                return False
            self.running[network] = self.running.get(network, 0) + 1
            return True

    async def leave(self, network: str | None) -> None:
        assert self.changed is not None, "leave() without admit()"
        async with self.changed:
            self.running[network] -= 1
            if not self.running[network]:
                del self.running[network]
            self.changed.notify_all()

    async def run(self, network: str | None, app: Callable[[Send], Awaitable[None]], send: Send) -> bool:
        """Run `app` (the request, given the `send` to answer with) in one of `network`'s places,
        its reply sent in chunks; False, with nothing run, if no place came within `wait_s`."""
        if not await self.admit(network):
            return False
        try:
            await app(partial(self._chunked, send, network))
        except StalledReader:
            pass  # uvicorn closes a connection whose reply was left unfinished: the rest is never sent
        finally:
            await self.leave(network)
        return True

    async def _chunked(self, send: Send, network: str | None, message: Message) -> None:
        """`message` sent on, a reply's body CHUNK_BYTES at a time, at `network`'s pace (an encode
        the reply's start reports charged to it first)."""
        if message["type"] == "http.response.start":
            return await self._sent(send, self._charged(network, message))
        body = message.get("body", b"")
        if message["type"] != "http.response.body" or len(body) <= CHUNK_BYTES:
            await self._pace(network, len(body))
            return await self._sent(send, message)
        more = message.get("more_body", False)
        for start in range(0, len(body), CHUNK_BYTES):
            last = start + CHUNK_BYTES >= len(body)
            chunk = body[start : start + CHUNK_BYTES]
            await self._pace(network, len(chunk))
            await self._sent(send, {"type": "http.response.body", "body": chunk, "more_body": more or not last})

    def _charged(self, network: str | None, start: Message) -> Message:
        """`start` without ENCODED_HEADER, whose seconds are added to `network`'s pace clock."""
        name = ENCODED_HEADER.lower().encode()
        seconds = [value for key, value in start.get("headers", []) if key.lower() == name]
        if not seconds:
            return start
        now = asyncio.get_running_loop().time()
        owed = float(seconds[0]) / ENCODE_SHARE  # seconds of the network's clock
        self.paced[network] = max(now, self.paced.get(network, now)) + owed
        return {**start, "headers": [(key, value) for key, value in start["headers"] if key.lower() != name]}

    async def _pace(self, network: str | None, size: int) -> None:
        """Wait until `size` more bytes are within `network`'s pace (a virtual clock: its replies'
        bytes are due one after another at PACE_BYTES_S, and may run BURST_BYTES ahead of it)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        for gone in [n for n, due in self.paced.items() if due < now]:
            del self.paced[gone]  # caught up: the map holds only networks still ahead of their pace
        due = max(now, self.paced.get(network, now)) + size / PACE_BYTES_S
        self.paced[network] = due
        if (ahead := due - now - BURST_BYTES / PACE_BYTES_S) > 0:
            await asyncio.sleep(ahead)

    async def _sent(self, send: Send, message: Message) -> None:
        try:
            await asyncio.wait_for(send(message), self.stall_s)
        except TimeoutError as e:
            raise StalledReader from e
