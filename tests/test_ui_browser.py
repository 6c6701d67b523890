"""A real browser (Debian's chromium, driven by Playwright) against the real app."""

import io
import os
import shutil

import gradio
import pytest
from picture_helpers import gradient_runs
from PIL import Image
from training_helpers import write_image_folder

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
]
SCREEN = {"width": 1280, "height": 720}
FIRST_SCREEN = ("#upload", "#predictions", "#input-view img", "#heads img")

pytestmark = pytest.mark.skipif(
    not shutil.which(CHROMIUM), reason=f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)"
)


def image_src(page, elem_id: str) -> str | None:
    img = page.locator(f"#{elem_id} img")
    return img.first.get_attribute("src") if img.count() else None


def wait_for_new_src(page, elem_id: str, old: str | None) -> None:
    page.wait_for_function(
        "([sel, old]) => { const i = document.querySelector(sel); return i && i.src !== old; }",
        arg=[f"#{elem_id} img", old],
    )


def test_upload_predict_click_a_patch_and_move_it_with_the_keys(server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport=SCREEN)
        page.set_default_timeout(60_000)
        page.goto(server)
        page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("cheetah1.jpg"))

        expect(page.locator("#predictions")).to_contain_text("%")  # confidences are shown as percentages
        expect(page.locator("#heads img")).to_be_visible()
        expect(page.locator("#input-view img")).to_be_visible()
        for selector in FIRST_SCREEN:  # all on the first screen, no scrolling
            box = page.locator(selector).first.bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= SCREEN["height"], selector
        page.screenshot(path=str(tmp_path / "first-screen.png"))
        heads_before, input_before = image_src(page, "heads"), image_src(page, "input-view")

        box = page.locator("#input-view img").bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.8, box["y"] + box["height"] * 0.3)  # row 3, column 7 of 8
        expect(page.locator("#query")).to_contain_text("row 3, column 7")
        wait_for_new_src(page, "heads", heads_before)
        assert image_src(page, "input-view") != input_before  # the clicked patch is outlined
        heads = Image.open(io.BytesIO(page.request.get(image_src(page, "heads")).body())).convert("RGB")
        assert gradient_runs(heads, "inferno")  # the head maps carry their colour bar

        page.locator("body").click(position={"x": 5, "y": 5})  # focus leaves the image
        page.keyboard.press("ArrowRight")
        expect(page.locator("#query")).to_contain_text("row 3, column 8")
        page.keyboard.press("ArrowUp")
        expect(page.locator("#query")).to_contain_text("row 2, column 8")
        page.keyboard.press("Escape")
        expect(page.locator("#query")).to_contain_text("CLS")

        layer_box = page.get_by_label("number input for Layer (1 = first)")
        page.locator("#play").click()  # steps the layer slider 1, 2, ..., 6
        expect(layer_box).to_have_value("1")
        expect(layer_box).to_have_value("6", timeout=30_000)
        browser.close()
    assert (tmp_path / "first-screen.png").stat().st_size > 10_000


def test_more_views_are_drawn_when_opened_and_redrawn_while_open(server):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport=SCREEN)
        page.set_default_timeout(60_000)
        page.goto(server)
        page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("cheetah1.jpg"))
        expect(page.locator("#predictions")).to_contain_text("%")
        assert image_src(page, "overview") is None  # the analysis drew nothing of the closed "More views"
        page.locator("#more").get_by_text("More views").click()
        expect(page.locator("#overview img")).to_be_visible()  # opened on its first tab: drawn now
        page.get_by_role("tab", name="Rollout").click()
        expect(page.locator("#rollout img")).to_be_visible()
        before = image_src(page, "rollout")
        page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("lion.jpg"))
        wait_for_new_src(page, "rollout", before)  # on screen: a new image redraws it
        browser.close()


def test_the_train_tab_shows_progress_until_the_run_ends(server, tmp_path):
    """Start in the page: the timer that polls /train_status must start (and stop) by itself."""
    from playwright.sync_api import expect, sync_playwright

    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=("cat", "dog"), test_per_class=2)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport=SCREEN)
        page.set_default_timeout(60_000)
        page.goto(server)
        page.get_by_role("tab", name="Train").click()
        page.get_by_label("Local folder").check()
        page.get_by_label("Folder with train/<class>/ and test/<class>/ images").fill(str(data))
        page.get_by_label("Epochs").fill("2")
        page.get_by_label("Batch size").fill("8")
        page.get_by_role("button", name="Start").click()
        expect(page.locator("#train-progress")).to_contain_text("finished 2 epochs", timeout=150_000)
        browser.close()
