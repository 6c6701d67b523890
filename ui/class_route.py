"""Class mode's routes (issue 59), beside Gradio's on the app's own server, as the rows route is
(ui/rows_route.py): the teacher's page starts a class and sends its view on each change; every
page of the class is pushed each change on an event stream (Server-Sent Events) and reads the
teacher's analysis once per image, then its rows on the rows route by the followers' handle.

    POST CLASS_ROUTE/<action>, Content-Type: application/json, each answered with JSON:
    start     {"address": the page's address}        -> {"code", "key", "join", "qr": rows of "0"/"1"}
    join      {"code", "name"?, "token"?}             -> {"code", "token", "name"}
    ticket    {"code", "key" | "token"}               -> {"ticket"}: opens one event stream
    lead      {"code", "key", "view"}                 -> {"version"}  (ui.classroom.checked_view)
    command   {"code", "key", "command"}              -> {"version"}  (freeze, release, eyes, end)
    analysis  {"code", "key" | "token"}               -> the teacher's analysis, as the page's own
                                                         (explorer.page_maps.page_maps), under the followers' handle
    GET EVENTS_ROUTE?ticket=...  -> text/event-stream: "state" events (ui.classroom.Classroom.snapshot),
                                    a comment every HEARTBEAT_S, an "end" event when the class ends

A refusal is a sentence (text/plain) with its status (ui.classroom.ClassError). The POSTs pass
ui.limits.RequestLimits like the rows route's: at most MAX_EVENT_BYTES a body, and a place of the
gate's for their network (ui/server_functions.py), which `gated` names them for.

**Why an event stream of the app's own, not Gradio.** Gradio has no broadcast: a page hears of a
change only by an event of its own, and every event waiting in Gradio's queue, or a generator
event streaming, holds one of the Blocks' worker threads (its limiter, `max_threads`, 40) for as
long as it lasts, so 30 students waiting for the teacher's next click would hold 30 of them, and
polling would cost a request a student a second. Here a waiting page holds no thread: one
coroutine on the event loop, asleep on the class's `Bell` until a change rings it, and a socket;
a push is one snapshot's JSON (~300 bytes) a page, and a page's stream lasts at most LASTING_S
before the page opens another (a lost one is noticed within HEARTBEAT_S). The teacher's image
reaches a following page as numbers read once (`analysis`), drawn by the page itself: one forward
pass, the teacher's, whatever the class's size.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import segno
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from explorer import page_maps
from explorer.explain import Explanation

from .classroom import ClassError, Classroom, clean_code
from .common import Server, model_name
from .limits import sender
from .server_functions import CLASS_ROUTE

EVENTS_ROUTE = f"{CLASS_ROUTE}/events"
HEARTBEAT_S = 15.0
LASTING_S = 600.0  # a stream's longest life: the page opens another (a stale connection never outlives it)
KEPT_ANALYSES = 16  # the teachers' analyses as the followers read them, most recent (those no class follows: dropped)
PRIVATE = {"Cache-Control": "no-store"}
_ADDRESS = re.compile(r"https?://[\x21-\x7e]{1,300}")


class Bell:
    """Wakes every stream of a class when it changes: each waits on its class's asyncio.Event,
    which `ring` sets and replaces. Run on the event loop only (the routes' coroutines)."""

    def __init__(self) -> None:
        self.events: dict[str, asyncio.Event] = {}

    def ring(self, code: str) -> None:
        if (event := self.events.pop(code, None)) is not None:
            event.set()

    async def wait(self, code: str, timeout: float) -> bool:
        """True when the class changed within `timeout` seconds."""
        event = self.events.setdefault(code, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return False
        return True


def sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def class_events(
    classes: Classroom, bell: Bell, code: str, token: str | None, heartbeat_s: float, lasting_s: float
) -> AsyncIterator[str]:
    """A page's stream: the class's state now, then each change, a comment every `heartbeat_s`,
    for at most `lasting_s`; an "end" event when the class has ended."""
    seen, left = -1, lasting_s
    try:
        while left > 0:
            try:
                state = classes.snapshot(code, token)
            except ClassError as e:
                bell.ring(code)  # the class's other streams wake and end too
                yield sse("end", {"message": str(e)})
                return
            if state["version"] != seen:
                seen = state["version"]
                yield sse("state", state)
                continue  # a change while the page was written to is looked for before the wait
            # no await between the look and the wait: a change rings the bell after it, never between
            began = asyncio.get_running_loop().time()
            if not await bell.wait(code, min(heartbeat_s, left)):
                yield ": still here\n\n"  # a connection that is gone fails here, and the stream ends
            left -= asyncio.get_running_loop().time() - began
    finally:
        classes.close_stream(code, token)


def qr_rows(text: str) -> list[str]:
    """`text` as a QR code's modules (segno, error correction M), a row a string of "1" (dark) and "0"."""
    return ["".join("1" if dark else "0" for dark in row) for row in segno.make(text, error="m", micro=False).matrix]


def join_address(address: object, code: str) -> str:
    """Where a student joins: the teacher's page's address (http or https, as the page sent it)
    with ?class=CODE, or /?class=CODE when it sent no such address."""
    base = address.split("?")[0].split("#")[0] if isinstance(address, str) and _ADDRESS.fullmatch(address) else "/"
    return f"{base if base.endswith('/') else base + '/'}?class={code}"


class ClassAnswers:
    """Each action's answer from the request's JSON, the class's `Bell` rung for each change."""

    def __init__(self, server: Server, bell: Bell) -> None:
        self.server, self.classes, self.bell = server, server.classes, bell
        self.analyses: OrderedDict[str, bytes] = OrderedDict()  # followers' handle: the analysis as JSON
        self.building: dict[str, threading.Lock] = {}  # followers' handle: held while its analysis is built
        self.lock = threading.Lock()  # `analysis` runs in Gradio's threads

    def start(self, asked: dict, network: str | None) -> dict:
        code, key = self.classes.start(network)
        join = join_address(asked.get("address"), code)
        return {"code": code, "key": key, "join": join, "qr": qr_rows(join)}

    def join(self, asked: dict, network: str | None) -> dict:
        token, name = self.classes.join(asked.get("code"), network, asked.get("name"), asked.get("token"))
        code = self._rang(asked)
        return {"code": code, "token": token, "name": name}

    def ticket(self, asked: dict, network: str | None) -> dict:
        return {"ticket": self.classes.ticket(asked.get("code"), asked.get("key"), asked.get("token"), network)}

    def lead(self, asked: dict, network: str | None) -> dict:
        version = self.classes.lead(asked.get("code"), asked.get("key"), asked.get("view"), network)
        self._rang(asked)
        return {"version": version}

    def command(self, asked: dict, network: str | None) -> dict:
        code, key, command = asked.get("code"), asked.get("key"), asked.get("command")
        if command == "end":
            self.classes.end(code, key, network)
            self._rang(asked)
            return {"ended": True}
        version = self.classes.command(code, key, command, network)
        self._rang(asked)
        return {"version": version}

    def _rang(self, asked: dict) -> str:
        """The class the request named (it changed): its pages' streams are woken, and the copies of
        analyses no class follows any more are dropped (a class that moved to another image, or ended:
        its handle was forgotten, `Classroom.revoke`). They had stayed until 16 newer ones came, up to
        explorer.page_budget.REPLY_BYTES each (bench.class_mode)."""
        code = clean_code(asked.get("code")) or ""
        self.bell.ring(code)
        with self.lock:
            for handle in [h for h in self.analyses if self.server.pages.key(h) is None]:
                del self.analyses[handle]
        return code

    def analysis(self, asked: dict, network: str | None) -> bytes:
        """The teacher's analysis as the page's own reply holds it, at the layer the teacher showed
        when it was first asked for, built once per image (in a thread)."""
        view = self.classes.followed(asked.get("code"), asked.get("key"), asked.get("token"), network) or {}
        handle = view.get("handle")
        key = self.server.pages.key(handle) if handle is not None else None
        ex = self.server.store.peek(key) if key is not None else None
        if handle is None or key is None or ex is None:
            raise ClassError("The teacher's image is not here yet: the page shows it once the teacher loads one.", 404)
        with self.lock:
            if (kept := self.analyses.get(handle)) is not None:
                return kept
            building = self.building.setdefault(handle, threading.Lock())
        # One page builds it while the class's others wait for it: thirty pages asking at once had each built
        # it, eight at a time (their network's places), 10 to 20 ms of a core each for ViT-S/16 (bench.class_mode).
        with building:
            with self.lock:
                if (kept := self.analyses.get(handle)) is not None:
                    return kept
            try:
                built = self._built(ex, key.model_key, min(view["layer"], ex.depth) - 1, handle)
            finally:
                with self.lock:
                    self.building.pop(handle, None)
        return built

    def _built(self, ex: Explanation, model_key: str, layer: int, handle: str) -> bytes:
        """The analysis as a following page reads it, with the token rows of `layer` (0-based), kept."""
        payload = page_maps.page_maps(ex, model_name(model_key), layer, self.server.text_px, handle)
        payload["teacher"] = teacher_texts(ex, model_name(model_key))
        built = json.dumps(payload, separators=(",", ":")).encode()
        with self.lock:
            self.analyses[handle] = built
            while len(self.analyses) > KEPT_ANALYSES:
                self.analyses.popitem(last=False)
        return built


TOP_CLASSES = 3  # as Explore's "Top predictions" box shows them (ui/explore.py)


def teacher_texts(ex: Explanation, model: str) -> dict[str, str]:
    """What a following page says of the teacher's image in place of its own model picker and "Top
    predictions" (ui/js/classroom.js paints them as text): the model, and its top classes as the
    teacher's analysis computed them, so a student's own earlier image is never named beside the maps."""
    top = list(ex.probabilities.items())[:TOP_CLASSES]  # top classes first
    said = ", ".join(f"{name} ({100 * p:.0f} %)" for name, p in top)
    predicted = f"Its top predictions: {said}." if top else "It predicts no classes: its attention is still shown."
    return {"model": f"The teacher's image is analysed by {model}.", "predictions": predicted}


def asked_of(body: bytes) -> dict:
    try:
        asked = json.loads(body)
    except ValueError:
        return {}
    return asked if isinstance(asked, dict) else {}


def class_routes(
    server: Server, trusted_hops: int = 0, heartbeat_s: float = HEARTBEAT_S, lasting_s: float = LASTING_S
) -> list[Route]:
    """The class's routes over `server` (ui.app serves them on Gradio's app, `served_limits`)."""
    bell = Bell()
    answers = ClassAnswers(server, bell)

    async def action(request: Request) -> Response:
        name, network = request.path_params["action"], sender(request.scope, trusted_hops)
        answer: Callable[[dict, str | None], Any] | None = getattr(answers, name, None)
        if name not in ("start", "join", "ticket", "lead", "command", "analysis") or answer is None:
            return PlainTextResponse("There is no such class action.", status_code=404, headers=PRIVATE)
        asked = asked_of(await request.body())
        try:
            if name == "analysis":  # page_maps encodes: not on the event loop
                limiter = getattr(getattr(request.app, "blocks", None), "limiter", None)
                built = await anyio.to_thread.run_sync(answer, asked, network, limiter=limiter)
                return Response(built, media_type="application/json", headers=PRIVATE)
            return Response(json.dumps(answer(asked, network)), media_type="application/json", headers=PRIVATE)
        except ClassError as e:
            return PlainTextResponse(str(e), status_code=e.status, headers=PRIVATE)

    async def events(request: Request) -> Response:
        try:
            code, token = server.classes.open_stream(request.query_params.get("ticket"))
        except ClassError as e:
            return PlainTextResponse(str(e), status_code=e.status, headers=PRIVATE)
        stream = class_events(server.classes, bell, code, token, heartbeat_s, lasting_s)
        headers = {**PRIVATE, "X-Accel-Buffering": "no"}  # a proxy that buffers would hold the pushes
        return StreamingResponse(stream, media_type="text/event-stream", headers=headers)

    return [Route(EVENTS_ROUTE, events, methods=["GET"]), Route(CLASS_ROUTE + "/{action}", action, methods=["POST"])]
