"""Where one analysis and one click spend the server's CPU, stage by stage, printed as Markdown.

    python -m bench.profile_analysis --model bundled --model vit_s16.safetensors --model vit_b16.safetensors

In-process with one torch thread (the app's default), CPU time of this thread
(`time.thread_time`), median of `--repeats`, for each stage: decoding the upload; the forward
pass with every attention map (`explorer.explain.explain`: preprocessing, forward, maps,
probabilities); the numbers the page draws its first screen from (`explorer.page_maps`); each
view's drawing; writing each view (`ui.outputs.saved`, the encoding the app uses) and other
encodings for comparison. Then the whole of an analysis drawing every view main drew at once
(this checkout's stages: another checkout's own cost needs its code, e.g. `PYTHONPATH=.` in that
checkout and this script's path), as the page gets it (the first screen's numbers), as `/analyze`
draws it for API clients, a click and a slider move (API clients; the page draws its own), each as
a ratio to the forward pass. With `--server`, the same model served by app.py:
the server's CPU per request, one client asking in a row, so that what the in-process stages
leave out (Gradio's queue, HTTP, JSON; "transport") shows as the difference.
`bench.checkpoints` writes checkpoints of ViT-S/16 and ViT-B/16 shape with random weights.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import gradio
import torch
from PIL import Image

from bench.visitors import BUNDLED, Server, Visitor, cpu_per_request, load_average, machine, warm_up
from explorer import controls, page_maps, render, views
from explorer.canvas import TEXT_PX, MapStyle
from explorer.catalog import BUNDLED_PATH, ModelCatalog
from explorer.explain import explain
from explorer.images import load_image
from explorer.loaded import LoadedModel
from explorer.more_views import distance as distance_view
from explorer.more_views import overview as overview_view
from ui.outputs import ENCODINGS as OUTPUT_ENCODINGS
from ui.outputs import saved

IMAGE = gradio.media.get_image("cheetah1.jpg")
# Encodings compared for the views (PIL's options): the app's two first (ui.outputs.ENCODINGS).
ENCODINGS: dict[str, dict] = {
    "WebP lossless, effort 0 (views)": OUTPUT_ENCODINGS[".webp"],
    "PNG level 1 (exports; main's views)": OUTPUT_ENCODINGS[".png"],
    "PNG level 0": {"format": "PNG", "compress_level": 0},
    "PNG level 6": {"format": "PNG", "compress_level": 6},
    "WebP lossless, method 0, quality 80": {"format": "WEBP", "lossless": True, "method": 0},
    "JPEG q90 (lossy)": {"format": "JPEG", "quality": 90},
}


def cpu_ms(fn: Callable[[], object], repeats: int) -> float:
    """Median CPU milliseconds of this thread for one call of `fn` (after one warm-up call)."""
    fn()
    samples = []
    for _ in range(repeats):
        began = time.thread_time()
        fn()
        samples.append((time.thread_time() - began) * 1e3)
    return statistics.median(samples)


def loaded_model(model: str) -> LoadedModel:
    """The app's LoadedModel for `model` (`bundled`, or a checkpoint path)."""
    return ModelCatalog(BUNDLED_PATH if model == BUNDLED else model, tempfile.mkdtemp()).get(BUNDLED)


def encoded_bytes(image: Image.Image, options: dict) -> int:
    out = io.BytesIO()
    image.save(out, **options)
    return out.tell()


def stages(loaded: LoadedModel, repeats: int) -> tuple[dict[str, float], dict[str, Image.Image]]:
    """CPU ms per stage and the pictures drawn (to encode)."""
    pre, names = loaded.preprocessing, loaded.meta.class_names
    picture = load_image(IMAGE)
    ex = explain(loaded.model, names, pre, picture)
    style, layer, patch = MapStyle(), ex.depth - 1, (ex.grid[0] // 2, ex.grid[1] // 3)  # the last layer, 0-based
    draw = {
        "input view": lambda: views.input_view(ex),
        "head maps (CLS)": lambda: views.heads(ex, None, layer, style),
        "layers x heads overview": lambda: overview_view.overview(ex, style),
        "rollout": lambda: views.rollout(ex, controls.Fusion(), style),
        "distance chart": lambda: distance_view.distance_chart(ex),
        "position similarity": lambda: render.position_similarity_tiles(loaded.position_similarity()),
        "input view, patch outlined": lambda: views.input_view(ex, patch),
        "head maps (a patch)": lambda: views.heads(ex, patch, layer, style),
    }
    ms = {
        "decode the upload": cpu_ms(lambda: load_image(IMAGE), repeats),
        "forward pass with maps": cpu_ms(lambda: explain(loaded.model, names, pre, picture), repeats),
        "the page's numbers": cpu_ms(lambda: page_maps.page_maps(ex, "model", layer, TEXT_PX, "handle"), repeats),
    }
    pictures = {name: fn() for name, fn in draw.items()}
    for name, fn in draw.items():
        ms[f"draw: {name}"] = cpu_ms(fn, repeats)
        ms[f"write: {name}"] = cpu_ms(lambda p=pictures[name]: saved(p), repeats)
    return ms, pictures


def totals(ms: dict[str, float]) -> dict[str, float]:
    """Whole requests from their stages (drawing + writing each view they return)."""

    def views_of(*names: str) -> float:
        return sum(ms[f"draw: {n}"] + ms[f"write: {n}"] for n in names)

    first = ms["decode the upload"] + ms["forward pass with maps"]
    eager = ("input view", "head maps (CLS)", "layers x heads overview", "rollout", "distance chart")
    return {
        "analysis drawing every view (main's set)": first + views_of(*eager),
        "analysis for the page (its numbers)": first + ms["the page's numbers"],
        "analysis for API clients (input view + head maps)": first + views_of("input view", "head maps (CLS)"),
        "click a patch (API: input view + head maps)": views_of("input view, patch outlined", "head maps (a patch)"),
        "slider move (API: head maps)": views_of("head maps (CLS)"),
    }


def encodings_table(pictures: dict[str, Image.Image], repeats: int) -> list[str]:
    names = list(ENCODINGS)
    rows = ["| view (pixels) | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for view, image in pictures.items():
        cells = []
        for options in ENCODINGS.values():
            spent = cpu_ms(lambda o=options, i=image: encoded_bytes(i, o), repeats)
            cells.append(f"{spent:.1f} ms, {encoded_bytes(image, options) / 1e3:.0f} kB")
        rows.append(f"| {view} ({image.width}x{image.height}) | " + " | ".join(cells) + " |")
    return rows


def served_cpu(model: str, samples: int) -> dict[str, float]:
    """Server CPU per request of each kind from app.py serving `model`, asked in a row."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = Server(folder, 2048, None if model == BUNDLED else model)
        try:
            server.wait()
            grid, depth = warm_up(server.url, folder)
            image = folder / "photo.png"
            Image.open(IMAGE).convert("RGB").save(image)
            return cpu_per_request(server, Visitor(0, image, [], 0.0, grid, depth), folder, samples)
        finally:
            server.stop()


def model_report(model: str, args: argparse.Namespace) -> list[str]:
    loaded = loaded_model(model)
    c = loaded.model.config
    ms, pictures = stages(loaded, args.repeats)
    forward = ms["forward pass with maps"]
    lines = [
        f"### `{Path(model).name}`: {c.image_size} px, patch {c.patch_size}, {c.depth} layers x {c.heads} heads",
        f"({load_average()})",
        "",
        "| stage | CPU ms | x forward pass |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {v:.1f} | {v / forward:.2f} |" for name, v in ms.items()]
    lines += [f"| **{name}** | **{v:.1f}** | **{v / forward:.2f}** |" for name, v in totals(ms).items()]
    if args.server:
        served = served_cpu(model, args.server)
        lines += ["", f"app.py serving it, server CPU per request ({args.server} in a row, {load_average()}):", ""]
        lines += ["| " + " | ".join(served) + " |", "|" + "---|" * len(served)]
        lines += ["| " + " | ".join(f"{1e3 * v:.0f} ms ({1e3 * v / forward:.2f}x)" for v in served.values()) + " |"]
    if args.encodings:
        lines += ["", "Encodings of each view (CPU, size):", "", *encodings_table(pictures, args.repeats)]
    return [*lines, ""]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", action="append", help=f"a checkpoint, or {BUNDLED!r} (repeatable; default: bundled)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--server", type=int, default=0, help="also serve each model and ask N requests of each kind")
    p.add_argument("--encodings", action="store_true", help="compare PNG levels, WebP and JPEG for every view")
    args = p.parse_args(argv)
    if args.repeats < 1 or args.server < 0:
        p.error("--repeats must be at least 1 and --server at least 0")
    torch.set_num_threads(1)  # as app.py serves
    print(f"machine: {machine()}; torch {torch.__version__}, one thread\n")
    for model in args.model or [BUNDLED]:
        print("\n".join(model_report(model, args)))


if __name__ == "__main__":
    main()
