"""explorer/live.py: decoding a webcam frame from its data: URL, and one frame's numbers."""

import base64
import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from page_helpers import read_rows
from PIL import Image

import vit
from explorer import canvas, page_maps, render, texts
from explorer.canvas import MapStyle
from explorer.explain import explain
from explorer.live import MAX_FRAME_PIXELS, FrameError, data_url, decode_frame, frame_numbers, live_frame, page_query
from explorer.loaded import LoadedModel
from explorer.page_maps import reply_bytes
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "cifar10"


def url_of(image: Image.Image, fmt: str = "JPEG") -> str:
    buffer = io.BytesIO()
    image.save(buffer, fmt)
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buffer.getvalue()).decode()


def png_claiming(width: int, height: int) -> bytes:
    """A one-pixel PNG whose header says it is width x height (the pixels are missing)."""
    buffer = io.BytesIO()
    Image.new("RGB", (1, 1)).save(buffer, "PNG")
    data = bytearray(buffer.getvalue())
    struct.pack_into(">II", data, 16, width, height)  # IHDR: width, height after 8 + 4 + 4 bytes
    struct.pack_into(">I", data, 29, zlib.crc32(bytes(data[12:29])))
    return bytes(data)


@pytest.fixture(scope="module")
def tiny() -> LoadedModel:
    model = vit.create_model("vit_cifar_nano").eval()
    return LoadedModel("bundled", "tiny", model, vit.ModelMeta(list(CIFAR10_CLASSES), CIFAR10, {}))


def test_a_jpeg_frame_decodes_to_rgb_and_round_trips():
    image = Image.fromarray(np.tile(np.arange(0, 256, 4, dtype=np.uint8)[None, :, None], (48, 1, 3)))
    decoded = decode_frame(url_of(image, "PNG"))
    assert decoded.mode == "RGB" and decoded.size == (64, 48)
    assert np.array_equal(np.asarray(decoded), np.asarray(image))
    again = decode_frame(data_url(decoded))  # the JPEG a browser would send
    assert again.size == (64, 48) and np.abs(np.asarray(again, int) - np.asarray(image, int)).max() <= 8


def test_a_huge_frame_is_refused_from_its_header_before_decoding():
    url = "data:image/png;base64," + base64.b64encode(png_claiming(4000, 3000)).decode()
    with pytest.raises(FrameError, match=f"4000 × 3000 px; at most {MAX_FRAME_PIXELS:,}"):
        decode_frame(url)  # had it decoded, the missing pixels would be "truncated"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (None, "data:image"),
        ("/etc/passwd", "data:image"),
        ("data:text/html;base64,PGgxPg==", "jpeg, png or webp"),
        ("data:image/jpeg;base64,not base64!", "not a JPEG"),
        ("data:image/jpeg;base64," + base64.b64encode(b"GIF89a....").decode(), "not a JPEG"),
        ("data:image/png;base64," + base64.b64encode(png_claiming(8, 8)).decode(), "truncated or corrupt"),
    ],
)
def test_bad_frames_get_a_clear_error(url, message):
    with pytest.raises(FrameError, match=message):
        decode_frame(url)


def test_one_frame_gives_the_numbers_of_the_input_every_head_and_rollout(tiny):
    """A frame sends numbers the page draws (issue 41): the model input as a JPEG, the chosen
    layer's row of the query in every head (explorer.page_maps.rows_bytes, not deflated), the rollout."""
    frame = Image.open(EXAMPLES / "cat.jpg").convert("RGB").resize((64, 48))  # a webcam's 4:3
    shown = live_frame(tiny, frame, (2, 3), 3, MapStyle(), model="the tiny model")
    numbers, ex = shown.numbers, explain(tiny.model, tiny.meta.class_names, tiny.preprocessing, frame, top_k=3)
    sent = np.frombuffer(base64.b64decode(numbers["input"]["rgb"]), np.uint8).reshape(32, 32, 3)
    assert (numbers["input"]["width"], numbers["input"]["height"]) == (32, 32)
    np.testing.assert_array_equal(sent, ex.input.pixels)  # the centre crop, every pixel as the model saw it
    assert numbers["input"]["scale"] == 12 and numbers["query"] == {"row": 2, "col": 3} and numbers["layer"] == 4
    assert numbers["layouts"]["layer"]["cols"] == ex.heads  # every head's tile in one row, as views.heads
    assert "the tiny model" in numbers["text"]["input_alt"]
    rows = numbers["rows"]
    raw = base64.b64decode(rows["bytes"])
    maps = ex.query_maps((2, 3))[3]  # (heads, 8, 8)
    assert raw == page_maps.rows_bytes(ex.attention[3][0, :, 1 + 2 * 8 + 3].numpy()[None], ["cls"])  # the patch's row
    assert rows["parts"] == list(page_maps.PARTS)  # every part: the page restyles the last frame itself
    sent = read_rows(raw, ex.heads, 64, rows["parts"])
    head_tops, coarse = sent["head_tops"][0], sent["head"][0].reshape(ex.heads, 8, 8)
    assert np.array_equal(head_tops, maps.max(axis=(1, 2)))
    assert np.array_equal(coarse, np.minimum(np.floor(maps / head_tops[:, None, None] * 256), 255))
    assert sent["top_lines"][0] == [f"max {t:.2g}" for t in head_tops]  # every part's words: any scale is drawn
    ratio = np.frombuffer(base64.b64decode(numbers["rollout"]["values"]), "<f4").reshape(8, 8)
    uniform = ex.rollout().sum() / 64  # CLS's own share is left out
    np.testing.assert_allclose(ratio, ex.rollout() / uniform, rtol=1e-6)  # multiples of uniform, as drawn
    rollout = numbers["rollout"]
    assert rollout["cmap"] == render.RELATIVE_CMAP and rollout["top"] == max(render.RELATIVE_TOP, float(ratio.max()))
    assert rollout["bar"] == canvas.bar_text(0.0, rollout["top"], 1.0) and rollout["centre"] == 1.0
    assert len(shown.predictions) == 3 and set(shown.predictions) <= set(CIFAR10_CLASSES)
    assert shown.model_ms > 0 and shown.numbers_ms > 0
    cls = live_frame(tiny, frame, None, 3, MapStyle()).numbers
    assert cls["query"] is None and cls["rows"]["bytes"] != rows["bytes"]  # another query, other maps
    assert reply_bytes(cls) < 16_000  # a few kB a frame, where three JPEG pictures were sent


def test_a_frame_names_its_query_as_the_page_does():
    """None for the default query, a register by its place among the prefix tokens, a patch 0-based."""
    model = vit.create_model("vit_cifar_nano", register_tokens=2).eval()
    frame = Image.open(EXAMPLES / "dog.jpg").convert("RGB")
    ex = explain(model, list(CIFAR10_CLASSES), CIFAR10, frame)
    assert [page_query(ex, q) for q in (None, "reg2", (0, 7))] == [None, {"token": 2}, {"row": 0, "col": 7}]
    numbers = frame_numbers(ex, "reg2", 1, MapStyle(), 13, "nano")
    assert numbers["prefix"] == ["cls", "reg1", "reg2"]
    assert numbers["text"]["labels"][2] == texts.query_label(ex, "reg2")
    sent = read_rows(base64.b64decode(numbers["rows"]["bytes"]), ex.heads, 64, numbers["rows"]["parts"])
    shares = ex.prefix_attention("reg2")[1]  # what "CLS 0.42" under a tile says, each prefix token a line
    assert sent["prefix_lines"][0] == [[f"CLS {c:.2f}", f"reg1 {r1:.2f}", f"reg2 {r2:.2f}"] for c, r1, r2 in shares]
