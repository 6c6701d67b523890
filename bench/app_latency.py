"""App latency and cold start, printed as a Markdown report.

    python -m bench.app_latency                  # everything (a few minutes on 2 cores)
    python -m bench.app_latency --skip-cold-start

1. Server-side latency of one full analysis (`ui.explore_handlers.full_analysis`: decode, one forward pass with
   attention, the views of the first screen rendered and written as PNG; the "More views" are drawn
   when opened, see bench/profile_analysis.py), with the bundled model and with ViT-B/16.
   For ViT-B/16 the reference is torchvision's bare forward pass (fused attention, no maps, no
   views) on the same preprocessed input; weights are random (latency does not depend on them).
2. Cold start: seconds from launching `python app.py` to the first page served, against a bare
   Gradio app that imports torch, both started the same way.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gradio
import torch
import torchvision

import vit
from bench.serving import free_port, wait_until_served
from explorer.canvas import TEXT_PX, MapStyle
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.explain import model_input
from explorer.images import load_image
from explorer.loaded import LoadedModel
from ui.explore_handlers import full_analysis
from vit.preprocessing import CIFAR10_CLASSES

ROOT = Path(__file__).resolve().parent.parent
IMAGE = gradio.media.get_image("cheetah1.jpg")
BARE_APP = """
import torch  # noqa: F401
import gradio as gr
with gr.Blocks(analytics_enabled=False) as demo:
    gr.Markdown("bare")
demo.launch(server_port={port})
"""


def timed(fn, repeats: int, warmup: int = 2) -> tuple[list[float], list[float]]:
    """(wall seconds, CPU seconds of this thread) per call. With one torch thread all the work
    runs in the calling thread, so CPU time is what the wall time would be on an idle machine."""
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.thread_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.thread_time() - c)
    return wall, cpu


def ms(samples: tuple[list[float], list[float]]) -> str:
    wall, cpu = samples
    p90 = statistics.quantiles(wall, n=10)[-1]
    return (
        f"wall p50 {statistics.median(wall) * 1e3:.0f} ms, p90 {p90 * 1e3:.0f} ms; "
        f"CPU p50 {statistics.median(cpu) * 1e3:.0f} ms (n={len(wall)})"
    )


def median_wall(samples: tuple[list[float], list[float]]) -> float:
    return statistics.median(samples[0])


def seconds(samples: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in samples)


def analysis_latency(loaded: LoadedModel, repeats: int) -> tuple[list[float], list[float]]:
    depth = loaded.model.config.depth
    return timed(lambda: full_analysis(loaded, IMAGE, "crop", depth, TEXT_PX, MapStyle(), store=None), repeats)


def vit_b16(repeats: int) -> tuple[tuple[list[float], list[float]], tuple[list[float], list[float]]]:
    torch.manual_seed(0)
    reference = torchvision.models.vit_b_16().eval()
    ours = vit.from_torchvision(reference)
    pre = vit.Preprocessing(resize_size=256, crop_size=224)
    meta = vit.ModelMeta([str(i) for i in range(1000)], pre)
    loaded = LoadedModel("vit_b_16", "ViT-B/16 (random weights)", ours, meta)
    x = model_input(load_image(IMAGE), pre, 16).tensor

    def bare() -> None:
        with torch.inference_mode():
            reference(x)

    return analysis_latency(loaded, repeats), timed(bare, repeats)


def cold_start(command: list[str], env: dict, port: int) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_served(f"http://127.0.0.1:{port}/", proc)
        return time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def cold_starts(rounds: int, model: Path) -> tuple[list[float], list[float]]:
    """Alternate the two apps so background load hits both alike."""
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
    ours, bare = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            port = free_port()
            ours.append(cold_start([sys.executable, "app.py", "--port", str(port), "--model", str(model)], env, port))
            port = free_port()
            script = Path(tmp) / "bare_app.py"
            script.write_text(BARE_APP.format(port=port))
            bare.append(cold_start([sys.executable, str(script)], env, port))
    return ours, bare


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--vit-b-repeats", type=int, default=8)
    p.add_argument("--cold-start-rounds", type=int, default=3)
    p.add_argument("--skip-cold-start", action="store_true")
    p.add_argument("--torch-threads", type=int, default=1, help="as the app's --torch-threads (default 1)")
    args = p.parse_args()
    torch.set_num_threads(args.torch_threads)

    catalog = ModelCatalog()  # the bundled model, or "untrained weights" while it is missing
    bundled = catalog.get(BUNDLED)
    lines = [
        f"machine: {platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.1f}",
        f"- full analysis, {bundled.label}: {ms(analysis_latency(bundled, args.repeats))}",
    ]
    ours, bare = vit_b16(args.vit_b_repeats)
    ratio = median_wall(ours) / median_wall(bare)
    lines += [
        f"- full analysis, ViT-B/16 224x224: {ms(ours)}",
        f"- torchvision vit_b_16 bare forward: {ms(bare)}",
        f"- ratio (full analysis / bare forward, medians): {ratio:.2f}x",
    ]
    if not args.skip_cold_start:
        with tempfile.TemporaryDirectory() as tmp:
            model = Path(tmp) / "nano.safetensors"
            vit.save_checkpoint(bundled.model, model, class_names=CIFAR10_CLASSES, preprocessing=bundled.preprocessing)
            ours_s, bare_s = cold_starts(args.cold_start_rounds, model)
        m_ours, m_bare = statistics.median(ours_s), statistics.median(bare_s)
        lines += [
            f"- cold start `python app.py` to first page: median {m_ours:.2f} s ({seconds(ours_s)})",
            f"- cold start bare Gradio + torch: median {m_bare:.2f} s ({seconds(bare_s)})",
            f"- cold-start ratio: {m_ours / m_bare:.2f}x",
        ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
