"""What an analysis sends the page, on a school's Wi-Fi share, in a real browser (issue 58).

    python -m bench.page_bytes --app-dir /tmp/old-af847d7 --app-dir .   # two versions side by side
    python -m bench.page_bytes --models bundled,B/16 --uploads 3        # fewer, quicker

For each model (the bundled one; DeiT-S, ViT-B/16 and ViT-L/14 with 4 registers as checkpoints
of their shapes with random weights, written once to `--folder`) and each input (the cat example
centre-cropped, and a 4:1 panorama of it in whole-image mode, the widest explain admits), and
each checkout (`--app-dir`; the same venv serves both), starts `python app.py --model ...` on a
free loopback port and opens it in Debian's Chromium (Playwright). With Chromium's network
emulation (Network.emulateNetworkConditions: 1.5 Mbit/s down and up, 150 ms latency, a
student's share of a school Wi-Fi) it uploads the input once and prints:

- bytes before the first map: bytes on the wire (Network.dataReceived) from the upload to the head
  maps of the default query shown on the page;
- bytes in all: until the page has what it asks for by itself (ui/js/rows.js `settled`, where it
  exists) and the network has been quiet for QUIET_S;
- upload to first map, throttled and not: the forward pass is in both, so their difference is
  what the wire costs;
- a patch clicked the moment the first map is shown (throttled): the middle patch, whose rows
  may not have come yet; seconds until the page shows its maps (issue 58's goal: 1 s at most);
- another layer's patch rows, all of them, as the page asks for them when a patch query is shown
  there (band after band; af847d7's page asked for a layer whole), unthrottled: bytes on the wire
  (issue 58's goal for ViT-B/16: 0.3 MB);
- the page's JS heap after `--uploads` analyses of different images of that input's kind,
  unthrottled (Chromium's performance.memory after a collection).

A model whose memory budget refuses a 4:1 input (ViT-B/16's attention maps at 896 x 224 px: 339 MiB
of 256) is measured again at the widest it admits with `--wide` (B/16: 768 / 224).

Speed is compared side by side only (the same machine, the same run); nothing here is a test.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from bench.page_clicks import ARGS, CHROMIUM, HEAP
from bench.visitors import EXAMPLES, ROOT, Server, machine

DOWN_BYTES_S = 1.5e6 / 8  # 1.5 Mbit/s
UP_BYTES_S = 1.5e6 / 8
LATENCY_MS = 150
QUIET_S = 3.0  # no byte for this long: nothing more is coming
MODELS = {  # label: app.py --model (a config name: a random-weight checkpoint of its shapes)
    "bundled": "bundled",
    "DeiT-S": "vit_small_patch16_224",
    "B/16": "vit_base_patch16_224",
    "L/14+reg": "vit_large_patch14_reg4_dinov2",
}
WIDE = 4  # explorer.explain.MAX_ASPECT: the widest whole-image input the app admits
SHOWN = """(old) => { const i = document.querySelector('#heads img');
  return i && i.src && i.src !== old && i.alt.includes('query CLS') && i.complete; }"""
SETTLED = "() => !window.attentionMaps.settled || window.attentionMaps.settled()"
# The middle patch, clicked by the page's own handler, and the milliseconds until its maps are shown.
CLICKED = """async () => { const m = window.attentionMaps, [gh, gw] = m.data.grid, t0 = performance.now();
  const row = Math.floor(gh / 2), col = Math.floor(gw / 2), want = `patch (${row + 1}, ${col + 1})`;
  m.setQuery({ row, col });
  const img = () => document.querySelector('#heads img');
  while (!(img().alt.includes(want) && img().complete)) await new Promise((r) => setTimeout(r, 10));
  return performance.now() - t0; }"""
REFUSED = "() => [...document.querySelectorAll('.toast-body, .error')].map((e) => e.textContent).join(' ')"
# Another layer's patch rows (layer 1, or 2 where 1 is shown), every band asked for one after another
# as the page asks them (`ask`); af847d7's page asked for a layer whole. The bands asked for.
ANOTHER_LAYER = """async () => { const m = window.attentionMaps, d = m.data, layer = d.layer === 1 ? 2 : 1;
  if (d.band === undefined) { await m.ask(layer - 1); return 1; }
  const bands = Math.ceil(d.grid[0] * d.grid[1] / d.band);
  for (let band = 0; band < bands; band++) await m.ask(layer - 1, band, true);
  return bands; }"""


@dataclass
class Wire:
    """Bytes Chromium received (Network.dataReceived), each with when it came (perf_counter)."""

    events: list[tuple[float, int]]

    def since(self, start: float, until: float = float("inf")) -> int:
        return sum(n for t, n in self.events if start <= t <= until)

    def quiet_for(self, seconds: float) -> bool:
        return not self.events or time.perf_counter() - self.events[-1][0] >= seconds


def images(folder: Path, wide: float, count: int) -> list[Path]:
    """`count` different pictures: the cat example (shifted colours after the first), square, or
    `wide` times as wide as high (the example repeated side by side) when `wide` is not 0."""
    pixels = np.asarray(Image.open(EXAMPLES / "cat.jpg").convert("RGB")).astype(int)
    if wide:
        side = pixels.shape[0]
        pixels = np.concatenate([pixels] * int(np.ceil(wide)), axis=1)[:, : round(side * wide)]
    paths = []
    for n in range(count):
        path = folder / f"{'wide' if wide else 'square'}-{n}.png"
        Image.fromarray(((pixels + 23 * n) % 256).astype(np.uint8)).save(path)
        paths.append(path)
    return paths


def throttle(cdp, on: bool) -> None:
    """Chromium's network emulation: a school Wi-Fi share, or none."""
    conditions = {"offline": False, "latency": LATENCY_MS if on else 0}
    conditions |= {"downloadThroughput": DOWN_BYTES_S if on else -1, "uploadThroughput": UP_BYTES_S if on else -1}
    cdp.send("Network.emulateNetworkConditions", conditions)


def upload(page, wire: Wire, image: Path, timeout_s: float = 300, click: bool = False) -> dict:
    """Upload `image`; seconds and bytes to the first map shown, and bytes until the page is
    settled and the wire quiet; with `click`, seconds from a patch clicked as the map is shown
    to its maps. {"refused": words} where the app says it cannot draw it."""
    img = page.locator("#heads img")
    before = img.get_attribute("src") if img.count() else None
    started = time.perf_counter()
    page.locator("#upload input[type=file]").set_input_files(str(image))
    deadline = started + timeout_s
    while not page.evaluate(SHOWN, before):
        if words := page.evaluate(REFUSED).strip():
            return {"refused": words[:120]}
        if time.perf_counter() > deadline:
            raise TimeoutError(f"no map for {image.name} in {timeout_s} s")
        page.wait_for_timeout(20)
    shown = time.perf_counter()
    click_s = page.evaluate(CLICKED) / 1000 if click else None
    page.wait_for_function(SETTLED, timeout=timeout_s * 1000)
    while not wire.quiet_for(QUIET_S):
        page.wait_for_timeout(200)
    sent = {"first_s": shown - started, "first_bytes": wire.since(started, shown), "bytes": wire.since(started)}
    return sent | {"click_s": click_s}


def another_layer(page, wire: Wire) -> dict:
    """Bytes on the wire for another layer's patch rows, all its bands (ANOTHER_LAYER), until the
    wire is quiet, and how many bands they came in."""
    started = time.perf_counter()
    bands = page.evaluate(ANOTHER_LAYER)
    while not wire.quiet_for(QUIET_S):
        page.wait_for_timeout(200)
    return {"bytes": wire.since(started), "bands": bands}


def one_server(app_dir: Path, model: str, folder: Path, browser, wide: float, uploads: int) -> dict:
    """The measurements of one checkout, model and kind of input (the module's docstring)."""
    server = Server(folder, 2048, None if model == "bundled" else model, app_dir=app_dir)
    try:
        server.wait()
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(300_000)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        wire = Wire([])
        cdp.on("Network.dataReceived", lambda e: wire.events.append((time.perf_counter(), e["encodedDataLength"])))
        page.goto(server.url)
        if wide:
            page.get_by_label("Whole image (non-square grid)").check()
        pictures = images(folder, wide, uploads + 2)
        upload(page, wire, pictures[-1])  # the server's lazy imports, not a class's first upload
        result = {"fast": upload(page, wire, pictures[-2])}
        throttle(cdp, True)
        result["slow"] = upload(page, wire, pictures[0], click=True)
        throttle(cdp, False)
        if "refused" not in result["slow"]:
            result["layer"] = another_layer(page, wire)
            for picture in pictures[1:uploads]:
                upload(page, wire, picture)
            result["heap"] = int(page.evaluate(HEAP))
        page.close()
        return result
    finally:
        server.stop()


def row(app_dir: Path, label: str, wide: float, result: dict, uploads: int) -> str:
    fast, slow = result["fast"], result["slow"]
    what = f"{label}, {f'whole {wide:.2f}:1' if wide else 'centre crop'}"
    if "refused" in slow:
        return f"| {what} | {app_dir.name} | refused: {slow['refused']} | | | | | | |"
    bands = result["layer"]["bands"]
    return (
        f"| {what} | {app_dir.name} | {slow['first_bytes'] / 1e6:.3f} MB | {slow['bytes'] / 1e6:.3f} MB "
        f"| {slow['first_s']:.1f} s | {fast['first_s']:.1f} s | {slow['click_s']:.2f} s "
        f"| {result['layer']['bytes'] / 1e6:.3f} MB ({bands} band{'s' * (bands != 1)}) "
        f"| {result['heap'] / 2**20:.1f} MiB ({uploads}) |"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--app-dir", action="append", type=Path, help="a checkout to serve (repeatable; default: this)")
    p.add_argument("--models", default=",".join(MODELS), help=f"some of {', '.join(MODELS)}")
    p.add_argument("--inputs", default="crop,whole", help="crop, whole or both")
    p.add_argument("--uploads", type=int, default=10, help="analyses before the page's heap is read")
    p.add_argument("--wide", type=float, default=WIDE, help="the whole-image input's width : height")
    p.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "page-bytes", help="checkpoints")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from bench.checkpoints import random_checkpoint

    args.folder.mkdir(parents=True, exist_ok=True)
    dirs = [d.resolve() for d in args.app_dir or [ROOT]]
    rows = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for label in args.models.split(","):
            name = MODELS[label]
            path = args.folder / f"{name}.safetensors"
            if name != "bundled" and not path.exists():
                random_checkpoint(name, path)
            model = "bundled" if name == "bundled" else str(path)
            for wide in [args.wide if kind == "whole" else 0.0 for kind in args.inputs.split(",")]:
                for app_dir in dirs:
                    with tempfile.TemporaryDirectory() as tmp:
                        result = one_server(app_dir, model, Path(tmp), browser, wide, args.uploads)
                    rows.append(row(app_dir, label, wide, result, args.uploads))
                    print(rows[-1], file=sys.stderr, flush=True)
        browser.close()
    print(f"command: `{shlex.join([Path(sys.executable).name, '-m', 'bench.page_bytes', *sys.argv[1:]])}`")
    print(f"machine: {machine()}; {DOWN_BYTES_S * 8 / 1e6:.1f} Mbit/s, {LATENCY_MS} ms (Chromium's emulation)\n")
    print("| model, input | checkout | bytes before the first map | bytes in all | upload to first map "
          "| the same unthrottled | patch click as it is shown | another layer's patch rows "
          "| page's JS heap after uploads |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
