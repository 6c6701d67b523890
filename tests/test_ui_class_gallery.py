"""Class mode's gallery (ui/class_gallery.py, explorer/gallery.py; issue 59, "Show me yours"): the
teacher asks, students send, the teacher approves, shows (one batched pass), hides, spotlights and
exports; a student never moderates nor sees an unapproved picture, a flood is refused within its
budget, a second class sees nothing of the first, and the pictures go when the class ends."""

import io
import re
import uuid

import numpy as np
import pytest
from PIL import Image
from starlette.applications import Starlette
from starlette.testclient import TestClient

from explorer import gallery
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.explain import explain
from ui import zerogpu
from ui.class_gallery import Gallery, GalleryLimits, Picture, clean_question
from ui.class_route import class_routes
from ui.classroom import ClassError, Classroom
from ui.common import Server
from ui.gate import CLASS_ROUTE, RouteGate
from ui.limits import RequestLimits
from ui.outputs import upload_folder
from ui.rows_route import rows_route
from ui.uploads import UploadBudget


@pytest.fixture(scope="module")
def served(tiny_checkpoint, tmp_path_factory):
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs")))
    routes = [rows_route(server), *class_routes(server, trusted_hops=1, heartbeat_s=0.05, lasting_s=0.3)]
    uploads = UploadBudget(lambda: tmp_path_factory.mktemp("uploads"), 10**6)
    app = RequestLimits(Starlette(routes=routes), uploads=uploads, trusted_hops=1, gate=RouteGate())
    with TestClient(app) as client:
        yield server, client


def post(client, body: dict, network: str, action: str = "gallery"):
    return client.post(f"{CLASS_ROUTE}/{action}", json=body, headers={"X-Forwarded-For": network})


def upload(seed: int, side: int = 64) -> str:
    """A picture in Gradio's upload folder, as its upload route leaves one."""
    folder = upload_folder() / f"gallery-test-{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    path = folder / "mine.png"
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (side, side, 3), np.uint8)).save(path)
    return str(path)


def a_class(client, network: str, students: int = 1) -> tuple[dict, list[dict]]:
    started = post(client, {"address": "http://school/"}, network, "start").json()
    teacher = {"code": started["code"], "key": started["key"]}
    joined = [post(client, {"code": started["code"]}, network, "join").json() for _ in range(students)]
    return teacher, [{"code": started["code"], "token": j["token"]} for j in joined]


def state(server: Server, code: str, token: str | None = None) -> dict:
    return server.classes.snapshot(code, token)


def test_a_whole_gallery_ask_send_approve_show_hide_spotlight_export_end(served):
    server, client = served
    net = "198.51.100.21"
    teacher, (ada, bob) = a_class(client, net, 2)
    code = teacher["code"]
    asked = post(client, teacher | {"do": "ask", "question": "Find <b>the</b> background"}, net)
    assert asked.json() == {"question": "Find <b>the</b> background"}  # text, kept as typed: pages show it as text
    pushed = state(server, code, ada["token"])["gallery"]
    assert pushed.pop("serial") and pushed == {
        "question": "Find <b>the</b> background", "open": True, "drawn": 0, "answered": 0, "sent": False,
    }  # fmt: skip
    assert post(client, ada | {"do": "send", "path": upload(1)}, net).json() == {"sent": True}
    assert post(client, bob | {"do": "send", "path": upload(2)}, net).status_code == 200
    seen = state(server, code)["gallery"]
    assert seen["answered"] == 2 and [p["approved"] for p in seen["pictures"]] == [False, False]
    assert "name" not in seen["pictures"][0]  # anonymous unless the teacher chooses names
    first, second = (p["id"] for p in seen["pictures"])
    picture = post(client, teacher | {"do": "picture", "id": first}, net)
    assert picture.headers["content-type"] == "image/jpeg" and Image.open(io.BytesIO(picture.content)).size == (64, 64)
    refused = post(client, teacher | {"do": "show"}, net)
    assert refused.status_code == 409 and "Approve a picture first" in refused.text
    for pid in (first, second):
        assert post(client, teacher | {"do": "approve", "id": pid}, net).status_code == 200
    assert post(client, teacher | {"do": "show", "head": 1}, net).json() == {"drawn": 1}
    tiles = post(client, ada | {"do": "tiles"}, net).json()
    assert [t["id"] for t in tiles["tiles"]] == [first, second] and "name" not in tiles["tiles"][0]
    assert all(re.fullmatch(r".+ \(\d+ %\)", t["caption"]) for t in tiles["tiles"])  # its top prediction
    depth = server.catalog.get(BUNDLED).model.config.depth  # no image led yet: the last layer
    assert (
        tiles["title"]
        == f"Where the CLS token looks in layer {depth}, head 1, over the patches (its attention to CLS is left out)"
    )
    assert post(client, teacher | {"do": "hide", "id": second}, net).status_code == 200
    assert state(server, code, bob["token"])["gallery"]["drawn"] == 2  # every page asks for its tiles again
    assert [t["id"] for t in post(client, bob | {"do": "tiles"}, net).json()["tiles"]] == [first]
    exported = post(client, teacher | {"do": "export"}, net)
    assert exported.headers["content-type"] == "image/png"
    assert exported.headers["content-disposition"] == 'attachment; filename="class-gallery.png"'
    assert Image.open(io.BytesIO(exported.content)).width > 192
    version = post(client, teacher | {"do": "spotlight", "id": first}, net).json()["version"]
    view = state(server, code, ada["token"])["view"]
    assert version >= 1 and view["query"] is None and server.pages.key(view["handle"]) is not None
    explore = {"cmap": "inferno", "opacity": 0.6, "upsampling": "nearest", "display": "overlay", "scale": "layer"}
    assert view["style"] == explore  # the teacher had led no image: Explore's defaults
    followed = post(client, ada, net, "analysis").json()
    assert followed["handle"] == view["handle"]  # the class's view moved to that picture's analysis
    files = list(server.classes.classes[code].gallery.files)
    assert files and all(f.is_file() for f in files)
    post(client, teacher | {"command": "end"}, net, "command")
    assert not any(f.exists() for f in files)  # the class's pictures are deleted with it, at once


def test_a_student_never_moderates_nor_sees_an_unapproved_picture_and_a_forged_key_is_refused(served):
    server, client = served
    net = "198.51.100.22"
    teacher, (ada, bob) = a_class(client, net, 2)
    post(client, teacher | {"do": "ask", "question": "Show me a dog"}, net)
    post(client, ada | {"do": "send", "path": upload(3)}, net)
    pid = state(server, teacher["code"])["gallery"]["pictures"][0]["id"]
    for do in ("approve", "hide", "spotlight", "picture", "export", "show", "close", "ask"):
        refused = post(client, bob | {"do": do, "id": pid, "question": "mine"}, net)
        assert (refused.status_code, refused.text) == (403, "Only the class's teacher can do this."), do
    forged = post(client, {"code": teacher["code"], "key": ada["token"], "do": "approve", "id": pid}, net)
    assert (forged.status_code, forged.text) == (403, "Only the class's teacher can do this.")
    assert post(client, bob | {"do": "tiles"}, net).json()["tiles"] == []  # nothing shown yet
    assert "pictures" not in state(server, teacher["code"], bob["token"])["gallery"]
    teachers = post(client, teacher | {"do": "send", "path": upload(4)}, net)
    assert teachers.status_code == 403 and "students send" in teachers.text


def test_a_flood_is_refused_within_its_budget_and_a_bad_file_in_words(served):
    server, client = served
    net = "198.51.100.23"
    teacher, (ada,) = a_class(client, net)
    post(client, teacher | {"do": "ask", "question": "Anything"}, net)
    for seed in range(GalleryLimits().sends):
        assert post(client, ada | {"do": "send", "path": upload(seed)}, net).status_code == 200
    flood = post(client, ada | {"do": "send", "path": upload(9)}, net)
    assert (
        flood.status_code == 429 and flood.text == "You have sent 5 pictures to this question, the most a student may."
    )
    assert state(server, teacher["code"])["gallery"]["answered"] == 1  # one picture a student, the last
    outside = post(client, ada | {"do": "send", "path": "/etc/passwd"}, net)
    assert (
        outside.status_code == 400 and outside.text == "This file is not an upload of this app: upload the file again."
    )


def test_a_second_class_sees_nothing_of_the_first(served):
    server, client = served
    net = "198.51.100.24"
    first, (ada,) = a_class(client, net)
    second, (bob,) = a_class(client, net)
    post(client, first | {"do": "ask", "question": "First class"}, net)
    post(client, ada | {"do": "send", "path": upload(5)}, net)
    pid = state(server, first["code"])["gallery"]["pictures"][0]["id"]
    assert "gallery" not in state(server, second["code"])
    other = post(client, second | {"do": "picture", "id": pid}, net)
    assert other.status_code == 409 and other.text == "The teacher has not opened a gallery yet."
    post(client, second | {"do": "ask", "question": "Second class"}, net)
    other = post(client, second | {"do": "picture", "id": pid}, net)
    assert (other.status_code, other.text) == (404, "There is no such picture in the gallery.")
    crossed = post(client, {"code": second["code"], "token": ada["token"], "do": "tiles"}, net)
    assert crossed.status_code == 403  # a student of the first class is no one in the second


def test_the_registry_pushes_the_count_and_deletes_the_pictures_when_the_class_ends():
    classes = Classroom()
    code, key = classes.start("192.0.2.1")
    token, _ = classes.join(code, "192.0.2.1")
    before = classes.snapshot(code, None)["version"]
    g = Gallery("Where is the cat?")
    classes.on_class(code, key, None, "192.0.2.1", lambda klass, who: setattr(klass, "gallery", g))
    g.pictures[token] = Picture("p1", "Ada", b"jpeg")
    pushed = classes.snapshot(code, None)
    assert pushed["version"] == before + 1 and pushed["gallery"]["answered"] == 1
    assert classes.on_class(code, None, token, "192.0.2.1", lambda klass, who: who, changes=False) == token
    with pytest.raises(ClassError):
        classes.on_class(code, "forged", None, "192.0.2.1", lambda klass, who: who)
    classes.end(code, key, "192.0.2.1")
    assert g.pictures == {} and code not in classes.classes


def test_a_class_left_two_hours_takes_its_pictures_with_it():
    now = [0.0]
    classes = Classroom(clock=lambda: now[0])
    code, key = classes.start("192.0.2.2")
    token, _ = classes.join(code, "192.0.2.2")
    g = Gallery("Where is the dog?")
    classes.on_class(code, key, None, "192.0.2.2", lambda klass, who: setattr(klass, "gallery", g))
    g.pictures[token] = Picture("p1", "Ada", b"jpeg")
    now[0] += classes.limits.idle_s + 1  # no teacher's page, no teacher's action
    with pytest.raises(ClassError):
        classes.snapshot(code, token)
    assert g.pictures == {}


def test_a_question_is_printable_text_bounded_and_never_empty():
    assert clean_question("  Find\u200b a\n\tpicture <i>here</i> ") == "Find a picture <i>here</i>"
    assert len(clean_question("x" * 1000)) == 200
    for bad in ("", "   ", None, 3):
        with pytest.raises(ClassError):
            clean_question(bad)


def test_one_batched_pass_gives_every_pictures_view_as_one_by_one(tiny_checkpoint, tmp_path):
    loaded = ModelCatalog(tiny_checkpoint, tmp_path).get(BUNDLED)
    images = [Image.fromarray(np.random.default_rng(s).integers(0, 256, (40, 50, 3), np.uint8)) for s in (6, 7)]
    tensor, pixels = gallery.batch(loaded, [gallery.kept_picture(i) for i in images])
    maps, logits = zerogpu.GALLERY(loaded, tensor, 1, None)  # one call: the batch of two
    assert tensor.shape[0] == 2 and maps.shape[0] == 2 and logits.shape[0] == 2
    for image, amap in zip(images, maps, strict=True):  # each picture's own analysis's map, mean of the heads
        kept = Image.open(io.BytesIO(gallery.kept_picture(image)))
        ex = explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, kept)
        np.testing.assert_allclose(amap, ex.query_maps()[1].mean(axis=0), atol=1e-5)
    view = gallery.gallery_view(loaded, pixels, maps, logits, 1, None)
    assert len(view.tiles) == 2 and view.title.startswith(
        "Where the CLS token looks in layer 2, the mean of its heads, over the patches"
    )
    picture = gallery.handout("Find the cat", view)
    assert picture.width >= 2 * gallery.TILE_PX


def test_the_gallerys_title_says_which_query_it_shows_and_what_its_maps_leave_out():
    """Every picture of values says what it leaves out: the query's attention to the prefix tokens."""
    assert gallery.what_is_shown(0, None, ("cls", "reg1")).endswith("(its attention to CLS, reg1 is left out)")
    no_cls = gallery.what_is_shown(2, 4, ("reg1",))
    assert no_cls.startswith("Where the mean patch query looks in layer 3, head 5") and "reg1 is left out" in no_cls
    assert gallery.what_is_shown(0, 0, ()).endswith("over all the patches (no prefix token is left out)")
