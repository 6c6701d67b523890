"""explorer/live.py: decoding a webcam frame from its data: URL, and one frame's pictures."""

import base64
import io
import struct
import zlib

import numpy as np
import pytest
from picture_helpers import gradient_runs
from PIL import Image

import vit
from explorer import render
from explorer.canvas import MapStyle
from explorer.live import MAX_FRAME_PIXELS, FrameError, data_url, decode_frame, live_frame
from explorer.loaded import LoadedModel
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES


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
    again = decode_frame(data_url(decoded))  # what the Live view sends back is a frame too
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


def test_one_frame_gives_the_input_every_head_and_rollout(tiny):
    frame = Image.fromarray(np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8))
    shown = live_frame(tiny, frame, (2, 3), 3, MapStyle())
    assert shown.input.size == (384, 384)  # 32 px, enlarged 12 times, the query patch outlined
    assert shown.heads.width > 4 * 128  # 4 head tiles, each fit to the heads column
    assert shown.rollout.width == 320
    assert gradient_runs(shown.rollout, render.RELATIVE_CMAP)  # relative to uniform: the object stands out
    assert len(shown.predictions) == 3 and set(shown.predictions) <= set(CIFAR10_CLASSES)
    assert shown.model_ms > 0 and shown.drawing_ms > 0
    other = live_frame(tiny, frame, None, 3, MapStyle())
    assert not np.array_equal(np.asarray(other.heads), np.asarray(shown.heads))  # another query, other maps
