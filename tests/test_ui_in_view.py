"""Every word map and head tile of a row in view, side by side (issue 61): on a 1280 x 720
projector, plain and in `--present`, each picture inside its frame's width and none inside a box
that scrolls on its own; on a 390 x 844 phone (touch), wrapped to the screen, each at its drawn
size with its colour bar whole. CLIP's word maps (Explore's and lesson 4's), with CLIP B/16's
loader giving a tiny random CLIP (tests/clip_helpers.py); the Live tab's head maps, Chromium's fake
camera playing a clip; in `--present`, the layers x heads overview of a 16-head model at its drawn
size; and one word in Explore's box, which left red "Error" badges over the words' outputs."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from test_ui_browser import DRAWN_SCALE, PHONE, SCREEN, open_more_views, patient_expect
from test_ui_pictures_shown import browser, live_pictures

import vit
from explorer import canvas
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES

__all__ = ["browser", "patient_expect"]  # the fixtures, used by name

# Each picture under a selector as shown: where it is, its drawn and shown widths, the frame it
# must stay inside (its component's block, itself inside the window) and the first box around it
# that scrolls on its own, if any (the word maps' gallery had held them in a 450-px box of 3,218).
IN_VIEW = """async (selector) => {
  const pictures = [...document.querySelectorAll(`${selector} img, ${selector} canvas`)];
  for (const img of pictures) if (img.tagName === "IMG") { img.loading = "eager"; await img.decode(); }
  return pictures.map((img) => {
    const r = img.getBoundingClientRect(), block = img.closest(".block").getBoundingClientRect();
    let scroller = null;
    for (let el = img.parentElement; el && el !== document.body && !scroller; el = el.parentElement) {
      const s = getComputedStyle(el);
      const down = /auto|scroll/.test(s.overflowY) && el.scrollHeight > el.clientHeight + 1;
      const across = /auto|scroll/.test(s.overflowX) && el.scrollWidth > el.clientWidth + 1;
      if (down || across) scroller = el.className || el.tagName;
    }
    return {left: r.left, right: r.right, top: Math.round(r.top), width: r.width,
            drawn: img.tagName === "CANVAS" ? img.width : img.naturalWidth, scroller,
            inside: r.left >= block.left - 1 && r.right <= block.right + 1 && block.right <= innerWidth};
  });
}"""


def opened(browser, url: str, phone: bool):
    """A fresh page (session) at 1280 x 720, or on a 390 x 844 touch phone."""
    if phone:
        page = browser.new_page(viewport=PHONE, is_mobile=True, has_touch=True)
    else:
        page = browser.new_page(viewport=SCREEN)
    page.set_default_timeout(60_000)
    page.goto(url)
    return page


@pytest.fixture(scope="module")
def servers(tiny_checkpoint, tmp_path_factory) -> Iterator[Callable[[str, bool], str]]:
    """The app on a model ("clip": the tiny CLIP in B/16's place; "bundled": the tiny checkpoint;
    "16 heads": a tiny model with 16 heads, ViT-L's count), `present` or not: started when first
    asked for, one at a time (two CLIP servers and three others would share 2 cores)."""
    from clip_helpers import clip_app
    from conftest import app_server

    sixteen = tmp_path_factory.mktemp("models") / "sixteen-heads.safetensors"
    model = vit.create_model("vit_cifar_nano", heads=16)
    vit.save_checkpoint(model, sixteen, class_names=CIFAR10_CLASSES, preprocessing=CIFAR10)
    running: dict[tuple[str, bool], str] = {}
    with ExitStack() as module:

        def server(kind: str, present: bool) -> str:
            if (kind, present) not in running:
                module.close()
                running.clear()
                options = ("--present",) if present else ()
                if kind == "clip":
                    app = clip_app(tiny_checkpoint, tmp_path_factory, *options)
                else:
                    app = app_server(sixteen if kind == "16 heads" else tiny_checkpoint, tmp_path_factory, *options)
                running[kind, present] = module.enter_context(app)
            return running[kind, present]

        yield server


def word_maps_in_view(page, selector: str, phone: bool) -> None:
    """The five maps under `selector` at their drawn size, inside their frame, none in a box that
    scrolls; side by side as many a line as fit, or on a phone one a line (two do not fit)."""
    maps = page.evaluate(IN_VIEW, selector)
    assert len(maps) == 5, maps
    assert [m for m in maps if not m["inside"] or m["scroller"] or abs(m["width"] - m["drawn"]) > 1] == []
    lines = [sum(m["top"] == top for m in maps) for top in sorted({m["top"] for m in maps})]
    if phone:
        assert lines == [1] * 5, maps
    else:  # three of the 320-px maps fit a 1216-px frame: 3, then 2
        assert lines[0] >= 2 and all(n == lines[0] for n in lines[:-1]), maps


@pytest.mark.parametrize("present", [False, True], ids=["plain", "present"])
def test_every_word_map_is_in_view_side_by_side_and_one_a_line_on_a_phone(servers, browser, present):
    """Gradio 6.31 put each map in a .gallery-item the row's whole width, in a 450-px box that
    scrolled on its own: one map a line, only the first in view, Explore's and lesson 4's alike."""
    from playwright.sync_api import expect

    for phone in (False, True):
        page = opened(browser, servers("clip", present), phone)
        page.get_by_role("button", name="example: cat").click()
        expect(page.locator("#prompt-maps img")).to_have_count(5)
        word_maps_in_view(page, "#prompt-maps", phone)
        page.get_by_role("tab", name="Lessons").click()
        expect(page.locator("#lesson-image img")).to_be_visible()  # Explore's cat, handed over by the tab
        page.get_by_role("tab", name=re.compile("many words")).click()
        page.locator("#lesson-words-button").click()
        expect(page.locator("#lesson-word-maps img")).to_have_count(5)
        word_maps_in_view(page, "#lesson-word-maps", phone)
        page.close()


def test_one_word_is_one_sentence_with_no_error_badge_and_a_new_example_keeps_it_so(servers, browser):
    """One word in Explore's box: the toast said what to do, but red "Error" badges covered the
    template sentence, the maps and Top predictions, and a new example ran the word again ("Error (2)")."""
    from playwright.sync_api import expect

    page = opened(browser, servers("clip", False), phone=False)
    page.get_by_role("button", name="example: cat").click()
    expect(page.locator("#prompt-maps img")).to_have_count(5)
    badges = page.locator("[data-testid=status-tracker] .error")
    page.locator("#prompts textarea").fill("a cat")
    page.locator("#compare-words").click()
    expect(page.locator(".toast-body")).to_contain_text("type at least two words")
    expect(page.locator("#prompt-maps img")).to_have_count(5)  # the last words' maps stay
    expect(page.locator("#predictions")).to_contain_text("a teapot")  # and their probabilities
    expect(badges).to_have_count(0)
    page.get_by_role("button", name="example: dog").click()
    expect(page.locator("#prompt-note")).to_contain_text("No words compared: type at least two words")
    expect(page.locator("#prompt-maps img")).to_have_count(0)  # the cat's maps went with the cat
    expect(page.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS:"))
    expect(badges).to_have_count(0)
    page.close()


@pytest.mark.parametrize("present", [False, True], ids=["plain", "present"])
def test_lives_head_maps_are_in_view_and_wrapped_to_a_phone_with_their_colour_bar(servers, browser, present):
    """On a phone Live's head maps kept the server's layout and scrolled sideways: 3.5 of 6 columns
    and the colour bar to 0.1 of 0.196 in view, where Explore's wrap their tiles to the screen."""
    for phone in (False, True):
        page = opened(browser, servers("bundled", present), phone)
        live_pictures(page)  # a few camera frames, then Stop: the last one's pictures stay
        (heads,) = page.evaluate(IN_VIEW, "#live-pictures [data-part=heads]")
        assert heads["inside"] and heads["scroller"] is None, heads
        wrapped = page.evaluate("() => window.liveMaps.wrapped")
        if phone:  # every tile and the bar under them at their drawn size, fewer tiles a row
            assert abs(heads["width"] - heads["drawn"]) <= 1 and wrapped is not None, (heads, wrapped)
        else:  # the server's layout, shrunk by a tenth at most
            assert heads["width"] >= 0.9 * heads["drawn"] and wrapped is None, (heads, wrapped)
        page.close()


def test_in_the_presentation_mode_a_16_head_overview_is_shown_at_its_drawn_size(servers, browser):
    """In `--present`, More views, Layers x heads of a model with more heads than fit the page was
    shown at 0.71 to 0.8 of its drawn size: its 20-px words at 14 to 16 px (at least 18 wanted)."""
    from playwright.sync_api import expect

    page = opened(browser, servers("16 heads", True), phone=False)
    page.get_by_role("button", name="example: cat").click()
    expect(page.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS:"))
    open_more_views(page, "Layers x heads")
    overview = page.locator("#overview img")
    expect(overview).to_have_attribute("alt", re.compile("."))
    expect(overview).to_have_attribute("src", re.compile("."))
    scale = overview.evaluate(DRAWN_SCALE)
    assert scale > 0.99 and canvas.PRESENT_TEXT_PX * scale >= 18, scale
    page.close()
