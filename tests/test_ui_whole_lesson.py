"""The whole ten-minute lesson, start to end, in one real browser, on a 1280 x 720
projector and on a 390 x 844 phone: upload, layers, a patch query, rollout, relevance, the PNG
and GIF exports, the three lessons, a 200-epoch Train run (a stand-in folder of 8 images of 16 px,
trained while the lessons and Live go on, as a teacher would) and Live started and stopped twice (Chromium's fake camera
plays bench/fake_camera.py's clip). Each step asserts what a person would see: the readouts
say what the pictures show, the pictures change when they should, no Error badge anywhere."""

import io
import re

import gradio
import numpy as np
import pytest
from page_helpers import assert_same_at_every_cell, drawn_heads, shown_picture
from PIL import Image
from test_ui_browser import (
    LAYER,
    PHONE,
    SCREEN,
    click_patch,
    compare_with_the_bundled_model,
    image_src,
    open_more_views,
    open_page,
    wait_for_new_src,
)
from test_ui_live import FPS, FRAMES, launch, needs_chromium, shown_frames
from training_helpers import write_image_folder

from bench.fake_camera import clip_frames, write_y4m
from ui.live import RECORD_NAME, STOP_NAME

EPOCHS = 200  # the form's most, the run that once froze the page at "epoch 191 of 200"
RUN = f"checkpoint: my run, {EPOCHS} epochs"  # how the model lists name the run


@pytest.fixture(scope="module")
def camera_browser(tmp_path_factory):
    """One chromium with a fake camera for both screen sizes."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)
    clip = write_y4m(tmp_path_factory.mktemp("camera") / "clip.y4m", clip_frames(FRAMES, 192, 256), FPS)
    with sync_playwright() as p:
        browser = launch(p, clip)
        yield browser
        browser.close()


def no_error_badge(page) -> None:
    from playwright.sync_api import expect

    expect(page.locator("[data-testid=status-tracker] .error")).to_have_count(0)


def picture(page, selector: str) -> Image.Image:
    return shown_picture(page.locator(selector))


def explore(page) -> None:
    """Upload, layers, a patch query, rollout, relevance, exports."""
    from playwright.sync_api import expect

    heads, query = page.locator("#heads img"), page.locator("#query")
    page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("cheetah1.jpg"))
    expect(page.locator("#predictions")).to_contain_text("%")
    expect(heads).to_have_attribute("alt", re.compile(r"layer 6 of 6, one tile each, for the query CLS:"))
    expect(page.locator("#numbers")).to_contain_text("(width × height)")
    last = image_src(page, "heads")
    page.get_by_label(f"range slider for {LAYER}").press("Home")
    wait_for_new_src(page, "heads", last)  # a new picture, and it says which layer it shows
    expect(heads).to_have_attribute("alt", re.compile("layer 1 of 6"))
    click_patch(page, 3, 5)
    expect(query).to_contain_text("row 3, column 5")
    expect(heads).to_have_attribute("alt", re.compile(r"layer 1 of 6, .*for the query patch \(3, 5\):"))
    page.get_by_role("button", name="move the query right").click()
    expect(heads).to_have_attribute("alt", re.compile(r"for the query patch \(3, 6\):"))
    page.get_by_label(f"range slider for {LAYER}").press("End")
    expect(heads).to_have_attribute("alt", re.compile(r"layer 6 of 6, .*for the query patch \(3, 6\):"))
    open_more_views(page, "Rollout")
    rollout = page.locator("#rollout img")
    expect(rollout).to_have_attribute("alt", re.compile("^Attention rollout"))
    page.get_by_role("tab", name="Relevance (Chefer et al. 2021)").click()
    page.get_by_role("button", name="Explain this class").click()
    expect(page.locator("#relevance img")).to_have_attribute("alt", re.compile(r"for the predicted class '\w+'"))
    link = page.locator("#export a").first
    page.get_by_role("button", name="Export PNG").click()
    expect(link).to_have_attribute("download", re.compile(r"_layer6_row3-col6\.png$"))
    exported = Image.open(io.BytesIO(page.request.get(link.get_attribute("href")).body())).convert("RGB")
    drawn, cells = drawn_heads(page)
    assert_same_at_every_cell(drawn, np.asarray(exported), cells)  # the screen's picture
    page.get_by_role("button", name="Export GIF through the layers").click()
    expect(link).to_have_attribute("download", re.compile(r"_layers1-6_row3-col6\.gif$"))
    assert Image.open(io.BytesIO(page.request.get(link.get_attribute("href")).body())).n_frames == 6
    no_error_badge(page)


def three_lessons(page, photo_width: int) -> None:
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Lessons").click()
    page.wait_for_function(  # the photo on Explore, not the lessons' own 32 px example
        "w => { const i = document.querySelector('#lesson-image img'); return i && i.naturalWidth === w; }",
        arg=photo_width,
    )
    page.get_by_role("tab", name="Supervised vs self-supervised").click()
    compare_with_the_bundled_model(page)
    page.get_by_role("tab", name="Artefacts and registers").click()
    page.get_by_role("button", name="Show token norms").click()
    expect(page.locator("#lesson-norms img")).to_have_attribute("alt", re.compile("one row per model"))
    page.get_by_role("tab", name="Which heads matter").click()
    page.get_by_role("button", name="Switch these heads off").click()
    expect(page.locator("#lesson-top5")).to_contain_text("%")
    no_error_badge(page)


def start_200_epochs(page, tmp_path) -> int:
    """Start a 200-epoch run (one that once froze the page at "epoch 191 of 200"); Start waits
    for it. Returns how many runs lesson 1's picker listed under that name before."""
    from playwright.sync_api import expect

    data = write_image_folder(tmp_path / "data", per_class=4, size=16, classes=("cat", "dog"), test_per_class=1)
    page.get_by_role("tab", name="Lessons").click()
    page.get_by_role("combobox", name="Models to compare (up to 3)").click()
    before = page.get_by_role("option", name=RUN).count()  # a local server lists every visitor's runs
    page.keyboard.press("Escape")
    page.get_by_role("tab", name="Train").click()
    page.get_by_label("Local folder").check()
    page.get_by_label("Folder with train/<class>/ and test/<class>/ images").fill(str(data))
    page.get_by_label("Epochs", exact=True).fill(str(EPOCHS))
    page.get_by_label("Batch size").fill("8")
    start = page.get_by_role("button", name="Start")
    start.click()
    expect(start).to_be_disabled()
    expect(page.locator("#train-progress")).to_contain_text("running")
    return before


def end_of_the_run(page, before: int) -> None:
    """The run ends on the page, Start comes back, its checkpoint is listed once more, and
    lesson 1 compares it with the bundled model."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Train").click()
    expect(page.locator("#train-progress")).to_contain_text(f"finished {EPOCHS} epochs", timeout=240_000)
    expect(page.get_by_role("button", name="Start")).to_be_enabled()
    expect(page.locator("#probe img")).to_have_attribute("alt", re.compile(f"after each of {EPOCHS} epochs"))
    expect(page.locator("#train-checkpoint a").first).to_have_attribute("download", re.compile(r"\.safetensors$"))
    no_error_badge(page)
    page.get_by_role("tab", name="Lessons").click()
    page.get_by_role("tab", name="Supervised vs self-supervised").click()
    page.get_by_role("combobox", name="Models to compare (up to 3)").click()
    mine = page.get_by_role("option", name=RUN)
    expect(mine).to_have_count(before + 1)  # one entry for the run
    mine.last.click()
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.locator("#lesson-compare img")).to_have_attribute(
        "alt", re.compile(f"one row per model: .+, checkpoint my run, {EPOCHS} epochs ")
    )
    no_error_badge(page)


def live_twice(page) -> None:
    """The header's Live button starts the camera; Stop and Record twice; the readout follows."""
    from playwright.sync_api import expect

    status = page.locator("#live-status")
    page.evaluate("window.scrollTo(0, 0)")
    page.locator("#open-live").click()
    for turn in range(2):
        if turn:
            page.get_by_role("button", name=RECORD_NAME).click()
        frames = shown_frames(page, 2)
        assert frames[0] != frames[1]  # the pictures follow the camera
        expect(status).to_contain_text("frames/s")
        page.get_by_role("button", name=STOP_NAME).click()
        expect(status).to_contain_text("Stopped")
    no_error_badge(page)


@needs_chromium
@pytest.mark.parametrize("screen", [SCREEN, PHONE], ids=["projector", "phone"])
def test_the_whole_lesson_start_to_end(server, camera_browser, tmp_path, screen):
    page = open_page(camera_browser, server, screen)
    explore(page)
    photo_width = page.locator("#upload img").evaluate("i => i.naturalWidth")
    before = start_200_epochs(page, tmp_path)
    three_lessons(page, photo_width)  # while it trains, as a teacher would
    live_twice(page)
    end_of_the_run(page, before)
    page.close()
