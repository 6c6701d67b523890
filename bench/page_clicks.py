"""What a student's clicks cost, in a real browser: requests sent and click-to-picture time.

    python -m bench.page_clicks                                  # this checkout, the bundled model
    python -m bench.page_clicks --app-dir ../before --app-dir .  # two versions side by side
    python -m bench.page_clicks --busy 1 --class-of 30           # one busy loop, and a class's burst

For each checkout (`--app-dir`, in turn, A B B A with `--rounds 2`), starts `python app.py` on a
free loopback port, opens it in Debian's Chromium (Playwright), analyses the cat example, then
makes 12 patch clicks, 5 arrow keys and 3 slider steps, and prints:

- the requests the page sent to the server for them (issue 41: 0 when the page draws its maps);
- click to query shown: from the mouse click to the head maps of the clicked patch on the page
  (their picture decoded), p50 and p95 over the clicks, with `--busy` busy loops on the machine
  and, with `--class-of N`, while N `gradio_client` visitors upload and click (bench.visitors'
  class) at the same moment;
- the page's JavaScript heap after `--uploads` analyses of different images (Chromium's
  performance.memory, after a collection), and the bytes of each analysis's reply for the page.

The bytes a page is sent per analysis, for the bundled model and the pretrained families' shapes
(random weights), are printed by `--bytes`, computed by explorer.page_maps itself;
`bench.page_bytes` measures them on the wire, on a school's Wi-Fi share.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from bench.visitors import EXAMPLES, ROOT, Server, Visitor, images_for, machine, percentile, run_class, warm_up

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
ARGS += ["--disable-quic", "--no-first-run", "--disable-sync", "--enable-precise-memory-info", "--js-flags=--expose-gc"]
SHOWN = """([row, col]) => { const i = document.querySelector('#heads img');
  return i && i.alt.includes(`for the query patch (${row}, ${col})`) && i.complete && i.naturalWidth > 0; }"""
HEAP = """async () => { window.gc(); await new Promise((r) => setTimeout(r, 200));
  return performance.memory.usedJSHeapSize; }"""


@contextlib.contextmanager
def busy_loops(n: int) -> Iterator[None]:
    """`n` processes spinning on the CPU (`while :; do :; done`) for the duration."""
    loops = [subprocess.Popen(["bash", "-c", "while :; do :; done"]) for _ in range(n)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def click_at(page, row: int, col: int, grid: tuple[int, int]) -> float:
    """Click the patch (row, col), 1-based; seconds until its head maps are shown."""
    box = page.locator("#input-view img").bounding_box()
    x = box["x"] + box["width"] * (col - 0.5) / grid[1]
    y = box["y"] + box["height"] * (row - 0.5) / grid[0]
    began = time.perf_counter()
    page.mouse.click(x, y)
    page.wait_for_function(SHOWN, arg=[row, col], polling="raf", timeout=120_000)
    return time.perf_counter() - began


def analyse(page, image: Path) -> None:
    """Upload `image`; return once its head maps are shown (a new picture, of the default query)."""
    before = page.locator("#heads img").get_attribute("src") if page.locator("#heads img").count() else None
    page.locator("#upload input[type=file]").set_input_files(str(image))
    page.wait_for_function(
        "(old) => { const i = document.querySelector('#heads img'); return i && i.src && i.src !== old"
        " && i.alt.includes('query CLS') && i.complete; }",
        arg=before,
        timeout=180_000,
    )


def interactions(page, server: str, grid: tuple[int, int], seed: int) -> tuple[list[float], int]:
    """12 patch clicks (timed), 5 arrow keys, 3 slider steps; the requests sent to the server."""
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.url.startswith(server) else None)
    rng, seconds, last = random.Random(seed), [], None
    for _ in range(12):
        cell = last
        while cell == last:
            cell = rng.randint(1, grid[0]), rng.randint(1, grid[1])
        seconds.append(click_at(page, *cell, grid))
        last = cell
    page.locator("body").click(position={"x": 5, "y": 5})
    for key in ("ArrowLeft", "ArrowUp", "ArrowRight", "ArrowDown", "Escape"):
        page.keyboard.press(key)
        page.wait_for_timeout(300)
    slider = page.get_by_label("range slider for Layer (1 = first)")
    for _ in range(3):
        slider.press("ArrowLeft")
        page.wait_for_timeout(300)
    page.wait_for_timeout(2000)  # what those send arrives
    return seconds, len(sent)


def heap_after_uploads(page, folder: Path, uploads: int) -> int:
    """The page's JS heap (bytes) after `uploads` analyses of different pictures."""
    pixels = np.asarray(Image.open(EXAMPLES / "cat.jpg").convert("RGB")).astype(int)
    for n in range(uploads):
        path = folder / f"upload-{n}.png"
        Image.fromarray(((pixels + 23 * (n + 1)) % 256).astype(np.uint8)).save(path)
        analyse(page, path)
    return int(page.evaluate(HEAP))


def one_checkout(args: argparse.Namespace, app_dir: Path, folder: Path, browser) -> dict:
    server = Server(folder, 2048, None if args.model == "bundled" else args.model, app_dir=app_dir)
    try:
        server.wait()
        grid, depth = warm_up(server.url, folder)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(120_000)
        page.goto(server.url)
        analyse(page, EXAMPLES / "cat.jpg")
        result = {"app_dir": app_dir}
        with busy_loops(args.busy):
            result["quiet"], result["requests"] = interactions(page, server.url, grid, 0)
            if args.class_of:
                visitors = [
                    Visitor(i, image, ["query_patch", "heads"] * 6, 1.0, grid, depth)
                    for i, image in enumerate(images_for(args.class_of, folder))
                ]
                burst = threading.Thread(target=run_class, args=(server.url, visitors, 120.0), daemon=True)
                burst.start()
                time.sleep(2)  # the class's analyses are under way
                result["class"], _ = interactions(page, server.url, grid, 1)
                burst.join(timeout=300)
        result["heap"] = heap_after_uploads(page, folder, args.uploads)
        page.close()
        return result
    finally:
        server.stop()


def reply_bytes() -> list[str]:
    """Markdown rows: what the page is sent per analysis for each family's shapes
    (explorer.page_maps): the bundled model itself on the cat example, the others with random
    weights on a 224 px noise image (the bytes of their rows depend on little but the shapes)."""
    import torch

    import vit
    from explorer import canvas, catalog, page_maps
    from explorer.explain import explain
    from vit.preprocessing import Preprocessing

    head = "| model | grid | layers x heads | the analysis's reply | every layer's token rows | a layer's patch rows |"
    rows = [head, "|---|---|---|---|---|---|"]
    for label, name in (
        ("bundled (`vit_cifar_tiny`, trained)", "bundled"),
        ("ViT-S/16", "vit_small_patch16_224"),
        ("ViT-B/16", "vit_base_patch16_224"),
        ("ViT-L/14 + 4 registers (DINOv2)", "vit_large_patch14_reg4_dinov2"),
    ):
        torch.manual_seed(0)
        if name == "bundled":
            model, side = vit.load_checkpoint(catalog.BUNDLED_PATH)[0].eval(), 32
            image = Image.open(EXAMPLES / "cat.jpg").convert("RGB")
        else:
            model, side = vit.create_model(name).eval(), 224
            image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (side, side, 3), dtype=np.uint8))
        ex = explain(model, [str(i) for i in range(model.config.num_classes)], Preprocessing(side, side), image)
        first = page_maps.reply_bytes(page_maps.page_maps(ex, name, ex.depth - 1, canvas.TEXT_PX, "h"))
        tokens = sum(page_maps.body_bytes(page_maps.layer_rows(ex, i, page_maps.TOKENS)) for i in range(ex.depth))
        bands = page_maps.page_shape(ex).bands
        later = sum(page_maps.body_bytes(page_maps.layer_rows(ex, 0, band)) for band in range(bands))
        gh, gw = ex.grid
        rows.append(
            f"| {label} | {gh} x {gw} | {ex.depth} x {ex.heads} | {first / 1e6:.3f} MB | {tokens / 1e6:.3f} MB "
            f"| {later / 1e6:.2f} MB in {bands} band(s) |"
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--app-dir", action="append", type=Path, help="a checkout to serve (repeatable; default: this)")
    p.add_argument("--model", default="bundled", help="app.py --model ('bundled': the bundled one)")
    p.add_argument("--busy", type=int, default=1, help="busy loops on the machine while clicking")
    p.add_argument("--class-of", type=int, default=0, help="also click while N visitors' class runs (0: not)")
    p.add_argument("--uploads", type=int, default=10, help="analyses before the page's memory is read")
    p.add_argument("--rounds", type=int, default=1, help="A B B A ... over the checkouts")
    p.add_argument("--bytes", action="store_true", help="only print the reply's bytes per model family")
    args = p.parse_args(argv)
    if args.bytes:
        print("\n".join(reply_bytes()))
        return
    from playwright.sync_api import sync_playwright

    dirs = [d.resolve() for d in args.app_dir or [ROOT]]
    results: dict[Path, list[dict]] = {d: [] for d in dirs}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for r in range(args.rounds):
            for app_dir in dirs if r % 2 == 0 else dirs[::-1]:
                with tempfile.TemporaryDirectory() as tmp:
                    results[app_dir].append(one_checkout(args, app_dir, Path(tmp), browser))
        browser.close()
    print(f"command: `{shlex.join([Path(sys.executable).name, '-m', 'bench.page_clicks', *sys.argv[1:]])}`")
    print(f"machine: {machine()}; {args.busy} busy loop(s) while clicking; model {args.model}\n")
    head = "| checkout | requests for 12 clicks, 5 keys, 3 slider steps | click to query shown p50 / p95 s"
    head += " | the same during a class's burst | page's JS heap after uploads |"
    print(head + "\n|---|---|---|---|---|")
    for app_dir, runs in results.items():
        quiet = [s for run in runs for s in run["quiet"]]
        burst = [s for run in runs for s in run.get("class", [])]
        during = f"{percentile(burst, 50):.3f} / {percentile(burst, 95):.3f}" if burst else "-"
        requests = ", ".join(str(run["requests"]) for run in runs)
        heap = ", ".join(f"{run['heap'] / 2**20:.1f} MiB" for run in runs)
        print(
            f"| {app_dir.name} | {requests} | {percentile(quiet, 50):.3f} / {percentile(quiet, 95):.3f} | {during} "
            f"| {heap} ({args.uploads}) |"
        )


if __name__ == "__main__":
    main()
