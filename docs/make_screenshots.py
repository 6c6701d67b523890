"""Regenerate the screenshots in docs/ from the running app (Debian's chromium via Playwright).

    python docs/make_screenshots.py

Starts `python app.py` on a free port with the bundled model, opens it at 1280x720, picks
the CIFAR-10 cat example and saves docs/app-first-screen.png; then clicks a patch and saves
docs/app-patch-query.png; then the same example on a 390x844 phone, scrolled to the head maps:
docs/app-phone.png. Run it after any change to the page.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.serving import free_port, wait_until_served  # noqa: E402  (after the path: runs from anywhere)

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
    return page


def shoot(url: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)  # a busy machine answers in seconds
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        phone = open_cat(browser, url, {"width": 390, "height": 844})
        phone.locator("#heads img").scroll_into_view_if_needed()
        phone.screenshot(path=str(ROOT / "docs" / "app-phone.png"))
        page = open_cat(browser, url, {"width": 1280, "height": 720})
        page.screenshot(path=str(ROOT / "docs" / "app-first-screen.png"))
        box = page.locator("#input-view img").bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.45)  # row 4, column 4
        expect(page.locator("#query")).to_contain_text("row 4, column 4")
        page.wait_for_timeout(1500)
        page.screenshot(path=str(ROOT / "docs" / "app-patch-query.png"))
        browser.close()


def main() -> None:
    port = free_port()
    server = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_until_served(url, server)
        shoot(url)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("wrote docs/app-first-screen.png, docs/app-patch-query.png and docs/app-phone.png")


if __name__ == "__main__":
    main()
