"""Class mode's costs (issue 59): a teacher's page leading N students' pages on one app server,
printed as a Markdown report.

    python -m bench.class_mode --students 30
    python -m bench.class_mode --students 3 --clicks 4 --images 2   # a quick one (its test runs one)
    python -m bench.class_mode --model vit-s      # ViT-S/16, random weights: a 14 x 14 grid's rows

Starts `python app.py` as bench.visitors does (`bench.visitors.Server`, the bundled model), trusting
one proxy (`--trusted-hops 1`): this script stands where a school's router does and names the
network in X-Forwarded-For, the class's (SCHOOL) and an unrelated visitor's (another network), and
with VIT_EXPLORER_COUNT_CALLS set, so the server's log says each model call (ui/zerogpu.py).
Over HTTP, as the pages do: the teacher starts a class (POST /class/start), analyses an image
(Gradio's /analyze_page, as the page does) and sends its view (POST /class/lead); N students
join (/class/join, /class/ticket) and read their event streams (GET /class/events) at once, in
one asyncio loop, each reading the teacher's analysis (POST /class/analysis) when its image is new.
Then it times each teacher's action of ACTIONS (a click: a layer or query change; a new image: the
teacher's analysis and its view), from the teacher's action to the last follower having it, with
the server's CPU, the bytes a student is sent and the model calls each action made; an unrelated
visitor's analyses without the class (before it and after it ended) and with the class following
while the teacher clicks; the shown layer's rows asked by every student at once through the one
network's places and pace (ui/gate.py); and the server's resident memory before and
after a class of `--memory-students` joins with open streams, and after it ends.

A new kind of teacher's action is one more `Action` in ACTIONS: what it changes in the view and
whether following pages read a new analysis for it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from PIL import Image

from bench.attacks import VISITOR_NETWORK
from bench.serving import gradio_client
from bench.visitors import EXAMPLES, Launcher, Server, load_average, machine, percentile, warm_up
from ui.gate import CLASS_ROUTE
from ui.gate import ROUTE as ROWS_ROUTE
from ui.zerogpu import CALL_LINE, COUNT_CALLS

SCHOOL = {"X-Forwarded-For": "192.0.2.10"}  # the class's router (RFC 5737's documentation range)
GOAL_S = 0.3  # issue 59: a click on every following page within 0.3 s p95; a new image, its analysis + 0.3 s
VISITOR_GOAL = 1.2  # issue 59: an unrelated visitor's analysis p95 with the class, over without it
FORWARD_TASK = "forward_maps"  # explorer.explain.forward_maps: an analysis's forward pass (ui.zerogpu.FORWARD)
WAIT_S = 60.0  # a push that has not reached every follower by then is counted as lost
IDLE_S = 5.0  # seconds the server's CPU at rest is read over
STYLE = {"cmap": "inferno", "opacity": 0.6, "upsampling": "nearest", "display": "overlay", "scale": "layer"}


# ---- the pure parts: an event stream's bytes, what a follower saw, the table ----
@dataclass(frozen=True)
class Event:
    name: str  # "state", "end", or "" for a comment (the stream's heartbeat)
    data: dict | None
    size: int  # its bytes on the stream


def sse_events(buffer: bytes) -> tuple[list[Event], bytes]:
    """The whole events in `buffer` (a stream's bytes so far), and the bytes of the next one begun."""
    events, rest = [], buffer
    while (end := rest.find(b"\n\n")) >= 0:
        block, rest = rest[: end + 2], rest[end + 2 :]
        name, data = "", None
        for line in block.decode().splitlines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
        events.append(Event(name, data, len(block)))
    return events, rest


@dataclass
class Follower:
    """One student's page: the versions of the class its stream brought and when, and when it had
    read each of the teacher's analyses (by the followers' handle)."""

    token: str
    seen: list[tuple[int, float, int]] = field(default_factory=list)  # (version, when, the event's bytes)
    handles: dict[int, str | None] = field(default_factory=dict)  # version: the view's handle
    fetched: dict[str, tuple[float, int]] = field(default_factory=dict)  # handle: (when read, bytes)
    ended: float | None = None

    def got(self, state: dict, when: float, size: int) -> str | None:
        """A state pushed; the handle of an analysis the page has not read yet, or None."""
        handle = (state.get("view") or {}).get("handle")
        self.seen.append((state["version"], when, size))
        self.handles[state["version"]] = handle
        return handle if handle is not None and handle not in self.fetched else None

    def arrived(self, version: int) -> float | None:
        """When the page first had `version` or a later one (a stream may bring only the latest)."""
        return next((when for v, when, _ in self.seen if v >= version), None)

    def event_bytes(self, version: int) -> int | None:
        return next((size for v, _, size in self.seen if v >= version), None)

    def pictured(self, version: int) -> tuple[float, int] | None:
        """(when, bytes) the page read the teacher's analysis that `version` (or the first later
        one it had) names, or None before it has."""
        first = next((v for v, _, _ in self.seen if v >= version), None)
        return self.fetched.get(self.handles.get(first)) if first is not None else None


@dataclass
class Push:
    """A teacher's action sent: when it began, when the teacher's page sent its view (after its
    analysis, for a new image) and the class's version it made."""

    began: float
    led: float
    version: int
    image: bool  # following pages read a new analysis for it
    calls: int = -1  # model calls the server made for it (counted once every follower had it)

    def reached(self, follower: Follower) -> float | None:
        if not self.image:
            return follower.arrived(self.version)
        read = follower.pictured(self.version)
        return read[0] if read is not None else None

    def last(self, followers: list[Follower]) -> float | None:
        """When the last follower had it, or None while one has not."""
        times = [self.reached(f) for f in followers]
        return None if any(t is None for t in times) else max(times, default=self.led)


def spread(samples: list[float], scale: float = 1.0, digits: int = 2) -> str:
    """The p50 and p95 of `samples` times `scale`, as "p50 / p95", or "-" for none."""
    if not samples:
        return "-"
    return f"{percentile(samples, 50) * scale:.{digits}f} / {percentile(samples, 95) * scale:.{digits}f}"


def verdict(value: float, goal: float, unit: str = "") -> str:
    """`value` against an upper `goal`: its ratio, met or missed."""
    if math.isnan(value):
        return "not measured"
    return f"{value:.2f}{unit} ({value / goal:.2f}x the goal of {goal:g}{unit}): {'met' if value <= goal else 'MISSED'}"


def calls_in(log: str, task: str | None = None) -> int:
    """The model calls a server's log says (ui.zerogpu.CALL_LINE), of `task` only if given."""
    marker = CALL_LINE + (task or "")
    return sum(line.startswith(marker) for line in log.splitlines())


def picture(folder: Path, n: int) -> Path:
    """The cat example with every pixel moved by `n` (mod 256): an image the server has not analysed."""
    pixels = np.asarray(Image.open(EXAMPLES / "cat.jpg").convert("RGB")).astype(int)
    path = folder / f"picture-{n}.png"
    Image.fromarray(((pixels + n) % 256).astype(np.uint8)).save(path)
    return path


# ---- the class over HTTP ----
@dataclass(frozen=True)
class Reply:
    body: bytes
    size: int  # its bytes on the wire, the headers with them

    def json(self) -> Any:
        return json.loads(self.body)


async def plain_post(url: str, path: str, body: dict, headers: dict[str, str]) -> Reply:
    """POST `body` as JSON to `path` of the server at `url`, on a connection of its own, by hand:
    30 pages' requests at once cost httpx 3 ms of this script's CPU each, on the cores the server is
    measured on (a class's browsers spend theirs on their own devices), 0.3 ms here. Raises for a
    reply other than 200."""
    host, port = url.split("//")[1].rstrip("/").split(":")
    sent = json.dumps(body).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(sent)}\r\nConnection: close\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(head.encode() + sent)
        answer = await reader.read()  # to the end: the server closes the connection after its reply
    finally:
        writer.close()
    status, _, reply = answer.partition(b"\r\n\r\n")
    if status.split(b" ", 2)[1] != b"200":
        raise RuntimeError(f"{path} answered {status.splitlines()[0].decode()}: {reply[:200].decode(errors='replace')}")
    return Reply(reply, len(answer))


class Room:
    """A class on `server`: the teacher's credentials and page (a gradio_client session for its
    analyses on `model_key`, its view as it sends it), the students' pages, read concurrently on
    this event loop."""

    def __init__(
        self,
        server: Server,
        http: httpx.AsyncClient,
        folder: Path,
        model_key: str = "bundled",
        teacher_headers: dict[str, str] | None = None,
    ) -> None:
        self.server, self.http, self.folder = server, http, folder
        self.code, self.key = "", ""
        # `teacher_headers`: what else the teacher's browser sends (bench.space: a logged-in teacher's X-IP-Token,
        # with its Gradio events and the class's actions that run the model, as ui/js/zeroheaders.js adds it)
        self.teacher_headers = teacher_headers or {}
        self.teacher = gradio_client(server.url, headers=SCHOOL | self.teacher_headers)
        self.view: dict[str, Any] = {"handle": None, "model": model_key, "layer": 1, "query": None, "style": STYLE}
        self.shape: dict[str, Any] = {}  # the teacher's analysis's grid, depth, band (explorer.page_maps)
        self.followers: list[Follower] = []
        self.readers: list[asyncio.Task] = []  # kept: the loop holds its tasks weakly, and may collect one waiting
        self.changed = asyncio.Event()  # set by a reader at each thing it records
        self.pictures = 0  # the teacher's images so far

    async def post(self, action: str, body: dict, headers: dict[str, str] | None = None) -> Reply:
        return await plain_post(self.server.url, f"{CLASS_ROUTE}/{action}", body, SCHOOL | (headers or {}))

    async def start(self) -> None:
        started = (await self.post("start", {"address": self.server.url})).json()
        self.code, self.key = started["code"], started["key"]

    async def lead(self, **changes: Any) -> tuple[float, int]:
        """The teacher's page sends its view with `changes`: (when it was sent, the class's version)."""
        self.view = {**self.view, **changes}
        sent = time.perf_counter()
        reply = await self.post("lead", {"code": self.code, "key": self.key, "view": self.view})
        return sent, reply.json()["version"]

    async def analyse(self) -> str:
        """The teacher's page analyses an image it has not shown before; the analysis's handle."""
        self.pictures += 1
        image = picture(self.folder, self.pictures)
        payload = await asyncio.to_thread(analyse_page, self.teacher, image, self.view["model"])
        self.shape = {k: payload[k] for k in ("grid", "depth", "band")}
        return payload["handle"]

    async def join(self, students: int) -> None:
        """`students` join at once and open their streams; returns once each has read the teacher's analysis."""
        joined = await asyncio.gather(*(self.post("join", {"code": self.code}) for _ in range(students)))
        for reply in joined:
            follower = Follower(reply.json()["token"])
            self.followers.append(follower)
            self.readers.append(asyncio.create_task(self.read(follower)))
        await self.until(lambda: all(f.fetched for f in self.followers), "every student read the analysis")

    async def read(self, follower: Follower) -> None:
        """A student's page: its event stream read as it comes, the teacher's analysis read once per image."""
        ticket = (await self.post("ticket", {"code": self.code, "token": follower.token})).json()["ticket"]
        url = f"{self.server.url}{CLASS_ROUTE.lstrip('/')}/events?ticket={ticket}"
        async with self.http.stream("GET", url, headers=SCHOOL) as stream:
            buffer = b""
            async for chunk in stream.aiter_raw():
                when = time.perf_counter()
                events, buffer = sse_events(buffer + chunk)
                for event in events:
                    if event.name == "end":
                        follower.ended = when
                        self.changed.set()
                        return
                    if event.name == "state" and (new := follower.got(event.data, when, event.size)):
                        self.readers.append(asyncio.create_task(self.read_analysis(follower, new)))
                self.changed.set()

    async def read_analysis(self, follower: Follower, handle: str) -> None:
        reply = await self.post("analysis", {"code": self.code, "token": follower.token})
        follower.fetched[handle] = time.perf_counter(), reply.size
        self.changed.set()

    async def until(self, done: Callable[[], bool], what: str, timeout: float = WAIT_S) -> bool:
        """Wait until `done()`, woken by the readers; False (and a line on stderr) after `timeout`."""
        deadline = time.perf_counter() + timeout
        while not done():
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), max(deadline - time.perf_counter(), 0))
            except TimeoutError:
                if not done():
                    print(f"not within {timeout:.0f} s: {what}", file=sys.stderr)
                    return False
        return True

    async def end(self) -> None:
        await self.post("command", {"code": self.code, "key": self.key, "command": "end"})
        await self.until(lambda: all(f.ended for f in self.followers), "every stream ended")
        await asyncio.gather(*self.readers, return_exceptions=True)

    def calls(self) -> int:
        return calls_in(self.server.log_path.read_text(errors="replace"))


def analyse_page(client, image: Path, model_key: str = "bundled") -> dict:
    """The page's analysis of `image` (Gradio's /analyze_page with `model_key`, the defaults for
    the rest), as the page gets it: its last output, the numbers the page draws."""
    from gradio_client import handle_file

    outputs = client.predict(image=handle_file(str(image)), model_key=model_key, mode="crop", api_name="/analyze_page")
    payload = outputs[-1]
    return json.loads(payload) if isinstance(payload, str) else payload


# ---- the teacher's actions: one `Action` each ----
async def click(room: Room, i: int) -> Push:
    """A click drawn from stored numbers: every other one a layer, the others a query patch (0-based)."""
    depth, (rows, columns) = room.shape["depth"], room.shape["grid"]
    if i % 2 == 0:
        changes = {"layer": depth - (i // 2) % depth}
    else:
        changes = {"query": {"row": (3 * i) % rows, "col": (5 * i) % columns}}
    sent, version = await room.lead(**changes)
    return Push(sent, sent, version, image=False)


async def new_image(room: Room, i: int) -> Push:
    """An image of the teacher's: its analysis (one forward pass), then its view (its first query, CLS)."""
    began = time.perf_counter()
    handle = await room.analyse()
    sent, version = await room.lead(handle=handle, query=None)
    return Push(began, sent, version, image=True)


@dataclass(frozen=True)
class Action:
    """A teacher's action the bench times: `run(room, i)` does the i-th and says what to wait for;
    `calls`: the model calls it may make, whatever the class's size (issue 59)."""

    name: str
    run: Callable[[Room, int], Awaitable[Push]]
    calls: int
    count: str  # the argument that says how many are timed


ACTIONS = (
    Action("click (layer or query)", click, 0, "clicks"),
    Action("new image", new_image, 1, "images"),
)


@dataclass
class Timed:
    """One kind of action timed: its pushes and the server's CPU seconds over them."""

    action: Action
    pushes: list[Push]
    followers: list[Follower]
    cpu_s: float  # the server's, a push, net of its idle rate
    own_cpu_s: float  # this script's, a push: the pages' work, which a class's devices do on their own
    lost: int  # pushes that had not reached every follower within WAIT_S

    def to_all(self) -> list[float]:
        return [p.last(self.followers) - p.began for p in self.pushes if p.last(self.followers) is not None]

    def pushed(self) -> list[float]:
        return [p.last(self.followers) - p.led for p in self.pushes if p.last(self.followers) is not None]

    def event_bytes(self) -> float:
        sizes = [f.event_bytes(p.version) for p in self.pushes for f in self.followers]
        return float(np.mean([s for s in sizes if s is not None])) if sizes else math.nan

    def analysis_bytes(self) -> float:
        """Bytes a follower read of the teacher's analysis, a push (0 for actions with no new image)."""
        if not self.pushes or not self.pushes[0].image:
            return 0.0
        read = [f.pictured(p.version) for p in self.pushes for f in self.followers]
        return float(np.mean([r[1] for r in read if r is not None])) if any(read) else math.nan


async def timed(room: Room, action: Action, n: int, pause_s: float, idle: float) -> Timed:
    """`n` of `action`, `pause_s` apart, each waited for until every follower has it. The server's
    CPU is read from an action's start until every follower has it (the pauses left out), net of
    its `idle` rate (CPU seconds a second) over that time; this script's too."""
    pushes, lost, cpu, own = [], 0, 0.0, 0.0
    for i in range(n):
        calls, before, own_before, began = (
            room.calls(),
            room.server.cpu_seconds(),
            time.process_time(),
            time.perf_counter(),
        )
        push = await action.run(room, i)
        if not await room.until(lambda p=push: p.last(room.followers) is not None, f"{action.name} {i + 1}"):
            lost += 1
        cpu += room.server.cpu_seconds() - before - idle * (time.perf_counter() - began)
        own += time.process_time() - own_before
        push.calls = room.calls() - calls
        pushes.append(push)
        await asyncio.sleep(pause_s)
    return Timed(action, pushes, room.followers, cpu / max(n, 1), own / max(n, 1), lost)


# ---- beside the class: an unrelated visitor, the rows at once, the memory ----
_VISITOR: dict[str, Any] = {}  # in the visitor's process: its client, folder, pause and pictures so far


def _visitor_comes(url: str, folder: Path, pause_s: float) -> None:
    _VISITOR.update(client=gradio_client(url, headers=VISITOR_NETWORK), folder=folder, pause_s=pause_s)
    _VISITOR["pictures"] = 1000  # past the teachers' pictures: each analysis a forward pass


def _visitor_analyses(n: int) -> list[float]:
    seconds = []
    for _ in range(n):
        _VISITOR["pictures"] += 1
        image = picture(_VISITOR["folder"], _VISITOR["pictures"])
        began = time.perf_counter()
        analyse_page(_VISITOR["client"], image)
        seconds.append(time.perf_counter() - began)
        time.sleep(_VISITOR["pause_s"])
    return seconds


class Visitor:
    """A visitor of another network analysing images of its own, one after another (its own
    session), in a process of its own: in this one its client's work would wait for the
    interpreter's lock while the class's pages are read, and its analyses seem slower with the class."""

    def __init__(self, url: str, folder: Path, pause_s: float) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(1, spawn, initializer=_visitor_comes, initargs=(url, folder, pause_s))

    async def analyses(self, n: int) -> list[float]:
        """The seconds of `n` analyses, `pause_s` apart."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, _visitor_analyses, n)


async def beside_the_class(room: Room, visitor: Visitor, n: int, pause_s: float) -> list[float]:
    """The visitor's `n` analyses while the class follows and the teacher clicks every `pause_s`."""
    stop = threading.Event()

    async def teacher() -> None:
        i = 0
        while not stop.is_set():
            push = await click(room, i)
            await room.until(lambda p=push: p.last(room.followers) is not None, "a click beside the visitor")
            await asyncio.sleep(pause_s)
            i += 1

    clicking = asyncio.create_task(teacher())
    try:
        return await visitor.analyses(n)
    finally:
        stop.set()
        await clicking


async def rows_at_once(room: Room, layer: int) -> tuple[float, float]:
    """The teacher shows `layer`; then every follower asks its rows at once, as a page does one
    question after another (ui/js/rows.js): its token rows, then each band of its patch rows, all on
    the class's one network. (Seconds until the last follower has them all, bytes a follower read.)"""
    _, version = await room.lead(layer=layer)
    await room.until(lambda: all(f.arrived(version) for f in room.followers), "the layer's push")
    (rows, columns), band = room.shape["grid"], room.shape["band"]
    bands: list[int | str] = ["tokens", *range(math.ceil(rows * columns / band))]

    async def one(follower: Follower) -> int:
        handle, read = follower.handles[max(follower.handles)], 0
        for b in bands:
            asked = {"handle": handle, "layer": layer, "band": b}
            read += (await plain_post(room.server.url, ROWS_ROUTE, asked, SCHOOL)).size
        return read

    began = time.perf_counter()
    read = await asyncio.gather(*(one(f) for f in room.followers))
    return time.perf_counter() - began, float(np.mean(read))


async def class_memory(server: Server, http: httpx.AsyncClient, folder: Path, students: int) -> list[float]:
    """The server's resident MiB before a class of `students` (joined, streams open, the teacher's
    analysis read), with it, and after it ended."""
    mib = [server.peak_bytes("VmRSS") / 2**20]
    room = Room(server, http, folder)
    room.pictures = 500  # not the first class's images
    try:
        await room.start()
        await room.lead(handle=await room.analyse())
        await room.join(students)
        mib.append(server.peak_bytes("VmRSS") / 2**20)
        await room.end()
    finally:
        room.teacher.close()
    await asyncio.sleep(2)  # the streams' coroutines and sockets closed
    return [*mib, server.peak_bytes("VmRSS") / 2**20]


async def idle_cpu(server: Server, seconds: float) -> float:
    """The server's CPU seconds a second while nothing is pushed."""
    before = server.cpu_seconds()
    await asyncio.sleep(seconds)
    return (server.cpu_seconds() - before) / seconds


# ---- the run and its report ----
async def measure(args: argparse.Namespace, server: Server, folder: Path) -> dict[str, Any]:
    """Every measure of the report, on one server, in an order that keeps each apart from the others."""
    found: dict[str, Any] = {"loads": [load_average()]}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(timeout=httpx.Timeout(WAIT_S, read=None), limits=limits) as http:
        visitor = Visitor(server.url, folder, args.pause)
        found["without"] = await visitor.analyses(args.visitor_analyses)
        found["idle"] = [await idle_cpu(server, IDLE_S)]
        room = Room(server, http, folder)
        try:
            await room.start()
            await room.lead(handle=await room.analyse())
            await room.join(args.students)
            found["idle"].append(await idle_cpu(server, IDLE_S))
            idle = found["idle"][-1]
            found["timed"] = [await timed(room, a, getattr(args, a.count), args.pause, idle) for a in ACTIONS]
            depth = room.shape["depth"]
            found["rows"] = [await rows_at_once(room, depth - k) for k in range(min(args.rows_rounds, depth))]
            found["with"] = await beside_the_class(room, visitor, args.visitor_analyses, args.pause)
            found["shape"] = room.shape
            await room.end()
        finally:
            room.teacher.close()
        found["without"] += await visitor.analyses(args.visitor_analyses)
        visitor.pool.shutdown()
        found["memory"] = await class_memory(server, http, folder, args.memory_students)
    found["loads"].append(load_average())
    return found


def action_rows(args: argparse.Namespace, found: dict[str, Any]) -> list[str]:
    rows = [
        f"| teacher's action ({args.students} followers) | pushes | to every follower p50 / p95 s "
        "| of which the push (after the teacher's analysis) p50 / p95 s | server CPU per push ms "
        "| this script's CPU per push ms | bytes a student is sent per push | model calls per action | lost |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in found["timed"]:
        sent = f"{t.event_bytes():.0f} B (event)"
        if t.action.calls:
            sent += f" + {t.analysis_bytes() / 1e3:.1f} kB (/class/analysis)"
        calls = ", ".join(str(p.calls) for p in t.pushes) or "-"
        rows.append(
            f"| {t.action.name} | {len(t.pushes)} | {spread(t.to_all())} | {spread(t.pushed())} "
            f"| {1e3 * t.cpu_s:.1f} | {1e3 * t.own_cpu_s:.1f} | {sent} | {calls} | {t.lost} |"
        )
    return rows


def goals(found: dict[str, Any]) -> list[str]:
    """Issue 59's goals, met or missed, and by how much."""
    lines = []
    for t in found["timed"]:
        pushed = t.pushed()
        p95 = percentile(pushed, 95) if pushed else math.nan
        after = " beyond the teacher's analysis" if t.action.calls else ""
        lines.append(f"- {t.action.name}: push p95{after} {verdict(p95, GOAL_S, ' s')}")
        right = all(p.calls == t.action.calls for p in t.pushes) and t.pushes
        lines.append(
            f"- {t.action.name}: {t.action.calls} model call per action whatever the class's size: "
            + ("met" if right else "MISSED")
        )
    without, with_class = percentile(found["without"], 95), percentile(found["with"], 95)
    ratio = verdict(with_class / without, VISITOR_GOAL, "x")
    lines.append(f"- an unrelated visitor's analysis p95 with the class over without: {ratio}")
    return lines


def report(args: argparse.Namespace, found: dict[str, Any], command: list[str]) -> str:
    shape, n_rows = found["shape"], len(found["rows"])
    (rows, columns), memory = shape["grid"], found["memory"]
    without, with_class = found["without"], found["with"]
    slowest = max(found["rows"])
    lines = [
        f"command: `{shlex.join(['python', '-m', 'bench.class_mode', *sys.argv[1:]])}`",
        f"server: `{shlex.join(['python', *command[1:]])}`; model {args.model} ({rows} x {columns} patches, "
        f"{shape['depth']} layers)",
        f"machine: {machine()}; {found['loads'][0]} before, {found['loads'][1]} after",
        f"the class: {args.students} students and the teacher on one network (a school's router), "
        f"{args.pause:.1f} s between the teacher's actions",
        "",
        *action_rows(args, found),
        "",
        f"- server CPU at rest: {1e3 * found['idle'][0]:.0f} ms a second with no class, "
        f"{1e3 * found['idle'][1]:.0f} ms a second while {args.students} followers wait for a push "
        "(the CPU per push above is net of it)",
        f"- an unrelated visitor's analysis (/analyze_page, another network) p50 / p95: {spread(without)} s "
        f"without the class (n={len(without)}, before it and after it ended), {spread(with_class)} s with "
        f"{args.students} followers while the teacher clicks (n={len(with_class)}): p95 ratio "
        f"{percentile(with_class, 95) / percentile(without, 95):.2f}x (p50 ratio "
        f"{percentile(with_class, 50) / percentile(without, 50):.2f}x)",
        f"- the shown layer's rows (its token rows and each band of patch rows), asked by all {args.students} "
        f"students at once through their one network's places and pace: the last student had them after "
        f"{slowest[0]:.2f} s (worst of {n_rows} layers; {', '.join(f'{s:.2f}' for s, _ in found['rows'])} s), "
        f"{slowest[1] / 1e3:.1f} kB a student",
        f"- server resident memory: {memory[0]:.0f} MiB before a class of {args.memory_students} students, "
        f"{memory[1]:.0f} MiB with their streams open and the teacher's analysis read "
        f"({memory[1] - memory[0]:+.1f} MiB), {memory[2]:.0f} MiB after it ended ({memory[2] - memory[0]:+.1f} MiB)",
        "",
        "goals:",
        *goals(found),
    ]
    return "\n".join(lines)


def served_model(model: str, folder: Path) -> str | None:
    """app.py's --model for `model`: None for the bundled one, a random-weight ViT-S/16 checkpoint for "vit-s"."""
    if model == "bundled":
        return None
    if model == "vit-s":
        from bench.live import vit_s_checkpoint

        return str(vit_s_checkpoint(folder))
    return model


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--students", type=int, default=30, help="students following the teacher")
    p.add_argument("--clicks", type=int, default=20, help="teacher's clicks timed")
    p.add_argument("--images", type=int, default=6, help="teacher's new images timed")
    p.add_argument("--pause", type=float, default=0.5, help="seconds between the teacher's (and the visitor's) actions")
    p.add_argument("--visitor-analyses", type=int, default=16, help="the visitor's analyses in each of its 3 phases")
    p.add_argument("--rows-rounds", type=int, default=3, help="layers whose rows every student asks at once")
    p.add_argument("--memory-students", type=int, default=60, help="the class whose memory is measured")
    p.add_argument("--model", default="bundled", help="'bundled', 'vit-s' (ViT-S/16, random weights) or a checkpoint")
    p.add_argument("--cache-mb", type=int, default=2048, help="the server's explanation budget")
    p.add_argument("--client-nice", type=int, default=10, help="nice added to this script's threads (bench.visitors)")
    args = p.parse_args(argv)
    if min(args.students, args.clicks, args.images, args.visitor_analyses, args.rows_rounds) < 1:
        p.error("--students, --clicks, --images, --visitor-analyses and --rows-rounds must be at least 1")
    if not 1 <= args.memory_students <= 60 or args.visitor_analyses > 300:
        p.error("--memory-students must be from 1 to 60 (a class's most), --visitor-analyses at most 300")
    launch = Launcher()  # the server starts at this process's priority, the pages' readers below it
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        more = ("--trusted-hops", "1")  # this script is the router: X-Forwarded-For names each network
        model = served_model(args.model, folder)
        server = launch(Server, folder, args.cache_mb, model, more=more, env={COUNT_CALLS: "1"})
        try:
            server.wait()
            warm_up(server.url, folder)
            if args.client_nice:
                from explorer.priority import lower_this_thread

                lower_this_thread(args.client_nice)
            found = asyncio.run(measure(args, server, folder))
        finally:
            server.stop()
    out = report(args, found, server.command)
    print(out)
    return out


if __name__ == "__main__":
    main()
