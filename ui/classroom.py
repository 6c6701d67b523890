"""Class mode's registry (issue 59): the classes a server holds, who is in each, and what the
teacher's page shows, which every following page shows too. No Gradio and no event loop here:
ui/class_route.py serves it on the app's own routes and pushes each change to the pages.

- A class is named by a code of CODE_CHARS characters from ALPHABET (no look-alikes: 0/O, 1/I/L,
  5/S, 2/Z, 8/B), drawn with `secrets`: 25^6 = 244 M codes, of which a server holds at most
  `ClassLimits.classes` (8): at 20 wrong codes a network in 10 minutes, a day of trying finds
  one with a chance of 1 in 10,000. Its teacher holds a key of KEY_BYTES random bytes (128 bits), which
  the teacher's browser keeps; the registry keeps only its SHA-256, compared in constant time.
- A student joins with the code and gets a token of their own (128 bits too) and a pseudonym
  (an adjective and an animal), or the name they typed, filtered to letters, digits and a few
  marks and cut to NAME_CHARS: the page shows it as text, never as HTML or Markdown.
- Only the key leads (the teacher's view, Freeze, Eyes on me) or ends the class; a student's
  token never does. Each refused credential (a code that names no class, a forged key or token)
  counts against its network (`Attempts`: `failures` in `window_s`, then every request of that
  network is refused until the window passes, but one with the class's key or a student's token),
  so a code or a key is not found by trying, and a student's wrong codes never lock their class out.
- A class ends when its teacher ends it (its state deleted at once) or after `idle_s` with no
  teacher's page connected and no teacher's action.

Memory (`ClassLimits` defaults; tracemalloc, 2026-11-29): 8 classes of 60 students with a
teacher's view each held 134 KiB (17 KiB a class, 0.28 KiB a student: a token, a name, a dict
entry); once all 8 had ended, 10 KiB stayed (why each ended, the last 100 kept, and the dicts'
room). The followers' copy of the teacher's analysis (ui/class_route.py keeps the 16 most recent,
each bounded as the page's first reply, explorer.page_budget) and each page's open event stream
(a coroutine and a socket's buffers) are the route's.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ALPHABET = "34679ACDEFGHJKMNPQRTUVWXY"  # 25: no 0 O 1 I L 5 S 2 Z 8 B, which a projector's font confuses
CODE_CHARS = 6
KEY_BYTES = 16  # the teacher's key and a student's token: 128 random bits
NAME_CHARS = 24
ADJECTIVES = (
    "Brave", "Calm", "Clever", "Curious", "Eager", "Gentle", "Happy", "Keen", "Kind", "Lively",
    "Lucky", "Merry", "Nimble", "Patient", "Quick", "Quiet", "Swift", "Sunny", "Wise", "Witty",
)  # fmt: skip
ANIMALS = (
    "Badger", "Beaver", "Dolphin", "Falcon", "Fox", "Gecko", "Hedgehog", "Heron", "Koala", "Lynx",
    "Marten", "Otter", "Owl", "Panda", "Puffin", "Rabbit", "Robin", "Seal", "Tiger", "Wombat",
)  # fmt: skip
# What a typed name keeps: letters, digits, spaces and - ' . (no < > & * _ [ ] ` or other markup).
_NOT_IN_NAMES = re.compile(r"[^\w \-'.]|_")
STYLE_FIELDS = ("cmap", "opacity", "upsampling", "display", "scale")
TEXT_CHARS = 200  # a model key or a style's value, as the teacher's page sends it
ALT_CHARS = 600  # a More view's alt text, as the teacher's page sends it (cut there)
# What a lesson's page says in words (lessons 3 and 4 have no one picture: ui/js/classresult.js): its choices and
# notes as [name, words], its results as tables of text. Bounded so a view stays within a request (8 KiB).
SAID_ITEMS, TABLES, TABLE_ROWS, TABLE_CELLS = 8, 2, 12, 4
# Lesson 4's word maps, one a word (explorer.prompts.MAX_PROMPTS at most): each {"alt", "picture"} as a More view's.
LESSON_MAPS = 8


@dataclass(frozen=True)
class ClassLimits:
    """What class mode may hold (docs/security.md, "Class mode"); the module's docstring gives the memory."""

    classes: int = 8  # classes at once, whole server
    students: int = 60  # a class's students
    per_network: int = 2  # classes one network may run at once
    idle_s: float = 2 * 3600.0  # a class with no teacher's page for this long ends itself
    failures: int = 20  # refused credentials one network may send in `window_s`...
    window_s: float = 600.0  # ...after which its class requests are refused until the window passes
    streams: int = 3  # event streams one member may hold open (a reloaded page's old one may linger)
    ticket_s: float = 30.0  # a stream ticket's life (`Classroom.ticket`)


class ClassError(Exception):
    """A class request refused, in a sentence a person reads, with its HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Member:
    name: str
    streams: int = 0  # event streams open


@dataclass
class Class:
    """One class: its teacher's key's digest, its students by token, the teacher's view."""

    code: str
    key_digest: bytes
    network: str | None
    seen: float  # the teacher's last action, or the last moment a teacher's page was connected
    students: dict[str, Member] = field(default_factory=dict)
    teacher: Member = field(default_factory=lambda: Member("teacher"))
    view: dict[str, Any] | None = None  # the teacher's view, its handle the followers' (`followers`)
    source: str | None = None  # the teacher's own handle of the analysis shown
    followers: str | None = None  # the handle the class's pages read that analysis's rows by
    version: int = 0  # bumped on every change a page is pushed
    frozen: bool = False
    eyes: int = 0  # Eyes on me, counted: a page that sees it grow comes back to the teacher's view
    gallery: Any = None  # ui.class_gallery.Gallery once the teacher asks a question: it goes with the class
    run: dict[str, Any] | None = None  # the teacher's Train run its pages watch (ui/class_run.py), its own version


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_CHARS))


def clean_code(code: object) -> str | None:
    """A code as typed (any case, spaces or a dash between) in its own letters, or None."""
    if not isinstance(code, str) or len(code) > 20:
        return None
    letters = re.sub(r"[\s-]", "", code).upper()
    return letters if len(letters) == CODE_CHARS and all(c in ALPHABET for c in letters) else None


def clean_name(typed: object) -> str | None:
    """A typed name as a page shows it (letters, digits, spaces, - ' .; at most NAME_CHARS), or None
    when nothing is left of it."""
    if not isinstance(typed, str):
        return None
    kept = _NOT_IN_NAMES.sub("", unicodedata.normalize("NFKC", typed[: NAME_CHARS * 4]))
    name = " ".join(kept.split())[:NAME_CHARS].strip()
    return name or None


class Attempts:
    """Refused credentials counted per network in fixed windows of `window_s` (at most `networks`
    networks remembered, the oldest window forgotten first)."""

    def __init__(self, limit: int, window_s: float, clock: Callable[[], float], networks: int = 10_000) -> None:
        self.limit, self.window_s, self.clock, self.networks = limit, window_s, clock, networks
        self.counts: OrderedDict[str | None, tuple[float, int]] = OrderedDict()  # network: (window start, count)

    def _now(self, network: str | None) -> tuple[float, int]:
        now = self.clock()
        began, count = self.counts.get(network, (now, 0))
        return (now, 0) if now - began >= self.window_s else (began, count)

    def allowed(self, network: str | None) -> bool:
        return self._now(network)[1] < self.limit

    def failed(self, network: str | None) -> None:
        began, count = self._now(network)
        self.counts.pop(network, None)
        self.counts[network] = began, count + 1
        while len(self.counts) > self.networks:
            self.counts.popitem(last=False)


class Classroom:
    """Every class of the server, within `limits`. `grant(handle)` gives the followers' handle
    of the analysis a teacher's handle names (None if it names none) and `revoke(handle)` takes it
    back (ui.common.PageHandles: followers read the teacher's rows by it, and by nothing else)."""

    def __init__(
        self,
        limits: ClassLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        grant: Callable[[str], str | None] = lambda handle: secrets.token_urlsafe(18),
        revoke: Callable[[str], None] = lambda handle: None,
    ) -> None:
        self.limits, self.clock, self.grant, self.revoke = limits or ClassLimits(), clock, grant, revoke
        self.classes: dict[str, Class] = {}
        self.ended: OrderedDict[str, str] = OrderedDict()  # code: why it ended (for pages still open), 100 kept
        self.tickets: dict[str, tuple[str, str | None, float]] = {}  # ticket: (code, token or None: teacher, when)
        self.attempts = Attempts(self.limits.failures, self.limits.window_s, clock)
        self.lock = threading.Lock()

    # ---- the teacher ----
    def start(self, network: str | None) -> tuple[str, str]:
        """A new class for a teacher on `network`: (its code, the teacher's key)."""
        with self.lock:
            self._expire()
            if not self.limits.classes:
                raise ClassError("This server runs no classes: its operator started it with --max-classes 0.", 403)
            if len(self.classes) >= self.limits.classes:
                raise ClassError("This server runs as many classes as it can: try again when one has ended.", 503)
            if sum(c.network == network for c in self.classes.values()) >= self.limits.per_network:
                raise ClassError(f"Your network already runs {self.limits.per_network} classes: end one first.", 429)
            code = new_code()
            while code in self.classes or code in self.ended:
                code = new_code()
            key = secrets.token_urlsafe(KEY_BYTES)
            self.classes[code] = Class(code, digest(key), network, self.clock())
            return code, key

    def lead(self, code: object, key: object, view: object, network: str | None) -> int:
        """The teacher's page shows `view` now (`checked_view`): every following page is to show it."""
        view = checked_view(view)
        with self.lock:
            klass = self._teacher(code, key, network)
            # the followers' own handle too: a reloaded teacher's page shows the class's analysis by it
            if view["handle"] not in (klass.source, klass.followers):
                self._regrant(klass, view["handle"])
            klass.view = {**view, "handle": klass.followers}
            return self._changed(klass)

    def _regrant(self, klass: Class, handle: str | None) -> None:
        """The followers' handle moved to the teacher's new analysis (`handle`), the last taken back."""
        granted = self.grant(handle) if handle is not None else None
        if handle is not None and granted is None:
            raise ClassError("The server no longer keeps this image's analysis: load the image again.", 404)
        if klass.followers is not None:
            self.revoke(klass.followers)
        klass.source, klass.followers = handle, granted

    def command(self, code: object, key: object, command: object, network: str | None) -> int:
        """Freeze, release or Eyes on me ("freeze", "release", "eyes"), from the teacher only."""
        with self.lock:
            klass = self._teacher(code, key, network)
            if command not in ("freeze", "release", "eyes"):
                raise ClassError("A class's command is freeze, release or eyes.", 400)
            if command == "eyes":
                klass.eyes += 1
            else:
                klass.frozen = command == "freeze"
            return self._changed(klass)

    def end(self, code: object, key: object, network: str | None) -> None:
        """The teacher ends the class: its state is deleted now, and its pages are told."""
        with self.lock:
            self._gone(self._teacher(code, key, network), "The teacher ended the class.")

    def teacher_code(self, code: object, key: object, network: str | None) -> str:
        """The class's code when `key` is its teacher's (ClassError otherwise, counted as `lead`'s)."""
        with self.lock:
            return self._teacher(code, key, network).code

    def show_run(self, code: str, run: dict[str, Any] | None) -> bool:
        """The teacher's run as the class's pages are pushed it (ui/class_run.py); False once the class has ended.
        The class's own version stays: a page is not to draw the teacher's view again for a run's step."""
        with self.lock:
            if (klass := self.classes.get(code)) is None:
                return False
            klass.run = run
            return True

    def is_open(self, code: str) -> bool:
        """Whether class `code` is still on (not ended, nor expired): its run's watcher (ui/class_run.py) asks."""
        with self.lock:
            self._expire()
            return code in self.classes

    # ---- the students ----
    def join(self, code: object, network: str | None, name: object = None, token: object = None) -> tuple[str, str]:
        """A student in class `code`: (their token, their name). A token the class gave before
        (the page's storage: a reload, a phone that slept) is the same student, under the same name."""
        with self.lock:
            klass = self._class(code, network, lambda found: isinstance(token, str) and token in found.students)
            if isinstance(token, str) and (member := klass.students.get(token)) is not None:
                return token, member.name
            if len(klass.students) >= self.limits.students:
                raise ClassError(f"This class is full: it has {self.limits.students} students.", 409)
            taken = {m.name for m in klass.students.values()}
            chosen = clean_name(name) or self._pseudonym(taken)
            unique, n = chosen, 1
            while unique in taken:
                n += 1
                unique = f"{chosen[: NAME_CHARS - 3]} {n}"
            token = secrets.token_urlsafe(KEY_BYTES)
            klass.students[token] = Member(unique)
            self._changed(klass)
            return token, unique

    @staticmethod
    def _pseudonym(taken: set[str]) -> str:
        """An adjective and an animal no student of the class has (400 pairs; after 20 draws all
        taken, which a class of 60 almost never meets, `join` numbers the last)."""
        names = [f"{secrets.choice(ADJECTIVES)} {secrets.choice(ANIMALS)}" for _ in range(20)]
        return next((name for name in names if name not in taken), names[-1])

    # ---- the pages ----
    def ticket(self, code: object, key: object, token: object, network: str | None) -> str:
        """A ticket, good once within `ticket_s`, that opens an event stream for the teacher (`key`)
        or a student (`token`): the address of a stream (EventSource: GET only) names no secret."""
        with self.lock:
            klass = self._member(code, key, token, network)
            now, who = self.clock(), None if key is not None else str(token)
            for old in [t for t, (_, _, at) in self.tickets.items() if now - at > self.limits.ticket_s]:
                del self.tickets[old]
            # A member's unopened tickets beyond the streams it may hold replace its oldest: a server-wide
            # bound, which one teacher's page filled (bench.attacks), refused every other class its streams.
            mine = [t for t, (c, w, _) in self.tickets.items() if c == klass.code and w == who]
            for old in mine[: max(0, len(mine) - self.limits.streams + 1)]:
                del self.tickets[old]
            ticket = secrets.token_urlsafe(KEY_BYTES)
            self.tickets[ticket] = klass.code, who, now
            return ticket

    def open_stream(self, ticket: object) -> tuple[str, str | None]:
        """The stream a ticket opens: (the class's code, the student's token, None for the teacher)."""
        with self.lock:
            found = self.tickets.pop(ticket, None) if isinstance(ticket, str) else None
            if found is None or self.clock() - found[2] > self.limits.ticket_s or found[0] not in self.classes:
                raise ClassError("This stream's ticket is not valid: the page asks for another.", 403)
            code, token, _ = found
            member = self._who(self.classes[code], token)
            if member.streams >= self.limits.streams:
                raise ClassError("This page of the class is already open in too many tabs.", 429)
            member.streams += 1
            return code, token

    def close_stream(self, code: str, token: str | None) -> None:
        with self.lock:
            if (klass := self.classes.get(code)) is not None:
                self._who(klass, token).streams -= 1
                if token is None:
                    klass.seen = self.clock()

    def snapshot(self, code: str, token: str | None) -> dict[str, Any]:
        """What a page of the class is pushed: the teacher's view, Freeze, Eyes on me, the version, the run;
        the teacher's also the students' names. Raises ClassError(410) once the class has ended."""
        with self.lock:
            self._expire()
            klass = self.classes.get(code)
            if klass is None:
                raise ClassError(self.ended.get(code, "The class has ended."), 410)
            if token is None and klass.teacher.streams:
                klass.seen = self.clock()  # a teacher's page is connected: the class is not left
            state = {"code": code, "version": klass.version, "view": klass.view, "frozen": klass.frozen}
            state |= {"eyes": klass.eyes, "students": len(klass.students), "run": klass.run}
            if klass.gallery is not None:
                state["gallery"] = klass.gallery.state(token)
            if token is None:
                return state | {"role": "teacher", "names": sorted(m.name for m in klass.students.values())}
            return state | {"role": "student", "name": self._who(klass, token).name}

    def on_class(
        self, code: object, key: object, token: object, network: str | None, change: Callable, changes: bool = True
    ) -> Any:
        """`change(klass, token)` run on the class under the lock for its teacher (`key`; token None) or
        a student (`token`), its pages pushed the change unless `changes` is False (ui/class_gallery.py)."""
        with self.lock:
            klass = self._member(code, key, token, network)
            done = change(klass, None if key is not None else token)
            if changes:
                self._changed(klass)
            return done

    def followed(self, code: object, key: object, token: object, network: str | None) -> dict[str, Any] | None:
        """The teacher's view as the class's pages read it: its handle the followers' (None before any)."""
        with self.lock:
            view = self._member(code, key, token, network).view
            return dict(view) if view is not None else None

    def held(self) -> str:
        """What the registry holds, for the operator's log line (ui.app.holdings); an ended class holds none."""
        with self.lock:
            held = list(self.classes.values())
            students = sum(len(k.students) for k in held)
            streams = sum(k.teacher.streams + sum(m.streams for m in k.students.values()) for k in held)
            pictures = sum(len(k.gallery.pictures) for k in held if k.gallery is not None)
        return f"{len(held)} classes ({students} students, {streams} streams open, {pictures} gallery pictures)"

    # ---- inside ----
    def _class(self, code: object, network: str | None, proven: Callable[[Class], bool] = lambda _: False) -> Class:
        """The class `code` names. A network that sent too many wrong credentials is refused unless
        the request `proven` belongs to the class (its teacher's key or a student's token: 128 random
        bits, which no guess finds): the class's own network is often the one router of a school,
        and a student's 20 wrong codes had locked its teacher and every page out for 10 minutes."""
        self._expire()
        found = self.classes.get(clean_code(code) or "")
        if found is not None and proven(found):
            return found
        if not self.attempts.allowed(network):
            raise ClassError("Too many wrong class codes or keys from your network: try again in a few minutes.", 429)
        if found is None:
            self.attempts.failed(network)
            raise ClassError(f"There is no class with the code {str(code)[:20]!r}: check the code.", 404)
        return found

    def _teacher(self, code: object, key: object, network: str | None) -> Class:
        def is_teacher(klass: Class) -> bool:
            return isinstance(key, str) and secrets.compare_digest(digest(key), klass.key_digest)

        klass = self._class(code, network, is_teacher)
        if not is_teacher(klass):
            self.attempts.failed(network)
            raise ClassError("Only the class's teacher can do this.", 403)
        klass.seen = self.clock()
        return klass

    def _member(self, code: object, key: object, token: object, network: str | None) -> Class:
        if key is not None:
            return self._teacher(code, key, network)
        klass = self._class(code, network, lambda found: isinstance(token, str) and token in found.students)
        if not isinstance(token, str) or token not in klass.students:
            self.attempts.failed(network)
            raise ClassError("This page is not in the class: join it again with its code.", 403)
        return klass

    @staticmethod
    def _who(klass: Class, token: str | None) -> Member:
        return klass.teacher if token is None else klass.students[token]

    def _changed(self, klass: Class) -> int:
        klass.version += 1
        return klass.version

    def _gone(self, klass: Class, why: str) -> None:
        del self.classes[klass.code]
        self.ended[klass.code] = why
        while len(self.ended) > 100:
            self.ended.popitem(last=False)
        if klass.followers is not None:
            self.revoke(klass.followers)
        if klass.gallery is not None:  # the class's pictures go now, not with the object
            klass.gallery.clear()

    def _expire(self) -> None:
        now = self.clock()
        for klass in list(self.classes.values()):
            if not klass.teacher.streams and now - klass.seen > self.limits.idle_s:
                self._gone(klass, "The class ended: its teacher was away for two hours.")


def checked_view(view: object) -> dict[str, Any]:
    """The teacher's view as the registry keeps it, or ClassError(400): {"handle": str or None,
    "model": str, "layer": 1-based, "query": None, {"row", "col"} 0-based or {"token"}, "style":
    {STYLE_FIELDS}, "head": the head pointed at, 1-based, or None, "more": the "More views" view open,
    "lesson": the lesson open (each {"view", "alt", "picture"}, `checked_shown`, the lesson's with its
    words, `checked_lesson`, or None)}, as
    ui/js/classroom.js sends it. The followers' pages check ranges as they draw (a head past the
    model's points at none)."""
    bad = ClassError("The teacher's view must say its handle, model, layer, query and style.", 400)
    if not isinstance(view, dict):
        raise bad
    handle, model, layer, query, style = (view.get(k) for k in ("handle", "model", "layer", "query", "style"))
    head = view.get("head")
    if not (handle is None or (isinstance(handle, str) and len(handle) <= 64)):
        raise bad
    if not (_text(model) and _count(layer) and layer >= 1 and isinstance(style, dict)):
        raise bad
    if not (query is None or _query(query)):
        raise bad
    if set(style) != set(STYLE_FIELDS) or not all(_text(v) or _number(v) for v in style.values()):
        raise bad
    if not (head is None or (_count(head) and head >= 1)):
        raise ClassError("The head a teacher points at is a number from 1, or none.", 400)
    kept = {"handle": handle, "model": model, "layer": layer, "query": query, "style": dict(style)}
    return kept | {"head": head, "more": checked_shown(view.get("more")), "lesson": checked_lesson(view.get("lesson"))}


def checked_shown(shown: object) -> dict[str, str] | None:
    """The "More views" view or the lesson a teacher's page shows: {"view": its tab's words, "alt": its
    picture's alt text, "picture": where the teacher's page got it, "" for none (ui/class_route.py
    reads it once for the class)}, or None."""
    if shown is None:
        return None
    bad = ClassError("The teacher's More view or lesson must say its name, its picture and the picture's words.", 400)
    if not (isinstance(shown, dict) and set(shown) == {"view", "alt", "picture"}):
        raise bad
    if not (_text(shown["view"]) and _text(shown["picture"]) and isinstance(shown["alt"], str)):
        raise bad
    return {"view": shown["view"], "alt": shown["alt"][:ALT_CHARS], "picture": shown["picture"]}


def checked_lesson(lesson: object) -> dict[str, Any] | None:
    """The lesson a teacher's page shows: `checked_shown`'s, with (where sent) "said", its pickers and notes as
    [name, words] (at most SAID_ITEMS, words at most ALT_CHARS), "tables", its results as text
    ({"caption", "rows": rows of cells}, at most TABLES of TABLE_ROWS rows of TABLE_CELLS cells), and "maps",
    lesson 4's word maps ({"alt", "picture"} each, at most LESSON_MAPS), or None."""
    if not isinstance(lesson, dict) or not set(lesson) - {"said", "tables", "maps"} <= {"view", "alt", "picture"}:
        return checked_shown(lesson)  # None, or its refusal
    said, tables = lesson.get("said", []), lesson.get("tables", [])
    pairs = _listed(said, SAID_ITEMS) and all(_listed(p, 2) and len(p) == 2 and _text(p[0]) for p in said)
    if not (pairs and all(isinstance(p[1], str) and len(p[1]) <= ALT_CHARS for p in said)):
        raise ClassError("What a teacher's lesson says must be a few names and their words.", 400)
    if not (_listed(tables, TABLES) and all(_table(t) for t in tables)):
        raise ClassError("A teacher's lesson's results must be a few short tables of words.", 400)
    maps = lesson.get("maps", [])
    if not (_listed(maps, LESSON_MAPS) and all(_map(m) for m in maps)):
        raise ClassError("A teacher's lesson's word maps must be a few pictures, each with its words.", 400)
    shown = checked_shown({k: v for k, v in lesson.items() if k not in ("said", "tables", "maps")}) or {}
    words = {"said": [list(p) for p in said]} if "said" in lesson else {}
    if "tables" in lesson:
        words["tables"] = [{"caption": t["caption"], "rows": [list(row) for row in t["rows"]]} for t in tables]
    if "maps" in lesson:
        words["maps"] = [{"alt": m["alt"], "picture": m["picture"]} for m in maps]
    return shown | words


def _map(shown: object) -> bool:
    """A word map as the teacher's page names it: its alt text and where the page got it (never "")."""
    if not (isinstance(shown, dict) and set(shown) == {"alt", "picture"}):
        return False
    return (
        isinstance(shown["alt"], str)
        and len(shown["alt"]) <= ALT_CHARS
        and _text(shown["picture"])
        and shown["picture"] != ""
    )


def _listed(value: object, most: int) -> bool:
    return isinstance(value, list) and len(value) <= most


def _table(table: object) -> bool:
    if not (isinstance(table, dict) and set(table) == {"caption", "rows"} and _text(table["caption"])):
        return False
    rows = table["rows"]
    return _listed(rows, TABLE_ROWS) and all(_listed(r, TABLE_CELLS) and all(map(_text, r)) for r in rows)


def _text(value: object) -> bool:
    return isinstance(value, str) and len(value) <= TEXT_CHARS


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 100_000


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -1e6 < value < 1e6


def _query(query: object) -> bool:
    if not isinstance(query, dict):
        return False
    return (set(query) == {"row", "col"} or set(query) == {"token"}) and all(map(_count, query.values()))
