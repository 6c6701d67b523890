"""Class mode's routes (ui/class_route.py, issue 59), behind the app's request limits as the rows
route is: a teacher starts a class and leads, a student joins and reads the teacher's analysis
and its rows by the followers' handle only, pushed on an event stream; a student's forged action
is refused, and an ended class's handle names nothing."""

import asyncio
import json
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image
from starlette.applications import Starlette
from starlette.testclient import TestClient

from explorer import page_maps
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.explain import ExplanationKey, explain
from ui import class_route
from ui.class_route import (
    EVENTS_ROUTE,
    NO_NETWORK,
    ONLY_THIS_COMPUTER,
    Bell,
    ClassAnswers,
    class_events,
    class_routes,
    join_address,
    lan_address,
    qr_rows,
    room_address,
)
from ui.common import Server
from ui.gate import CLASS_BUSY, CLASS_ROUTE, ROUTE, RouteGate, gated
from ui.limits import RequestLimits
from ui.rows_route import rows_route
from ui.uploads import UploadBudget

TEACHER, STUDENT = "198.51.100.7", "198.51.100.9"
STYLE = {"cmap": "viridis", "opacity": 0.5, "upsampling": "nearest", "display": "overlay", "scale": "head"}


@pytest.fixture(scope="module")
def served(tiny_checkpoint, tmp_path_factory):
    """(the server's context with one analysis in its store and the teacher's page's handle of it, a
    client of the class and rows routes behind ui.limits.RequestLimits, one proxy in front)."""
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs")))
    loaded = server.catalog.get(BUNDLED)
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (32, 32, 3), np.uint8))
    key = ExplanationKey("random.png", BUNDLED, id(loaded.model), "crop", "random")
    server.store.get(key, lambda: explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, image))
    routes = [rows_route(server), *class_routes(server, trusted_hops=1, heartbeat_s=0.05, lasting_s=0.3)]
    uploads = UploadBudget(lambda: tmp_path_factory.mktemp("uploads"), 10**6)
    app = RequestLimits(Starlette(routes=routes), uploads=uploads, trusted_hops=1, gate=RouteGate())
    with TestClient(app) as client:
        yield server, server.pages.handle(key), client


def post(client, action: str, body: object, network: str = TEACHER):
    return client.post(f"{CLASS_ROUTE}/{action}", json=body, headers={"X-Forwarded-For": network})


def view(handle: str, layer: int = 2) -> dict:
    return {"handle": handle, "model": BUNDLED, "layer": layer, "query": None, "style": STYLE}


def test_a_student_follows_the_teachers_image_by_a_handle_of_the_class_and_its_rows(served):
    server, handle, client = served
    started = post(client, "start", {"address": "http://192.168.1.20:7860/"}).json()
    code, key = started["code"], started["key"]
    assert started["join"] == f"http://192.168.1.20:7860/?class={code}"
    joined = post(client, "join", {"code": code.lower(), "name": "Ada <b>"}, STUDENT).json()
    assert joined["code"] == code and joined["name"] == "Ada b"
    student = {"code": code, "token": joined["token"]}
    waiting = post(client, "analysis", student, STUDENT)
    assert waiting.status_code == 404 and "not here yet" in waiting.text  # the teacher has shown no image
    assert post(client, "lead", {"code": code, "key": key, "view": view(handle)}).json()["version"] >= 1
    analysis = post(client, "analysis", student, STUDENT)
    assert analysis.status_code == 200 and analysis.headers["cache-control"] == "no-store"
    sent = analysis.json()
    followers = sent["handle"]
    assert followers != handle and server.pages.key(followers) == server.pages.key(handle)
    ex = server.store.peek(server.pages.key(handle))
    assert sent["grid"] == list(ex.grid) and sent["depth"] == ex.depth  # the page's own analysis, as it draws it
    assert sent["layer"] == 2 and sent["token_rows"]["layer"] == 1  # at the teacher's layer (0-based in the rows)
    top = list(ex.probabilities.items())[:3]  # the teacher's "Top predictions", as the analysis computed them
    assert top and sent["teacher"] == {
        "model": "The teacher's image is analysed by the bundled model.",
        "predictions": "Its top predictions: " + ", ".join(f"{n} ({100 * p:.0f} %)" for n, p in top) + ".",
    }
    rows = client.post(ROUTE, json={"handle": followers, "layer": 2, "band": 0}, headers={"X-Forwarded-For": STUDENT})
    assert rows.status_code == 200
    assert zlib.decompress(rows.content) == zlib.decompress(page_maps.layer_rows(ex, 1, 0)["deflated"])
    # the class ends: its handle names nothing any more, and the teacher's own still does
    assert post(client, "command", {"code": code, "key": key, "command": "end"}).json() == {"ended": True}
    gone = client.post(ROUTE, json={"handle": followers, "layer": 2, "band": 0}, headers={"X-Forwarded-For": STUDENT})
    assert gone.status_code == 404 and server.pages.key(handle) is not None
    assert post(client, "analysis", student, STUDENT).status_code == 404


def test_a_class_asking_the_teachers_analysis_at_once_has_it_built_once_and_dropped_at_the_end(served, monkeypatch):
    """Thirty pages ask when the teacher's image changes: each had built it (bench/class_mode.py)."""
    server, handle, _ = served
    answers, built, build = ClassAnswers(server, Bell()), [], page_maps.page_maps

    def slow_page_maps(*args, **kwargs):
        built.append(args)
        time.sleep(0.05)  # long enough for every other page to ask meanwhile
        return build(*args, **kwargs)

    monkeypatch.setattr(class_route.page_maps, "page_maps", slow_page_maps)
    code, key = server.classes.start("192.0.2.1")
    server.classes.lead(code, key, view(handle), "192.0.2.1")
    asked = {"code": code, "key": key}
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda _: answers.analysis(asked, "192.0.2.1"), range(8)))
    assert len(built) == 1 and len(set(replies)) == 1 and json.loads(replies[0])["handle"] != handle
    assert not answers.building  # nothing held once built
    answers.command({**asked, "command": "end"}, "192.0.2.1")
    assert not answers.analyses  # the ended class's copy is dropped, not kept until 16 newer ones come


def test_a_students_forged_teacher_action_is_refused_in_words(served):
    _, handle, client = served
    started = post(client, "start", {}).json()
    code, key = started["code"], started["key"]
    assert started["join"] == f"/?class={code}"  # no address of the page's: the join address is relative
    token = post(client, "join", {"code": code}, STUDENT).json()["token"]
    post(client, "lead", {"code": code, "key": key, "view": view(handle, 3)})
    for action, body in (
        ("lead", {"code": code, "key": token, "view": view(handle, 5)}),
        ("command", {"code": code, "key": token, "command": "freeze"}),
        ("command", {"code": code, "key": token, "command": "end"}),
        ("lead", {"code": code, "token": token, "view": view(handle, 5)}),
    ):
        refused = post(client, action, body, STUDENT)
        assert refused.status_code == 403 and refused.text == "Only the class's teacher can do this."
        assert refused.headers["content-type"].startswith("text/plain")
    ticket = post(client, "ticket", {"code": code, "token": token}, STUDENT).json()["ticket"]
    state = first_state(client, ticket)
    assert state["view"]["layer"] == 3 and not state["frozen"] and state["role"] == "student"
    assert post(client, "nonsense", {}).status_code == 404
    post(client, "command", {"code": code, "key": key, "command": "end"})


def test_the_teachers_more_view_and_lesson_are_read_once_and_every_follower_gets_their_bytes(served):
    """The teacher's "More views" picture and lesson picture (the files the server wrote for the
    teacher's page) are read once when the teacher's view names them; a follower gets the same bytes
    from the class, and runs nothing. A path that is no picture the server drew is refused, and the
    class's end forgets it."""
    from ui.outputs import saved

    _, handle, client = served
    started = post(client, "start", {}).json()
    code, key = started["code"], started["key"]
    token = post(client, "join", {"code": code}, STUDENT).json()["token"]
    student = {"code": code, "token": token}
    assert post(client, "more", student, STUDENT).status_code == 404  # no More view open
    path = saved(Image.new("RGB", (40, 30), (10, 200, 30)), "view.webp")
    more = {"view": "rollout", "alt": "Attention rollout", "picture": f"/gradio_api/file={path}"}
    assert post(client, "lead", {"code": code, "key": key, "view": {**view(handle), "more": more}}).status_code == 200
    ticket = post(client, "ticket", student, STUDENT).json()["ticket"]
    pushed = first_state(client, ticket)["view"]["more"]
    assert pushed["view"] == "rollout" and pushed["alt"] == "Attention rollout" and str(path) not in pushed["picture"]
    sent = post(client, "more", student, STUDENT)
    assert sent.status_code == 200 and sent.headers["content-type"] == "image/webp"
    assert sent.content == open(path, "rb").read()
    assert post(client, "lesson", student, STUDENT).status_code == 404  # no lesson open
    drawn = saved(Image.new("RGB", (20, 20), (200, 0, 0)), "lesson-token-norms-layer2.png")
    lesson = {"view": "Artefacts and registers", "alt": "Token norms", "picture": f"/gradio_api/file={drawn}"}
    led = {**view(handle), "more": more, "lesson": lesson}
    assert post(client, "lead", {"code": code, "key": key, "view": led}).status_code == 200
    shown = post(client, "lesson", student, STUDENT)
    assert shown.headers["content-type"] == "image/png" and shown.content == open(drawn, "rb").read()
    assert post(client, "more", student, STUDENT).content == sent.content  # kept: not read again
    no_picture = {**led, "lesson": {**lesson, "picture": ""}}  # a lesson whose button was not pressed yet
    assert post(client, "lead", {"code": code, "key": key, "view": no_picture}).status_code == 200
    assert post(client, "lesson", student, STUDENT).status_code == 404
    for bad in ("/etc/passwd", f"{path}/../../../../etc/passwd", "/tmp/vit-explorer/" + "0" * 32 + "/view.webp"):
        refused = post(
            client, "lead", {"code": code, "key": key, "view": {**view(handle), "more": {**more, "picture": bad}}}
        )
        assert refused.status_code == 400 and "not one this server drew" in refused.text
    forged = post(client, "lead", {"code": code, "token": token, "view": {**view(handle), "more": more}}, STUDENT)
    assert forged.status_code == 403
    post(client, "command", {"code": code, "key": key, "command": "end"})
    assert post(client, "more", student, STUDENT).status_code == 404


def test_a_lessons_words_reach_every_follower_as_sent_and_a_view_too_large_is_refused(served):
    """Lesson 3's result (no one picture): the teacher's choices, notes and top-5 as words are pushed to a
    follower as the teacher's page sent them (a follower presses nothing: no pass of its own); the view
    that carries them stays within a request's bytes (ui.limits.MAX_EVENT_BYTES), a larger one refused."""
    _, handle, client = served
    started = post(client, "start", {}).json()
    code, key = started["code"], started["key"]
    token = post(client, "join", {"code": code}, STUDENT).json()["token"]
    said = [["Model (with classes)", "CIFAR-10 nano (bundled)"], ["Heads off", "1.1, 2.2"]]
    top5 = {"caption": "Top-5 with these heads off", "rows": [["cat", "91%"], ["<b>dog</b>", "4%"]]}
    lesson = {"view": "Which heads matter", "alt": "", "picture": "", "said": said, "tables": [top5]}
    assert (
        post(client, "lead", {"code": code, "key": key, "view": {**view(handle), "lesson": lesson}}).status_code == 200
    )
    ticket = post(client, "ticket", {"code": code, "token": token}, STUDENT).json()["ticket"]
    assert first_state(client, ticket)["view"]["lesson"] == lesson
    assert post(client, "lesson", {"code": code, "token": token}, STUDENT).status_code == 404  # words, no picture
    ranking = {"caption": "Ranking", "rows": [["z" * 200] * 4] * 12}  # within the view's bounds, but not 8 KiB
    too_large = {**view(handle), "lesson": {**lesson, "said": [["Note", "x" * 600]] * 8, "tables": [top5, ranking]}}
    refused = post(client, "lead", {"code": code, "key": key, "view": too_large})
    assert refused.status_code == 413
    post(client, "command", {"code": code, "key": key, "command": "end"})


def test_lesson_4s_word_maps_are_read_once_and_every_follower_gets_each_maps_bytes(served):
    """Lesson 4's word maps (a gallery, one picture a word): each map the teacher's page names is read once
    when the view names it, pushed as an id with the teacher's alt text, and a follower reads its bytes by
    its index (`"map"`); a map the teacher no longer shows, an index of another kind, a file the server did
    not draw or a student's lead are refused, and the class's end forgets them."""
    import os

    from ui.outputs import saved

    _, handle, client = served
    started = post(client, "start", {}).json()
    code, key = started["code"], started["key"]
    student = {"code": code, "token": post(client, "join", {"code": code}, STUDENT).json()["token"]}
    paths = [saved(Image.new("RGB", (24, 30), (40 * i, 200, 30)), "view.webp") for i in range(3)]
    maps = [{"alt": f"Relevance of each patch for the words 'a cat {i}'", "picture": f"/gradio_api/file={p}"}
            for i, p in enumerate(paths)]  # fmt: skip
    lesson = {"view": "One picture, many words", "alt": "", "picture": "", "said": [], "tables": [], "maps": maps}
    led = {"code": code, "key": key, "view": {**view(handle), "lesson": lesson}}
    assert post(client, "lead", led).status_code == 200
    pushed = first_state(client, post(client, "ticket", student, STUDENT).json()["ticket"])["view"]["lesson"]["maps"]
    assert [m["alt"] for m in pushed] == [m["alt"] for m in maps]
    assert len({m["picture"] for m in pushed}) == 3 and not any("vit-explorer" in m["picture"] for m in pushed)
    drawn = [open(path, "rb").read() for path in paths]
    for path in paths:
        os.remove(path)  # read once: the class has the bytes, and the same view leads again without a read
    assert post(client, "lead", led).status_code == 200
    for index, data in enumerate(drawn):
        sent = post(client, "lesson", {**student, "map": index}, STUDENT)
        assert sent.status_code == 200 and sent.headers["content-type"] == "image/webp" and sent.content == data
    assert post(client, "lesson", {**student, "map": 3}, STUDENT).status_code == 404  # three maps shown
    assert post(client, "lesson", student, STUDENT).status_code == 404  # the lesson's own picture: none
    for index in (-1, 8, "1", True, None, 1.0):
        refused = post(client, "lesson", {**student, "map": index}, STUDENT)
        assert refused.status_code == 400 and refused.text == "The teacher's lesson has no such word map.", index
    elsewhere = {**lesson, "maps": [{**maps[0], "picture": "/etc/passwd"}]}
    refused = post(client, "lead", {**led, "view": {**view(handle), "lesson": elsewhere}})
    assert refused.status_code == 400 and "not one this server drew" in refused.text
    fewer = saved(Image.new("RGB", (24, 30), (0, 0, 250)), "view.webp")
    one = {**lesson, "maps": [{**maps[0], "picture": f"/gradio_api/file={fewer}"}]}
    forged = post(client, "lead", {**student, "view": {**view(handle), "lesson": one}}, STUDENT)
    assert forged.status_code == 403
    assert post(client, "lead", {**led, "view": {**view(handle), "lesson": one}}).status_code == 200
    assert post(client, "lesson", {**student, "map": 0}, STUDENT).content == open(fewer, "rb").read()
    assert post(client, "lesson", {**student, "map": 1}, STUDENT).status_code == 404  # no longer shown
    post(client, "command", {"code": code, "key": key, "command": "end"})
    assert post(client, "lesson", {**student, "map": 0}, STUDENT).status_code == 404


def test_the_class_pictures_held_are_bounded_in_count_and_bytes_and_a_class_that_ends_frees_its_own(tmp_path):
    """ClassPictures keeps at most its count and its bytes of pictures in all, the oldest dropped first, and
    forgets a class's every picture (its More view, lesson and word maps) when it ends, no other class's."""
    from ui.outputs import saved

    pictures = class_route.ClassPictures(kept=4, most_bytes=3 * 1000)
    noise = np.random.default_rng(0).integers(0, 256, (20, 20, 3), np.uint8)
    path = f"/gradio_api/file={saved(Image.fromarray(noise), 'view.png')}"
    size = len(open(path.removeprefix("/gradio_api/file="), "rb").read())
    assert 1000 < size < 1500  # two fit the bytes, three do not
    ids = {name: pictures.kept(name, path) for name in ("AAAAAA/more", "AAAAAA/map/0", "BBBBBB/map/0")}
    with pytest.raises(class_route.ClassError):
        pictures.read("AAAAAA/more", ids["AAAAAA/more"])  # the oldest, dropped for the bytes
    assert (
        pictures.read("AAAAAA/map/0", ids["AAAAAA/map/0"])[0] == pictures.read("BBBBBB/map/0", ids["BBBBBB/map/0"])[0]
    )
    assert pictures.bytes == 2 * size
    pictures.forget("AAAAAA")
    assert list(pictures.held) == ["BBBBBB/map/0"] and pictures.bytes == size
    small = class_route.ClassPictures(kept=2)
    for name in ("A/map/0", "A/map/1", "A/map/2"):
        small.kept(name, path)
    assert list(small.held) == ["A/map/1", "A/map/2"]  # the count, the oldest dropped


def first_state(client, ticket: str) -> dict:
    """The first "state" event of the stream a ticket opens (the stream ends after `lasting_s`)."""
    reply = client.get(f"{EVENTS_ROUTE}?ticket={ticket}")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
    event = reply.text.split("\n\n")[0].splitlines()
    assert event[0] == "event: state"
    return json.loads(event[1].removeprefix("data: "))


def test_a_stream_opens_once_by_its_ticket(served):
    _, _, client = served
    started = post(client, "start", {}).json()
    code, key = started["code"], started["key"]
    ticket = post(client, "ticket", {"code": code, "key": key}).json()["ticket"]
    assert first_state(client, ticket)["role"] == "teacher"
    again = client.get(f"{EVENTS_ROUTE}?ticket={ticket}")
    assert again.status_code == 403 and "ticket is not valid" in again.text
    post(client, "command", {"code": code, "key": key, "command": "end"})


def test_every_change_is_pushed_to_a_waiting_page_and_the_end_too(served):
    server, handle, _ = served
    classes, bell = server.classes, Bell()
    code, key = classes.start("192.0.2.5")
    token, _ = classes.join(code, "192.0.2.5")

    async def follow() -> list[str]:
        opened = classes.open_stream(classes.ticket(code, None, token, "192.0.2.5"))
        stream = class_events(classes, bell, *opened, heartbeat_s=5.0, lasting_s=30.0)
        events = [await anext(stream)]
        classes.lead(code, key, view(handle, 4), "192.0.2.5")
        bell.ring(code)
        events.append(await asyncio.wait_for(anext(stream), 1.0))  # pushed at once, not at the heartbeat
        classes.end(code, key, "192.0.2.5")
        bell.ring(code)
        events.append(await asyncio.wait_for(anext(stream), 1.0))
        return events

    first, changed, ended = asyncio.run(follow())
    assert first.startswith("event: state") and json.loads(first.split("data: ")[1])["view"] is None
    assert json.loads(changed.split("data: ")[1])["view"]["layer"] == 4
    assert ended.startswith("event: end") and "The teacher ended the class." in ended


def test_the_join_address_and_its_qr_code():
    assert join_address("https://x.hf.space/?__theme=dark#top", "ABCDEF") == "https://x.hf.space/?class=ABCDEF"
    assert join_address("javascript:alert(1)", "ABCDEF") == "/?class=ABCDEF"
    rows = qr_rows("http://192.168.1.20:7860/?class=ABCDEF")
    assert len(rows) == len(rows[0]) >= 21 and set("".join(rows)) == {"0", "1"}
    assert rows[0][:7] == "1111111"  # a finder pattern in the corner: a QR code a phone reads


def test_a_teachers_page_on_127_0_0_1_gives_the_class_an_address_their_devices_can_open():
    """A teacher opens the app on their laptop at 127.0.0.1, which on a student's phone is the phone:
    served on every interface, the join address names the laptop's address on the network; served on
    this computer only (app.py's default), the page is told so in words, with the command that fixes it."""
    lan = lambda: "192.168.1.20"  # noqa: E731
    assert room_address("http://127.0.0.1:7860/", "0.0.0.0", lan) == ("http://192.168.1.20:7860/", "")
    assert room_address("http://localhost/?x=1", "::", lan) == ("http://192.168.1.20/?x=1", "")
    assert room_address("http://127.0.0.1:7860/", "127.0.0.1", lan) == ("http://127.0.0.1:7860/", ONLY_THIS_COMPUTER)
    assert "--host 0.0.0.0" in ONLY_THIS_COMPUTER
    assert room_address("http://127.0.0.1:7860/", "0.0.0.0", lambda: None) == ("http://127.0.0.1:7860/", NO_NETWORK)
    assert room_address("https://x.hf.space/", "0.0.0.0", lan) == ("https://x.hf.space/", "")  # reachable already
    assert room_address(None, "0.0.0.0", lan) == ("", "")
    found = lan_address()  # this machine's, whatever its network: never a loopback one
    assert found is None or not found.startswith("127.")


def test_a_class_action_with_no_place_is_told_to_try_again_in_its_own_words(served):
    server, _, _ = served
    uploads = UploadBudget(lambda: None, 10**6)
    full = RouteGate(in_flight=0, wait_s=0.05)  # every place taken
    app = RequestLimits(Starlette(routes=class_routes(server)), uploads=uploads, gate=full)
    with TestClient(app) as client:
        refused = post(client, "join", {"code": "AAAAAA"})
    assert refused.status_code == 429 and refused.text == CLASS_BUSY


def test_class_actions_take_places_of_the_gate_and_the_stream_none():
    assert gated(ROUTE) and gated(f"{CLASS_ROUTE}/join") and gated(f"{CLASS_ROUTE}/analysis")
    assert not gated("/gradio_api/queue/join") and not gated("/classes")


def test_a_server_with_no_class_shows_no_start_a_class(tiny_checkpoint, tmp_path):
    """`--max-classes 0`: the page has no Start a class to click (every start would be refused)."""
    from ui.app import build_demo
    from ui.classroom import ClassLimits
    from ui.settings import ServerSettings

    def start_shown(settings: ServerSettings) -> bool:
        demo = build_demo(ModelCatalog(tiny_checkpoint, tmp_path / "runs"), settings)
        (start,) = [block for block in demo.blocks.values() if getattr(block, "elem_id", None) == "class-start"]
        return start.visible

    assert start_shown(ServerSettings()) is True
    assert start_shown(ServerSettings(classes=ClassLimits(classes=0))) is False
