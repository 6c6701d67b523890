"""What one HTTP request may bring and what a session may keep, held before Gradio reads a byte
(docs/security.md, "Requests and sessions").

Gradio keeps, for up to `state_session_capacity` sessions, the last value each session sent to
every input (`SessionState.config_values`), and its raw upload route stores files no event has
seen. So: an event's request is at most MAX_EVENT_BYTES (a webcam frame's MAX_FRAME_BYTES, and
the frame is dropped from the session once drawn, `forget_frame`); an upload is counted against
the upload folder's budget from its Content-Length before its body is read (`UploadBudget.reserve`);
and at most SESSIONS sessions are kept.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import gradio as gr
from gradio.data_classes import FileData, ImageData, ListFiles
from gradio.utils import get_upload_folder, is_in_or_equal
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from explorer.live import MAX_URL_CHARS
from vit.messages import quoted

from .concurrency import LIVE_ID, LIVE_WAITING
from .gate import BUSY, CLASS_BUSY, ROUTE, RouteGate, gated
from .sessions import SessionShares
from .uploads import REFUSED, UploadBudget, UploadSpaceFull

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The app's largest ordinary request (/analyze: an upload's payload and 14 controls) is under
# 2 KB; a session keeps at most one such value per input (43 inputs) besides Gradio's own ~0.3 MiB.
MAX_EVENT_BYTES = 8 * 2**10
MAX_FRAME_BYTES = MAX_URL_CHARS + MAX_EVENT_BYTES  # a webcam frame's data: URL and its controls
# Sessions kept (Gradio's default, 10,000, held ~0.3 MiB each with nothing sent: 3 GB): at most
# SESSIONS × (0.3 MiB + 43 inputs × MAX_EVENT_BYTES) ≈ 0.3 GiB, which to drop chosen by
# ui.sessions.SessionShares. Gradio's own cap, SESSIONS_SPARE above, is the backstop for sessions
# made by requests that name none (the API's one-shot calls), dropped first at the next request.
SESSIONS = 500
SESSIONS_SPARE = 20
UPLOAD_ROUTES = ("/gradio_api/upload", "/gradio_api/process_recording")
STREAM_ROUTE = "/gradio_api/stream/"  # a running stream's next frame
FRAME_API = "live_frame"
WEB_FILE = "a file must be uploaded, not named by a web address: this server fetches no file from the web"
LIVE_BUSY = "Live is busy: every webcam place is taken. Try again in a minute; Explore works meanwhile."
# What a malformed file input is told, after its parameter's name (`malformed_file`)
NOT_A_FILE = (
    'must be a file this server received, sent as its upload route answered: {"path": "<the path '
    '/gradio_api/upload answered>", "meta": {"_type": "gradio.FileData"}}, or null'
)
# The routes that name their event by its API name (/call/v2 takes the inputs by their names)
_NAMED_ROUTE = re.compile(r"/(call/v2|call|run|api)/([^/]+)/?$")
# A URL's scheme, in any case (Gradio fetches only a lower-case "http://" or "https://" and takes
# anything else for a path); two letters at least, so a Windows drive ("C:") is none.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")
# The log's lines for refused files: one a minute per network, 60 a minute in all (RefusalLog).
REFUSAL_LINE_S = 60.0
REFUSAL_LINES = 60


class RefusalLog:
    """The operator's log lines about what a network's requests did, by default the requests
    refused for a file they name. Gradio refused those itself with a 1.7 KB traceback each: 1,000
    requests in 32 s, 187 MB an hour from one client. Here a network's line is written once, then
    none for `every_s`, and all networks together at most `most` lines in `every_s` (a network may
    have many addresses); the lines not written are counted, and the server's every-minute lines
    tell them (`said`). `says` and `counts` are the two lines' words."""

    def __init__(
        self,
        every_s: float = REFUSAL_LINE_S,
        most: int = REFUSAL_LINES,
        clock: Callable[[], float] = time.monotonic,
        says: str = "refused a request from {network}: {what}",
        counts: str = "refused and not written: {n:,} more requests naming a file (one line a minute per network)",
    ) -> None:
        self.every_s, self.most, self.clock, self.says, self.counts = every_s, most, clock, says, counts
        self.written: OrderedDict[str | None, float] = OrderedDict()  # network: when its line was, oldest first
        self.unwritten = 0  # refusals counted and not written since the last `said`
        self.lock = threading.Lock()  # `said` runs in the budgets' thread, `line` on the event loop

    def line(self, network: str | None, what: str) -> str | None:
        """The log line for a refusal of `network`'s request (`what` was refused), or None when
        it is only counted."""
        now = self.clock()
        with self.lock:
            while self.written and next(iter(self.written.values())) <= now - self.every_s:
                self.written.popitem(last=False)  # older than a line's window: that network may write again
            if network in self.written or len(self.written) >= self.most:
                self.unwritten += 1
                return None
            self.written[network] = now
        # cut: behind fewer proxies than `trusted_hops` says, the client writes the address (IPv6: 45 characters)
        return self.says.format(network=(network or "an unknown address")[:60], what=what)

    def said(self) -> str | None:
        """A line counting the refusals not written since the last call, or None if there were none."""
        with self.lock:
            unwritten, self.unwritten = self.unwritten, 0
        if not unwritten:
            return None
        return self.counts.format(n=unwritten)


REFUSALS = RefusalLog()  # the server's, told every minute by ui.app.keep_within_budgets
# Uploads a client left before they were read, and uploads that waited for room (RequestLimits._upload).
UPLOAD_LINES = RefusalLog(
    says="an upload from {network} {what}",
    counts="not written: {n:,} more lines about uploads (one a minute per network)",
)
SLOW_RESERVE_S = 2.0  # an upload held this long before Gradio reads it is worth the operator's line


class FileInput(NamedTuple):
    """One file input of an event (gr.Image, gr.File, gr.Video): where each route puts its value."""

    position: int  # among the event's inputs, as the page (/queue/join) and /call/<api_name> send them
    api_position: int  # among the inputs an API client may send alone (no session state); -1: none
    name: str  # its API parameter, by which /call/v2/<api_name> sends it and a refusal names it
    model: Any  # the component's data model (pydantic), which Gradio validates the value with


class EventFiles(NamedTuple):
    """An event's file inputs, and how many inputs it has in all and for an API client."""

    inputs: int
    api_inputs: int
    files: tuple[FileInput, ...]


def event_files(demo: gr.Blocks) -> dict[int | str, EventFiles]:
    """The file inputs of every event that has some, by fn index and by API name (the first event
    of a name, as Gradio finds it)."""
    found: dict[int | str, EventFiles] = {}
    for fn in demo.fns.values():
        api = [i for i, block in enumerate(fn.inputs) if not block.skip_api]
        names = [*(fn.input_parameter_names or []), *[None] * len(fn.inputs)]  # Gradio's, or "param_<i>" as it says
        files = tuple(
            FileInput(i, api.index(i) if i in api else -1, names[i] or f"param_{i}", block.data_model)
            for i, block in enumerate(fn.inputs)
            if _is_file_model(getattr(block, "data_model", None))
        )
        if files:
            found[fn._id] = EventFiles(len(fn.inputs), len(api), files)
            if fn.api_name:
                found.setdefault(str(fn.api_name), found[fn._id])
    return found


def _is_file_model(model: object) -> bool:
    """Whether an input's data model is a file's (gr.Image's, gr.File's, gr.Video's, gr.Audio's)."""
    return isinstance(model, type) and issubclass(model, (FileData, ImageData, ListFiles))


def malformed_file(name: str) -> str:
    """The sentence a request gets whose file input `name` is no file payload."""
    return f"{name} {NOT_A_FILE}"


@dataclass(frozen=True)
class AppEvents:
    """What the request limits know of Gradio's app (ui.app reads it off the Blocks): `frame_fns`,
    the fn indices of the webcam frame's event, whose requests may carry a frame; `files`, each
    event's file inputs (`event_files`); `live_waiting`, the webcam stream events waiting for a
    Live worker now."""

    frame_fns: frozenset[int] = frozenset()
    files: Mapping[int | str, EventFiles] = field(default_factory=dict)
    live_waiting: Callable[[], int] = lambda: 0


class RequestLimits:
    """ASGI middleware: an event's request over its limit gets 413, an upload that does not fit
    the upload folder's budget 507, an upload without a Content-Length 411, each before Gradio
    reads the body, an empty session hash, a file that is no upload or a file input that is no
    file payload 400 (with a line in `refusals`), a new webcam stream event while Live's queue is
    full 503 with LIVE_BUSY, and a page's question for rows (ui/rows_route.py) with no place in `gate` 429;
    anything else passes untouched. `events`: what it knows of Gradio's app's events (`AppEvents`)."""

    def __init__(
        self,
        app: ASGIApp,
        uploads: UploadBudget,
        events: AppEvents = AppEvents(),
        trusted_hops: int = 0,
        refusals: RefusalLog = REFUSALS,
        upload_lines: RefusalLog = UPLOAD_LINES,
        sessions: SessionShares | None = None,
        gate: RouteGate | None = None,
    ) -> None:
        self.app, self.uploads = app, uploads
        self.frame_fns, self.files, self.live_waiting = events.frame_fns, events.files, events.live_waiting
        self.trusted_hops = trusted_hops  # proxies in front of the server that name the visitor (`sender`)
        self.refusals, self.upload_lines = refusals, upload_lines
        self.joining = 0  # webcam stream events let through and not yet in Gradio's queue
        self.sessions = sessions  # which session to drop when Gradio's are full
        self.gate = gate or RouteGate()  # the page's questions outside Gradio's queue

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        if path.rstrip("/") in UPLOAD_ROUTES:
            return await self._upload(scope, receive, send)
        through_gate = gated(path.rstrip("/"))
        # A page's question for rows or a class's action is never a frame: read no further than an event may
        # be. Read to MAX_FRAME_BYTES and parsed, 64 bodies of 16 MiB of nested lists sent to /class/join eight
        # at a time were refused only after +1,063 MiB and 46 s of the server's CPU (bench.attacks).
        body = await _body(receive, MAX_EVENT_BYTES if through_gate else MAX_FRAME_BYTES)
        too_large = 413, f"this request is larger than this server takes ({MAX_EVENT_BYTES:,} bytes)"
        if body is None or (
            len(body) > MAX_EVENT_BYTES and await run_in_threadpool(_beside_frames, body) > MAX_EVENT_BYTES
        ):
            return await _refuse(send, *too_large)
        # a frame's JSON takes tens of milliseconds to parse: not on the event loop
        fields = _fields(body) if len(body) <= MAX_EVENT_BYTES else await run_in_threadpool(_fields, body)
        frame = self._is_frame(path, fields)
        if len(body) > MAX_EVENT_BYTES and not (frame and _outside_the_frame(fields) <= MAX_EVENT_BYTES):
            return await _refuse(send, *too_large)
        session = fields.get("session_hash", None)
        if session == "":
            return await _refuse(send, 400, "session_hash must not be empty")  # Gradio answered 500
        if refused := _refused_file(fields.get("data")):
            why, named = refused
            cut = named if len(named) <= 80 else named[:79] + "…"
            self._log_refusal(scope, f"it names the file {cut!r}: {why}")
            return await _refuse(send, 400, why)
        # a frame's data: URL is validated as a string of up to 16 MiB: not on the event loop
        check, small = self._malformed_file, len(body) <= MAX_EVENT_BYTES
        if malformed := check(path, fields) if small else await run_in_threadpool(check, path, fields):
            name, value = malformed
            self._log_refusal(scope, f"its {name} is no file payload: {quoted(value)}")
            return await _refuse(send, 400, malformed_file(name))
        if self.sessions is not None and isinstance(session, str):
            # it may make room and restore a dropped session's values: not on the event loop
            await run_in_threadpool(self._admit, session, sender(scope, self.trusted_hops))
        if frame and not path.startswith(STREAM_ROUTE):
            return await self._join(scope, _replay(body, receive), send)
        if through_gate:
            return await self._through_gate(scope, _replay(body, receive), send)
        return await self.app(scope, _replay(body, receive), send)

    async def _through_gate(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A page's question for rows (a band of a layer's rows, ui/rows_route.py) or a class's action
        (ui/class_route.py): in one of its network's places,
        its reply read in chunks (ui/gate.py), or refused in words when none comes."""
        network = sender(scope, self.trusted_hops)
        if not await self.gate.run(network, lambda chunked: self.app(scope, receive, chunked), send):
            rows = scope["path"].removeprefix(scope.get("root_path", "")).rstrip("/") == ROUTE
            await _refuse(send, 429, BUSY if rows else CLASS_BUSY)

    def _log_refusal(self, scope: Scope, what: str) -> None:
        """The operator's line for a refused request, unless its network had one this minute (`refusals`)."""
        if line := self.refusals.line(sender(scope, self.trusted_hops), what):
            print(line, flush=True)

    def _malformed_file(self, path: str, fields: dict[str, Any]) -> tuple[str, Any] | None:
        """(its parameter's name, its value) for the first file input of the request's event whose
        value is neither null nor a payload its component's data model reads, or None. Gradio
        validates it only once the event runs, and its refusal of a bare "/etc/passwd", a number,
        a list or a dict whose path is no string was a traceback in the log (1,303 bytes) and a
        bare "Error" for the visitor (issue 56)."""
        found = self._event_inputs(path, fields)
        if found is None:
            return None
        event, value_of = found
        for file in event.files:
            value = value_of(file)
            if value is not None and not _reads(file.model, value):
                return file.name, value
        return None

    def _event_inputs(self, path: str, fields: dict[str, Any]) -> tuple[EventFiles, Callable[[FileInput], Any]] | None:
        """The file inputs of the event a request runs, and how to read each one's value from it,
        as Gradio's route finds them: the event by fn index (the page's /queue/join; /run and /api
        when one is given), by the API name in the path, or a running stream's (the webcam's);
        the values by position, except /call's without the session's state and /call/v2's by name."""
        data, index = fields.get("data"), fields.get("fn_index")
        index = index if isinstance(index, int) and not isinstance(index, bool) else None
        named = _NAMED_ROUTE.search(path)
        if path.startswith(STREAM_ROUTE):
            event = next((self.files[fn] for fn in sorted(self.frame_fns) if fn in self.files), None)
        elif named is None:
            event = self.files.get(index) if index is not None else None
        elif named[1] == "call/v2":
            event = self.files.get(named[2])
            return (event, lambda file: fields.get(file.name)) if event is not None else None
        else:
            event = self.files.get(index if index is not None and named[1] != "call" else named[2])
        if event is None or not isinstance(data, list):
            return None
        if named is not None and named[1] == "call" and len(data) != event.inputs and len(data) == event.api_inputs:
            return event, lambda file: data[file.api_position] if file.api_position >= 0 else None
        return event, lambda file: data[file.position] if file.position < len(data) else None

    def _log(self, network: str | None, what: str) -> None:
        if line := self.upload_lines.line(network, what):
            print(line, flush=True)

    def _admit(self, session: str, network: str | None) -> None:
        """`sessions.admit`, which only chooses what to drop: a fault of its own is one log line and
        the request goes on to Gradio, never an HTTP 500 (issue 43's soak had one on a class's click)."""
        try:
            self.sessions.admit(session, network)
        except Exception as e:  # noqa: BLE001 - the visitor's request must not fail for the policy
            print(f"sessions: could not make room or restore a session: {type(e).__name__}: {e}"[:300], flush=True)

    async def _join(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A new webcam stream event: refused with LIVE_BUSY once LIVE_WAITING wait in Live's
        queue, counting the joins let through that Gradio has not queued yet (it checks the
        session in a thread first, so joins sent together would all pass a look at the queue).
        No await between the look and the count: the event loop runs one request's check at a time."""
        if self.live_waiting() + self.joining >= LIVE_WAITING:
            return await _refuse(send, 503, LIVE_BUSY)
        self.joining += 1
        try:
            await self.app(scope, receive, send)  # answered once the event is in Gradio's queue
        finally:
            self.joining -= 1

    def _is_frame(self, path: str, fields: dict[str, Any]) -> bool:
        """Whether a request is a webcam frame's: a running stream's, or its event's first. Only
        its frame's data: URL may be large (`_outside_the_frame`)."""
        if path.startswith(STREAM_ROUTE) or path.rstrip("/").endswith(f"/call/{FRAME_API}"):
            return True
        return fields.get("fn_index") in self.frame_fns

    async def _upload(self, scope: Scope, receive: Receive, send: Send) -> None:
        length = dict(scope["headers"]).get(b"content-length")
        if length is None or not length.isdigit():
            return await _refuse(send, 411, "an upload must say its length (Content-Length)")
        size, network, began = int(length), sender(scope, self.trusted_hops), time.monotonic()
        try:
            # it may walk the folder: not on the event loop
            await run_in_threadpool(self.uploads.reserve, size, network)
        except UploadSpaceFull as e:
            return await _refuse(send, 507, str(e))
        if (waited := time.monotonic() - began) >= SLOW_RESERVE_S:
            self._log(network, f"of {size:,} bytes waited {waited:.1f} s for room in the upload folder")
        try:
            await self.app(scope, receive, send)
        except ClientDisconnect:
            # No one is left to answer. Gradio's route let it out as a 75-line traceback per upload
            # a client gave up on (the soak's class clients give up after 5 s).
            after = time.monotonic() - began
            self._log(network, f"of {size:,} bytes was left by its client {after:.1f} s after it came")
        finally:
            self.uploads.arrived(size)


def sender(scope: Scope, trusted_hops: int) -> str | None:
    """The address a request comes from, as the nearest proxy that can be trusted saw it. With no
    proxy (`trusted_hops` 0) the connection's peer. Behind `trusted_hops` proxies (a Space: the
    Hub's, 1) every connection is the last proxy's, and each proxy appends the address it saw to
    X-Forwarded-For: the entry `trusted_hops` from the right is the one the outermost proxy
    wrote. Entries left of it are the client's own writing (a flood under invented first entries
    took a new upload share for each, ui.uploads.SENDER_SHARE). A header with fewer entries
    than that did not pass every proxy: the peer is the sender."""
    client = scope.get("client")
    peer = client[0] if client else None
    if trusted_hops <= 0:
        return peer
    # A client may send the header several times; a proxy appends to the last: read them as one list.
    lines = [value.decode("latin-1") for name, value in scope["headers"] if name == b"x-forwarded-for"]
    entries = [entry.strip() for entry in ",".join(lines).split(",")] if lines else []
    if len(entries) < trusted_hops:
        return peer
    return entries[-trusted_hops] or peer


async def _body(receive: Receive, limit: int) -> bytes | None:
    """The request's body, or None as soon as it passes `limit` bytes (the rest is never read)."""
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


# A webcam frame as a request's JSON holds it: the one large part a request may have (`_outside_the_frame`).
_DATA_URL = re.compile(rb'"data:image/[\w.+-]{1,20};base64,[A-Za-z0-9+/=]*"')


def _beside_frames(body: bytes) -> int:
    """A request's bytes besides its webcam frames' data: URLs. Past MAX_EVENT_BYTES it is no frame's
    request, and is refused before it is parsed: 16 MiB of nested lists, parsed to find out, took eight
    at a time on Gradio's /queue/join +1,920 MiB and 47 s of the server's CPU (bench.class_attacks' body)."""
    return len(_DATA_URL.sub(b'""', body))


def _fields(body: bytes) -> dict[str, Any]:
    """The top-level fields of a JSON request ({} if it is not a JSON object: Gradio answers it)."""
    try:
        fields = json.loads(body)
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}


def _outside_the_frame(fields: dict[str, Any]) -> int:
    """Bytes of a frame request besides the frame's data: URL. The camera's value is the event's
    first input, `{"url": "data:image/..."}`, and a stream event sends the frame once more as its
    event data (`{"value": ..., "is_value_data": true}`, which no session keeps): Gradio keeps
    every input a session sends, so a query or a model key as large as a frame would stay in the
    session after the frame is dropped."""
    data = fields.get("data")
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return len(json.dumps(fields))
    url = data[0].get("url")
    if not isinstance(url, str):
        return len(json.dumps(fields))
    event = fields.get("event_data")
    if isinstance(event, dict) and _url_of(event.get("value")) == url:
        event = {**event, "value": None}
    return len(json.dumps({**fields, "data": [{**data[0], "url": None}, *data[1:]], "event_data": event}))


def _url_of(value: Any) -> Any:
    """A camera value's data: URL, whether sent as the URL itself or as `{"url": ...}`."""
    return value.get("url") if isinstance(value, dict) else value


def _refused_file(value: Any) -> tuple[str, str] | None:
    """(why, in the app's words; the path) for the first file an event's inputs name that is no
    upload of this app, or None. Gradio would download a file named by a web address
    (`{"path": "https://..."}`) into its upload folder before any handler runs, the whole body in
    memory and with no size limit, past the upload budget its own upload route is held to. A file
    payload (`"meta": {"_type": "gradio.FileData"}`) whose path is not in the upload folder
    (another file, `../` out of it, a `file:` or `data:` URL, `HTTPS://`) Gradio refuses itself,
    with a traceback in the log and a bare "Error" for the visitor."""
    if isinstance(value, list):
        return next((found for v in value if (found := _refused_file(v))), None)
    if not isinstance(value, dict):
        return None
    path = value.get("path")
    if isinstance(path, str) and path[:8].lower().startswith(("http://", "https://")):
        return WEB_FILE, path
    if isinstance(path, str) and _is_file_payload(value) and not _is_upload(path):
        return REFUSED, path
    # Gradio reads a file payload in any input into its FileData before the event runs: a field of
    # the wrong type (a `meta` that is no object, a size that is no number) was a traceback too
    if isinstance(path, str) and _is_file_payload(value) and not _reads(FileData, value):
        return malformed_file("a file"), path
    return next((found for v in value.values() if (found := _refused_file(v))), None)


def _reads(model: Any, value: Any) -> bool:
    """Whether Gradio's validation of an input's value with its component's data model passes."""
    try:
        model.model_validate(value, context={"validate_meta": True})
    except (ValueError, TypeError, AttributeError):  # pydantic's ValidationError is a ValueError; Gradio's
        return False  # own check of `meta` (gradio_client.utils.is_file_obj_with_meta) fails on one that is no object
    return True


def _is_file_payload(value: dict[str, Any]) -> bool:
    """Whether Gradio takes `value` for a file (gradio_client.utils.is_file_obj_with_meta, which
    fails on a `meta` that is no object: with a traceback too)."""
    meta = value.get("meta")
    return "meta" in value and (not isinstance(meta, dict) or meta.get("_type") == "gradio.FileData")


def _is_upload(path: str) -> bool:
    """Whether Gradio takes `path` as an upload: inside its upload folder, symlinks resolved
    (gradio.utils.is_in_or_equal), where the page's uploads, the examples' cached copies and
    gradio_client's uploads are. A file gone from there (deleted after an hour) still passes: the
    handler says so in its own words (ui.uploads.checked_upload)."""
    if _SCHEME.match(path):
        return False
    try:
        return is_in_or_equal(path, get_upload_folder())
    except (OSError, RuntimeError, ValueError):  # a NUL byte, a symlink loop: Gradio's traceback too
        return False


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app the body already read, then the client's next message
    (its disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _refuse(send: Send, status: int, text: str) -> None:
    """A one-line plain-text answer; the connection closes, so an unread body is not read."""
    data = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*headers, (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": data})


def live_waiting(demo: gr.Blocks) -> int:
    """Webcam stream events waiting in Gradio's queue for a Live worker (its running ones are not in it)."""
    events = getattr(demo, "_queue", None)
    waiting = events.event_queue_per_concurrency_id.get(LIVE_ID) if events is not None else None
    return len(waiting.queue) if waiting is not None else 0


def frame_fns(demo: gr.Blocks) -> list[int]:
    """The fn indices of the webcam frame's event: the only requests that may be large."""
    return [fn._id for fn in demo.fns.values() if fn.api_name == FRAME_API]


def forget_frame(request: gr.Request | None, camera: gr.components.Component) -> None:
    """Drop the copy of the last frame Gradio keeps in the session (its value of `camera`, in
    `SessionState.config_values`): each session that streamed would hold up to 16 MiB."""
    app = getattr(getattr(request, "request", None), "app", None)
    holder = getattr(app, "state_holder", None)
    session = holder.session_data.get(request.session_hash) if holder is not None and request else None
    props = session.config_values.get(camera._id, {}).get("props", {}) if session is not None else {}
    if "value" in props:
        props["value"] = None
