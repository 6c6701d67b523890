"""Peak resident memory of the two requests issue 43 found over the 1 GiB per-request budget,
each in a fresh process, printed as Markdown.

    python -m bench.request_memory             # CLIP B/16's words at 224 × 768, then the video export

- **words**: CLIP ViT-B/16 (open_clip's architecture, random weights: `pretrained=None`, nothing is
  downloaded) at the widest input the maps budget admits (whole-image mode, 224 × 768 px), 1, 2
  and 8 words: the words' budget, the relevance pass and the word maps drawn, as /zero_shot does.
- **video**: a checkpoint admitted at crop 1,024 px (32 px patches: a 32 × 32 grid; 7 layers × 9
  heads, 253 MiB of maps a frame, as many as `ServingLimits` admits) and an 18-frame 1080p clip,
  as many frames as `CLIP_INPUT_BYTES` admits at 1,024 px, then as many as the request budget
  admits: the attention video, as /attention_video makes it (after one small export: a server has
  decoded and encoded before).

Each process bounds glibc's heap as the app does (`ui.heap.bound_the_heap`), builds its model, then
samples its own VmRSS every 20 ms while the request runs: the peak above the level before, wall
and CPU seconds. tracemalloc would not see torch's tensors.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
WORDS = ["a cat", "a dog", "a teapot", "a rainbow", "a car", "a tree", "a house", "a boat"]
CLIP_NAME = "ViT-B-16-quickgelu"  # OpenAI's CLIP B/16 (vit_base_patch16_clip_224.openai)
SAMPLE_S = 0.02
REQUEST_BYTES = 1024 * 2**20  # app.py --request-mb's default: what one request may use


def rss_mib() -> float:
    """This process's resident memory (VmRSS), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS: Linux only")


def peak_of(request: Callable[[], str]) -> str:
    """`request()`'s reply beside its peak RSS above the level before (sampled every SAMPLE_S),
    wall and CPU seconds, as one Markdown row's cells."""
    import gc

    gc.collect()
    before, most, done = rss_mib(), [0.0], threading.Event()

    def watch() -> None:
        while not done.wait(SAMPLE_S):
            most[0] = max(most[0], rss_mib())

    watcher = threading.Thread(target=watch)
    watcher.start()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        reply = request()
    finally:
        done.set()
        watcher.join()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return f"{reply} | +{max(most[0], rss_mib()) - before:,.0f} | {wall:.1f} | {cpu:.1f}"


def clip_b16():  # -> (VisionTransformer, ModelMeta, ClipText): torch kept out of the parent process
    """CLIP B/16 as `vit.pretrained.load_pretrained_clip` gives it, with open_clip's random weights."""
    import open_clip
    import torch

    import vit
    from vit.clip import TEMPLATE, from_open_clip, text_tower

    torch.manual_seed(0)
    foreign = open_clip.create_model(CLIP_NAME, pretrained=None).eval()
    meta = vit.ModelMeta([], vit.Preprocessing(224, 224), {"prompt_template": TEMPLATE})
    return from_open_clip(foreign, CLIP_NAME), meta, text_tower(foreign.state_dict(), CLIP_NAME)


def clip_standin():  # -> LoadedModel
    """CLIP B/16 as the app's catalogue holds it (`clip_b16`)."""
    from explorer.loaded import LoadedModel

    model, meta, text = clip_b16()
    return LoadedModel("pretrained:vit_base_patch16_clip_224.openai", "CLIP B/16", model, meta, text=text)


def words_request(words: int) -> Callable[[], str]:
    """/zero_shot's work for the first `words` of WORDS on a 224 × 768 image in whole-image mode,
    within the app's default request budget (`affordable_words`, before any pass)."""
    from PIL import Image

    from explorer import views
    from explorer.canvas import MapStyle
    from explorer.explain import explain
    from explorer.prompts import affordable_words, prompt_relevance, words_bytes, zero_shot

    loaded = clip_standin()
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (224, 768, 3), np.uint8))
    ex = explain(loaded.model, [], loaded.preprocessing, image, "whole")

    def request() -> str:
        size = tuple(ex.input.tensor.shape[-2:])
        prompts, _ = affordable_words(loaded, size, WORDS[:words], REQUEST_BYTES)
        zs = zero_shot(loaded, prompts, prompt_relevance(loaded, ex.input.tensor, prompts))
        for i in range(len(zs.prompts)):
            views.prompt_relevance(ex.input.pixels, ex.grid, zs, i, MapStyle())
        estimate = words_bytes(loaded.model, size, len(prompts)) / 2**20
        return f"{len(zs.prompts)} maps of {words} words (estimated {estimate:,.0f} MiB)"

    return request


def video_checkpoint():  # -> LoadedModel
    """A model admitted at crop 1,024 px with as many maps a frame as the server admits."""
    import vit
    from explorer.catalog import ServingLimits
    from explorer.loaded import LoadedModel
    from vit.preprocessing import CIFAR10_CLASSES

    config = vit.ViTConfig(image_size=1024, patch_size=32, num_classes=10, dim=72, depth=7, heads=9, mlp_dim=72)
    meta = vit.ModelMeta(list(CIFAR10_CLASSES), vit.Preprocessing(1024, 1024), {})
    loaded = LoadedModel("checkpoint:crop1024", "crop 1,024", vit.VisionTransformer(config).eval(), meta)
    ServingLimits().check(loaded)  # admitted, as an upload of it would be
    return loaded


def write_clip(path: Path, frames: int, width: int = 1920, height: int = 1080) -> Path:
    """An H.264 clip of a bright square moving over a dark background."""
    import av  # here, not at the top: bench.gpu_tasks borrows clip_standin on a GPU machine without PyAV

    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for n in range(frames):
            pixels = np.full((height, width, 3), 20, np.uint8)
            pixels[200:500, 40 * n : 40 * n + 300] = 230
            out.mux(stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")))
        out.mux(stream.encode())
    return path


def video_request(frames: int, folder: Path) -> Callable[[], str]:
    """/attention_video's work: the crop-1,024 checkpoint's layer 7 over a `frames`-frame 1080p clip
    (0: as many frames as the request budget admits), within the app's default request budget."""
    from explorer import video
    from explorer.canvas import MapStyle

    loaded = video_checkpoint()
    frames = frames or (REQUEST_BYTES - video.clip_bytes(loaded, 0, 1)) // video.frame_bytes(loaded)
    clip = write_clip(folder / "clip.mp4", frames)
    # a server has decoded, preprocessed and encoded before (torchvision's transforms, libx264): once here too
    warm = write_clip(folder / "one.mp4", 1, 64, 48)
    video.attention_video(loaded, warm, folder / "one-out.mp4", None, 6, MapStyle())

    def request() -> str:
        try:
            made = video.attention_video(loaded, clip, folder / "out.mp4", None, 6, MapStyle(), max_bytes=REQUEST_BYTES)
        except video.VideoError as e:
            return f"refused: {str(e)[:60]}…"
        estimate = video.clip_bytes(loaded, made.frames, 1) / 2**20
        return f"{made.frames} frames of {frames} (estimated {estimate:,.0f} MiB)"

    return request


def one(case: str, n: int) -> None:
    """In this process: the case's request, measured, printed as a row's cells."""
    import torch

    from ui.heap import bound_the_heap

    bound_the_heap()
    torch.set_num_threads(1)  # as the app serves each request (app.py --torch-threads)
    with tempfile.TemporaryDirectory() as tmp:
        request = words_request(n) if case == "words" else video_request(n, Path(tmp))
        print(peak_of(request))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one", nargs=2, metavar=("CASE", "N"), help=argparse.SUPPRESS)  # a child's own case
    args = parser.parse_args(argv)
    if args.one:
        one(args.one[0], int(args.one[1]))
        return
    print("| request | reply | peak (MiB) | wall s | CPU s |")
    print("|---|---|---|---|---|")
    for case, n, name in (
        ("words", 1, "CLIP B/16, 224 × 768, 1 word"),
        ("words", 2, "CLIP B/16, 224 × 768, 2 words"),
        ("words", 8, "CLIP B/16, 224 × 768, 8 words"),
        ("video", 18, "crop-1,024 checkpoint, 18 frames of 1080p"),
        ("video", 0, "crop-1,024 checkpoint, the most frames of 1080p the budget admits"),
    ):
        child = [sys.executable, "-m", "bench.request_memory", "--one", case, str(n)]
        run = subprocess.run(child, cwd=REPO, capture_output=True, text=True, check=True)
        print(f"| {name} | {run.stdout.strip().splitlines()[-1]} |", flush=True)


if __name__ == "__main__":
    main()
