"""The Live tab against the real app: in a real browser, Chromium's fake webcam plays a clip
that says which frame it is (bench/fake_camera.py), and the test reads the frame number and the
square's position back from the model input the page shows; the video export through the API."""

import base64
import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_ui_browser import covered

from bench.fake_camera import clip_frames, read_frame, square_left, write_y4m

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SCREEN = {"width": 1280, "height": 720}
FRAMES, FPS = 48, 6  # an 8 s loop (a page drawing one frame in 4 s still reads in order); 1/8 cell a frame
MODEL_PX = 32  # the test server's model (conftest.tiny_checkpoint) sees 32 x 32 px
SAMPLES = 10

needs_chromium = pytest.mark.skipif(
    not shutil.which(CHROMIUM), reason=f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)"
)


def launch(playwright, clip):
    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--use-fake-device-for-media-stream",  # a camera that plays `clip`
        "--use-fake-ui-for-media-stream",  # and no permission prompt
        f"--use-file-for-fake-video-capture={clip}",
    ]
    return playwright.chromium.launch(executable_path=CHROMIUM, args=args)


def data_url_pixels(src: str) -> np.ndarray:
    """The pixels of a picture the page drew (its canvas as a PNG `data:` URL)."""
    header, _, body = src.partition(",")
    assert header == "data:image/png;base64", header[:40]
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(body))).convert("RGB"))


def model_pixels(input_view: np.ndarray) -> np.ndarray:
    """The 32 x 32 model input inside the input view (enlarged by a whole factor, grid lines
    on the block edges): the centre pixel of each block."""
    scale = input_view.shape[0] // MODEL_PX
    return input_view[scale // 2 :: scale, scale // 2 :: scale][:MODEL_PX, :MODEL_PX]


def start_live(browser, server):
    """A new visitor opens the page and presses the Live button on the first screen."""
    page = browser.new_context(viewport=SCREEN).new_page()
    page.set_default_timeout(60_000)
    page.goto(server)
    button = page.locator("#open-live")
    box = button.bounding_box()
    assert box["y"] + box["height"] <= SCREEN["height"]  # one click from the first screen
    button.click()
    return page


# The page draws each frame's pictures on new canvases (ui/js/live.js, LiveMaps), the same
# camera frame sent twice as two: a model input not seen last time, with its head maps, read in
# one go (read apart, the next frame could come between and be taken for this one twice).
NEW_FRAME = """() => { const input = document.querySelector('#live-input'), url = input && input.toDataURL();
  if (!url || url === window.__seen) return null;
  window.__seen = url;
  return [url, document.querySelector('#live-heads').toDataURL()]; }"""


def shown_frames(page, count: int) -> list[tuple[str, str]]:
    """(model input, head maps) of `count` successive frames the page shows, as PNG `data:` URLs."""
    page.wait_for_selector("#live-input")
    return [tuple(page.wait_for_function(NEW_FRAME).json_value()) for _ in range(count)]


@needs_chromium
def test_the_live_view_follows_the_camera_frame_by_frame_and_a_second_stream_waits(server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    clip = write_y4m(tmp_path / "clip.y4m", clip_frames(FRAMES, 192, 256), FPS)  # 4:3, as webcams are
    with sync_playwright() as p:
        browser = launch(p, clip)
        first = start_live(browser, server)
        shown = shown_frames(first, SAMPLES)

        numbers = []
        for input_src, _ in shown:
            number, centre = read_frame(model_pixels(data_url_pixels(input_src)))
            assert number is not None, "the model input is not a frame of the clip"
            # the square is where the clip put it in that very frame (a cell is 4 model pixels)
            assert abs(centre - (square_left(number, FRAMES) + 1)) <= 1 / 4, (number, centre)
            numbers.append(number)
        steps = [(b - a) % FRAMES for a, b in zip(numbers, numbers[1:], strict=False)]
        assert all(step < FRAMES // 2 for step in steps), numbers  # never an older frame after a newer one
        assert len(set(numbers)) >= SAMPLES // 2, numbers  # the pictures follow the clip
        heads = [data_url_pixels(h).astype(int) for _, h in shown]
        changed = [np.abs(a - b).mean() > 0.5 for a, b, s in zip(heads, heads[1:], steps, strict=False) if s]
        assert changed and all(changed)  # each new frame, new maps
        expect(first.locator("#live-status")).to_contain_text("frames/s")
        # No badge on the pictures; on the camera's preview only its own Record/Stop button, low in the frame.
        expect(first.locator("#live-camera [data-testid='block-label']")).to_be_hidden()
        hits = covered(first, "#live-camera video, #live-input, #live-heads")
        assert [hit for hit in hits if hit[0] or hit[2] < 6] == [], hits
        expect(first.get_by_text("Query patch row (1 = top)")).to_be_hidden()  # the query is CLS

        second = start_live(browser, server)  # another visitor, while the one stream is drawn
        expect(second.locator("#live-status")).to_contain_text("Live view busy, try again in")
        assert second.locator("#live-input").count() == 0
        first.locator("#live-camera .capture-button").click()  # the first visitor stops
        expect(first.locator("#live-status")).to_contain_text("Stopped")  # not the last frame's readout
        second.wait_for_selector("#live-input")  # the second's stream starts by itself
        number, _ = read_frame(model_pixels(data_url_pixels(shown_frames(second, 1)[0][0])))
        assert number is not None
        browser.close()


def test_the_attention_video_is_named_by_its_content(client, tmp_path):
    from gradio_client import handle_file
    from test_explorer_video import write_clip

    clip = write_clip(tmp_path / "clip.mp4", 6)
    made, note = client.predict(
        handle_file(str(clip)), "bundled", 3, "patch", 2, 7, "viridis", "head", api_name="/attention_video"
    )
    path = made["video"] if isinstance(made, dict) else made
    assert Path(path).name == "clip-tiny-layer3-row2-col7.mp4"  # the server's default model is tiny.safetensors
    assert "6 frames at 10 frames/s" in note and "real time" in note


def test_a_clip_over_the_limits_is_refused_by_name(client, tmp_path):
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    text = tmp_path / "notes.mp4"
    text.write_text("not a video")
    with pytest.raises(AppError, match="not a video this app can read"):
        client.predict(
            handle_file(str(text)), "bundled", 6, "cls", 1, 1, "inferno", "layer", api_name="/attention_video"
        )


READOUT_MATCHES = """() => {
  const button = document.querySelector("#live-camera .capture-button");
  const text = document.getElementById("live-status").innerText;  // what is shown
  const recording = button && !button.querySelector("svg.feather-circle");
  return recording ? !text.includes("Stopped") : text.includes("Stopped");
}"""


def settled_readout(page) -> bool:
    """Whether the camera records, once the readout matches the button (the stream's state)."""
    page.wait_for_timeout(1500)  # after the clicks' own checks and any frame in flight
    page.wait_for_function(READOUT_MATCHES)
    return page.evaluate("() => !document.querySelector('#live-camera .capture-button svg.feather-circle')")


@needs_chromium
def test_the_live_readout_matches_the_stream_after_stop_twice_record_and_stop(server, tmp_path):
    # Stop pressed twice, or Record pressed while a Stop's check was due, once left "Stopped" on
    # the page while the camera streamed and kept the only slot.
    from playwright.sync_api import sync_playwright

    clip = write_y4m(tmp_path / "clip.y4m", clip_frames(FRAMES, 192, 256), FPS)
    with sync_playwright() as p:
        browser = launch(p, clip)
        page = start_live(browser, server)
        shown_frames(page, 2)
        button = page.locator("#live-camera .capture-button")
        button.click()
        button.click()  # Stop twice: the second press records again
        recording = settled_readout(page)
        assert recording, "the second press restarts the stream"
        shown_frames(page, 1)  # and frames come
        page.wait_for_timeout(1000)
        assert page.evaluate(READOUT_MATCHES)  # a Stop's late check did not write "Stopped" over it
        button.click()  # Stop
        assert not settled_readout(page)
        page.wait_for_timeout(1000)
        assert page.evaluate(READOUT_MATCHES)  # no frame in flight wrote over "Stopped"
        button.click()  # Record, as the readout says
        assert settled_readout(page)
        shown_frames(page, 1)
        page.wait_for_function("() => document.getElementById('live-status').innerText.includes('frames/s')")
        button.click()  # Stop
        assert not settled_readout(page)
        second = start_live(browser, server)  # the first sends no more frames: the slot is free
        second.wait_for_selector("#live-input")
        browser.close()


@needs_chromium
def test_the_webcam_button_is_named_for_what_it_does_and_the_query_controls_are_on_the_first_screen(server, tmp_path):
    """Screen readers heard "capture photo" for Stop, and at 1280 x 720 the layer
    and query controls were below the fold."""
    from playwright.sync_api import expect, sync_playwright

    from ui.live import RECORD_NAME, STOP_NAME

    clip = write_y4m(tmp_path / "clip.y4m", clip_frames(FRAMES, 192, 256), FPS)
    with sync_playwright() as p:
        browser = launch(p, clip)
        page = start_live(browser, server)
        shown_frames(page, 1)
        page.wait_for_function("() => document.getElementById('live-status').innerText.includes('frames/s')")
        for control in (page.locator("#live-layer input[type=number]"), page.locator("#live-query input")):
            box = control.bounding_box()
            assert 0 <= box["y"] and box["y"] + box["height"] <= SCREEN["height"], box
        assert page.get_by_role("button", name="capture photo").count() == 0
        page.get_by_role("button", name=STOP_NAME).click()
        expect(page.get_by_role("button", name=RECORD_NAME)).to_be_visible()
        expect(page.locator("#live-status")).to_contain_text("Stopped")
        page.get_by_role("button", name=RECORD_NAME).click()
        expect(page.get_by_role("button", name=STOP_NAME)).to_be_visible()
        page.get_by_role("button", name=STOP_NAME).click()
        browser.close()
