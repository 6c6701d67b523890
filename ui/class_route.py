"""Class mode's routes (issue 59), beside Gradio's on the app's own server, as the rows route is
(ui/rows_route.py): the teacher's page starts a class and sends its view on each change; every
page of the class is pushed each change on an event stream (Server-Sent Events) and reads the
teacher's analysis once per image, then its rows on the rows route by the followers' handle.

    POST CLASS_ROUTE/<action>, Content-Type: application/json, each answered with JSON:
    start     {"address": the page's address}        -> {"code", "key", "join", "qr": rows of "0"/"1",
                                                         "reach": "" or why the class's devices cannot open it}
    join      {"code", "name"?, "token"?}             -> {"code", "token", "name"}
    ticket    {"code", "key" | "token"}               -> {"ticket"}: opens one event stream
    lead      {"code", "key", "view"}                 -> {"version"}  (ui.classroom.checked_view; the pictures
                                                         of its More view and lesson read once, `ClassPictures`)
    command   {"code", "key", "command"}              -> {"version"}  (freeze, release, eyes, end)
    analysis  {"code", "key" | "token"}               -> the teacher's analysis, as the page's own
                                                         (explorer.page_maps.page_maps), under the followers' handle
    gallery   {"code", "key" | "token", "do", ...}    -> ui/class_gallery.py ("Show me yours")
    run       {"code", "key" | "token", "picture"}    -> image/png: the curves or the probe of the run the
                                                         teacher shares (ui.class_run.ClassRuns.picture)
    more      {"code", "key" | "token"}               -> the teacher's More view's picture (its bytes, as
                                                         the teacher's page was sent them)
    lesson    {"code", "key" | "token", "map"?}       -> the teacher's lesson's picture, the same way; with "map": i,
                                                         its i-th word map (lesson 4's, 0-based)
    GET EVENTS_ROUTE?ticket=...  -> text/event-stream: "state" events (ui.classroom.Classroom.snapshot),
                                    "run" events (its "run" alone, when only the teacher's run moved on),
                                    a comment every HEARTBEAT_S, an "end" event when the class ends

A refusal is a sentence (text/plain) with its status (ui.classroom.ClassError). The POSTs pass
ui.limits.RequestLimits like the rows route's: at most MAX_EVENT_BYTES a body, and a place of the
gate's for their network (ui/gate.py), which `gated` names them for.

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
import contextlib
import hashlib
import json
import re
import socket
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
import segno
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from explorer import page_maps
from explorer.explain import Explanation

from . import zerogpu
from .class_gallery import GalleryAnswers
from .classroom import LESSON_MAPS, ClassError, Classroom, checked_view, clean_code
from .common import Server, model_name
from .gate import CLASS_ROUTE
from .limits import sender
from .outputs import upload_folder

EVENTS_ROUTE = f"{CLASS_ROUTE}/events"
HEARTBEAT_S = 15.0
LASTING_S = 600.0  # a stream's longest life: the page opens another (a stale connection never outlives it)
KEPT_ANALYSES = 16  # the teachers' analyses as the followers read them, most recent (those no class follows: dropped)
PRIVATE = {"Cache-Control": "no-store"}
# The pictures the app writes (ui.outputs.cache_path), as a teacher's page names its More view's or its
# lesson's: the only files a class reads, found by these parts alone (no path a page sends is opened as sent).
_PICTURE = re.compile(r"/vit-explorer/([0-9a-f]{32})/([\w-]{1,80}\.(webp|png))$")
MORE_BYTES = 8 * 2**20  # a More view's or lesson's picture a class keeps (the PCA of 7 images: ~1 MB)
# The pictures of every class held at once: their count, and their bytes (the bound before lesson 4's word maps
# came: 32 pictures of MORE_BYTES; a word map is ~0.1 MB).
HELD_PICTURES, HELD_BYTES = 16 * (2 + LESSON_MAPS), 32 * MORE_BYTES
SHOWN = ("more", "lesson")  # what of the teacher's view has a picture of its own (ui.classroom.checked_shown)
MEDIA = {"webp": "image/webp", "png": "image/png"}
ACTIONS = ("start", "join", "ticket", "lead", "command", "analysis", "gallery", "run", *SHOWN)
# The actions that read files, encode, draw or run the model (the gallery) run in a thread, not on the event loop.
IN_THREAD = ("analysis", "gallery", "run", *SHOWN)
_ADDRESS = re.compile(r"https?://[\x21-\x7e]{1,300}")
# The actions that may run the model on the teacher's behalf: the gallery's Show and Spotlight (the others read
# what was computed: the teacher's analysis, pictures, a run's drawing). On ZeroGPU their GPU call is charged to the
# teacher (`charged`), so a request with a key only: the gallery checks it before any call, and refuses a student.
ON_TEACHERS_QUOTA = ("gallery",)


class Bell:
    """Wakes every stream of a class when it changes: each waits on its class's asyncio.Event,
    which `ring` sets and replaces. Run on the event loop (the routes' coroutines), but `ring_soon`."""

    def __init__(self) -> None:
        self.events: dict[str, asyncio.Event] = {}
        self.loop: asyncio.AbstractEventLoop | None = None  # the streams' loop, once one has waited

    def ring_soon(self, code: str) -> None:
        """`ring` from any thread (a Train poll, in Gradio's): on the streams' loop; none waited yet, none to wake."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.ring, code)

    def ring(self, code: str) -> None:
        if (event := self.events.pop(code, None)) is not None:
            event.set()

    async def wait(self, code: str, timeout: float) -> bool:
        """True when the class changed within `timeout` seconds."""
        self.loop = asyncio.get_running_loop()
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
    for at most `lasting_s`; an "end" event when the class has ended. A change of the teacher's run
    alone is a "run" event: the page does not draw the teacher's view again for a step of the run."""
    seen, run_seen, left = -1, None, lasting_s
    try:
        while left > 0:
            try:
                state = classes.snapshot(code, token)
            except ClassError as e:
                bell.ring(code)  # the class's other streams wake and end too
                yield sse("end", {"message": str(e)})
                return
            run = state["run"] and state["run"]["version"]
            if state["version"] != seen or run != run_seen:
                fresh, seen, run_seen = state["version"] != seen, state["version"], run
                yield sse("state", state) if fresh else sse("run", state["run"])
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


LOOPBACK = ("127.0.0.1", "localhost", "::1")
EVERY_INTERFACE = ("0.0.0.0", "::")
ONLY_THIS_COMPUTER = (
    "Only this computer can open this address. To let the class's devices join, start the app "
    "with python app.py --host 0.0.0.0 and open it again (docs/teaching.md)."
)
NO_NETWORK = "This computer is on no network that the class's devices could reach it by."


def lan_address() -> str | None:
    """This machine's IPv4 address on its network: the one a packet out would leave from (a UDP
    socket's connect sends nothing), or None on a machine with no network."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            found = probe.getsockname()[0]
        except OSError:
            return None
    return None if found.startswith("127.") else found


def room_address(
    address: object, listening: str | None, lan: Callable[[], str | None] = lan_address
) -> tuple[str, str]:
    """The teacher's page's address as the class's devices can open it, and a sentence when they
    cannot. A teacher on a laptop opens the app at 127.0.0.1, which on a student's phone is the
    phone: where the server listens on every interface (`--host 0.0.0.0`) the address names this
    machine's own on the network; where it listens on this computer only, the page says so."""
    if not isinstance(address, str) or listening is None:
        return address if isinstance(address, str) else "", ""
    parts = urlsplit(address)
    if parts.hostname not in LOOPBACK:
        return address, ""
    if listening not in EVERY_INTERFACE:
        return address, ONLY_THIS_COMPUTER
    if (found := lan()) is None:
        return address, NO_NETWORK
    return parts._replace(netloc=found if parts.port is None else f"{found}:{parts.port}").geturl(), ""


class ClassAnswers:
    """Each action's answer from the request's JSON, the class's `Bell` rung for each change."""

    def __init__(self, server: Server, bell: Bell, listening: str | None = None) -> None:
        self.server, self.classes, self.bell, self.listening = server, server.classes, bell, listening
        self.analyses: OrderedDict[str, bytes] = OrderedDict()  # followers' handle: the analysis as JSON
        self.pictures = ClassPictures()
        self.building: dict[str, threading.Lock] = {}  # followers' handle: held while its analysis is built
        self.lock = threading.Lock()  # `analysis` runs in Gradio's threads
        self.gallery = GalleryAnswers(server).answer  # in a thread too: it decodes pictures and runs the model

    def start(self, asked: dict, network: str | None) -> dict:
        code, key = self.classes.start(network)
        address, reach = room_address(asked.get("address"), self.listening)
        join = join_address(address, code)
        return {"code": code, "key": key, "join": join, "qr": qr_rows(join), "reach": reach}

    def join(self, asked: dict, network: str | None) -> dict:
        token, name = self.classes.join(asked.get("code"), network, asked.get("name"), asked.get("token"))
        code = self._rang(asked)
        return {"code": code, "token": token, "name": name}

    def ticket(self, asked: dict, network: str | None) -> dict:
        return {"ticket": self.classes.ticket(asked.get("code"), asked.get("key"), asked.get("token"), network)}

    def pictured(self, asked: dict, network: str | None) -> dict:
        """The teacher's view with its More view's and lesson's pictures (and lesson 4's word maps) read for
        the class (in a thread: a file is read), each named by its id from then on; the teacher's alone
        (their key checked first) may name a file to read."""
        code, key, view = asked.get("code"), asked.get("key"), checked_view(asked.get("view"))
        named = [(kind, view[kind]) for kind in SHOWN if view[kind] is not None and view[kind]["picture"]]
        named += [(f"map/{i}", shown) for i, shown in enumerate((view["lesson"] or {}).get("maps", []))]
        if named:
            self.classes.followed(code, key, None, network)
        for name, shown in named:  # checked_view's dicts: the view's own, changed in place
            shown["picture"] = self.pictures.kept(f"{clean_code(code)}/{name}", shown["picture"])
        return view

    def lead(self, asked: dict, network: str | None) -> dict:
        """The teacher's view (its pictures read already, `pictured`), its pages' streams woken (on the
        event loop: the bell is the loop's)."""
        version = self.classes.lead(asked.get("code"), asked.get("key"), asked.get("view"), network)
        self._rang(asked)
        return {"version": version}

    def more(self, asked: dict, network: str | None) -> tuple[bytes, str]:
        """The picture of the teacher's More view, as the teacher's page was sent it: read once for the
        class, the same bytes for every page (no follower runs the model for it)."""
        return self._shown("more", asked, network, lambda view: view.get("more"))

    def lesson(self, asked: dict, network: str | None) -> tuple[bytes, str]:
        """The picture of the teacher's lesson (its result: the lesson's button pressed), as `more`; with
        "map": i, the lesson's i-th word map (lesson 4's gallery, one picture a word), the same way."""
        if "map" not in asked:
            return self._shown("lesson", asked, network, lambda view: view.get("lesson"))
        index = asked["map"]
        if not (isinstance(index, int) and not isinstance(index, bool) and 0 <= index < LESSON_MAPS):
            raise ClassError("The teacher's lesson has no such word map.", 400)

        def word_map(view: dict) -> dict | None:
            maps = (view.get("lesson") or {}).get("maps") or []
            return maps[index] if index < len(maps) else None

        return self._shown(f"map/{index}", asked, network, word_map)

    def _shown(
        self, name: str, asked: dict, network: str | None, shown: Callable[[dict], dict | None]
    ) -> tuple[bytes, str]:
        """The bytes of the picture `shown` finds in the teacher's view, kept for the class as `name`."""
        view = self.classes.followed(asked.get("code"), asked.get("key"), asked.get("token"), network) or {}
        return self.pictures.read(f"{clean_code(asked.get('code'))}/{name}", (shown(view) or {}).get("picture"))

    def command(self, asked: dict, network: str | None) -> dict:
        code, key, command = asked.get("code"), asked.get("key"), asked.get("command")
        if command == "end":
            self.classes.end(code, key, network)
            self.pictures.forget(clean_code(code) or "")
            self._rang(asked)
            return {"ended": True}
        version = self.classes.command(code, key, command, network)
        self._rang(asked)
        return {"version": version}

    def run(self, asked: dict, network: str | None) -> tuple[bytes, str]:
        """A picture of the teacher's run (ui.class_run), kept once for the class (in a thread)."""
        return self.server.class_runs.picture(asked, network), "image/png"

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


class ClassPictures:
    """Each class's More view and lesson pictures ("CODE/more", "CODE/lesson", and lesson 4's word maps,
    "CODE/map/0"...), as its teacher's page shows them (the files the server wrote for that page,
    ui.outputs.saved): read once when the teacher's view names one, then the same bytes for every
    follower. Each at most MORE_BYTES; at most `kept` pictures and `most_bytes` in all, the most recent kept."""

    def __init__(self, kept: int = HELD_PICTURES, most_bytes: int = HELD_BYTES) -> None:
        self.most, self.most_bytes, self.bytes = kept, most_bytes, 0
        self.held: OrderedDict[str, tuple[str, str, bytes, str]] = OrderedDict()  # name: (path, id, bytes, media)
        self.lock = threading.Lock()

    def kept(self, name: str, picture: str) -> str:
        """The id (the digest of its bytes) of the file `picture` names, read now unless kept already."""
        with self.lock:
            if (kept := self.held.get(name)) is not None and kept[0] == picture:
                return kept[1]
        found = _PICTURE.search(picture)
        path = upload_folder() / "vit-explorer" / found[1] / found[2] if found else None
        if path is None or not path.is_file() or path.stat().st_size > MORE_BYTES:
            raise ClassError("The teacher's picture is not one this server drew: show it again.", 400)
        data = path.read_bytes()
        ident = hashlib.sha256(data).hexdigest()[:32]
        with self.lock:
            self._drop(name)
            self.held[name] = picture, ident, data, MEDIA[found[3]]
            self.bytes += len(data)
            while len(self.held) > self.most or self.bytes > self.most_bytes:
                self._drop(next(iter(self.held)))
        return ident

    def read(self, name: str, ident: object) -> tuple[bytes, str]:
        with self.lock:
            kept = self.held.get(name)
        if kept is None or kept[1] != ident:
            raise ClassError("The teacher's page shows no such picture now.", 404)
        return kept[2], kept[3]

    def forget(self, code: str) -> None:
        with self.lock:
            for name in [name for name in self.held if name.startswith(f"{code}/")]:
                self._drop(name)

    def _drop(self, name: str) -> None:
        """Under the lock: `name`'s picture (if held) gone, and its bytes."""
        if (kept := self.held.pop(name, None)) is not None:
            self.bytes -= len(kept[2])


TOP_CLASSES = 3  # as Explore's "Top predictions" box shows them (ui/explore.py)


def teacher_texts(ex: Explanation, model: str) -> dict[str, str]:
    """What a following page says of the teacher's image in place of its own model picker and "Top
    predictions" (ui/js/classroom.js paints them as text): the model, and its top classes as the
    teacher's analysis computed them, so a student's own earlier image is never named beside the maps."""
    top = list(ex.probabilities.items())[:TOP_CLASSES]  # top classes first
    said = ", ".join(f"{name} ({100 * p:.0f} %)" for name, p in top)
    predicted = f"Its top predictions: {said}." if top else "It predicts no classes: its attention is still shown."
    return {"model": f"The teacher's image is analysed by {model}.", "predictions": predicted}


def replied(built: Any) -> Response:
    """An action's answer as its page reads it: a Response as it is (a gallery's picture, its handout),
    a picture as (bytes, media type), an analysis as the JSON bytes it was kept as, anything else as JSON."""
    if isinstance(built, Response):
        return built
    if isinstance(built, tuple):
        return Response(built[0], media_type=built[1], headers=PRIVATE)
    body = built if isinstance(built, bytes) else json.dumps(built)
    return Response(body, media_type="application/json", headers=PRIVATE)


def charged(request: Request, answer: Callable[[dict, str | None], Any]) -> Callable[[dict, str | None], Any]:
    """`answer`, its GPU calls charged to the sender of `request` (ui.zerogpu.charged_to), in the thread it runs in:
    the X-IP-Token the teacher's page adds on a ZeroGPU Space (ui/js/zeroheaders.js), read then, never kept."""

    def run(asked: dict, network: str | None) -> Any:
        with zerogpu.charged_to(request):
            return answer(asked, network)

    return run


def asked_of(body: bytes) -> dict:
    try:
        asked = json.loads(body)
    except ValueError:
        return {}
    return asked if isinstance(asked, dict) else {}


def class_routes(
    server: Server,
    trusted_hops: int = 0,
    heartbeat_s: float = HEARTBEAT_S,
    lasting_s: float = LASTING_S,
    listening: str | None = None,
) -> list[Route]:
    """The class's routes over `server` (ui.app serves them on Gradio's app, `served_limits`);
    `listening`: the address the server is bound to (app.py's --host), which says whether the
    class's devices can reach a teacher's page opened at 127.0.0.1."""
    bell = Bell()
    answers = ClassAnswers(server, bell, listening)
    server.class_runs.ring = bell.ring_soon
    # The pages of a class ask for a run's new picture at once, when pushed: they wait here as coroutines,
    # not each in a thread of Gradio's pool, while one draws it; then each reads it, drawn, in a moment.
    drawing = asyncio.Lock()

    async def action(request: Request) -> Response:
        name, network = request.path_params["action"], sender(request.scope, trusted_hops)
        answer: Callable[[dict, str | None], Any] | None = getattr(answers, name, None)
        if name not in ACTIONS or answer is None:
            return PlainTextResponse("There is no such class action.", status_code=404, headers=PRIVATE)
        asked = asked_of(await request.body())
        limiter = getattr(getattr(request.app, "blocks", None), "limiter", None)
        try:
            if name == "lead":  # its pictures read in a thread, then led on the loop, whose bell it rings
                asked["view"] = await anyio.to_thread.run_sync(answers.pictured, asked, network, limiter=limiter)
            if name not in IN_THREAD:
                return replied(answer(asked, network))
            if name in ON_TEACHERS_QUOTA and asked.get("key") is not None:  # never a student's request
                answer = charged(request, answer)
            async with drawing if name == "run" else contextlib.nullcontext():
                built = await anyio.to_thread.run_sync(answer, asked, network, limiter=limiter)
            if name == "gallery":
                answers._rang(asked)  # here, on the event loop, where the bell rings
            return replied(built)
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
