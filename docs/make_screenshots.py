"""Regenerate the screenshots in docs/ from the running app (Debian's chromium via Playwright).

    python docs/make_screenshots.py

Starts `python app.py` on a free port with the bundled model, opens it at 1280x720, picks
the CIFAR-10 cat example and saves docs/app-first-screen.png; then clicks a patch and saves
docs/app-patch-query.png; then the same example on a 390x844 phone, its first screen (the title,
the Live button, the upload and the predictions) docs/app-phone-first-screen.png, and scrolled to
the head maps docs/app-phone.png. Then "More views": the patch features in colour with the six animal examples
(docs/app-pca.png) and the logit lens (docs/app-logit-lens.png). Then a new visitor whose (fake)
webcam films a cheetah photo sliding by presses the Live button: docs/app-live.png. Last, the app
in its presentation mode (`python app.py --present`) with the cat example at 1280x720:
docs/app-present.png; a class started there (docs/teaching-projector.png) and a phone following it
(docs/teaching-phone.png). And OpenAI's
CLIP ViT-B/16 (`--model vit_base_patch16_clip_224.openai`, downloaded once: it needs the network)
with the cat example and three words typed, scrolled to their maps: docs/app-words.png (skipped,
with a line saying so, where the weights cannot be had). Run it after any change to the page.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.fake_camera import write_y4m  # noqa: E402  (after the path: runs from anywhere)
from bench.serving import free_port, wait_until_served  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run", "--disable-sync"]


def open_cat(browser, url: str, viewport: dict):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=viewport)
    page.set_default_timeout(60_000)
    page.goto(url)
    page.get_by_role("button", name="example: cat").click()
    expect(page.locator("#predictions")).to_contain_text("%")
    expect(page.locator("#heads img")).to_be_visible()
    page.wait_for_timeout(1000)
    # Clicked while the page still lays itself out, the example is scrolled into view first (by
    # Playwright, 44 to 90 px in two runs of ten): the pictures show the page from its top, as it opens.
    page.evaluate("window.scrollTo(0, 0)")
    return page


def shoot(url: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)  # a busy machine answers in seconds
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        phone = open_cat(browser, url, {"width": 390, "height": 844})
        phone.screenshot(path=str(ROOT / "docs" / "app-phone-first-screen.png"))
        phone.locator("#heads img").scroll_into_view_if_needed()
        phone.screenshot(path=str(ROOT / "docs" / "app-phone.png"))
        page = open_cat(browser, url, {"width": 1280, "height": 720})
        page.screenshot(path=str(ROOT / "docs" / "app-first-screen.png"))
        box = page.locator("#input-view img").bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.45)  # row 4, column 4
        expect(page.locator("#query")).to_contain_text("row 4, column 4")
        page.wait_for_timeout(1500)
        page.screenshot(path=str(ROOT / "docs" / "app-patch-query.png"))
        shoot_layer_views(page)
        browser.close()


def shoot_layer_views(page) -> None:
    """The "Patch features (PCA)" tab fitted with the six animal examples, and the "Logit lens" tab."""
    from playwright.sync_api import expect

    page.locator("#more").get_by_text("More views").click()
    page.get_by_role("tab", name="Patch features (PCA)").click()
    page.get_by_label("Fit one PCA on this image and the six animal examples").check()
    expect(page.locator("#pca img")).to_have_attribute("alt", re.compile("bird, cat, deer, dog, frog, horse"))
    page.wait_for_timeout(1000)
    page.locator("#more").screenshot(path=str(ROOT / "docs" / "app-pca.png"))
    page.get_by_role("tab", name="Logit lens").click()
    expect(page.locator("#logit-lens img")).to_have_attribute("alt", re.compile("never trained"))
    page.wait_for_timeout(1000)
    page.locator("#more").screenshot(path=str(ROOT / "docs" / "app-logit-lens.png"))


def camera_clip(path: Path) -> Path:
    """A 640 x 480 clip of Gradio's cheetah photo sliding slowly left, for the fake webcam."""
    import gradio
    import numpy as np
    from PIL import Image

    photo = Image.open(gradio.media.get_image("cheetah1.jpg")).convert("RGB")
    photo = np.asarray(photo.resize((800, round(800 * photo.height / photo.width))))
    return write_y4m(path, [photo[:480, 4 * n : 4 * n + 640] for n in range(40)], 10)


def shoot_live(url: str, clip: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    camera = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
    with sync_playwright() as p:
        args = [*ARGS, *camera, f"--use-file-for-fake-video-capture={clip}"]
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(60_000)
        page.goto(url)
        page.locator("#open-live").click()
        expect(page.locator("#live-status")).to_contain_text("frames/s", timeout=60_000)
        page.wait_for_timeout(3000)
        page.screenshot(path=str(ROOT / "docs" / "app-live.png"))
        browser.close()


def shoot_present(url: str) -> None:
    """docs/app-present.png, then class mode as a teacher's projector and a student's phone see it
    (docs/teaching.md): the class's code and QR code, docs/teaching-projector.png; a phone that
    joined at the QR code's address following the teacher's layer, docs/teaching-phone.png."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = open_cat(browser, url, {"width": 1280, "height": 720})
        page.screenshot(path=str(ROOT / "docs" / "app-present.png"))
        page.locator("#class-start").click()
        expect(page.locator("#class-qr")).to_be_visible()
        page.locator(".class-teacher").scroll_into_view_if_needed()
        page.screenshot(path=str(ROOT / "docs" / "teaching-projector.png"))
        code = page.locator("#class-code").text_content()
        phone = browser.new_page(viewport={"width": 390, "height": 844})  # its own storage: a student
        phone.set_default_timeout(60_000)
        phone.goto(f"{url}?class={code}")
        expect(phone.locator(".class-banner")).to_contain_text("You follow the teacher's screen")
        shown = page.locator("#heads img").get_attribute("alt")
        page.get_by_label("range slider for Layer (1 = first)").press("ArrowLeft")  # pushed to the phone
        expect(page.locator("#heads img")).not_to_have_attribute("alt", shown)
        expect(phone.locator("#heads img")).to_have_attribute("alt", page.locator("#heads img").get_attribute("alt"))
        phone.wait_for_timeout(1000)
        phone.locator("#heads img").scroll_into_view_if_needed()
        phone.screenshot(path=str(ROOT / "docs" / "teaching-phone.png"))
        browser.close()


CLIP = "vit_base_patch16_clip_224.openai"
WORDS = "a cat, a teapot, a rainbow"


def shoot_words(url: str) -> bool:
    """docs/app-words.png: a CLIP model's three words and maps for the cat; False where the app
    could not open on CLIP (no weights here, no network), and nothing is written."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(120_000)
        page.goto(url)
        if not page.locator("#prompts textarea").is_visible():
            browser.close()
            return False
        page.get_by_role("button", name="example: cat").click()
        expect(page.locator("#prompt-maps img")).to_have_count(5)
        page.locator("#prompts textarea").fill(WORDS)
        page.locator("#compare-words").click()
        expect(page.locator("#prompt-maps img")).to_have_count(3)
        page.wait_for_timeout(1000)
        page.locator("#words").scroll_into_view_if_needed()
        page.screenshot(path=str(ROOT / "docs" / "app-words.png"))
        browser.close()
        return True


@contextmanager
def serving(*options: str) -> Iterator[str]:
    """`python app.py` with `options` on a free port; yields its URL."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "app.py", "--port", str(port), *options], cwd=ROOT)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_until_served(url, server)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    with serving() as url:
        shoot(url)
        with tempfile.TemporaryDirectory() as folder:
            shoot_live(url, camera_clip(Path(folder) / "camera.y4m"))
    with serving("--present", "--host", "0.0.0.0") as url:  # the room's devices may join its class
        shoot_present(url)
    print(
        "wrote docs/app-first-screen.png, docs/app-patch-query.png, docs/app-pca.png, docs/app-logit-lens.png, "
        "docs/app-phone-first-screen.png, docs/app-phone.png, docs/app-live.png, docs/app-present.png, "
        "docs/teaching-projector.png and docs/teaching-phone.png"
    )
    with serving("--model", CLIP) as url:
        words = shoot_words(url)
    print("wrote docs/app-words.png" if words else f"docs/app-words.png not written: {CLIP} cannot be had here")


if __name__ == "__main__":
    main()
