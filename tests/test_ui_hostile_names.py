"""Issue 56: a checkpoint's class names and file name are text on every tab, in a real browser
(Debian's chromium, its fake webcam playing bench/fake_camera.py's clip) against the real app
whose model is such a checkpoint. The lessons' notes and Live's status once rendered them as
Markdown and HTML: Chromium fetched pictures from a third host and showed a planted link."""

import os
import shutil
from urllib.parse import urlsplit

import pytest
from conftest import app_server
from markdown_helpers import HOSTILE_NAMES, hostile_checkpoint

from bench.fake_camera import clip_frames, write_y4m

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FILE_NAME = "![x](p.png)*b*<i>.safetensors"  # the label the app gives the model: "<file name> (default)"
# Every element a name could plant: a picture or a link to the third host, the file name's
# picture (p.png, on the app's own host), the tag's picture (src=x), the link's text.
PLANTED = """() => [...document.querySelectorAll('img, a, i')].filter(e =>
  /203\\.0\\.113\\.9|p\\.png/.test((e.getAttribute('src') || '') + (e.getAttribute('href') || ''))
  || e.getAttribute('src') === 'x' || e.textContent.trim() === 'click me'
  || (e.tagName === 'I' && e.closest('.prose'))).map(e => e.outerHTML)"""

pytestmark = pytest.mark.skipif(
    not shutil.which(CHROMIUM), reason=f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)"
)


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    """`python app.py` on a checkpoint whose classes are HOSTILE_NAMES and whose file name is Markdown."""
    path = hostile_checkpoint(tmp_path_factory.mktemp("models") / FILE_NAME)
    with app_server(path, tmp_path_factory) as url:
        yield url


# Live's status once a frame's top classes are in it, read in the same evaluation (it is rewritten every
# frame); none before the Live tab has drawn its status line (a busy machine drew it after the first poll)
LIVE_STATUS = """() => { const line = document.getElementById('live-status');
  const t = line ? line.innerText : '';
  return t.includes('Top classes:') && t; }"""


def test_a_checkpoints_names_are_text_on_explore_the_lessons_and_live(hostile_server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    clip = write_y4m(tmp_path / "clip.y4m", clip_frames(8, 192, 256), 6)
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    args += ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[*args, f"--use-file-for-fake-video-capture={clip}"])
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        page.set_default_timeout(120_000)
        expect.set_options(timeout=120_000)
        app, elsewhere, dialogs = urlsplit(hostile_server).netloc, [], []
        page.on("request", lambda r: elsewhere.append(r.url) if urlsplit(r.url).netloc not in ("", app) else None)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(hostile_server)

        # Explore: the list of classes and the model's description
        for name in HOSTILE_NAMES:
            expect(page.locator("#classes")).to_contain_text(name)
        expect(page.get_by_text(f"{FILE_NAME} (default)").first).to_be_visible()

        # Lesson 3: the heads-off note, then the ranking's
        page.get_by_role("tab", name="Lessons").click()
        # the lessons' picture comes when the tab opens (ui.lessons_handlers.open_lessons): a click
        # before it would ask with no image, as a person would not
        expect(page.locator("#lesson-image img")).to_be_visible()
        page.get_by_role("tab", name="Which heads matter").click()
        page.get_by_role("button", name="Switch these heads off").click()
        note = page.get_by_text("With every head on the model says")
        expect(note).to_be_visible()
        said = note.inner_text()
        assert sum(f"says {name}; its" in said for name in HOSTILE_NAMES) == 1, said
        page.get_by_role("button", name="Rank every head").click()
        ranked = page.get_by_text("of the 24 heads ranked.")  # every head: the ranking's end
        expect(ranked).to_be_visible()
        said = ranked.inner_text()
        assert sum(f"Predicted class {name}. Ranked" in said for name in HOSTILE_NAMES) == 1, said

        # Live: the status line's top classes, and the model's description
        page.locator("#open-live").click()
        status = page.wait_for_function(LIVE_STATUS).json_value()
        assert sum(name in status for name in HOSTILE_NAMES) == 3, status  # the top 3, as written
        page.locator("#live-camera .capture-button").click()  # Stop: the one slot is free again

        assert page.evaluate(PLANTED) == []
        assert elsewhere == [] and dialogs == []  # no request to another host, no script ran
        browser.close()
