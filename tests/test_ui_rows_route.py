"""The rows route (ui/rows_route.py): the page's questions for a layer's rows answered with the
deflated bytes themselves, behind the app's request limits and the places of its gate, by the
handle the page was sent, with the same sentences as before (issue 58: they had come as base64 in
the JSON of Gradio's server function route)."""

import zlib

import numpy as np
import pytest
from PIL import Image
from starlette.applications import Starlette
from starlette.testclient import TestClient

from explorer import page_maps
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.explain import ExplanationKey, explain
from ui import explore_handlers as h
from ui.common import Server
from ui.gate import BUSY, ROUTE, RouteGate
from ui.limits import MAX_EVENT_BYTES, RequestLimits
from ui.rows_route import PARTS_HEADER, rows_route
from ui.uploads import UploadBudget

ATTACKER, VISITOR = "203.0.113.66", "198.51.100.2"


@pytest.fixture(scope="module")
def served(tiny_checkpoint, tmp_path_factory):
    """(the server's context with one analysis in its store, its key, the gate, a client of the
    rows route behind ui.limits.RequestLimits, one proxy in front, one place a network)."""
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs")))
    loaded = server.catalog.get(BUNDLED)
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8))
    key = ExplanationKey("random.png", BUNDLED, id(loaded.model), "crop", "random")
    server.store.get(key, lambda: explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, image))
    gate = RouteGate(per_network=1, wait_s=0.1)
    folder = tmp_path_factory.mktemp("uploads")
    uploads = UploadBudget(lambda: folder, 10**6)
    app = RequestLimits(Starlette(routes=[rows_route(server)]), uploads=uploads, trusted_hops=1, gate=gate)
    with TestClient(app) as client:  # one event loop for every request: the gate's condition lives on it
        yield server, key, gate, client


def ask(client, question: object, network: str = VISITOR):
    return client.post(ROUTE, json=question, headers={"X-Forwarded-For": network})


def test_the_rows_come_as_the_deflated_bytes_themselves(served):
    server, key, _, client = served
    ex, handle = server.store.peek(key), server.pages.handle(key)
    for band, parts in ((0, ["layer"]), (page_maps.TOKENS, ["fine", "head"])):
        reply = ask(client, {"handle": handle, "layer": 2, "band": band, "parts": parts})
        assert reply.status_code == 200 and reply.headers["content-type"] == "application/octet-stream"
        sent = page_maps.layer_rows(ex, 1, band, page_maps.known_parts(parts))
        assert zlib.decompress(reply.content) == zlib.decompress(sent["deflated"])
        in_order = ",".join(part for part in page_maps.PARTS if part in parts)
        assert reply.headers[PARTS_HEADER] == ",".join(sent["parts"]) == in_order
        assert reply.headers["cache-control"] == "no-store"  # named by a handle only its page was sent


def test_a_forged_handle_and_a_question_of_another_shape_get_sentences(served):
    server, key, _, client = served
    handle = server.pages.handle(key)
    for forged in ({"handle": handle[::-1], "layer": 2}, {"layer": 2}, ["a", "list"], "a string"):
        reply = ask(client, forged)
        assert (reply.status_code, reply.text) == (404, h.ROWS_DROPPED), forged  # as for a dropped analysis
    for body in (b"not json", b"\xff\xfe"):
        reply = client.post(ROUTE, content=body, headers={"X-Forwarded-For": VISITOR})
        assert (reply.status_code, reply.text) == (404, h.ROWS_DROPPED)
    reply = ask(client, {"handle": handle, "layer": 7})
    assert (reply.status_code, reply.text) == (400, "There is no layer 7: this model has layers 1 to 6.")
    reply = ask(client, {"handle": handle, "layer": 2, "band": 1})
    assert (reply.status_code, reply.text) == (400, "There is no band 1: this analysis sends a layer in bands 0 to 0.")
    reply = ask(client, {"handle": handle, "layer": 2, "parts": ["colour"]})
    assert reply.status_code == 400 and reply.text.startswith("The parts asked for are not layer, head")
    assert reply.headers["content-type"].startswith("text/plain")
    reply = client.post(ROUTE, content=b"x" * (MAX_EVENT_BYTES + 1), headers={"X-Forwarded-For": VISITOR})
    assert reply.status_code == 413 and "larger than this server takes" in reply.text  # before the route reads it


def test_a_network_whose_places_are_taken_is_told_to_wait_and_another_is_answered(served):
    """The route runs in the gate's places: one network (a class behind one router, or one
    attacker) never takes them all."""
    server, key, gate, client = served
    question = {"handle": server.pages.handle(key), "layer": 2}
    gate.running[ATTACKER] = 1  # its one place held, as by a reply it has not read
    try:
        refused, other = ask(client, question, ATTACKER), ask(client, question, VISITOR)
    finally:
        del gate.running[ATTACKER]
    assert (refused.status_code, refused.text) == (429, BUSY)
    assert other.status_code == 200 and gate.running == {}  # its place given back once its reply was sent
    assert ask(client, question, ATTACKER).status_code == 200  # its place free again
