"""A real browser (Debian's chromium, driven by Playwright) against the real app."""

import io
import os
import re
import shutil

import gradio
import numpy as np
import pytest
from page_helpers import assert_pages_same_at_every_cell, assert_same_at_every_cell, drawn_heads, shown_picture
from picture_helpers import first_line_px, gradient_runs
from PIL import Image
from training_helpers import write_image_folder

from ui import train
from ui.common import EXAMPLES_DIR as EXAMPLES
from ui.explore_views import MORE, STYLE_VIEWS

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


PHONE = {"width": 390, "height": 844}
LAYER = "Layer (1 = first)"
DRAWN_SCALE = """async (img) => {
  await img.decode();  // measured once loaded: on a busy machine the element may come first (naturalWidth 0)
  return img.getBoundingClientRect().width / img.naturalWidth;
}"""  # on-screen pixels per picture pixel


@pytest.fixture(scope="module", autouse=True)
def patient_expect():
    """Every test's `expect` waits up to 60 s: on a shared 2-core machine an analysis takes
    seconds, not milliseconds (Playwright's default is 5 s)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)


@pytest.fixture(scope="module")
def browser():
    """One chromium for the module's tests (each opens its own page, a fresh Gradio session)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


def open_page(browser, server, viewport=SCREEN):
    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(60_000)
    page.goto(server)
    return page


def pick_example(page, name: str, percent: bool = True) -> None:
    """Click the example of class `name` (named by its class) and wait for its analysis: when
    another image's views are on the page, for new head maps (the last image's alone would
    satisfy the checks below, and a key pressed then acts on the last image, whose analysis
    the new one replaces a moment later, query and all); with `percent`, for its predictions too
    (a model without classes, or CLIP before its words, shows none)."""
    from playwright.sync_api import expect

    heads = page.locator("#heads img")
    before = heads.get_attribute("src") if heads.count() else None
    page.get_by_role("button", name=f"example: {name}").click()
    if before is not None:
        expect(heads).not_to_have_attribute("src", before)
    expect(heads).to_have_attribute("alt", re.compile("for the query CLS:"))
    if percent:
        expect(page.locator("#predictions")).to_contain_text("%")


def click_patch(page, row: int, col: int, grid: int = 8) -> None:
    """Click the centre of the patch at (row, col), 1-based, of the input view's square grid."""
    page.wait_for_function("() => { const i = document.querySelector('#input-view img'); return i && i.complete; }")
    page.locator("#input-view img").scroll_into_view_if_needed()
    box = page.locator("#input-view img").bounding_box()
    page.mouse.click(box["x"] + box["width"] * (col - 0.5) / grid, box["y"] + box["height"] * (row - 0.5) / grid)


def open_more_views(page, tab: str) -> None:
    """Open the "More views" accordion (closed at first: its views are drawn only when opened)
    and pick its tab `tab`."""
    page.locator("#more").get_by_text("More views").click()
    page.get_by_role("tab", name=tab).click()


def image_src(page, elem_id: str) -> str | None:
    img = page.locator(f"#{elem_id} img")
    return img.first.get_attribute("src") if img.count() else None


def wait_for_new_src(page, elem_id: str, old: str | None) -> None:
    page.wait_for_function(
        "([sel, old]) => { const i = document.querySelector(sel); return i && i.src !== old; }",
        arg=[f"#{elem_id} img", old],
    )


def test_upload_predict_click_a_patch_and_move_it_with_the_keys(server, browser, tmp_path):
    from playwright.sync_api import expect

    page = open_page(browser, server)
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
    heads = shown_picture(page.locator("#heads img")).convert("RGB")
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
    page.close()
    assert (tmp_path / "first-screen.png").stat().st_size > 10_000


def test_more_views_are_drawn_when_opened_and_redrawn_while_open(server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, server)
    page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("cheetah1.jpg"))
    expect(page.locator("#predictions")).to_contain_text("%")
    assert image_src(page, "overview") is None  # the analysis drew nothing of the closed "More views"
    page.locator("#more").get_by_text("More views").click()
    expect(page.locator("#overview img")).to_be_visible()  # opened on its first tab: drawn now
    expect(page.locator("#overview img")).to_have_attribute(
        "alt", re.compile(r"in every head of every layer: 6 rows \(layers 1 to 6\)")
    )
    page.get_by_role("tab", name="Rollout").click()
    expect(page.locator("#rollout img")).to_be_visible()
    before = image_src(page, "rollout")
    page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("lion.jpg"))
    wait_for_new_src(page, "rollout", before)  # on screen: a new image redraws it
    page.close()


def train_in_the_page(page, tmp_path, epochs: int) -> None:
    """Start a tiny run (2 classes of 8 images, 16 px) from the Train tab; wait for its end."""
    from playwright.sync_api import expect

    start_in_the_page(page, tmp_path, epochs)
    expect(page.locator("#train-progress")).to_contain_text(f"finished {epochs} epoch", timeout=150_000)


def start_in_the_page(page, tmp_path, epochs: int) -> None:
    """Start a tiny run (2 classes of 8 images, 16 px) from the Train tab."""
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=("cat", "dog"), test_per_class=2)
    page.get_by_role("tab", name="Train").click()
    page.get_by_label("Local folder").check()
    page.get_by_label("Folder with train/<class>/ and test/<class>/ images").fill(str(data))
    page.get_by_label("Epochs", exact=True).fill(str(epochs))
    page.get_by_label("Batch size").fill("8")
    page.get_by_role("button", name="Start").click()


def test_the_train_tab_shows_progress_until_the_run_ends(server, browser, tmp_path):
    """Start in the page: the timer that polls /train_status must start (and stop) by itself."""
    page = open_page(browser, server)
    events = []  # every event the page sends its server (a poll is one: /train_status, then its timer's update)
    page.on("request", lambda request: events.append(request.url) if "/queue/join" in request.url else None)
    train_in_the_page(page, tmp_path, epochs=2)
    assert len(events) >= 1 + 2 * 2, events  # the start, then at least two polls: the timer started by itself
    page.wait_for_timeout(1500)  # the last poll's own events end
    sent = len(events)
    page.wait_for_timeout(4000 * train.POLL_S)  # four poll periods
    assert len(events) == sent  # the finished run stopped the timer: the page polls no more
    page.close()


def test_a_reloaded_page_finds_its_run_and_another_browser_does_not(server, browser, tmp_path):
    """The run's visitor was the page's session: after a reload the Train tab said "no training job
    has run yet", its run (and on ZeroGPU, its server slot) out of reach (issue 44). The page now
    keeps a run token in the browser's local storage."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport=SCREEN)
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(server)
    train_in_the_page(page, tmp_path, epochs=1)
    page.reload()
    page.get_by_role("tab", name="Train").click()
    expect(page.locator("#train-progress")).to_contain_text("finished 1 epoch")
    expect(page.locator("#train-checkpoint")).to_contain_text(".safetensors")
    context.close()
    stranger = open_page(browser, server)  # another browser's storage: another token
    stranger.get_by_role("tab", name="Train").click()
    expect(stranger.locator("#train-progress")).to_contain_text("no training job has run yet")
    stranger.close()


def test_stop_offers_continue_this_run_which_goes_on_from_where_it_stopped(server, browser, tmp_path):
    """Issue 61: after Stop the tab offered only a new run from "my run, 0 epochs". A stopped run
    shows Continue this run, which takes the run on from where it stopped to its end, the page
    polling it again."""
    from playwright.sync_api import expect

    data = write_image_folder(tmp_path / "data", per_class=32, size=16, classes=("cat", "dog"), test_per_class=2)
    page = open_page(browser, server)
    page.get_by_role("tab", name="Train").click()
    page.get_by_label("Local folder").check()
    page.get_by_label("Folder with train/<class>/ and test/<class>/ images").fill(str(data))
    page.get_by_label("Epochs", exact=True).fill("30")
    page.get_by_label("Batch size").fill("8")
    go_on = page.get_by_role("button", name="Continue this run")
    page.get_by_role("button", name="Start").click()
    expect(page.locator("#train-progress")).to_contain_text(re.compile(r"running · epoch \d+ of 30, step \d"))
    expect(go_on).to_be_hidden()
    page.get_by_role("button", name="Stop (saves a checkpoint)").click()
    page.get_by_role("button", name="Yes, stop my run").click()
    expect(page.locator("#train-progress")).to_contain_text("stopped during epoch")
    expect(go_on).to_be_visible()
    go_on.click()
    expect(page.locator("#train-progress")).to_contain_text("running")
    expect(go_on).to_be_hidden()
    expect(page.locator("#train-progress")).to_contain_text("finished 30 epochs", timeout=150_000)
    expect(go_on).to_be_hidden()  # nothing left to continue
    page.close()


def test_pictures_fit_their_columns_and_rollout_shows_relative_to_uniform_and_the_top_mass(server, browser):
    from playwright.sync_api import expect

    from explorer import canvas, render, views

    page = open_page(browser, server)
    page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("cheetah1.jpg"))
    expect(page.locator("#heads img")).to_be_visible()
    shown = min(1, page.locator("#heads img").evaluate(DRAWN_SCALE))  # gr.Image only shrinks
    assert canvas.TEXT_PX * shown >= 12  # the head maps' text
    assert page.locator("#heads").bounding_box()["width"] >= views.DISPLAY_WIDTH["heads"] - 1

    open_more_views(page, "Rollout")
    rollout = page.locator("#rollout img")
    expect(rollout).to_be_visible()
    assert canvas.TEXT_PX * min(1, rollout.evaluate(DRAWN_SCALE)) >= 12
    column = rollout.evaluate("i => i.closest('.block').clientWidth")
    assert column >= views.DISPLAY_WIDTH["more"] - 1  # the width the text test assumes
    for choice, cmap in (("relative to uniform (× 1/N)", render.RELATIVE_CMAP), ("only the top X %", "inferno")):
        before = rollout.get_attribute("src")
        page.get_by_label(choice).check()
        page.wait_for_function("([i, old]) => i.src !== old", arg=[rollout.element_handle(), before])
        picture = Image.open(io.BytesIO(page.request.get(rollout.get_attribute("src")).body())).convert("RGB")
        assert gradient_runs(picture, cmap)  # relative: the diverging colour bar; top mass: the weights' bar
    page.close()


@pytest.mark.parametrize("name", STYLE_VIEWS)
def test_a_view_that_follows_the_style_is_redrawn_when_the_page_restyles(server, browser, name):
    """The page asks the server to redraw the pictures that follow the style after it redraws its
    own maps; which pictures those are it is sent (ui/explore_views.FOLLOW_STYLE), not written in
    ui/js/, where a new view had been missed (issue 57)."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("cheetah1.jpg"))
    expect(page.locator("#heads img")).to_be_visible()
    more = MORE[name]
    open_more_views(page, more.tab)
    expect(page.locator(f"#{more.elem_id} img")).to_be_visible()
    before = image_src(page, more.elem_id)
    page.get_by_label("smooth").check()  # upsampling: a style control
    wait_for_new_src(page, more.elem_id, before)
    page.close()


def test_the_caption_picker_and_outline_reset_with_every_new_image(server, browser):
    """After another example, an upload or a resize policy the query is CLS again,
    and the caption, the picker and the input view's outline all say so."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    query, picker, grid = page.locator("#query"), page.locator("#query-token input"), page.locator("#input-view img")
    for new_image in (
        lambda: pick_example(page, "dog"),
        lambda: page.get_by_label("Whole image (non-square grid)").check(),
        lambda: page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("cheetah1.jpg")),
    ):
        click_patch(page, 3, 5)
        expect(query).to_contain_text("row 3, column 5")
        expect(picker).to_have_value("a patch (click the grid)")
        new_image()
        expect(query).to_contain_text("the CLS token")
        expect(picker).to_have_value("CLS token")
        expect(grid).to_have_attribute("alt", re.compile("with its patch grid drawn over it; the query is CLS;"))
        expect(grid).not_to_have_attribute("alt", re.compile("outlined"))
        expect(page.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS:"))
    page.close()


def test_the_layer_redraws_by_keys_and_typed_number_and_exports_match_the_screen(server, browser):
    """Gradio's slider sends "release" only on pointer-up; keys and a typed number
    must redraw the maps too, and the PNG export is the picture on the screen."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    heads = page.locator("#heads img")
    before = heads.get_attribute("src")
    page.get_by_label(f"range slider for {LAYER}").press("ArrowLeft")
    page.get_by_label(f"range slider for {LAYER}").press("ArrowLeft")
    wait_for_new_src(page, "heads", before)  # redrawn (on the old page, never)
    expect(heads).to_have_attribute("alt", re.compile("layer 4 of 6"))
    before = heads.get_attribute("src")
    typed = page.get_by_label(f"number input for {LAYER}")
    typed.fill("2")
    typed.press("Enter")
    wait_for_new_src(page, "heads", before)
    expect(heads).to_have_attribute("alt", re.compile("layer 2 of 6"))
    page.get_by_role("button", name="Export PNG").click()
    link = page.locator("#export a").first
    expect(link).to_have_attribute("download", re.compile(r"^cat-\w+_layer2_cls\.png$"))
    exported = Image.open(io.BytesIO(page.request.get(link.get_attribute("href")).body())).convert("RGB")
    drawn, cells = drawn_heads(page)
    assert_same_at_every_cell(drawn, np.asarray(exported), cells)
    page.close()


def compare_with_the_bundled_model(page) -> None:
    """Lesson 1 with the bundled (default) model alone: the pretrained defaults cannot download offline.
    First its picture, which the tab hands over when it opens (ui.lessons_handlers.open_lessons)."""
    from playwright.sync_api import expect

    expect(page.locator("#lesson-image img")).to_be_visible()
    page.get_by_role("button", name="Clear").first.click()
    page.get_by_role("combobox", name="Models to compare (up to 3)").click()
    page.get_by_role("option", name=re.compile(r"\((bundled|default)\)")).click()
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.locator("#lesson-compare img")).to_have_attribute("alt", re.compile("one row per model: .+"))


def covered(page, selector: str) -> list:
    """Points of the pictures under `selector` (a 9 x 9 grid each) where something else is on top."""
    return page.evaluate(
        """(selector) => {
        const hits = [];
        for (const img of document.querySelectorAll(selector)) {
          img.scrollIntoView({block: "start"});
          const r = img.getBoundingClientRect();
          if (!r.width) continue;
          for (let i = 0; i < 9; i++) for (let j = 0; j < 9; j++) {
            const x = r.left + r.width * (i + 0.5) / 9, y = r.top + r.height * (j + 0.5) / 9;
            if (y > window.innerHeight) continue;  // below the screen: elementFromPoint sees nothing there
            const top = document.elementFromPoint(x, y);
            if (top !== img) hits.push([img.alt, i, j, top && top.outerHTML.slice(0, 80)]);
          }
        }
        return hits;
      }""",
        selector,
    )


def test_no_toolbar_or_badge_covers_a_picture_and_every_patch_of_row_1_is_clickable(server, browser, tmp_path):
    """Gradio's toolbar sat on row 1, columns 7-8 of the grid; badges hid titles."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    for col in range(1, 9):
        click_patch(page, 1, col)
        expect(page.locator("#query")).to_contain_text(f"row 1, column {col}")
    for picture in ("#upload img", "#input-view img", "#heads img"):
        page.hover(picture)  # Gradio shows some toolbars only under the mouse
        assert covered(page, "#upload img, #input-view img, #heads img") == []
    page.get_by_role("tab", name="Lessons").click()
    page.locator("#lesson-image input[type=file]").set_input_files(gradio.media.get_image("cheetah1.jpg"))
    compare_with_the_bundled_model(page)
    assert covered(page, "#lesson-image img, #lesson-compare img") == []
    page.close()


def own_text_sizes(page) -> list:
    """(text, font size x device pixel ratio) of every visible element that draws text itself."""
    return page.evaluate(
        """() => {
        const out = [];
        for (const el of document.querySelectorAll(".gradio-container *")) {
          const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
          const r = el.getBoundingClientRect();
          if (!own || !r.width || !el.checkVisibility()) continue;
          out.push([el.textContent.trim().slice(0, 30), parseFloat(getComputedStyle(el).fontSize) * devicePixelRatio]);
        }
        return out;
      }"""
    )


def test_text_is_at_least_12_px_and_phone_head_maps_at_least_150_px(server, browser):
    """Every button and label at 1280x720 draws text of 12 px or more (arrow glyphs
    larger); on a 390 x 844 phone each head map keeps at least 150 px of width."""
    from explorer.views import HEAD_PX

    page = open_page(browser, server)
    pick_example(page, "cat")
    sizes = own_text_sizes(page)
    assert len(sizes) > 50 and [s for s in sizes if s[1] < 12] == []
    for name in ("up", "down", "left", "right"):
        arrow = page.get_by_role("button", name=f"move the query {name}")
        assert arrow.evaluate("(b) => parseFloat(getComputedStyle(b).fontSize)") >= 18
    page.close()
    phone = open_page(browser, server, PHONE)
    pick_example(phone, "cat")
    heads = phone.locator("#heads img")
    assert heads.evaluate(DRAWN_SCALE) * HEAD_PX >= 150  # one tile, as drawn on the phone
    phone.close()


def test_examples_and_how_to_read_this_are_on_the_first_screen(server, browser):
    """After an image loads, at 1280x720, a whole row of examples and the way into
    "How to read this" are visible without scrolling."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    examples = page.locator("#examples button")
    # drawn from the inline pictures the page's description carries (no server path: issue 56)
    assert examples.locator("img").evaluate_all("imgs => imgs.map((i) => i.naturalWidth)") == [32] * 10
    first_row = [examples.nth(i).bounding_box() for i in range(examples.count())]
    first_row = [b for b in first_row if b["y"] == first_row[0]["y"]]
    assert len(first_row) >= 3 and all(b["y"] + b["height"] <= SCREEN["height"] for b in first_row)
    how = page.get_by_role("button", name=re.compile("How to read this"))
    box = how.bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= SCREEN["height"]
    how.click()
    expect(page.get_by_text("A ViT cuts the image into square")).to_be_visible()
    page.close()


def test_the_model_picker_is_on_the_first_screen(server, browser):
    """Issue 61: at 1280x720 the model picker was under the style controls, out of sight (a teacher
    scrolled to find which model answered). It heads the image column, before and after an image,
    with the top predictions still on the first screen under it."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    picker = page.get_by_role("combobox", name="Model", exact=True)
    expect(picker).to_have_value("tiny.safetensors (default)")
    assert picker.evaluate("e => e.scrollWidth <= e.clientWidth")  # its name whole
    for moment in ("on load", "after an image"):
        if moment == "after an image":
            pick_example(page, "cat")
        for element in (picker, page.locator("#predictions")):
            box = element.bounding_box()
            assert 0 <= box["y"] and box["y"] + box["height"] <= SCREEN["height"], (moment, box)
            assert box["x"] + box["width"] <= SCREEN["width"], (moment, box)
    page.close()


@pytest.fixture(scope="module")
def classless_server(tmp_path_factory):
    """The app on a checkpoint without a classifier head (as DINO's), with 4 registers."""
    import torch
    from conftest import app_server

    import vit
    from vit.preprocessing import CIFAR10

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("classless") / "features.safetensors"
    model = vit.create_model("vit_cifar_nano", register_tokens=4, pos_embed_prefix=False, num_classes=0)
    vit.save_checkpoint(model, path, class_names=[], preprocessing=CIFAR10)
    with app_server(path, tmp_path_factory) as url:
        yield url


def test_a_model_without_classes_says_so_in_top_predictions(classless_server, browser):
    """Issue 61: a model without classes left the Top predictions box empty, which looked broken
    on a projector. The box says in a sentence that it predicts none, beside its maps."""
    from playwright.sync_api import expect

    from ui.explore_handlers import NO_CLASSES

    page = open_page(browser, classless_server)
    page.get_by_role("button", name="example: cat").click()
    expect(page.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS:"))
    predictions = page.locator("#predictions")
    expect(predictions).to_contain_text(NO_CLASSES)
    expect(predictions.get_by_text(NO_CLASSES)).to_be_visible()
    assert "%" not in predictions.inner_text()
    page.close()


def test_the_accessibility_tree_names_every_picture_example_and_arrow(server, browser):
    """Pictures say what they show, examples and arrows are named, one h1."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    click_patch(page, 2, 3)
    page.get_by_role("button", name="move the query right").click()
    expect(page.locator("#heads img")).to_have_attribute("alt", re.compile(r"for the query patch \(2, 4\):"))
    tree = page.locator("body").aria_snapshot()
    assert len(re.findall(r"\[level=1\]", tree)) == 1
    for name in ("airplane", "cat", "truck"):
        assert f'button "example: {name}"' in tree
    for name in ("up", "down", "left", "right"):
        assert f'button "move the query {name}"' in tree
    assert (
        'img "Attention maps of the 4 heads of layer 6 of 6, one tile each, for the query patch (2, 4): where it '
        'looks over the image, with a colour bar; model: the bundled model, on the 8 × 8 patch grid (rows × columns)."'
        in tree
    )
    assert (
        'img "The model input, 32 × 32 pixels, with its patch grid drawn over it; the query, patch (2, 4), is '
        "outlined; model: the bundled model" in tree
    )
    unnamed = page.evaluate(
        """() => [...document.querySelectorAll(".gradio-container img")]
          .filter((i) => i.getBoundingClientRect().width > 24 && !i.alt).map((i) => i.src.slice(-40))"""
    )
    assert unnamed == []  # every picture larger than an icon has an alt text
    page.close()


def test_the_classroom_run_through_in_order(server, browser, tmp_path):
    """What a teacher does in ten minutes, in order, checking what the screen says."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    heads, query = page.locator("#heads img"), page.locator("#query")
    pick_example(page, "cat")  # 1. an example
    expect(page.locator("#predictions")).to_contain_text("%")
    click_patch(page, 4, 4)  # 2. a patch
    expect(query).to_contain_text("row 4, column 4")
    page.locator("body").click(position={"x": 5, "y": 5})  # 3. arrows, from the keyboard and the buttons
    page.keyboard.press("ArrowDown")
    expect(query).to_contain_text("row 5, column 4")
    page.get_by_role("button", name="move the query left").click()
    expect(heads).to_have_attribute("alt", re.compile(r"layer 6 of 6, one tile each, for the query patch \(5, 3\):"))
    page.get_by_label(f"range slider for {LAYER}").press("Home")  # 4. the layer, by keyboard
    expect(heads).to_have_attribute("alt", re.compile("layer 1 of 6"))
    page.locator("#play").click()  # 5. play through the layers: it ends on the last
    expect(page.get_by_label(f"number input for {LAYER}")).to_have_value("6", timeout=60_000)
    expect(heads).to_have_attribute("alt", re.compile(r"layer 6 of 6, one tile each, for the query patch \(5, 3\):"))
    before = heads.get_attribute("src")
    page.get_by_label("each head stretched to its own max").check()  # 6. scale modes redraw the maps
    wait_for_new_src(page, "heads", before)
    page.get_by_label("fixed 0 to 1").check()
    open_more_views(page, "Rollout")  # 7. rollout and relevance, under "More views"
    expect(page.locator("img[alt^='Attention rollout']")).to_be_visible()
    page.get_by_role("tab", name="Relevance (Chefer et al. 2021)").click()
    page.get_by_role("button", name="Explain this class").click()
    expect(page.locator("#relevance img")).to_have_attribute("alt", re.compile(r"for the predicted class '\w+'"))
    page.get_by_role("button", name="Export GIF through the layers").click()  # 8. exports, named by content
    expect(page.locator("#export a").first).to_have_attribute("download", re.compile(r"_layers1-6_row5-col3\.gif$"))
    page.get_by_role("button", name="Export PNG").click()
    expect(page.locator("#export a").first).to_have_attribute("download", re.compile(r"_layer6_row5-col3\.png$"))
    pick_example(page, "ship")  # 9. another example: back to CLS, the caption agrees
    expect(query).to_contain_text("the CLS token")
    page.get_by_role("tab", name="Lessons").click()  # 10. a lesson with the bundled model
    page.locator("#lesson-image input[type=file]").set_input_files(str(EXAMPLES / "cat.jpg"))
    compare_with_the_bundled_model(page)
    page.get_by_role("tab", name="Train").click()  # 11. train on a tiny folder, then stop
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=("cat", "dog"), test_per_class=2)
    expect(page.get_by_label("Local folder")).to_be_checked()  # offline, the default source is one that works
    expect(page.get_by_text("First step:")).to_be_visible()
    page.get_by_label("Folder with train/<class>/ and test/<class>/ images").fill(str(data))
    page.get_by_label("Epochs", exact=True).fill("200")
    page.get_by_label("Batch size").fill("4")
    page.get_by_role("button", name="Start").click()
    progress = page.locator("#train-progress")
    expect(progress).to_contain_text("running")
    expect(page.locator("#curves img")).to_have_attribute("alt", re.compile("loss readings"))
    page.get_by_role("button", name="Stop (saves a checkpoint)").click()
    page.get_by_role("button", name="Yes, stop my run").click()
    expect(progress).to_contain_text("stopped", timeout=120_000)
    expect(page.locator("#train-checkpoint a").first).to_have_attribute(
        "download", re.compile(r"^vit_cifar_nano_\d+epochs.*\.safetensors$")
    )
    page.close()


def test_the_relevance_tab_says_to_press_its_button_before_and_after_a_new_image(server, browser):
    """The tab drew nothing when opened, with no hint, and went blank after each image; changing
    "Rollout and relevance show" redrew rollout but left relevance as it was, with no hint."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    open_more_views(page, "Relevance (Chefer et al. 2021)")
    hint = page.locator("#relevance-hint")
    expect(hint).to_be_visible()
    expect(hint).to_contain_text("Press Explain this class to draw the map")
    page.get_by_role("button", name="Explain this class").click()
    expect(page.locator("#relevance img")).to_have_attribute("alt", re.compile(r"for the predicted class '\w+'"))
    expect(page.locator("#relevance img")).to_have_attribute("alt", re.compile("weights from 0"))
    page.get_by_label("relative to uniform (× 1/N)").check()
    expect(page.locator("#relevance img")).to_have_attribute("alt", re.compile("drawn as multiples of uniform"))
    pick_example(page, "dog")
    expect(page.locator("#relevance img")).to_have_count(0)  # cleared by the new image ...
    expect(hint).to_be_visible()  # ... and the hint still says what to do
    page.close()


def test_removing_or_replacing_the_image_clears_its_outputs_and_export(server, browser):
    """After another image the Export box offered the previous image's file; after the
    upload box's × the predictions, pictures, caption and export all stayed."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    export = page.locator("#export a")
    page.get_by_role("button", name="Export PNG").click()
    expect(export.first).to_have_attribute("download", re.compile(r"^cat-"))
    pick_example(page, "dog")
    expect(export).to_have_count(0)  # the cat's file is gone
    click_patch(page, 2, 2)
    expect(page.locator("#query")).to_contain_text("row 2, column 2")
    page.get_by_role("button", name="Export PNG").click()
    expect(export.first).to_have_attribute("download", re.compile(r"^dog-"))
    page.locator("#upload").get_by_role("button", name="Remove image").click()
    expect(page.locator("#query")).to_contain_text("Query: the CLS token")
    for picture in ("#input-view img", "#heads img"):
        expect(page.locator(picture)).to_be_hidden()  # the page keeps no picture of it
    expect(page.locator("#predictions")).not_to_contain_text("%")
    expect(export).to_have_count(0)
    page.close()


def test_the_keep_slider_shows_only_while_the_top_mass_is_chosen(server, browser):
    """The "Keep the top X %" slider was visible and movable under "weights from 0" and "relative"."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    open_more_views(page, "Rollout")
    keep = page.get_by_text("Keep the top X % of the attention mass")
    expect(page.get_by_label("weights from 0 (▼ marks uniform)")).to_be_checked()
    expect(keep).to_be_hidden()
    page.get_by_label("only the top X % of the mass").check()
    expect(keep).to_be_visible()
    page.get_by_label("relative to uniform (× 1/N)").check()
    expect(keep).to_be_hidden()
    page.close()


def test_a_file_that_is_not_an_image_gets_one_message_and_the_last_image_stays(server, browser, tmp_path):
    """The message showed twice ("Error (2)": the upload was analysed twice) and red
    "Error" badges replaced every output, the layer slider and the query caption included."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    click_patch(page, 2, 3)
    expect(page.locator("#query")).to_contain_text("row 2, column 3")
    bad = tmp_path / "notes.png"
    bad.write_text("not an image")
    page.locator("#upload input[type=file]").set_input_files(str(bad))
    toast = page.locator(".toast-body")
    expect(toast).to_contain_text("not an image format")
    expect(page.locator("[data-testid=status-tracker] .error")).to_have_count(0)  # no "Error" badge on any output
    expect(page.locator("#query")).to_contain_text("row 2, column 3")  # the caption, maps and slider stay
    expect(page.locator("#heads img")).to_be_visible()
    expect(page.get_by_label(f"number input for {LAYER}")).to_have_value("6")
    pick_example(page, "dog")  # queued after any second run of the bad file
    assert toast.count() == 1 and toast.inner_text().count("not an image format") == 1, toast.all_inner_texts()


def test_the_warm_up_field_shows_sends_and_runs_the_same_warm_up(server, browser, tmp_path):
    """The warm-up box says "10% of the run" when empty; it must be empty on the
    page (not a 0 that the page would send as "no warm-up") and send nothing, which the run
    reads as 10% of the run (ui.train_handlers.warmup_epochs)."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    page.get_by_role("tab", name="Train").click()
    warmup = page.get_by_label("Warm-up epochs (empty")
    expect(warmup).to_have_value("")
    page.get_by_label("Local folder").check()
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=("cat", "dog"), test_per_class=2)
    page.get_by_label("Folder with train/<class>/ and test/<class>/ images").fill(str(data))
    page.get_by_label("Epochs", exact=True).fill("1")
    with page.expect_request(lambda r: r.method == "POST" and "queue/join" in r.url) as sent:
        page.get_by_role("button", name="Start").click()
    assert sent.value.post_data_json["data"][-1] in (None, "")  # the run's default: 10% of the run
    expect(page.locator("#train-progress")).to_contain_text("finished 1 epoch", timeout=150_000)
    page.close()


def test_the_first_step_note_goes_once_a_folder_is_typed(server, browser, tmp_path):
    """Train: "First step: no training data … type a folder" stayed on screen during and
    after a run on a typed folder."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    page.get_by_role("tab", name="Train").click()
    note = page.get_by_text("First step:")
    expect(note).to_be_visible()
    page.get_by_label("Folder with train/<class>/ and test/<class>/ images").fill(str(tmp_path))
    expect(note).to_be_hidden()
    page.close()


def test_open_this_checkpoint_in_explore_goes_to_the_explore_tab(server, browser, tmp_path):
    """The button loaded the checkpoint into Explore but left the page on Train."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    train_in_the_page(page, tmp_path, epochs=1)
    page.get_by_role("button", name="Open this checkpoint in Explore").click()
    expect(page.get_by_role("tab", name="Explore")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("combobox", name=re.compile("^Model"))).to_have_value(re.compile("my run"))
    page.close()


def test_lesson_3s_model_picker_shows_the_whole_name(server, browser):
    """Lessons: "CIFAR-10 nano (bundl" — the picker was too narrow for its model's name."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    page.get_by_role("tab", name="Lessons").click()
    page.get_by_role("tab", name="Which heads matter").click()
    picker = page.get_by_role("combobox", name="Model (with classes)")
    expect(picker).to_be_visible()
    assert picker.evaluate("e => e.scrollWidth <= e.clientWidth"), picker.input_value()
    page.close()


def test_lessons_open_on_an_image_and_a_refusal_leaves_no_bare_error_badge(server, browser):
    """Lessons: they opened empty, so the first Compare gave an Error badge, and a
    new image left that badge until Compare was pressed again. A refusal (no model to
    compare, lesson 3's "7.2, 3.9, banana", Train's Start with an empty folder box) left a red
    "Error" badge with no words on the outputs: now only its toast says why."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    page.get_by_role("tab", name="Lessons").click()
    compare_with_the_bundled_model(page)  # no upload: the lesson's own opening image
    picture = page.locator("#lesson-compare")
    page.get_by_role("button", name="Clear").first.click()  # no model to compare: refused
    page.get_by_role("button", name="Compare", exact=True).click()
    expect(page.locator(".toast-body")).to_contain_text("pick 1 to 3 models to compare")
    expect(picture.locator("img")).to_be_visible()  # the last comparison stays
    badges = page.locator("[data-testid=status-tracker] .error")
    expect(badges).to_have_count(0)
    page.get_by_role("tab", name="Which heads matter").click()
    page.get_by_label("Heads off", exact=False).fill("7.2, 3.9, banana")
    page.get_by_role("button", name="Switch these heads off").click()
    expect(page.locator(".toast-body")).to_contain_text("layer 7 in '7.2' is out of range")
    expect(badges).to_have_count(0)
    page.get_by_role("tab", name="Train").click()
    page.get_by_label("Local folder").check()
    page.locator("#train-start").click()
    expect(page.locator(".toast-body")).to_contain_text("Enter the folder that holds train/ and test/")
    expect(badges).to_have_count(0)
    page.close()


def test_arrow_keys_act_on_the_tab_in_view_only(server, browser):
    """On the Lessons or Train tab the arrow keys moved Explore's hidden query (and,
    before any image, raised two toasts). A key there must send Explore nothing."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    expect(page.locator("#query-right")).to_be_visible()
    # Every click on a query button, by id: a key that reaches one has clicked it by the time press() returns.
    page.evaluate(
        """() => { window.queryClicks = [];
        document.addEventListener("click", (e) => { const b = e.target.closest("[id^=query-]");
          if (b) window.queryClicks.push(b.id); }, true); }"""
    )
    keys = ("ArrowRight", "ArrowDown", "ArrowLeft", "ArrowUp", "Escape")

    def press_on(tab: str) -> list:
        page.get_by_role("tab", name=tab).click()
        page.locator("body").click(position={"x": 5, "y": 5})
        for key in keys:
            page.keyboard.press(key)
        page.get_by_role("tab", name="Explore").click()
        return page.evaluate("() => window.queryClicks.splice(0)")

    assert press_on("Lessons") == []  # no image yet: nothing sent, so no toast
    expect(page.locator(".toast-body")).to_have_count(0)
    pick_example(page, "cat")
    click_patch(page, 2, 3)
    expect(page.locator("#query")).to_contain_text("row 2, column 3")
    assert press_on("Lessons") == [] and press_on("Train") == []
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")  # on Explore the keys still move the query
    expect(page.locator("#query")).to_contain_text("row 2, column 4")
    assert page.evaluate("() => window.queryClicks") == ["query-right"]
    expect(page.locator(".toast-body")).to_have_count(0)
    page.close()


@pytest.mark.parametrize("refused", ["strip", "pdf", "truncated"])
def test_a_refused_upload_leaves_the_box_on_the_image_the_maps_belong_to(server, browser, tmp_path, refused):
    """After a 9000 x 300 strip or a PDF named .png the upload box showed the refused
    file (or a broken icon) beside the previous image's predictions and maps. A truncated
    file, whose header passes, failed in the analysis: bare "Error" badges on every view."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    shown = page.locator("#upload img")
    cat = shown.get_attribute("src")
    bad = tmp_path / f"{refused}.png"
    if refused == "strip":
        Image.new("RGB", (9000, 300), "white").save(bad)
    elif refused == "truncated":
        bad.write_bytes((EXAMPLES / "dog.jpg").read_bytes()[:800])  # a download cut short
    else:
        bad.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
    page.locator("#upload input[type=file]").set_input_files(str(bad))
    said = {"strip": "more elongated", "pdf": "not an image", "truncated": "truncated or corrupt"}[refused]
    expect(page.locator(".toast-body")).to_contain_text(said)
    expect(shown).to_have_attribute("src", cat)  # the cat again, the image the maps belong to
    assert shown.evaluate("i => i.complete && i.naturalWidth > 0")  # a picture, not a broken icon
    expect(page.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS:"))
    expect(page.locator("[data-testid=status-tracker] .error")).to_have_count(0)
    page.close()


def test_a_typed_layer_past_the_model_comes_back_with_a_message_and_no_error_badge(server, browser):
    """Typing 9 for a 6-layer model left 9 in the box, the slider at 6 and an Error
    badge over the maps."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    pick_example(page, "cat")
    typed = page.get_by_label(f"number input for {LAYER}")
    typed.fill("3")
    typed.press("Enter")
    expect(page.locator("#heads img")).to_have_attribute("alt", re.compile("layer 3 of 6"))
    typed.fill("9")
    typed.press("Enter")
    expect(page.locator("#heads .maps-status")).to_contain_text("There is no layer 9: this model has layers 1 to 6.")
    expect(typed).to_have_value("6")
    expect(page.get_by_label(f"range slider for {LAYER}")).to_have_value("6")
    expect(page.locator("#heads img")).to_have_attribute("alt", re.compile("layer 6 of 6"))
    expect(page.locator("[data-testid=status-tracker] .error")).to_have_count(0)
    page.close()


def test_play_pauses_and_a_key_during_play_stops_it_with_slider_and_maps_on_one_layer(server, browser):
    """Play could not be paused, and End pressed mid-play left the slider and the
    maps on different layers."""
    from playwright.sync_api import expect

    from ui.explore import PLAY_STEP_S

    page = open_page(browser, server)
    pick_example(page, "cat")
    box, slider, heads = (
        page.get_by_label(f"number input for {LAYER}"),
        page.get_by_label(f"range slider for {LAYER}"),
        page.locator("#heads img"),
    )
    play, pause = page.locator("#play"), page.locator("#pause")
    play.click()
    expect(box).to_have_value("2")
    pause.click()
    expect(play).to_be_visible()
    expect(pause).to_be_hidden()
    stopped = box.input_value()
    page.wait_for_timeout(3 * PLAY_STEP_S * 1000)  # long enough for three more layers, had it gone on
    expect(box).to_have_value(stopped)
    expect(heads).to_have_attribute("alt", re.compile(f"layer {stopped} of 6"))
    play.click()  # Play goes on from where it stopped
    expect(box).to_have_value(str(int(stopped) + 1))
    slider.press("Home")  # a key on the slider while it plays stops it there
    expect(play).to_be_visible()
    expect(box).to_have_value("1")
    page.wait_for_timeout(3 * PLAY_STEP_S * 1000)
    expect(box).to_have_value("1")
    expect(heads).to_have_attribute("alt", re.compile("layer 1 of 6"))
    page.close()


WORDS_BROKEN = """() => {
  const broken = [], h1 = document.querySelector("#title h1");
  const walker = document.createTreeWalker(h1, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (tops.size > 1) broken.push(match[0]);
    }
  }
  return broken;
}"""

SCROLLED_TO_THE_END = """async (img) => {
  await img.decode();  // measured once loaded: a busy machine may not have it yet (naturalWidth 0)
  const frame = img.closest(".image-frame");
  frame.scrollLeft = frame.scrollWidth;
  const shown = img.getBoundingClientRect(), box = frame.getBoundingClientRect();
  return {scrolls: frame.scrollWidth > frame.clientWidth, end: shown.right <= box.right + 1,
          scale: shown.width / img.naturalWidth};
}"""

PROMPT_INSIDE = """() => {
  const prompt = document.querySelector("#upload p"), box = document.querySelector("#upload").getBoundingClientRect();
  const range = document.createRange();
  range.selectNodeContents(prompt);
  return [...range.getClientRects()].every((r) => r.left >= box.left && r.right <= box.right && r.bottom <= box.bottom);
}"""


def test_offline_the_pickers_list_what_opens_here_first_and_a_failed_pick_goes_back(server, browser):
    """Offline, the pickers offered 23 models "(pretrained, downloads once)" that cannot
    load; the failure spoke of HF_HUB_OFFLINE and a server path; lesson 3's picker stayed on the
    failed model and an Error badge hid its heads box and top-5."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    picker = page.get_by_role("combobox", name="Model", exact=True)
    picker.click()
    options = page.get_by_role("option").all_inner_texts()
    assert options[0].endswith("(default)") and not [o for o in options if "downloads once" in o]
    away = [i for i, o in enumerate(options) if o.endswith("(not on this machine, and no internet to download it)")]
    assert len(away) == len(options) - 1 and away == list(range(1, len(options)))  # what opens comes first
    page.get_by_role("option", name=re.compile(r"^deit_small_patch16_224\.fb_in1k")).click()
    toast = page.locator(".toast-body")
    expect(toast).to_contain_text("deit_small_patch16_224.fb_in1k is not on this machine")
    assert "HF_HUB" not in toast.inner_text() and "/" not in toast.inner_text()
    expect(picker).to_have_value(re.compile(r"\(default\)$"))
    page.get_by_role("tab", name="Lessons").click()
    page.get_by_role("tab", name="Which heads matter").click()
    lesson = page.get_by_role("combobox", name="Model (with classes)")
    lesson.click()
    page.get_by_role("option", name=re.compile(r"^deit_small_patch16_224\.fb_in1k")).click()
    expect(page.get_by_text("⚠️ deit_small_patch16_224.fb_in1k is not on this machine")).to_be_visible()
    expect(lesson).to_have_value(re.compile(r"\(default\)$"))
    expect(page.get_by_role("textbox", name=re.compile(r"^Heads off \(layer\.head"))).to_be_visible()
    expect(page.locator("[data-testid=status-tracker] .error")).to_have_count(0)
    page.close()


def test_the_phone_keeps_the_title_whole_the_live_button_small_and_every_picture_legible(server, browser):
    """At 390 x 844 the title broke mid-word ("attentio / n"), the Live button grew into
    a 200 x 374 px block, the head maps were cut at head 4 (then scrolled sideways, their colour
    bar's end off the screen), the lessons' pictures shrank to ~6 px text and lessons 2 and 3 hid
    behind a "…" menu."""
    from playwright.sync_api import expect

    from ui.pictures import SWIPE_CUE

    phone = open_page(browser, server, PHONE)
    pick_example(phone, "cat")
    assert phone.evaluate(WORDS_BROKEN) == []
    assert phone.locator("#open-live").bounding_box()["height"] <= 60
    heads = phone.locator("#heads img").evaluate(SCROLLED_TO_THE_END)
    assert heads == {"scrolls": False, "end": True, "scale": 1}  # drawn size, wrapped to the column, bar whole
    phone.get_by_role("tab", name="Lessons").click()
    for lesson in ("Supervised vs self-supervised", "Artefacts and registers", "Which heads matter"):
        expect(phone.get_by_role("tab", name=lesson)).to_be_visible()
    compare_with_the_bundled_model(phone)
    compare = phone.locator("#lesson-compare img").evaluate(SCROLLED_TO_THE_END)
    assert compare["end"] and compare["scale"] * 13 >= 12  # canvas.TEXT_PX, shown at its drawn size
    expect(phone.get_by_text(SWIPE_CUE).first).to_be_visible()  # above the lesson's wide picture
    phone.close()
    page = open_page(browser, server)
    expect(page.get_by_text(SWIPE_CUE).first).to_be_hidden()  # a projector sees the whole picture
    page.close()


def test_the_presentation_mode_makes_every_text_18_px_and_keeps_the_maps_on_the_first_screen(
    present_server, server, browser
):
    """On a 1280 x 720 projector the main text was 14 px, most buttons 12 px and the
    pictures' labels ~13 px, the upload prompt was cut ("drop, upload, pas…"), and 150 % browser
    zoom pushed the maps off the first screen. `python app.py --present`: every text on the page at
    least 18 px (computed CSS) and in the pictures (measured in their pixels), the input, its grid
    and the head maps still on the first screen together."""
    from playwright.sync_api import expect

    page = open_page(browser, present_server)
    page.locator("#upload p").wait_for()
    assert page.evaluate(PROMPT_INSIDE)
    pick_example(page, "cat")
    sizes = own_text_sizes(page)
    assert len(sizes) > 50 and [s for s in sizes if s[1] < 18] == []
    for selector in ("#input-view img", "#heads img"):
        box = page.locator(selector).bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= SCREEN["height"], selector
    heads = page.locator("#heads img")
    shown = heads.evaluate(DRAWN_SCALE)
    picture = shown_picture(heads)
    assert first_line_px(picture) * shown >= 18
    open_more_views(page, "Mean attention distance")
    for tab, elem_id in (("Mean attention distance", "distance"), ("Position embeddings", "similarity")):
        page.get_by_role("tab", name=tab).click()
        drawn = page.locator(f"#{elem_id} img")
        expect(drawn).to_have_attribute("src", re.compile("."))
        shown = drawn.evaluate(DRAWN_SCALE)
        picture = Image.open(io.BytesIO(page.request.get(drawn.get_attribute("src")).body()))
        assert first_line_px(picture) * shown >= 18, elem_id
    page.close()
    plain = open_page(browser, server)  # without the switch: the prompt is whole too, the pictures' words smaller
    plain.locator("#upload p").wait_for()
    assert plain.evaluate(PROMPT_INSIDE)
    pick_example(plain, "cat")
    heads = plain.locator("#heads img")
    assert first_line_px(shown_picture(heads)) < 18
    plain.close()


def test_the_pca_and_logit_lens_tabs_draw_their_legends_and_say_what_they_show(server, browser):
    from playwright.sync_api import expect

    from explorer import canvas

    page = open_page(browser, server)
    pick_example(page, "cat")
    open_more_views(page, "Patch features (PCA)")
    pca = page.locator("#pca img")
    expect(pca).to_have_attribute("alt", re.compile(r"layer 6 of 6 in colour for 1 image\(s\) \(this image\)"))
    page.get_by_label("Fit one PCA on this image and the six animal examples").check()
    expect(pca).to_have_attribute("alt", re.compile(r"7 image\(s\) \(this image, bird, cat, deer, dog, frog, horse\)"))
    drawn = Image.open(io.BytesIO(page.request.get(image_src(page, "pca")).body())).convert("RGB")
    for cmap in canvas.CHANNELS.values():  # the RGB legend: one bar per channel, black to its colour
        assert gradient_runs(drawn, cmap), cmap
    page.get_by_role("tab", name="Logit lens").click()
    expect(page.locator("#logit-lens img")).to_have_attribute("alt", re.compile(r"never trained.*layer 6: \w+ "))
    expect(page.locator("#more")).to_contain_text("never trained to be read this way")
    page.close()


@pytest.fixture(scope="module")
def clip_server(tiny_checkpoint, tmp_path_factory):
    """The real app opening on CLIP B/16, a tiny random CLIP in its place (tests/clip_helpers.py)."""
    from clip_helpers import clip_app

    with clip_app(tiny_checkpoint, tmp_path_factory) as url:
        yield url


def test_a_teacher_types_three_words_and_sees_three_maps(clip_server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, clip_server)
    expect(page.locator("#prompts textarea")).to_have_value("a cat, a dog, a teapot, a rainbow, a car")
    page.get_by_role("button", name="example: cat").click()
    # the analysis draws the default words at once: their probabilities in place of the top classes
    expect(page.locator("#prompt-maps img")).to_have_count(5)
    expect(page.locator("#predictions")).to_contain_text("a teapot")
    page.locator("#prompts textarea").fill("a cat, a teapot, a rainbow")
    page.locator("#compare-words").click()
    maps = page.locator("#prompt-maps img")
    expect(maps).to_have_count(3)
    for word in ("a cat", "a teapot", "a rainbow"):
        expect(page.locator(f"#prompt-maps img[alt*=\"the words '{word}'\"]")).to_have_count(1)
    expect(page.locator("#predictions")).not_to_contain_text("a dog")
    expect(page.locator("#prompt-note")).to_contain_text("a photo of {}.")
    page.close()


def test_an_enlarged_image_is_said_and_sizes_read_width_by_height(server, browser, tmp_path):
    """A 5 x 5 image was enlarged with no note; sizes read "height × width" in one
    message and "width × height" in another."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    small = tmp_path / "small.png"
    noise = np.random.default_rng().integers(0, 256, (40, 60, 3), np.uint8)  # a new file each run: no cached copy
    Image.fromarray(noise[:5, :5]).save(small)
    page.locator("#upload input[type=file]").set_input_files(str(small))
    numbers = page.locator("#numbers")
    expect(numbers).to_contain_text("Enlarged: the image is 5 × 5 px")
    expect(numbers).to_contain_text("upscaled to 32 × 32 px (width × height)")
    wide = tmp_path / "wide.png"
    Image.fromarray(noise).save(wide)  # 60 wide, 40 high: the order shows
    page.locator("#upload input[type=file]").set_input_files(str(wide))
    expect(numbers).to_contain_text("uploaded 60 × 40 px → model input 32 × 32 px (width × height)")
    expect(numbers).not_to_contain_text("Enlarged")
    page.close()


def test_arrows_from_cls_start_at_row_1(server, browser, tmp_path):
    """The "↑" key from CLS landed on row 5; every arrow from CLS now goes to row 1, column 1.
    After an upload, as in a lesson: the example's analysis replaces the upload's, query and all."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    upload = tmp_path / "noise.png"
    Image.fromarray(np.random.default_rng().integers(0, 256, (40, 60, 3), np.uint8)).save(upload)
    page.locator("#upload input[type=file]").set_input_files(str(upload))
    expect(page.locator("#numbers")).to_contain_text("uploaded 60 × 40 px")
    pick_example(page, "cat")
    # The example's analysis is the one shown, not a late one of the upload's that the example's
    # would then replace, query and all, after the click below (seen once, with two suites running).
    expect(page.locator("#numbers")).to_contain_text("uploaded 32 × 32 px")
    page.locator("body").click(position={"x": 5, "y": 5})
    for key in ("ArrowUp", "ArrowLeft"):
        # From a patch, so that the CLS below is the reset's answer (from CLS the page would
        # already say it, and an arrow pressed at once can reach the server before the reset).
        click_patch(page, 4, 4)
        expect(page.locator("#query")).to_contain_text("row 4, column 4")
        page.keyboard.press("Escape")
        expect(page.locator("#query")).to_contain_text("the CLS token")
        page.keyboard.press(key)
        expect(page.locator("#query")).to_contain_text("row 1, column 1", timeout=15_000)
    page.close()


def test_error_toasts_fade_and_never_cover_the_train_tabs_form(server, browser):
    """Error toasts never faded and stacked over the Train tab's folder field."""
    from playwright.sync_api import expect

    from ui.checks import ERROR_TOAST_S

    page = open_page(browser, server)
    picker = page.get_by_role("combobox", name="Model", exact=True)
    picker.click()
    page.get_by_role("option", name=re.compile(r"^deit_small_patch16_224\.fb_in1k")).click()
    toast = page.locator(".toast-body")
    expect(toast).to_contain_text("is not on this machine")
    page.get_by_role("tab", name="Train").click()
    folder = page.get_by_label("Folder with train/<class>/ and test/<class>/ images")
    box = folder.bounding_box()
    on_top = page.evaluate("([x, y]) => document.elementFromPoint(x, y).tagName", [box["x"] + 20, box["y"] + 10])
    assert on_top in ("INPUT", "TEXTAREA"), on_top  # the field, not a toast over it
    expect(toast).to_have_count(0, timeout=(ERROR_TOAST_S + 10) * 1000)  # it fades by itself
    page.close()


def test_the_train_tab_offline_in_words_one_entry_per_run_and_start_waits_for_the_run(server, browser, tmp_path):
    """Offline the Train tab offered CIFAR-10 and answered "DataError: ...
    URLError" with "failed ·", its picker did not mark models that cannot be had, Start stayed
    enabled during a run, the device note and last epoch were said twice, the checkpoint's
    download sat under the pictures, and each run added three entries to the model list."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    page.get_by_role("tab", name="Train").click()
    picker = page.get_by_role("combobox", name=re.compile("^Model: a preset"))
    picker.click()
    options = page.get_by_role("option").all_inner_texts()
    pretrained = [o for o in options if "deit" in o or "dino" in o]
    assert pretrained and all(o.endswith("(not on this machine, and no internet to download it)") for o in pretrained)
    page.keyboard.press("Escape")
    page.get_by_label("CIFAR-10 (cannot be downloaded here: no internet)").check()
    page.get_by_role("button", name="Start").click()
    expect(page.locator(".toast-body")).to_contain_text("CIFAR-10 cannot be downloaded here")
    assert "Error:" not in page.locator(".toast-body").inner_text()  # no "DataError: ... URLError"
    expect(page.locator("#train-progress")).not_to_contain_text("failed")
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=("cat", "dog"), test_per_class=2)
    page.get_by_label("Local folder").check()
    page.get_by_label("Folder with train/<class>/ and test/<class>/ images").fill(str(data))
    page.get_by_label("Epochs", exact=True).fill("3")
    page.get_by_label("Batch size").fill("8")
    start = page.get_by_role("button", name="Start")
    start.click()
    expect(start).to_be_disabled()  # one run at a time
    expect(page.locator("#train-progress")).to_contain_text("finished 3 epoch", timeout=150_000)
    expect(start).to_be_enabled()
    status = page.locator("#train-status").inner_text()
    assert status.count("slow") == 1 and "epoch 3: train loss" not in status  # the bar has the numbers
    for button in (
        page.locator("#train-checkpoint a").first,
        page.get_by_role("button", name=re.compile("^Open this")),
    ):
        assert button.bounding_box()["y"] < page.locator("#curves").bounding_box()["y"]  # above the pictures
    picker.click()
    runs = [o.split("\n")[-1] for o in page.get_by_role("option").all_inner_texts()]  # "✓\n" marks the chosen
    runs = [o for o in runs if o.startswith("checkpoint:")]
    # A local server lists every test's runs, each once by its name; no 3-epoch run but this one. A
    # run's training state and its model file by path ("<run>/last.safetensors") are never listed.
    assert runs.count("checkpoint: my run, 3 epochs") == 1, runs
    assert not [o for o in runs if o.endswith("last.safetensors")], runs  # API clients' runs may be listed by path
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Open this checkpoint in Explore").click()
    explore = page.get_by_role("combobox", name="Model", exact=True)
    expect(explore).to_have_value("checkpoint: my run, 3 epochs")
    explore.click()
    listed = [o.split("\n")[-1] for o in page.get_by_role("option").all_inner_texts()]  # "✓\n" marks the chosen
    assert [o for o in listed if o.startswith("checkpoint:")] == runs
    page.close()


def test_the_lessons_take_explores_photo(server, browser):
    """The Lessons showed their own 32 px cat, not the photo on the Explore tab."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    page.locator("#upload input[type=file]").set_input_files(gradio.media.get_image("cheetah1.jpg"))
    expect(page.locator("#predictions")).to_contain_text("%")
    photo = page.locator("#upload img").evaluate("i => [i.naturalWidth, i.naturalHeight]")
    page.get_by_role("tab", name="Lessons").click()
    lesson = page.locator("#lesson-image img")
    page.wait_for_function(
        "([w, h]) => { const i = document.querySelector('#lesson-image img'); "
        "return i && i.complete && i.naturalWidth === w && i.naturalHeight === h; }",
        arg=photo,
    )
    assert photo[0] > 32  # the cheetah, not the 32 px cat
    compare_with_the_bundled_model(page)
    expect(page.locator("#lesson-compare img")).to_be_visible()
    assert lesson.evaluate("i => i.naturalWidth") == photo[0]
    page.close()


PICKERS_WHOLE = """() => [...document.querySelectorAll('input[role=combobox]')]
  .filter((e) => e.checkVisibility() && e.value)
  .map((e) => [e.getAttribute('aria-label'), e.value, e.scrollWidth <= e.clientWidth])"""


def test_the_phones_pickers_show_whole_model_names(server, browser):
    """At 390 x 844 the pickers cut the model's name ("CIFAR-10 na▾o")."""
    phone = open_page(browser, server, PHONE)
    phone.get_by_role("combobox", name="Model", exact=True).wait_for()
    seen = phone.evaluate(PICKERS_WHOLE)
    for tab, lessons in (("Live", ()), ("Train", ()), ("Lessons", ("Artefacts and registers", "Which heads matter"))):
        phone.get_by_role("tab", name=tab).click()
        phone.wait_for_timeout(500)
        seen += phone.evaluate(PICKERS_WHOLE)
        for lesson in lessons:
            phone.get_by_role("tab", name=lesson).click()
            phone.wait_for_timeout(500)
            seen += phone.evaluate(PICKERS_WHOLE)
    models = [s for s in seen if s[0].startswith(("Model", "First row", "Second row"))]
    assert len(models) >= 6 and [s for s in seen if not s[2]] == [], seen  # Explore, Live, Train, 3 lessons
    phone.close()


def test_at_150_percent_zoom_the_maps_stay_on_the_first_screen(server, browser):
    """A 1280 x 720 projector at 150 % browser zoom (853 x 480 CSS px at 1.5 device
    pixels each) dropped to two columns and the maps left the first screen."""
    from playwright.sync_api import expect

    zoomed = {"width": round(SCREEN["width"] / 1.5), "height": round(SCREEN["height"] / 1.5)}
    page = browser.new_page(viewport=zoomed, device_scale_factor=1.5)
    page.set_default_timeout(60_000)
    page.goto(server)
    pick_example(page, "cat")
    page.evaluate("window.scrollTo(0, 0)")
    grid, heads = (page.locator(s).bounding_box() for s in ("#input-view img", "#heads img"))
    for box in (grid, heads):
        assert box["y"] >= 0 and box["y"] + box["height"] <= zoomed["height"], box
    assert grid["x"] + grid["width"] <= heads["x"]  # side by side
    assert abs(grid["width"] - grid["height"]) <= 1  # the square input is not stretched
    click_patch(page, 2, 7)  # and a click lands on the patch under it
    expect(page.locator("#query")).to_contain_text("row 2, column 7")
    page.close()


def test_the_live_button_without_a_camera_says_so_where_the_readout_is(server, browser):
    """With no camera, neither the ▶ Live button nor the webcam's own button said anything: Gradio
    logged "Requested device not found" to the console (a teacher's walk). Chromium here has no
    camera (no fake one: ARGS)."""
    from playwright.sync_api import expect

    page = open_page(browser, server)
    page.locator("#open-live").click()
    said = page.locator("#live-status #live-no-camera")
    expect(said).to_have_text(re.compile(r"^No camera found: plug one in .* or upload a clip below"))
    expect(said).to_be_visible()
    page.close()


def test_lesson_2_opens_on_a_register_model_downloaded_since_the_page_was_built(
    browser, tiny_checkpoint, tmp_path, monkeypatch
):
    """Issue 61: a register model downloaded on the Explore tab, lesson 2 still opened on the
    bundled model twice and said "No model with registers is on this machine yet"."""
    from app_helpers import served
    from playwright.sync_api import expect

    import ui
    import vit
    from explorer.catalog import ModelCatalog
    from vit.preprocessing import CIFAR10

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    downloaded: set[str] = set()
    monkeypatch.setattr(vit, "is_pretrained_cached", lambda name: name in downloaded)
    fake = vit.create_model("vit_cifar_nano", depth=5, register_tokens=4, pos_embed_prefix=False, num_classes=0)
    monkeypatch.setattr(vit, "load_pretrained", lambda name, progress=None: (fake, vit.ModelMeta([], CIFAR10)))
    reg = "vit_small_patch14_reg4_dinov2.lvd142m"
    with served(ui.build_demo(ModelCatalog(tiny_checkpoint, tmp_path / "runs"))) as url:
        page = open_page(browser, url)
        downloaded.add(reg)  # as Explore's picker would have downloaded it
        page.get_by_role("tab", name="Lessons").click()
        page.get_by_role("tab", name="Artefacts and registers").click()
        first_row = page.get_by_role("combobox", name="First row: a model with registers")
        expect(first_row).to_have_value(re.compile(re.escape(reg)))
        expect(page.get_by_text("No model with registers is on this machine yet")).to_have_count(0)
        expect(page.get_by_role("slider", name=re.compile("Layer")).first).to_have_value("5")
        page.close()


def test_the_phone_gives_each_pca_control_a_line_with_its_words_whole(server, browser):
    """The PCA tab's slider and two checkboxes share a row (`phone-lines`) whose controls on a phone
    each take the whole width, so Gradio's rows, which wrap, put them a line each (issue 42: the
    checkboxes' labels were cut side by side). A rule that also set the wrap began
    ".gradio-container", which Gradio's prefix for @media blocks never matched: removed, as this
    test passed with it dead."""
    phone = open_page(browser, server, PHONE)
    pick_example(phone, "cat")
    open_more_views(phone, "Patch features (PCA)")
    labels = [phone.get_by_label(words) for words in ("Fit one PCA on this image", "Remove the background")]
    for label in labels:
        label.wait_for()
    boxes = [label.locator("xpath=ancestor::label[1]").bounding_box() for label in labels]
    assert boxes[0]["y"] + boxes[0]["height"] <= boxes[1]["y"], boxes  # one under the other
    whole = phone.evaluate(
        """() => [...document.querySelectorAll('.phone-lines label')].filter(l => l.offsetParent)
                 .map(l => l.scrollWidth <= l.clientWidth + 1 && l.getBoundingClientRect().right <= innerWidth)"""
    )
    assert whole and all(whole), whole
    phone.close()


CAPTION_CENTRE = """(head) => { const m = window.attentionMaps, c = m.cells.find((cell) => cell.head === head);
  const img = document.querySelector('#heads img'), r = img.getBoundingClientRect(), f = r.width / img.naturalWidth;
  return [r.left + (c.x + c.width / 2) * f, r.top + (c.y + (c.height + c.tall) / 2) * f]; }"""


def click_caption(page, head: int) -> None:
    """Click the caption under head `head`'s (1-based) tile of the head maps: points at that head."""
    page.locator("#heads img").scroll_into_view_if_needed()
    page.mouse.click(*page.evaluate(CAPTION_CENTRE, head))


def follow_the_head_more_view_and_lesson(teacher, students, code: str, and_lesson_3: bool = False) -> None:
    """Issue 59's Follow, at layer 5 of the cat: the head the teacher points at (outlined, said, at every cell
    on every student's page, pixel for pixel on a page laid out as the teacher's), the teacher's More view (the
    same picture's bytes) and a lesson at its step (the same lesson opened, the teacher's picture of it; with
    `and_lesson_3`, lesson 3's words and tables too), then back on Explore with the teacher."""
    from playwright.sync_api import expect

    click_caption(teacher, 2)  # the teacher points at head 2: outlined, its caption says so, on every page
    led, _ = drawn_heads(teacher)
    for student in students:
        expect(student.locator("#heads img")).to_have_attribute(
            "alt", re.compile("layer 5 of 6, .*points at head 2, outlined")
        )
        lines = student.evaluate("() => window.attentionMaps.painted.lines")
        assert "head 2, pointed at" in lines[1] and "head 1" in lines[0], lines
        assert_pages_same_at_every_cell(student, teacher)
        drawn, _ = drawn_heads(student)
        assert drawn.shape != led.shape or (drawn == led).all()  # the outline too, pixel for pixel
    assert "head 2, pointed at" in teacher.evaluate("() => window.attentionMaps.painted.lines")[1]
    open_more_views(teacher, "Rollout")  # the teacher's More view: on the students' pages, the same bytes
    rollout = np.asarray(shown_picture(teacher.locator("#rollout img")).convert("RGB"))
    for student in students:
        expect(student.locator(".class-more-view")).to_have_text("The teacher's More view: Rollout.")
        expect(student.locator(".class-more img")).to_have_attribute(
            "alt", teacher.locator("#rollout img").get_attribute("alt")
        )
        assert (np.asarray(shown_picture(student.locator(".class-more img")).convert("RGB")) == rollout).all()
    teacher.get_by_role("tab", name="Lessons").click()  # a lesson: every following page opens it
    expect(teacher.locator("#lesson-class-start")).to_be_hidden()  # one class a teacher, whichever tab
    expect(teacher.locator(".lesson-class-code")).to_contain_text(f"You lead class {code}")
    for student in students:
        lesson = student.get_by_role("tab", name="Supervised vs self-supervised")
        expect(lesson).to_have_attribute("aria-selected", "true")
        said = "The teacher's lesson: Supervised vs self-supervised."
        expect(student.locator(".class-lesson-view")).to_have_text(said)
    compare_with_the_bundled_model(teacher)  # its step: the teacher's button, the class's one computation
    compared = np.asarray(shown_picture(teacher.locator("#lesson-compare img")).convert("RGB"))
    for student in students:
        expect(student.locator(".class-lesson > img")).to_be_visible()
        assert (np.asarray(shown_picture(student.locator(".class-lesson > img")).convert("RGB")) == compared).all()
        assert student.locator("#lesson-compare img").count() == 0  # the student's page ran no lesson
    if and_lesson_3:  # one student is enough: its tables are the teacher's, row for row
        follow_lesson_3(teacher, students[0])
    teacher.get_by_role("tab", name="Explore").click()  # back on Explore: so is every following page
    for student in students:
        expect(student.get_by_role("tab", name="Explore")).to_have_attribute("aria-selected", "true")


TABLE_ROWS = "t => [...t.rows].map((r) => [...r.cells].map((c) => c.textContent))"
LABEL_ROWS = "e => [...e.querySelectorAll('dl')].map((d) => [d.querySelector('dt'), d.querySelector('dd')]"
LABEL_ROWS += ".map((c) => c.textContent.replace(/\\s+/g, ' ').trim()))"


def follow_lesson_3(teacher, student) -> None:
    """Lesson 3 ("Which heads matter", no one picture) followed: the teacher's choices said as words on the
    student's page, the teacher's top-5 and head ranking written there row for row, and the student's page
    running neither (its own result components stay empty)."""
    from playwright.sync_api import expect

    teacher.get_by_role("tab", name="Which heads matter").click()
    expect(student.get_by_role("tab", name="Which heads matter")).to_have_attribute("aria-selected", "true")
    expect(student.locator(".class-lesson-view")).to_have_text("The teacher's lesson: Which heads matter.")
    said = student.locator(".class-lesson-said")
    expect(said).to_contain_text("Model (with classes)")
    teacher.get_by_label("Heads off", exact=False).fill("1.1, 2.2")  # typed: said, nothing run yet
    expect(said).to_contain_text("1.1, 2.2")
    teacher.get_by_role("button", name="Switch these heads off").click()
    expect(teacher.locator("#lesson-top5 dl").first).to_be_visible()
    top5 = teacher.locator("#lesson-top5").evaluate(LABEL_ROWS)
    tables = student.locator(".class-lesson-tables table")
    expect(tables.first.locator("caption")).to_have_text("Top-5 with these heads off")
    expect(tables.first.locator("tr")).to_have_count(len(top5))
    assert tables.first.evaluate(TABLE_ROWS) == top5 and len(top5) == 5, top5
    expect(said).to_contain_text("Heads off: 1.1, 2.2")  # the teacher's note, as words
    teacher.get_by_role("button", name="Rank every head (one forward pass per head)").click()
    expect(teacher.locator(".lesson-said").filter(has_text="heads ranked").first).not_to_contain_text("so far")
    ranking = teacher.locator(".lesson-table [role=row]")
    expect(ranking).to_have_count(11)  # its header and the top 10 (24 heads ranked)
    expect(tables).to_have_count(2)
    expect(tables.nth(1).locator("caption")).to_have_text("Most important heads (the top 10)")
    expect(tables.nth(1).locator("tr")).to_have_count(11)
    want = [r.replace("⋮", "").split() for r in ranking.all_inner_texts()]  # the header without its menus, ⋮
    for _ in range(100):  # the ranking is pushed as it goes: its last step may reach the student after the teacher's
        rows = [" ".join(row).split() for row in tables.nth(1).evaluate(TABLE_ROWS)]
        if rows == want:
            break
        student.wait_for_timeout(100)
    assert rows == want  # the same words, row for row
    assert student.locator("#lesson-top5 dl").count() == 0  # the student's page ran no lesson


def class_started(browser, server: str, teacher=None):
    """A teacher's page (its own context: its own storage, its own key; `teacher`, one opened on the server
    in a context the test keeps) on the cat that started a class: the page, and its code's element once it
    shows the code (the page's modules loaded, the followers an image)."""
    from playwright.sync_api import expect

    teacher = teacher or open_page(browser, server)
    pick_example(teacher, "cat")
    teacher.locator("#class-start").click()
    code = teacher.locator("#class-code")
    expect(code).to_have_text(re.compile(r"^[A-Z0-9]{6}$"))
    return teacher, code


def class_ended(teacher, student) -> None:
    """The teacher ends the class (one network runs 2 classes at once: the tests after start theirs), and a
    student's page says so."""
    from playwright.sync_api import expect

    teacher.locator("#class-end").click()
    expect(student.locator(".class-notice")).to_have_text("The teacher ended the class.")


def send_a_picture(gallery, tmp_path) -> None:
    """A student's gallery (`gallery`, its element) sends a picture file of the student's own (random pixels,
    48 x 64), and the page says it is sent."""
    from playwright.sync_api import expect

    picture = tmp_path / "mine.png"
    Image.fromarray(np.random.default_rng(3).integers(0, 256, (48, 64, 3), np.uint8)).save(picture)
    gallery.locator(".cg-file").set_input_files(str(picture))
    gallery.locator(".cg-send-file").click()
    expect(gallery.locator(".cg-sent")).to_contain_text("Your picture is sent")


def test_a_class_student_follows_the_teachers_layer_breaks_away_and_comes_back(server, browser):
    """Issue 59's first slice: a teacher starts a class; a student's page opened at its join address
    follows the teacher's image and layer, pushed as the teacher steps it, drawn from the teacher's one
    analysis (equal at every cell); a click of the student's own breaks away, one click comes back; a
    reload is the same student; Freeze holds the page on the teacher's view, Eyes on me brings it back;
    the end of the class reaches the student's page."""
    from playwright.sync_api import expect

    teacher, code = class_started(browser, server)
    expect(teacher.locator("#class-qr")).to_be_visible()
    # the app listens on 127.0.0.1 only (app.py's default): the teacher is told the room cannot reach it, and how
    expect(teacher.locator(".class-reach")).to_contain_text("start the app with python app.py --host 0.0.0.0")
    student = open_page(browser, f"{server}?class={code.text_content()}")
    heads = student.locator("#heads img")
    expect(heads).to_have_attribute("alt", re.compile("layer 6 of 6, .*for the query CLS"))  # the teacher's image
    expect(teacher.locator(".class-panel")).to_contain_text("1 student in class")
    expect(student.locator(".class-banner")).to_contain_text("You follow the teacher's screen")
    teacher.get_by_label(f"range slider for {LAYER}").press("ArrowLeft")
    expect(heads).to_have_attribute("alt", re.compile("layer 5 of 6"))  # pushed: the student's page follows
    expect(teacher.locator("#heads img")).to_have_attribute("alt", re.compile("layer 5 of 6"))
    assert_pages_same_at_every_cell(student, teacher)
    follow_the_head_more_view_and_lesson(teacher, [student], code.text_content(), and_lesson_3=True)
    click_patch(student, 2, 3)  # the student's own query: exploring on their own
    expect(student.locator("#class-follow")).to_be_visible()
    expect(student.locator(".class-banner")).to_contain_text("exploring on your own")
    teacher.get_by_label(f"range slider for {LAYER}").press("ArrowLeft")
    expect(teacher.locator("#heads img")).to_have_attribute("alt", re.compile("layer 4 of 6"))
    expect(heads).to_have_attribute("alt", re.compile("layer 5 of 6, .*for the query patch"))  # not while away
    student.locator("#class-follow").click()
    expect(heads).to_have_attribute("alt", re.compile("layer 4 of 6, .*for the query CLS"))
    expect(student.locator("#class-follow")).to_be_hidden()
    banner = student.locator(".class-banner").text_content()
    student.reload()  # the same student, by the token the page kept, back at the teacher's view
    expect(student.locator(".class-banner")).to_have_text(banner)
    expect(heads).to_have_attribute("alt", re.compile("layer 4 of 6, .*for the query CLS"))
    teacher.locator("#class-freeze").click()
    expect(student.locator(".class-banner")).to_contain_text("frozen the screens")
    click_patch(student, 2, 3)  # frozen: the page snaps back to the teacher's view
    expect(student.locator(".class-notice")).to_contain_text("frozen the class's screens")
    expect(heads).to_have_attribute("alt", re.compile("layer 4 of 6, .*for the query CLS"))
    teacher.locator("#class-freeze").click()  # released
    expect(student.locator(".class-banner")).not_to_contain_text("frozen")
    click_patch(student, 2, 3)
    expect(student.locator("#class-follow")).to_be_visible()
    teacher.locator("#class-eyes").click()  # Eyes on me: every page back to the teacher's view
    expect(student.locator(".class-notice")).to_contain_text("Eyes on the teacher's screen")
    expect(heads).to_have_attribute("alt", re.compile("layer 4 of 6, .*for the query CLS"))
    expect(student.locator("#class-follow")).to_be_hidden()
    class_ended(teacher, student)
    teacher.close()
    student.close()


def test_a_class_watches_the_teachers_training_run_on_its_train_tab(server, browser, tmp_path):
    """Train together (issue 59): the run the teacher starts on the Train tab while leading a class is
    shown on a student's Train tab, its state in a sentence and the teacher's tab's pictures, pushed as it
    moves on; only the teacher's page offers to share it, and the student's Stop stops nothing of it."""
    from playwright.sync_api import expect

    teacher, code = class_started(browser, server)
    student = open_page(browser, f"{server}?class={code.text_content()}")
    expect(teacher.locator(".class-panel")).to_contain_text("1 student in class")
    student.get_by_role("tab", name="Train").click()
    expect(student.locator("#train-share")).to_be_hidden()  # a student leads no class
    panel = student.locator("#class-run .class-run")
    expect(panel).to_be_hidden()  # no run shared yet
    train_in_the_page(teacher, tmp_path, epochs=2)  # started while leading: the class watches it
    expect(teacher.locator("#train-share")).to_be_visible()
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("The teacher's training run")
    expect(panel.locator(".class-run-said")).to_have_text(
        re.compile(r"^The teacher's run has finished: 2 of 2 epochs trained\. After epoch 2: training loss \d")
    )
    for which in ("curves", "probe"):  # the teacher's tab's pictures, read from the class's route
        picture = panel.locator(f".class-run-{which}")
        expect(picture).to_be_visible()
        expect(picture).to_have_attribute("src", re.compile("^blob:"))
    expect(panel.locator(".class-run-probe")).to_have_attribute("alt", re.compile("after each of 2 epochs"))
    assert student.locator(".class-run-curves").evaluate("img => img.naturalWidth") > 100
    student.get_by_role("button", name="Stop (saves a checkpoint)").click()
    expect(student.locator("#train-status")).to_contain_text("you have no run to stop")
    teacher.get_by_role("tab", name="Explore").click()
    teacher.locator("#class-end").click()
    expect(panel).to_be_hidden()
    teacher.close()
    student.close()


def test_a_class_sees_the_teachers_run_go_on_without_the_teachers_page(server, browser, tmp_path):
    """Train together without the teacher's page: its polls cut (a tab asleep, a projector's browser on
    another tab), the student's Train tab still sees the run move on, pushed by the server's watcher of the
    class's run; the page closed, the run is set aside (issue 60) and the student's tab says so; the teacher
    back, the run goes on and the class sees it again."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport=SCREEN)  # the teacher's storage (key, run token) outlives the page
    opened = context.new_page()
    opened.set_default_timeout(60_000)
    opened.goto(server)
    teacher, code = class_started(browser, server, opened)
    student = open_page(browser, f"{server}?class={code.text_content()}")
    expect(teacher.locator(".class-panel")).to_contain_text("1 student in class")
    student.get_by_role("tab", name="Train").click()
    said = student.locator("#class-run .class-run-said")
    start_in_the_page(teacher, tmp_path, epochs=200)
    expect(said).to_contain_text("The teacher's run is training: epoch")
    teacher.route("**/queue/join**", lambda route: route.abort())  # the teacher's page polls no more
    teacher.wait_for_timeout(2000)  # a poll already sent has answered
    expect(said).not_to_have_text(said.text_content())  # moved on, pushed by the server alone
    expect(said).to_contain_text("The teacher's run is training: epoch")
    teacher.close()  # the registry sets the run aside (its slot free), and the class is told
    expect(said).to_contain_text("The teacher's run is waiting to go on: it goes on by itself.")
    teacher = context.new_page()  # the teacher is back: the run goes on, and the class sees it
    teacher.set_default_timeout(60_000)
    teacher.goto(server)
    expect(said).to_contain_text("The teacher's run is training: epoch")
    teacher.get_by_role("tab", name="Train").click()
    teacher.get_by_role("button", name="Stop (saves a checkpoint)").click()
    teacher.get_by_role("button", name="Yes, stop my run").click()
    expect(said).to_contain_text("The teacher stopped the run after")
    teacher.get_by_role("tab", name="Explore").click()
    teacher.locator("#class-end").click()
    expect(said).to_be_hidden()
    context.close()
    student.close()


def test_a_phones_class_banner_never_takes_a_tap_meant_for_the_map_under_it(server, browser):
    """Issue 59: on a 390 x 844 phone the student's banner, fixed over the page, covered the model input's
    lower patches, and a tap there went to the banner (the whole-class test's phone never broke away). The
    banner lets taps through to the page; its own button still takes them."""
    from playwright.sync_api import expect

    teacher, code = class_started(browser, server)
    phone = open_page(browser, f"{server}?class={code.text_content()}", PHONE)
    expect(phone.locator(".class-banner")).to_contain_text("You follow the teacher's screen")
    expect(phone.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS"))
    phone.locator("#input-view img").evaluate("img => img.scrollIntoView({ block: 'end' })")  # its last row low
    banner, picture = phone.locator(".class-student").bounding_box(), phone.locator("#input-view img").bounding_box()
    y = picture["y"] + picture["height"] * 15 / 16  # the middle of row 8
    assert banner["y"] < y < banner["y"] + banner["height"], (banner, picture)  # under the banner
    phone.mouse.click(picture["x"] + picture["width"] * 7 / 16, y)  # row 8, column 4
    expect(phone.locator("#class-follow")).to_be_visible()  # the tap reached the map: exploring on their own
    expect(phone.locator("#heads img")).to_have_attribute("alt", re.compile(r"for the query patch \(8, 4\)"))
    phone.locator("#class-follow").click()  # the banner's own button
    expect(phone.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS"))
    class_ended(teacher, phone)
    teacher.close()
    phone.close()


def test_a_class_teacher_points_at_a_head_from_the_keyboard_and_the_student_sees_it(server, browser):
    """Issue 59: a head is pointed at from the keyboard too. Each caption under a head's map has a button over
    it ("Point at head 3", pressed or not): Tab goes from one to the next, Enter or Space presses it, the
    focus stays on it as the maps are drawn again, and a following page outlines the same head; the buttons
    sit on their captions, and a mouse click still reaches the picture under them."""
    from playwright.sync_api import expect

    teacher, code = class_started(browser, server)
    student = open_page(browser, f"{server}?class={code.text_content()}")
    expect(student.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS"))
    banner, maps = student.locator(".class-student").bounding_box(), student.locator("#heads img").bounding_box()
    apart = banner["x"] + banner["width"] <= maps["x"] or banner["y"] >= maps["y"] + maps["height"]
    assert apart, (banner, maps)  # a 1280 x 720 laptop's banner covers no head map (it covered the top row)
    second = teacher.get_by_role("button", name="Point at head 2", exact=True)
    second.focus()
    teacher.keyboard.press("Tab")  # the next caption's button
    third = teacher.get_by_role("button", name="Point at head 3", exact=True)
    expect(third).to_be_focused()
    box, (x, y) = third.bounding_box(), teacher.evaluate(CAPTION_CENTRE, 3)  # on head 3's caption
    assert abs(box["x"] + box["width"] / 2 - x) < 2 and abs(box["y"] + box["height"] / 2 - y) < 2, (box, x, y)
    assert teacher.evaluate("([x, y]) => document.elementFromPoint(x, y).tagName", [x, y]) == "IMG"
    teacher.keyboard.press("Enter")
    expect(third).to_have_attribute("aria-pressed", "true")
    expect(third).to_be_focused()
    expect(student.locator("#heads img")).to_have_attribute("alt", re.compile("points at head 3, outlined"))
    expect(student.get_by_role("button", name="Point at head 3", exact=True)).to_have_attribute("aria-pressed", "true")
    assert "head 3, pointed at" in teacher.evaluate("() => window.attentionMaps.painted.lines")[2]
    teacher.keyboard.press("Space")  # pressed again: points at none
    expect(third).to_have_attribute("aria-pressed", "false")
    expect(student.locator("#heads img")).not_to_have_attribute("alt", re.compile("points at head"))
    class_ended(teacher, student)
    teacher.close()
    student.close()


def test_a_class_follows_lesson_4_with_the_teachers_word_maps_read_once_and_runs_no_clip(clip_server, browser):
    """Issue 59: lesson 4 ("One picture, many words", CLIP) on a following page: once the teacher presses its
    button, the teacher's word maps, one picture a word, in the lesson's panel (each the very bytes of the
    teacher's, with its alt text) and the words' fit as a table; the student's page runs no CLIP (its own
    gallery stays empty). Fewer words: fewer maps, the others gone from the student's page."""
    from playwright.sync_api import expect

    teacher, code = class_started(browser, clip_server)
    student = open_page(browser, f"{clip_server}?class={code.text_content()}")
    expect(student.locator(".class-banner")).to_contain_text("You follow the teacher's screen")
    teacher.get_by_role("tab", name="Lessons").click()
    teacher.get_by_role("tab", name=re.compile("many words")).click()
    expect(student.get_by_role("tab", name=re.compile("many words"))).to_have_attribute("aria-selected", "true")
    teacher.locator("#lesson-words-button").click()
    maps, lent = (
        teacher.locator("#lesson-word-maps img"),
        student.locator(".class-lesson-maps figure:not([hidden]) img"),
    )
    expect(maps).to_have_count(5)
    expect(lent).to_have_count(5)
    for index in range(5):
        expect(lent.nth(index)).to_have_attribute("alt", maps.nth(index).get_attribute("alt"))
        theirs = np.asarray(shown_picture(maps.nth(index)).convert("RGB"))
        assert (np.asarray(shown_picture(lent.nth(index)).convert("RGB")) == theirs).all(), index
    assert "'a cat'" in lent.first.get_attribute("alt")
    table = student.locator(".class-lesson-tables table")
    expect(table.locator("caption")).to_have_text("How well each word fits (softmax over these words)")
    expect(table.locator("tr")).to_have_count(5)
    assert student.locator("#lesson-word-maps img").count() == 0  # the student's page ran no CLIP
    teacher.locator("#lesson-words textarea").fill("a teapot, a rainbow")
    teacher.locator("#lesson-words-button").click()
    expect(maps).to_have_count(2)
    expect(lent).to_have_count(2)
    expect(lent.first).to_have_attribute("alt", re.compile("'a teapot'"))
    teacher.close()
    student.close()


def test_a_class_student_sees_the_teachers_predictions_and_caption_never_their_own(server, browser):
    """Issue 59: a student who analysed a dog of their own before the teacher showed an image, then
    follows the teacher's cat, sees the teacher's model, predictions (the server's sentences) and query
    caption, not their own: their own upload, model picker, predictions, query picker and style are
    hidden while the page shows the teacher's image, even while they explore it on their own; when the
    class ends, their own image comes back with its own caption and predictions. An example picked
    while following is a page of their own, whole, until they come back."""
    from playwright.sync_api import expect

    teacher = open_page(browser, server)
    teacher.get_by_role("tab", name="Lessons").click()
    teacher.wait_for_function("() => window.classroom && window.classroom.lessons.panel")  # its module attached
    teacher.locator("#lesson-class-start").click()  # started on a lesson: the same class as Explore's
    code = teacher.locator("#class-code")
    expect(code).to_have_text(re.compile(r"^[A-Z0-9]{6}$"))
    expect(teacher.locator(".lesson-class-code")).to_contain_text(f"You lead class {code.text_content()}")
    teacher.get_by_role("tab", name="Explore").click()
    expect(teacher.locator("#class-start")).to_be_hidden()
    student = open_page(browser, server)  # no ?class=: the student types the code
    student.wait_for_function("() => window.classroom && window.classroom.panel")  # its module attached
    typed = student.locator("#class-typed-code")
    typed.fill("KKKKKK")  # a wrong code: the server's sentence (a refusal counted against the network)
    student.locator("#class-join-code").click()
    expect(student.locator(".class-notice")).to_have_text("There is no class with the code 'KKKKKK': check the code.")
    typed.fill(code.text_content().lower())
    student.locator("#class-join-code").click()
    expect(student.locator(".class-banner")).to_contain_text("You follow the teacher's screen")
    expect(student.locator(".class-typed")).to_be_hidden()
    expect(student.locator("#class-start")).to_be_hidden()
    assert student.url.endswith(f"?class={code.text_content()}")  # a reload rejoins
    pick_example(student, "dog")  # the teacher has shown no image yet: the student's own
    lent = student.locator(".class-lent")
    expect(lent).to_be_hidden()
    pick_example(teacher, "cat")
    expect(lent).to_be_visible()
    for own_part in ("#upload", "#model-picker", "#predictions", "#query-token", "#style"):
        expect(student.locator(own_part)).to_be_hidden()
    expect(lent.locator(".class-model")).to_have_text("The teacher's image is analysed by the bundled model.")
    expect(lent.locator(".class-predictions")).to_contain_text("Its top predictions: ")
    names = re.findall(r"([^:,(]+?) \(\d+ %\)", lent.locator(".class-predictions").text_content())
    shown = teacher.locator("#predictions").inner_text()
    assert len(names) == 3 and all(name.strip() in shown for name in names), (names, shown)
    expect(student.locator("#query")).to_have_text(teacher.locator("#query").inner_text())
    pick_example(student, "ship")  # an image of their own: their own page, whole, until they come back
    expect(lent).to_be_hidden()
    expect(student.locator(".class-banner")).to_contain_text("exploring on your own")
    own = student.evaluate("() => window.attentionMaps.data.handle")
    own_caption = student.locator("#query").inner_text()
    for own_part in ("#upload", "#model-picker", "#predictions", "#style"):
        expect(student.locator(own_part)).to_be_visible()
    student.locator("#class-follow").click()
    expect(lent).to_be_visible()
    expect(student.locator("#predictions")).to_be_hidden()
    click_patch(student, 2, 3)  # on their own, still on the teacher's image: the teacher's texts stay
    expect(student.locator("#class-follow")).to_be_visible()
    click_patch(teacher, 2, 3)
    expect(student.locator("#query")).to_have_text(teacher.locator("#query").inner_text())
    expect(lent).to_be_visible()
    expect(student.locator("#predictions")).to_be_hidden()
    teacher.locator("#class-end").click()  # the class ends: the student's own image (the ship), whole
    expect(student.locator(".class-notice")).to_have_text("The teacher ended the class.")
    expect(lent).to_be_hidden()
    expect(student.locator("#predictions")).to_be_visible()
    student.wait_for_function(f"() => window.attentionMaps.data && window.attentionMaps.data.handle === {own!r}")
    expect(student.locator("#query")).to_have_text(own_caption)
    teacher.close()
    student.close()


def test_a_class_gallery_a_student_sends_the_teacher_approves_shows_spotlights_and_exports(server, browser, tmp_path):
    """Issue 59's gallery ("Show me yours"): the teacher asks a question (shown as text: its markup is
    words), a student sends a picture through the upload route, the teacher's counter says so, the teacher
    approves it, shows the gallery (the server's tile and colour bar on both pages), spotlights it (both
    pages move to that picture's analysis), exports the handout as a PNG download and hides the tile."""
    from playwright.sync_api import expect

    teacher, code = class_started(browser, server)
    student = open_page(browser, f"{server}?class={code.text_content()}")
    expect(teacher.locator(".class-panel")).to_contain_text("1 student in class")
    gallery = teacher.locator("#class-gallery")
    gallery.locator(".cg-question").fill("Find <b>the</b> background")
    gallery.locator(".cg-ask").click()
    mine = student.locator("#class-gallery")
    expect(mine.locator(".cg-asked")).to_have_text("The teacher asks: Find <b>the</b> background")
    send_a_picture(mine, tmp_path)
    expect(gallery.locator(".cg-count")).to_have_text("1 of 1 student answered: 1 waiting for your approval.")
    expect(mine.locator(".cg-tiles figure")).to_have_count(0)  # nothing before the teacher approves and shows
    gallery.locator(".cg-waiting button", has_text="Approve").click()
    expect(gallery.locator(".cg-count")).to_contain_text("0 waiting")
    gallery.locator(".cg-show").click()
    for page in (teacher, student):
        expect(page.locator("#class-gallery .cg-tiles figure img")).to_have_count(1)
        expect(page.locator("#class-gallery .cg-bar")).to_be_visible()
        expect(page.locator("#class-gallery .cg-title")).to_contain_text("Where the CLS token looks in layer 6")
    before = student.evaluate("() => window.attentionMaps.data.handle")
    gallery.locator(".cg-tiles button", has_text="Spotlight").click()
    student.wait_for_function(f"() => window.attentionMaps.data && window.attentionMaps.data.handle !== {before!r}")
    spotlit = student.evaluate("() => window.attentionMaps.data.handle")
    teacher.wait_for_function(f"() => window.attentionMaps.data && window.attentionMaps.data.handle === {spotlit!r}")
    with teacher.expect_download() as download:
        gallery.locator(".cg-export").click()
    handout = Image.open(download.value.path())
    assert download.value.suggested_filename == "class-gallery.png" and handout.width > 192
    gallery.locator(".cg-tiles button", has_text="Hide").click()
    expect(mine.locator(".cg-tiles figure")).to_have_count(0)  # hidden on every page
    teacher.locator("#class-end").click()
    expect(mine).to_be_hidden()
    teacher.close()
    student.close()
