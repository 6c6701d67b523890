"""Class mode's attacks (issue 59), as an anonymous visitor would send them to `app.py --public`:
`bench.attacks.attack_list` runs them (so does the soak's attacker), each a call that returns its
reply on one line.

Each case's classes are on networks of their own (`fresh_network`: RFC 2544's benchmark range),
named by the last X-Forwarded-For entry as the Hub's proxy names a visitor (the server trusts one
proxy): the registry remembers a network's wrong codes for 10 minutes, so one case's lock-out
would otherwise refuse the next case's class, or the soak's next round. Every class a case starts
is ended before it returns (`started`), as a server holds at most 8.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import count
from pathlib import Path

import httpx
import numpy as np
from PIL import Image

from ui.classroom import ALPHABET, CODE_CHARS
from ui.gate import CLASS_ROUTE

EVENTS = f"{CLASS_ROUTE}/events"
STYLE = {"cmap": "inferno", "opacity": 0.6, "upsampling": "nearest", "display": "overlay", "scale": "layer"}
VIEW = {"handle": None, "model": "bundled", "layer": 1, "query": None, "style": STYLE}
_NETWORKS = count(1)


def fresh_network() -> str:
    """An address no case has used in this process (198.19.0.0/16, 65,000 of them)."""
    n = next(_NETWORKS) % 65_000
    return f"198.19.{n // 256}.{n % 256}"


def post(http: httpx.Client, url: str, action: str, body: object, network: str) -> httpx.Response:
    """POST `body` as JSON to the class's `action`, from `network`."""
    return http.post(f"{url}{CLASS_ROUTE.lstrip('/')}/{action}", json=body, headers={"X-Forwarded-For": network})


def statuses(codes: list[int | str]) -> str:
    """'3 × 200, 2 × 429' for a list of replies' status codes."""
    return ", ".join(f"{codes.count(c)} × {c}" for c in sorted(set(codes), key=str))


@contextlib.contextmanager
def started(http: httpx.Client, url: str, network: str) -> Iterator[tuple[str, str]]:
    """A class started from `network`: (its code, the teacher's key); ended when the block ends."""
    reply = post(http, url, "start", {"address": url}, network).raise_for_status().json()
    try:
        yield reply["code"], reply["key"]
    finally:
        post(http, url, "command", {"code": reply["code"], "key": reply["key"], "command": "end"}, network)


def joined(http: httpx.Client, url: str, code: str, network: str, students: int) -> list[str]:
    """`students` join class `code` from `network`: their tokens."""
    replies = [post(http, url, "join", {"code": code}, network) for _ in range(students)]
    return [reply.raise_for_status().json()["token"] for reply in replies]


def wrong_code(code: str) -> str:
    """A code of the class's alphabet that is not `code`."""
    while (guess := "".join(secrets.choice(ALPHABET) for _ in range(CODE_CHARS))) == code:
        pass
    return guess


def code_guessing(url: str, guesses: int = 60) -> str:
    """`guesses` wrong codes on /class/join from one network, eight at a time, each under a new
    invented first X-Forwarded-For entry; then that network's try of the right code, and a student
    of another network joining the class."""
    teacher, attacker, student = fresh_network(), fresh_network(), fresh_network()
    with httpx.Client(timeout=60) as http, started(http, url, teacher) as (code, _):

        def guess(i: int) -> int:
            invented = f"198.18.{i // 256}.{i % 256}, {attacker}"
            return post(http, url, "join", {"code": wrong_code(code)}, invented).status_code

        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(guess, range(guesses)))
        right = post(http, url, "join", {"code": code}, attacker).status_code
        other = post(http, url, "join", {"code": code}, student).status_code
    return f"{statuses(codes)}; then the right code from that network: {right}; a student of another network: {other}"


def forged_teacher(url: str) -> str:
    """A student of the class, on the class's own network (a school behind one router), sends the
    teacher's actions with a made-up key, an empty one, their own token as the key, and their token alone:
    lead, Freeze, Eyes on me, end, a gallery's approve, spotlight and waiting picture. Then the
    teacher leads (did the class change meanwhile?), a student who had joined asks for its stream,
    and a new student joins, all from that network."""
    school = fresh_network()
    with httpx.Client(timeout=60) as http, started(http, url, school) as (code, key):
        token = joined(http, url, code, school, 1)[0]
        post(http, url, "gallery", {"code": code, "key": key, "do": "ask", "question": "A cat?"}, school)
        before = post(http, url, "lead", {"code": code, "key": key, "view": VIEW}, school).json()["version"]
        forged = [
            ("lead", {"view": {**VIEW, "layer": 2}}),
            *(("command", {"command": c}) for c in ("freeze", "eyes", "end")),
            *(("gallery", {"do": do, "id": "made-up"}) for do in ("approve", "spotlight", "picture")),
        ]
        credentials = ({"key": secrets.token_urlsafe(16)}, {"key": ""}, {"key": token}, {"token": token})
        codes = [
            post(http, url, action, {"code": code, **who, **body}, school).status_code
            for who in credentials
            for action, body in forged
        ]
        led = post(http, url, "lead", {"code": code, "key": key, "view": VIEW}, school)
        after = led.json()["version"] if led.status_code == 200 else None
        changed = "nothing changed" if after == before + 1 else f"the class's version {before} -> {after}"
        ticket = post(http, url, "ticket", {"code": code, "token": token}, school).status_code
        new = post(http, url, "join", {"code": code}, school).status_code
    return (
        f"{len(codes)} forged: {statuses(codes)}, {changed}; then from the class's network the teacher's lead "
        f"{led.status_code}, a joined student's stream ticket {ticket}, a new student's join {new}"
    )


def ticket_hoard(url: str, tickets: int = 600) -> str:
    """A teacher of a class of the attacker's own asks `tickets` stream tickets and opens none; then
    a student of another class asks for one (the server held at most 488 unopened, all classes'
    together), and the attacker opens its first."""
    attacker, other = fresh_network(), fresh_network()
    with (
        httpx.Client(timeout=60) as http,
        started(http, url, attacker) as (code, key),
        started(http, url, other) as (their_code, _),
    ):
        replies = [post(http, url, "ticket", {"code": code, "key": key}, attacker) for _ in range(tickets)]
        token = joined(http, url, their_code, other, 1)[0]
        theirs = post(http, url, "ticket", {"code": their_code, "token": token}, other).status_code
        first = replies[0].json()["ticket"] if replies[0].status_code == 200 else ""
        with http.stream("GET", f"{url}{EVENTS.lstrip('/')}?ticket={first}") as opened:
            first_opens = opened.status_code
    codes = [r.status_code for r in replies]
    return f"{statuses(codes)}; another class's student then: {theirs}; its first ticket opens: {first_opens}"


def unread_stream(url: str, ticket: str, network: str) -> socket.socket:
    """An event stream opened by `ticket` and never read (a small receive buffer): its socket."""
    parts = httpx.URL(url)
    sock = socket.create_connection((parts.host, parts.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    head = f"GET {EVENTS}?ticket={ticket} HTTP/1.1\r\nHost: {parts.host}:{parts.port}\r\n"
    head += f"X-Forwarded-For: {network}\r\n\r\n"
    sock.sendall(head.encode())
    return sock


def process_counts(pid: int) -> tuple[int, int]:
    """(threads, open files) of process `pid`."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    threads = next(int(line.split()[1]) for line in status if line.startswith("Threads:"))
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


def open_streams(http: httpx.Client, url: str, code: str, tokens: list[str], network: str, each: int) -> list:
    """`each` streams opened, never read, for every student of `tokens`: their sockets."""
    held = []
    for token in tokens:
        for _ in range(each):
            ticket = post(http, url, "ticket", {"code": code, "token": token}, network).json()["ticket"]
            held.append(unread_stream(url, ticket, network))
    return held


def unread_streams(
    url: str,
    pid: int,
    rss_mib: Callable[[], float],
    visitor: Callable[[], Callable[[], float]],
    students: int = 60,
    pushes_s: float = 0.05,
) -> str:
    """A class of the attacker's, `students` students each opening the 3 streams a member may (and
    a 4th), none of them ever read, while its teacher leads a change every `pushes_s`, for as long
    as another network's visitor analyses photos (`visitor()` makes its timer,
    `bench.attacks.victim_analysis`): the server's threads, open files and resident memory
    (`rss_mib`), and the visitor's analysis alone and meanwhile."""
    attacker, victim = fresh_network(), visitor()
    alone = victim()
    rest, rest_mib = process_counts(pid), rss_mib()
    with httpx.Client(timeout=60) as http, started(http, url, attacker) as (code, key):
        tokens = joined(http, url, code, attacker, students)
        held = open_streams(http, url, code, tokens, attacker, 3)
        try:
            fourth = post(http, url, "ticket", {"code": code, "token": tokens[0]}, attacker).json()["ticket"]
            with http.stream("GET", f"{url}{EVENTS.lstrip('/')}?ticket={fourth}") as opened:
                fourth_opens = opened.status_code
            done, pushes = threading.Event(), [0]

            def lead() -> None:
                with httpx.Client(timeout=60) as own:
                    while not done.wait(pushes_s):
                        led = {"code": code, "key": key, "view": {**VIEW, "layer": 1 + pushes[0] % 12}}
                        pushes[0] += post(own, url, "lead", led, attacker).is_success

            leader = threading.Thread(target=lead)
            leader.start()
            time.sleep(2.0)  # the streams' memory, read before the visitor's analyses add theirs
            during_mib = rss_mib()
            meanwhile = victim()
            during = process_counts(pid)
            done.set()
            leader.join()
        finally:
            for sock in held:
                sock.close()
    time.sleep(1.0)  # the server notices the closed sockets at its next write
    after = process_counts(pid)
    return (
        f"{len(held)} streams never read (a 4th a student: {fourth_opens}), {pushes[0]} pushes; the server's threads "
        f"{rest[0]} -> {during[0]} -> {after[0]}, open files {rest[1]} -> {during[1]} -> {after[1]}, its memory "
        f"{during_mib - rest_mib:+.0f} MiB with them open and pushed to for 2 s; a visitor's "
        f"analysis {alone:.2f} s alone, {meanwhile:.2f} s meanwhile ({meanwhile / alone:.2f} ×)"
    )


def noise_jpeg(side: int = 448, seed: int = 5) -> bytes:
    """A photo-sized JPEG of noise: about as large as the gallery keeps a picture (its pictures'
    bytes fill its budget in fewer than 60)."""
    out = io.BytesIO()
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (side, side, 3), np.uint8)).save(out, "JPEG")
    return out.getvalue()


def uploaded(http: httpx.Client, url: str, data: bytes, network: str) -> str:
    """`data` through Gradio's upload route, as a page uploads a picture: the path it answered."""
    files = {"files": ("picture.jpg", data, "image/jpeg")}
    reply = http.post(f"{url}gradio_api/upload", files=files, headers={"X-Forwarded-For": network})
    return reply.raise_for_status().json()[0]


def gallery_round(http: httpx.Client, url: str, code: str, key: str, tokens: list[str], network: str) -> list[int]:
    """The teacher asks a question and every student of `tokens` sends one picture (the same
    upload): each send's status."""
    post(http, url, "gallery", {"code": code, "key": key, "do": "ask", "question": "Your photo?"}, network)
    path = uploaded(http, url, noise_jpeg(), network)
    send = {"code": code, "do": "send", "path": path}
    return [post(http, url, "gallery", {**send, "token": t}, network).status_code for t in tokens]


def gallery_flood(url: str, students: int = 60, more: int = 6) -> str:
    """A class of the attacker's, its `students` each sending a 448 px noise picture to the
    teacher's question, then one of them sending `more` again (each replacing the last)."""
    attacker = fresh_network()
    with httpx.Client(timeout=60) as http, started(http, url, attacker) as (code, key):
        tokens = joined(http, url, code, attacker, students)
        first = gallery_round(http, url, code, key, tokens, attacker)
        path = uploaded(http, url, noise_jpeg(), attacker)
        again = {"code": code, "token": tokens[0], "do": "send", "path": path}
        again_codes = [post(http, url, "gallery", again, attacker).status_code for _ in range(more)]
    return f"{students} students' sends: {statuses(first)}; one student {more} more: {statuses(again_codes)}"


def nested_lists(size: int) -> bytes:
    """A JSON object of `size` bytes whose one field is a list of empty lists: the most Python
    objects a parser makes of so many bytes."""
    inner = b"[]," * ((size - 12) // 3)
    return b'{"code":[' + inner + b"[]]}"


def oversized_bodies(url: str, rounds: int = 8) -> str:
    """Bodies past the 8 KiB a class request may be, on /class/join: 8 KiB + 1 of JSON, 1 MiB, and
    16 MiB of nested lists eight at a time, `rounds` times; one sent in chunks (no Content-Length);
    and the 16 MiB as often on Gradio's /queue/join, where a webcam frame's request may be that large."""
    network = fresh_network()
    bodies = {
        "8 KiB + 1": json.dumps({"code": "x" * (8 * 2**10 - 11)}).encode(),
        "1 MiB": nested_lists(2**20),
        "16 MiB of nested lists, 8 at a time": nested_lists(16 * 2**20 - 64),
    }
    headers = {"X-Forwarded-For": network, "Content-Type": "application/json"}
    said = []
    with httpx.Client(timeout=120) as http, ThreadPoolExecutor(8) as pool:

        def send(body: bytes, _: int, route: str = f"{CLASS_ROUTE.lstrip('/')}/join") -> int | str:
            try:
                return http.post(f"{url}{route}", content=body, headers=headers).status_code
            except httpx.HTTPError as e:  # the server may close the connection before the body is sent
                return type(e).__name__

        for name, body in bodies.items():
            times = 8 * rounds if name.endswith("at a time") else 1
            said.append(f"{name}: {statuses(list(pool.map(partial(send, body), range(times))))}")
        chunked = http.post(
            f"{url}{CLASS_ROUTE.lstrip('/')}/join", content=iter([nested_lists(2**20)]), headers=headers
        )
        said.append(f"1 MiB in chunks: {chunked.status_code}")
        queued = partial(send, bodies["16 MiB of nested lists, 8 at a time"], route="gradio_api/queue/join")
        said.append(f"the 16 MiB on Gradio's /queue/join: {statuses(list(pool.map(queued, range(8 * rounds))))}")
    return "; ".join(said)


# The public server's lines every minute (ui.app.keep_within_budgets): what its classes hold, and its heap.
CLASSES_HELD = re.compile(r"holding: .*, (\d+ classes \(\d+ students, \d+ streams open, \d+ gallery pictures\))")
HEAP_IN_USE = re.compile(r"heap: (\d+) MiB in use, .*?, (\d+) Python blocks")


def next_minute(log: Path, timeout_s: float = 150.0) -> tuple[str, int, int]:
    """The server's next minute's lines: (what its classes hold, MiB of heap in use, Python blocks)."""
    start, deadline = log.stat().st_size, time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(1.0)
        said = log.read_bytes()[start:].decode(errors="replace")
        if (held := CLASSES_HELD.findall(said)) and (heap := HEAP_IN_USE.findall(said)):
            return held[-1], int(heap[-1][0]), int(heap[-1][1])
    raise TimeoutError(f"the server said nothing of its classes and heap for {timeout_s:.0f} s")


def class_memory(url: str, log: Path, classes: int = 6, students: int = 60) -> str:
    """`classes` classes, each of `students` students with a stream open and a gallery round,
    held, then ended: what the server says it holds (its classes; its heap in use and Python's
    blocks, as the allocator is asked, not its resident memory, which keeps freed pages) at rest,
    while they are held and once they have ended, each at its next minute's lines."""
    rest, held = next_minute(log), []
    with httpx.Client(timeout=120) as http, contextlib.ExitStack() as stack:
        sent = []
        for _ in range(classes):
            network = fresh_network()
            code, key = stack.enter_context(started(http, url, network))
            tokens = joined(http, url, code, network, students)
            held += open_streams(http, url, code, tokens, network, 1)
            sent += gallery_round(http, url, code, key, tokens, network)
        holding = next_minute(log)
    for sock in held:  # the classes ended (the stack's exit); their pages go too
        sock.close()
    ended = next_minute(log)

    def said(now: tuple[str, int, int], base: tuple[str, int, int] | None = None) -> str:
        if base is None:
            return f"{now[0]}, heap {now[1]} MiB, {now[2]:,} Python blocks"
        return f"{now[0]}, heap {now[1] - base[1]:+d} MiB, {now[2] - base[2]:+,d} Python blocks"

    return (
        f"gallery sends {statuses(sent)}; at rest {said(rest)}; held: {said(holding, rest)}; ended: {said(ended, rest)}"
    )


def class_attacks(
    url: str, pid: int, rss_mib: Callable[[], float], log: Path, visitor: Callable[[], Callable[[], float]]
) -> dict[str, Callable[[], str]]:
    """Every class-mode case, by name (each name begins "class mode:", for `--only`)."""
    return {
        "class mode: 60 wrong codes on /class/join, each under an invented first X-Forwarded-For": lambda: (
            code_guessing(url)
        ),
        "class mode: a student's forged teacher actions, from the class's own network": lambda: forged_teacher(url),
        "class mode: 600 stream tickets asked by one teacher and never opened": lambda: ticket_hoard(url),
        "class mode: 60 students' 180 event streams never read, a change pushed every 50 ms": lambda: unread_streams(
            url, pid, rss_mib, visitor
        ),
        "class mode: a gallery flood (60 students' 448 px noise pictures, then 6 more sends)": lambda: gallery_flood(
            url
        ),
        "class mode: oversized bodies on /class/join and Gradio's /queue/join": lambda: oversized_bodies(url),
        "class mode: 6 classes of 60 students with streams and galleries, held, then ended": lambda: class_memory(
            url, log
        ),
    }
