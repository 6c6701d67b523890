"""Every picture of every tab, as a browser shows it (issue 42, items 1 and 2): on a 1280 x 720
projector at least 0.9 of its drawn width, its words at least 12 px (18 px in `--present`); on a
390 x 844 phone, plain and in `--present`, at its drawn width exactly, a picture wider than the
column scrolling sideways under the swipe cue. Walked for the bundled model, a model with 4
registers (DINOv2's) and CLIP B/16, each with random weights at the real shapes, downloaded by
the app from the Hub stand-in (tests/hub_standin.py), the Live tab's pictures included (Chromium's
fake camera plays a clip, bench/fake_camera.py)."""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import numpy as np
import pytest
from hub_standin import serve
from page_helpers import assert_same_at_every_cell, drawn_heads
from PIL import Image
from test_ui_browser import ARGS, CHROMIUM, PHONE, SCREEN, open_more_views, open_page, patient_expect, train_in_the_page

from bench.fake_camera import clip_frames, write_y4m
from explorer import canvas
from vit.pretrained import PRETRAINED

__all__ = ["patient_expect"]  # the fixture, used by name

REGISTERS = "vit_small_patch14_reg4_dinov2.lvd142m"
MODELS = ("bundled", "registers", "clip")
# One picture as shown: its drawn (natural) width, the width it takes on the page, and whether
# the one thing that scrolls sideways around it reaches its right end (scrolled there).
SHOWN = """async (img) => {
  const drawn = img.tagName === "CANVAS";  // a picture the page draws itself (Live's): nothing to decode
  img.loading = "eager";  // a gallery's maps load lazily: one scrolled out of view would never decode
  const late = () => new Promise((_, no) => setTimeout(() => no(new Error("not decoded in 10 s")), 10000));
  const decoded = () => Promise.race([img.decode(), late()]);
  for (let tries = 0; !drawn; tries++) {  // measured once loaded: on a busy machine the element may come first
    try { await decoded(); break; } catch (e) {  // or a redraw replaced its picture meanwhile
      if (tries === 20) throw e;
      await new Promise((done) => setTimeout(done, 250));
    }
  }
  let box = img.parentElement;
  while (box && box !== document.body && getComputedStyle(box).overflowX !== "auto") box = box.parentElement;
  const scrolls = box !== document.body && box.scrollWidth > box.clientWidth + 1;
  if (scrolls) box.scrollLeft = box.scrollWidth;
  const r = img.getBoundingClientRect(), frame = scrolls ? box.getBoundingClientRect() : r;
  // The picture's own width inside its element: "contain" fits it into the element's box, which
  // may be larger than the picture (a gallery's square thumbnails) and then says nothing.
  const fit = getComputedStyle(img).objectFit, nw = drawn ? img.width : img.naturalWidth;
  const nh = drawn ? img.height : img.naturalHeight;
  let scale = r.width / nw;
  if (fit === "contain") scale = Math.min(scale, r.height / nh);
  if (fit === "scale-down") scale = Math.min(scale, r.height / nh, 1);
  let cue = null;  // the swipe cue just above the picture, where it has one
  for (let el = img.closest(".block"), up = 0; el && up < 2 && !cue; el = el.parentElement, up++) {
    for (let s = el.previousElementSibling, n = 0; s && n < 3 && !cue; s = s.previousElementSibling, n++) {
      cue = s.matches(".swipe-cue") ? s : s.querySelector(".swipe-cue");
    }
  }
  return {name: (img.closest(".block") || img.closest("[id]")).id, natural: nw, shown: scale * nw, scrolls,
          end: r.right <= frame.right + 1, cue: !!cue && cue.checkVisibility(),
          column: (img.closest(".block") || img.parentElement).clientWidth};
}"""


def publish_registers(hub, folder) -> None:
    """DINOv2 S/14 with 4 registers, random weights at the real shapes, on the Hub stand-in as
    timm's repository holds it (config.json and model.safetensors)."""
    import timm
    from conftest import randomise_

    model = randomise_(timm.create_model(REGISTERS, pretrained=False)).eval()
    timm.models.save_for_hf(model, str(folder), safe_serialization=True)
    hub.publish_folder(f"timm/{REGISTERS}", folder)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One chromium for the module, its fake camera playing a clip for the Live tab."""
    from playwright.sync_api import sync_playwright

    clip = write_y4m(tmp_path_factory.mktemp("camera") / "clip.y4m", clip_frames(12, 192, 256), 6)
    camera = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=[*ARGS, *camera, f"--use-file-for-fake-video-capture={clip}"]
        )
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def servers(tiny_checkpoint, tmp_path_factory) -> Iterator[Callable[[str, bool], str]]:
    """The app for a model ("bundled", "registers", "clip"), `present` or not: started when first
    asked for, one at a time (the last one is stopped when another is asked for). The register and
    CLIP models' servers are online, their Hub the stand-in: a first start downloads the weights over HTTP."""
    from clip_helpers import CLIP_KEY
    from conftest import app_server
    from test_clip import publish_open_clip

    home = tmp_path_factory.mktemp("hf")
    cache = {"HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub")}
    running: dict[tuple[str, bool], str] = {}
    with serve() as hub, ExitStack() as module:  # the Hub outlives the apps
        publish_registers(hub, tmp_path_factory.mktemp("registers"))
        clip = CLIP_KEY.partition(":")[2]
        publish_open_clip(hub, tmp_path_factory.mktemp("clip"), clip)
        downloaded = {"registers": f"/timm/{REGISTERS}/", "clip": f"/{PRETRAINED[clip].weights}/"}
        online = {"HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0"}

        def server(model: str, present: bool) -> str:
            if (model, present) not in running:
                module.close()
                running.clear()
                options = ("--present",) if present else ()
                env = cache
                if model != "bundled":
                    options, env = (*options, "--model", REGISTERS if model == "registers" else clip), cache | online
                running[model, present] = module.enter_context(
                    app_server(tiny_checkpoint, tmp_path_factory, *options, env=env)
                )
                if model != "bundled":  # the weights came over HTTP, not from a cache laid out by hand
                    assert any(path.startswith(downloaded[model]) for path in hub.downloads()), hub.requests
            return running[model, present]

        yield server


def shown(page, selector: str) -> list[dict]:
    """SHOWN for every picture under `selector`, once they are drawn."""
    from playwright.sync_api import expect

    pictures = page.locator(f"{selector} img, {selector} canvas")
    if pictures.first.evaluate("(el) => el.tagName") == "IMG":
        expect(pictures.first).to_have_attribute("src", re.compile("."))
    return [pictures.nth(i).evaluate(SHOWN) for i in range(pictures.count())]


def analyse_an_example(page) -> None:
    from playwright.sync_api import expect

    page.get_by_role("button", name="example: cat").click()
    expect(page.locator("#heads img")).to_have_attribute("alt", re.compile("for the query CLS:"))


def the_page_draws_the_png(page) -> None:
    """The head maps the page drew are the exported PNG's, tile for tile and caption line for
    caption line (a register model's prefix shares, one a line in both)."""
    from playwright.sync_api import expect

    page.get_by_role("button", name="Export PNG").click()
    link = page.locator("#export a").first
    expect(link).to_have_attribute("download", re.compile(r"\.png$"))
    exported = Image.open(io.BytesIO(page.request.get(link.get_attribute("href")).body())).convert("RGB")
    drawn, cells = drawn_heads(page)
    assert_same_at_every_cell(drawn, np.asarray(exported), cells)


def explore_pictures(page, model: str) -> list[dict]:
    """Every picture of the Explore tab, each of "More views" and the PCA with the examples."""
    from playwright.sync_api import expect

    analyse_an_example(page)
    # The model input with its grid: the page draws it at the size its frame shows (a register
    # model's 448 px drawing was shown at 330 px, its 1 px grid blurred)
    seen = shown(page, "#input-view") + shown(page, "#heads")
    if model == "registers":
        the_page_draws_the_png(page)
    if model == "clip":
        expect(page.locator("#prompt-maps img")).to_have_count(5)
        seen += shown(page, "#prompt-maps")
    tabs = {"Layers x heads": "overview", "Rollout": "rollout", "Mean attention distance": "distance"}
    tabs |= {"Position embeddings": "similarity", "Patch features (PCA)": "pca"}
    if model == "bundled":  # the other two have no classifier: no class to explain, no lens to read
        tabs |= {"Relevance (Chefer et al. 2021)": "relevance", "Logit lens": "logit-lens"}
    open_more_views(page, "Layers x heads")
    for tab, elem_id in tabs.items():
        page.get_by_role("tab", name=tab).click()
        if elem_id == "relevance":
            page.get_by_role("button", name="Explain this class").click()
        seen += shown(page, f"#{elem_id}")
    page.get_by_role("tab", name="Patch features (PCA)").click()
    page.get_by_label("Fit one PCA on this image and the six animal examples").check()
    expect(page.locator("#pca img")).to_have_attribute("alt", re.compile(r"7 image\(s\)"))  # 1200 px or so
    return seen + shown(page, "#pca")


def lessons_pictures(page, model: str) -> list[dict]:
    """The lessons' pictures: lesson 1's comparison, lesson 2's norms and, for CLIP, lesson 4's maps."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Lessons").click()
    page.get_by_role("tab", name="Supervised vs self-supervised").click()
    page.get_by_role("button", name="Compare", exact=True).click()
    seen = shown(page, "#lesson-compare")
    page.get_by_role("tab", name="Artefacts and registers").click()
    page.get_by_role("button", name="Show token norms").click()
    seen += shown(page, "#lesson-norms")
    if model == "clip":
        page.get_by_role("tab", name=re.compile("many words")).click()
        page.locator("#lesson-words-button").click()
        expect(page.locator("#lesson-word-maps img")).to_have_count(5)
        seen += shown(page, "#lesson-word-maps")
    return seen


def live_pictures(page) -> list[dict]:
    """The Live tab's model input and head maps of a camera frame, measured once the stream is
    stopped (while it plays, each frame replaces them) and so freed for the next visitor."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Explore").click()
    page.locator("#open-live").click()
    page.wait_for_selector("#live-heads")
    page.locator("#live-camera .capture-button").click()
    expect(page.locator("#live-status")).to_contain_text("Stopped")
    return shown(page, "#live-pictures")


def every_picture(page, model: str, tmp_path) -> list[dict]:
    seen = explore_pictures(page, model) + lessons_pictures(page, model) + live_pictures(page)
    if model == "bundled":  # the Train tab trains its own model, whichever Explore shows
        train_in_the_page(page, tmp_path, epochs=1)
        seen += shown(page, "#curves") + shown(page, "#probe")
    return seen


@pytest.mark.parametrize("present", [False, True], ids=["plain", "present"])
@pytest.mark.parametrize("model", MODELS)
def test_every_picture_on_a_projector_is_shown_at_nine_tenths_of_its_width_or_more(
    servers, browser, tmp_path, model, present
):
    """A register model's head maps were 1302 px wide, shown at 546 px in `--present` (× 0.42: its
    20 px words at 8 px); CLIP's word maps were fitted into square boxes (× 0.42 in `--present`)."""
    page = open_page(browser, servers(model, present), SCREEN)
    seen = every_picture(page, model, tmp_path)
    page.close()
    text_px, least = (canvas.PRESENT_TEXT_PX, 18) if present else (canvas.TEXT_PX, 12)
    scales = {f"{s['name']} {s['natural']} px": round(s["shown"] / s["natural"], 2) for s in seen}
    small = {name: scale for name, scale in scales.items() if scale < 0.9 or text_px * scale < least}
    assert len(seen) >= 8 and small == {}, scales
    assert [s for s in seen if not s["end"]] == []  # a picture that scrolls reaches its end


@pytest.mark.parametrize("present", [False, True], ids=["plain", "present"])
@pytest.mark.parametrize("model", MODELS)
def test_every_picture_on_a_phone_keeps_its_drawn_size_and_a_wide_one_scrolls_under_the_cue(
    servers, browser, tmp_path, model, present
):
    """At 390 x 844 the logit lens (590 px), distance (640), position embeddings (588) and the PCA
    with the examples (1200) were squeezed into the 302 px column, their words 3 to 7 px."""
    from playwright.sync_api import expect

    page = open_page(browser, servers(model, present), PHONE)
    seen = every_picture(page, model, tmp_path)
    page.close()
    squeezed = {f"{s['name']} {s['natural']} px": round(s["shown"] / s["natural"], 2) for s in seen}
    squeezed = {name: scale for name, scale in squeezed.items() if abs(scale - 1) > 0.01}
    assert len(seen) >= 8 and squeezed == {}, seen
    wide = [s for s in seen if s["natural"] > s["column"]]
    assert wide and [s for s in wide if not (s["scrolls"] and s["end"] and s["cue"])] == [], wide
    # The head maps wrap their tiles to the column, colour bar and all: scrolled, a phone had shown
    # 3 of 5 columns and a bar to 0.08 of its 0.57 (a teacher's walk).
    (heads,) = [s for s in seen if s["name"] == "heads"]
    assert heads["natural"] <= heads["column"] and not heads["scrolls"], heads
    if model == "bundled":  # the PCA's checkboxes say all of their words
        page = open_page(browser, servers(model, present), PHONE)
        open_more_views(page, "Patch features (PCA)")
        for label in ("Fit one PCA on this image and the six animal examples", "Remove the background"):
            words = page.locator("#more label").filter(has_text=label).first
            expect(words).to_be_visible()
            assert words.evaluate(CUT) == [], label
        page.close()


# The words of a label drawn outside the box of its component, which cuts them: "Fit or / PCA / this".
CUT = """(label) => {
  const box = (label.closest(".block") || label).getBoundingClientRect(), cut = [];
  const walker = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const match of node.textContent.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      for (const r of range.getClientRects()) if (r.right > box.right + 1 || r.left < box.left - 1) cut.push(match[0]);
    }
  }
  return cut;
}"""
