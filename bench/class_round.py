"""One class period's lesson in class mode (issue 59) for `bench.soak`: a teacher starts a class, a
few students join and follow it on their event streams, the teacher shows an image and clicks, a
gallery round ("Show me yours"), and the class ends, every page told and the class gone.

Over HTTP as the pages do it (ui/class_route.py): the teacher's analysis through Gradio's
/analyze_page (`bench.class_mode.analyse_page`), each page's stream read in a thread of its own
(`Page`), a following page reading the teacher's analysis once per image. What a page should have
and did not within WAIT_S raises, so the soak counts it as the class's error. The class is on a
network of its own each round (192.0.2.0/24): ending it and checking it is gone are a code that
names no class, which the registry counts against its network.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

import httpx

from bench.class_attacks import EVENTS, VIEW, joined, post, uploaded
from bench.class_mode import analyse_page, sse_events

WAIT_S = 60.0
PICTURE = Path(__file__).resolve().parent.parent / "examples" / "cifar10" / "cat.jpg"  # what each student sends
_ROUNDS = count()


@dataclass
class Page:
    """A page of the class (the teacher's: `key`; a student's: `token`), its stream read in a thread."""

    http: httpx.Client
    url: str
    code: str
    network: str
    key: str | None = None
    token: str | None = None
    states: list[dict[str, Any]] = field(default_factory=list)
    analyses: list[str] = field(default_factory=list)  # the handles whose analysis it read
    ended: bool = False
    changed: threading.Condition = field(default_factory=threading.Condition)

    def who(self) -> dict[str, str]:
        return {"key": self.key} if self.key is not None else {"token": str(self.token)}

    def ask(self, action: str, **body: Any) -> httpx.Response:
        reply = post(self.http, self.url, action, {"code": self.code, **self.who(), **body}, self.network)
        if reply.status_code != 200:
            raise RuntimeError(f"/class/{action} answered {reply.status_code}: {reply.text[:120]}")
        return reply

    def open(self) -> threading.Thread:
        ticket = self.ask("ticket").json()["ticket"]
        reader = threading.Thread(target=self._read, args=(ticket,), daemon=True)
        reader.start()
        return reader

    def _read(self, ticket: str) -> None:
        url, headers = f"{self.url}{EVENTS.lstrip('/')}?ticket={ticket}", {"X-Forwarded-For": self.network}
        with self.http.stream("GET", url, headers=headers) as stream:
            buffer = b""
            for chunk in stream.iter_raw():
                events, buffer = sse_events(buffer + chunk)
                for event in events:
                    if event.name == "state":
                        self._got(event.data)
                    with self.changed:
                        self.ended = self.ended or event.name == "end"
                        self.changed.notify_all()
                    if self.ended:
                        return

    def _got(self, state: dict[str, Any]) -> None:
        handle = (state.get("view") or {}).get("handle")
        if self.key is None and handle is not None and handle not in self.analyses:
            self.ask("analysis")  # a following page reads the teacher's analysis once per image
            self.analyses.append(handle)
        with self.changed:
            self.states.append(state)

    def until(self, done: Callable[[Page], bool], what: str) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: done(self), WAIT_S):
                raise TimeoutError(f"not within {WAIT_S:.0f} s: {what}")

    def version(self) -> int:
        return self.states[-1]["version"] if self.states else -1

    def gallery(self) -> dict[str, Any]:
        return (self.states[-1].get("gallery") or {}) if self.states else {}


def everyone(pages: list[Page], done: Callable[[Page], bool], what: str) -> None:
    for page in pages:
        page.until(done, what)


def class_round(
    url: str, teacher: Any, image: Path, timed: Callable[[str, Callable[[], object]], object], students: int = 3
) -> None:
    """One lesson: `teacher` (a gradio_client session) analyses `image`; each step a page waits for is
    `timed(name, call)` ("class_image", "class_push" for each click, "class_gallery")."""
    network = f"192.0.2.{1 + next(_ROUNDS) % 200}"
    with httpx.Client(timeout=WAIT_S) as http:
        started = post(http, url, "start", {"address": url}, network).raise_for_status().json()
        lead = Page(http, url, started["code"], network, key=started["key"])
        try:
            tokens = joined(http, url, lead.code, network, students)
            pupils = [Page(http, url, lead.code, network, token=token) for token in tokens]
            readers = [page.open() for page in [lead, *pupils]]
            handle = timed("class_image", lambda: shown(lead, pupils, teacher, image))
            for layer in (2, 3, 1, 2):
                timed("class_push", lambda n=layer: led(lead, pupils, {**VIEW, "handle": handle, "layer": n}))
            timed("class_gallery", lambda: gallery(lead, pupils, url, http))
            lead.ask("command", command="end")
            everyone([lead, *pupils], lambda p: p.ended, "every page told the class ended")
            for reader in readers:
                reader.join(timeout=WAIT_S)
        finally:
            post(http, url, "command", {"code": lead.code, "key": lead.key, "command": "end"}, network)
        if (gone := post(http, url, "ticket", {"code": lead.code, "key": lead.key}, network)).status_code != 404:
            raise RuntimeError(f"the class was not gone once ended: a ticket answered {gone.status_code}")


def led(lead: Page, pupils: list[Page], view: dict[str, Any]) -> None:
    """The teacher's view sent; returns once every student's page has it."""
    version = lead.ask("lead", view=view).json()["version"]
    everyone(pupils, lambda p: p.version() >= version, f"every page at the class's version {version}")


def shown(lead: Page, pupils: list[Page], teacher: Any, image: Path) -> str:
    """The teacher's image analysed (one forward pass) and shown; returns its handle once every student's
    page has read it."""
    handle = analyse_page(teacher, image)["handle"]
    led(lead, pupils, {**VIEW, "handle": handle})
    everyone(pupils, lambda p: len(p.analyses) >= 1, "every page read the teacher's analysis")
    return handle


def gallery(lead: Page, pupils: list[Page], url: str, http: httpx.Client) -> None:
    """A question, each student's picture, the teacher approving each and showing them (one batched
    pass); returns once every student's page has read the tiles, one a student."""
    lead.ask("gallery", do="ask", question="Where does the model look?")
    path = uploaded(http, url, PICTURE.read_bytes(), lead.network)
    for page in pupils:
        page.ask("gallery", do="send", path=path)
    lead.until(lambda p: p.gallery().get("answered", 0) >= len(pupils), "every student's picture came")
    for picture in lead.gallery()["pictures"]:
        lead.ask("gallery", do="approve", id=picture["id"])
    lead.ask("gallery", do="show")
    everyone(pupils, lambda p: p.gallery().get("drawn", 0) >= 1, "every page told the gallery is drawn")
    for page in pupils:
        if len(tiles := page.ask("gallery", do="tiles").json()["tiles"]) != len(pupils):
            raise RuntimeError(f"a student's page was shown {len(tiles)} tiles of {len(pupils)}")
