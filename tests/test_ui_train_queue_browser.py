"""The Train tab's queue and back-off in a real browser (Debian's chromium, Playwright), on an app
whose runs train in chunks, as on ZeroGPU, on a platform that has no GPU time for anyone: a
visitor who finds the run slot taken sees their place in the queue, and once their turn comes,
their run waits for GPU time with a countdown the page counts down itself (issue 60)."""

from __future__ import annotations

import re
import shutil
from types import SimpleNamespace

import pytest
from training_helpers import write_image_folder

from bench.serving import free_port
from explorer.catalog import ModelCatalog
from training.chunks import ChunkRefused
from training.job import ChunkPlan
from training.registry import JobRegistry
from ui import train_handlers as h
from ui.app import build_page, server_for
from ui.train import COUNTDOWN_JS

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"{CHROMIUM} not found")


def no_gpu_time(out_dir: str, seconds: float):
    """The platform's answer to every chunk: no GPU time left (the run waits, saved)."""
    raise ChunkRefused("no GPU time left for you today", "try again in 1:00:00")


@pytest.fixture(scope="module")
def chunked_app(tiny_checkpoint, tmp_path_factory):
    """(the page's URL, the server) of the app with a chunked registry, in this process."""
    runs_dir = tmp_path_factory.mktemp("queue-runs")
    catalog = ModelCatalog(tiny_checkpoint, runs_dir)
    server = server_for(catalog)
    object.__setattr__(server, "runs", JobRegistry(runs_dir, chunks=ChunkPlan(no_gpu_time, 45)))
    demo = build_page(server)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, head=COUNTDOWN_JS, prevent_thread_lock=True)
    yield f"http://127.0.0.1:{port}/", server
    demo.close()


def test_the_page_shows_its_place_in_the_queue_then_counts_down_to_its_next_try(chunked_app, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    url, server = chunked_app
    data = write_image_folder(tmp_path / "data", per_class=8, size=16, classes=("cat", "dog"), test_per_class=2)
    holder = SimpleNamespace(session_hash="the visitor who holds the slot")
    h.train_start(server, h.run_options("vit_cifar_nano", "folder", str(data), 1, 1e-3, 8), holder)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(60_000)
        expect.set_options(timeout=60_000)
        page.goto(url)
        page.get_by_role("tab", name="Train").click()
        page.get_by_label("Local folder").check()
        page.get_by_label("Folder with train/<class>/ and test/<class>/ images").fill(str(data))
        page.get_by_label("Epochs", exact=True).fill("1")
        page.get_by_label("Batch size").fill("8")
        page.get_by_role("button", name="Start", exact=True).click()
        progress = page.locator("#train-progress")
        expect(progress).to_contain_text("queued · place 1 in the queue for a run slot, estimated wait about")
        expect(progress).to_contain_text("it starts by itself when its turn comes, while this page is open")
        server.runs.stop(h.run_visitor_of(None, holder))  # the slot is free: the page's next poll starts its run
        expect(progress).to_contain_text("waiting · no GPU time left for you today")
        countdown = progress.locator("[data-countdown]")
        first = int(re.search(r"in (\d+) s", countdown.inner_text())[1])
        expect(countdown).not_to_have_text(f"in {first} s")  # counted down in the page, between two polls
        later = int(re.search(r"in (\d+) s", countdown.inner_text())[1])
        assert later < first <= 15
        browser.close()
