"""The Live tab's handlers called directly (no server): a frame's pictures and readout, the busy
message, skipped frames, refused controls in the status line, and the query the controls name."""

import base64
import io
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from explorer.catalog import BUNDLED, ModelCatalog
from explorer.streams import StreamSlots
from explorer.video import VideoLimits
from ui import live_handlers as h
from ui.live import LiveView, layout

CONTROLS = (BUNDLED, 6, "cls", 1, 1, "inferno", "layer")  # model, layer, query token, row, column, colour map, scale


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory) -> tuple[LiveView, ModelCatalog]:
    catalog = ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs"))
    with gr.Blocks():
        view = layout(catalog, VideoLimits())
    return view, catalog


def webcam_frame() -> dict:
    """What Gradio's webcam stream sends: the frame as a JPEG data: URL."""
    buffer = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (48, 64, 3), np.uint8)).save(buffer, "JPEG")
    return {"url": "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode(), "is_stream": True}


def visitor(name: str) -> SimpleNamespace:
    return SimpleNamespace(session_hash=name)


def test_a_frame_gives_its_pictures_inline_and_a_readout(tab):
    view, catalog = tab
    slots = StreamSlots()
    out = h.live_frame(view, catalog, slots, webcam_frame(), *CONTROLS, visitor("a"))
    assert set(out) == {view.pictures, view.status}
    page = out[view.pictures]
    for elem in ("live-input", "live-heads", "live-rollout"):
        assert f'<img id="{elem}" src="data:image/jpeg;base64,' in page  # never a file on the server
    assert "first frame shown" in out[view.status] and "Top classes:" in out[view.status]
    again = h.live_frame(view, catalog, slots, webcam_frame(), *CONTROLS, visitor("a"))
    assert "frames/s** shown" in again[view.status] and "your turn ends in" in again[view.status]


def test_a_second_visitor_is_told_to_wait_and_a_frame_in_flight_is_skipped(tab, monkeypatch):
    view, catalog = tab
    monkeypatch.setattr(h, "WAIT_POLL_S", 0.0)
    slots = StreamSlots(limit=1, turn_s=100)
    assert slots.begin(h.owner(visitor("a"))).admitted  # a's frame is being drawn
    busy = h.live_frame(view, catalog, slots, webcam_frame(), *CONTROLS, visitor("b"))
    assert set(busy) == {view.status}
    assert busy[view.status].startswith("**Live view busy, try again in 100 s**")
    skipped = h.live_frame(view, catalog, slots, webcam_frame(), *CONTROLS, visitor("a"))
    assert isinstance(skipped, type(gr.skip()))  # a's next frame arrived too early: dropped, not queued


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
    view, catalog = tab
    slots = StreamSlots()
    out = h.live_frame(view, catalog, slots, webcam_frame(), *controls, visitor("a"))
    assert set(out) == {view.status} and message in out[view.status]
    assert slots.begin(h.owner(visitor("a"))).admitted  # the failed frame did not keep the slot busy


def test_a_frame_that_is_not_an_image_is_named_in_the_status_line(tab):
    view, catalog = tab
    out = h.live_frame(view, catalog, StreamSlots(), {"url": "/etc/passwd"}, *CONTROLS, visitor("a"))
    assert "Cannot draw this frame" in out[view.status] and "data:image" in out[view.status]


def test_the_query_controls_name_a_token_or_a_patch(tab):
    _, catalog = tab
    loaded = catalog.get(BUNDLED)
    assert h.check_query(loaded, "cls", 3, 4) is None
    assert h.check_query(loaded, "patch", 3, 4) == (2, 3)  # 1-based on the page, 0-based for tensors
    with pytest.raises(gr.Error, match="column must be a whole number from 1 to 8, got 0"):
        h.check_query(loaded, "patch", 3, 0)


def test_the_row_and_column_sliders_show_only_for_a_patch_query():
    """Beside the CLS query, sliders at row 4, column 4 named a patch the maps did not show."""
    assert [s.visible for s in h.patch_sliders("patch")] == [True, True]
    assert [s.visible for s in h.patch_sliders("cls")] == [False, False]
