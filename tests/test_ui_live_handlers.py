"""The Live tab's handlers called directly (no server): a frame's pictures and readout, the busy
message, skipped frames, refused controls in the status line, and the query the controls name."""

import base64
import io
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
from markdown_helpers import HOSTILE_NAMES, hostile_checkpoint, planted, read, rendered, shows_as_written, unescaped
from PIL import Image

from explorer.catalog import BUNDLED, ModelCatalog
from ui import live_handlers as h
from ui.common import Server, visitor_of
from ui.streams import StreamSlots

CONTROLS = h.LiveControls(BUNDLED, 6, "cls", 1, 1, "inferno", "layer")  # model, layer, token, row, column, map, scale


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory) -> Server:
    """The server's context the tab's handlers are bound to."""
    return Server(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs")))


CAMERA = gr.Image()  # the webcam component, whose frame the handler tells the session to forget


def webcam_frame() -> dict:
    """What Gradio's webcam stream sends: the frame as a JPEG data: URL."""
    buffer = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (48, 64, 3), np.uint8)).save(buffer, "JPEG")
    return {"url": "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode(), "is_stream": True}


def visitor(name: str) -> SimpleNamespace:
    return SimpleNamespace(session_hash=name)


def test_a_frame_gives_the_numbers_of_its_pictures_and_a_readout(tab):
    server = tab
    slots = StreamSlots()
    out = h.live_frame(server, slots, CAMERA, webcam_frame(), CONTROLS, visitor("a"))
    assert set(out) == {"pictures", "status"}
    numbers = out["pictures"]  # drawn by the page (ui/js/live.js, LiveMaps); the input inline, no file
    assert numbers["layer"] == 6 and numbers["query"] is None and numbers["style"]["cmap"] == "inferno"
    assert set(numbers["input"]) == {"rgb", "width", "height", "scale"} and "rollout" in numbers
    assert "first frame shown" in out["status"] and "Top classes:" in out["status"]
    assert "drawn in your browser" in out["status"]
    again = h.live_frame(server, slots, CAMERA, webcam_frame(), CONTROLS, visitor("a"))
    assert "frames/s** shown" in again["status"] and "your turn ends in" in again["status"]


def test_a_second_visitor_is_told_to_wait_and_a_frame_in_flight_is_skipped(tab, monkeypatch):
    server = tab
    monkeypatch.setattr(h, "WAIT_POLL_S", 0.0)
    slots = StreamSlots(limit=1, turn_s=100)
    assert slots.begin(visitor_of(visitor("a"))).admitted  # a's frame is being drawn
    busy = h.live_frame(server, slots, CAMERA, webcam_frame(), CONTROLS, visitor("b"))
    assert set(busy) == {"status"}
    assert busy["status"].startswith("**Live view busy, try again in 100 s**")
    skipped = h.live_frame(server, slots, CAMERA, webcam_frame(), CONTROLS, visitor("a"))
    assert skipped == {}  # a's next frame arrived too early: dropped, not queued (nothing changes)


@pytest.mark.parametrize(
    ("controls", "message"),
    [
        ((BUNDLED, 7, "cls", 1, 1, "inferno", "layer"), "layer must be a whole number from 1 to 6, got 7"),
        ((BUNDLED, 6, "patch", 9, 1, "inferno", "layer"), "row must be a whole number from 1 to 8, got 9"),
        ((BUNDLED, 6, "reg1", 1, 1, "inferno", "layer"), "unknown query token"),
        ((BUNDLED, 6, "cls", 1, 1, "nope", "layer"), "unknown colour map"),
        (("checkpoint:/etc/passwd", 6, "cls", 1, 1, "inferno", "layer"), "unknown checkpoint"),
    ],
)
def test_bad_controls_are_named_in_the_status_line_and_free_the_slot(tab, controls, message):
    server = tab
    slots = StreamSlots()
    out = h.live_frame(server, slots, CAMERA, webcam_frame(), h.LiveControls(*controls), visitor("a"))
    assert set(out) == {"status"} and message in unescaped(out["status"])
    assert slots.begin(visitor_of(visitor("a"))).admitted  # the failed frame did not keep the slot busy


def test_a_frame_that_is_not_an_image_is_named_in_the_status_line(tab):
    server = tab
    out = h.live_frame(server, StreamSlots(), CAMERA, {"url": "/etc/passwd"}, CONTROLS, visitor("a"))
    assert "Cannot draw this frame" in out["status"] and "data:image" in unescaped(out["status"])


def test_the_query_controls_name_a_token_or_a_patch(tab):
    catalog = tab.catalog
    loaded = catalog.get(BUNDLED)
    assert h.live_query(loaded, "cls", 3, 4) is None
    assert h.live_query(loaded, "patch", 3, 4) == (2, 3)  # 1-based on the page, 0-based for tensors
    with pytest.raises(gr.Error, match="column must be a whole number from 1 to 8, got 0"):
        h.live_query(loaded, "patch", 3, 0)


def test_the_row_and_column_sliders_show_only_for_a_patch_query():
    """Beside the CLS query, sliders at row 4, column 4 named a patch the maps did not show."""
    assert [s.visible for s in h.patch_sliders("patch").values()] == [True, True]
    assert [s.visible for s in h.patch_sliders("cls").values()] == [False, False]


def test_the_status_shows_a_checkpoints_class_names_as_written(tab, tmp_path):
    """Issue 56: a checkpoint's class names were Markdown in the status line ("Top classes: <img …> ·
    ![p](…) · [click me](…)"), and Chromium fetched the picture from a third host."""
    frame = SimpleNamespace(predictions=dict.fromkeys(HOSTILE_NAMES, 0.1), model_ms=5.0, numbers_ms=1.0)
    status = h.status_text(frame, 12.0, 100)
    assert shows_as_written(status, *(f"{name} 10%" for name in HOSTILE_NAMES)), status
    key = tab.catalog.register(hostile_checkpoint(tmp_path / "hostile.safetensors"), "*")
    drawn = h.live_frame(tab, StreamSlots(), CAMERA, webcam_frame(), CONTROLS._replace(model_key=key), visitor("h"))
    shown = read(rendered(drawn["status"]))
    assert not planted(drawn["status"]) and sum(name in shown for name in HOSTILE_NAMES) == 3  # the top 3


def test_a_refusal_in_the_status_shows_what_was_sent_as_written(tab):
    hostile = "![x](http://203.0.113.9/p.png)"
    out = h.live_frame(tab, StreamSlots(), CAMERA, webcam_frame(), CONTROLS._replace(model_key=hostile), visitor("k"))
    assert shows_as_written(out["status"], f"unknown model '{hostile}'"), out["status"]
