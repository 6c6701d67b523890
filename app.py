"""The ViT attention explorer: parse the command line, build the app, serve it.

    python app.py                      # http://127.0.0.1:7860, the bundled CIFAR-10 model
    python app.py --model ckpt.safetensors --port 7861
    python app.py --model deit_small_patch16_224.fb_in1k   # a pretrained name (the default on a Space)

Every view has an API name, so scripts can drive the app with `gradio_client` (see README).
The Gradio code lives in ui/, the pictures in explorer/, the model in vit/ (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import os
import time

# Before torch: on a ZeroGPU Space `spaces` patches torch before anything touches CUDA (docs/space.md).
import spaces  # noqa: F401
import torch

import ui
from explorer.catalog import BUNDLED_PATH, ModelCatalog, ModelUnavailable, pretrained_key
from ui import zerogpu
from ui.heap import bound_the_heap
from ui.settings import (
    NOT_PRELOADED,
    ServerSettings,
    add_server_options,
    default_model,
    model_problem,
    start_model,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default=env.get("GRADIO_SERVER_NAME", "127.0.0.1"), help="bind address")
    p.add_argument("--port", type=int, default=int(env.get("GRADIO_SERVER_PORT", "7860")))
    p.add_argument("--share", action="store_true", help="create a public gradio.live link")
    p.add_argument(
        "--model",
        default=default_model(env),
        help="the model visitors start on: a checkpoint file, a pretrained name (vit.list_pretrained()) or "
        "'bundled' (default: the bundled CIFAR-10 model; on a Hugging Face Space, deit_small_patch16_224.fb_in1k)",
    )
    p.add_argument("--runs-dir", default=env.get("VIT_EXPLORER_RUNS", "runs"), help="where training writes")
    p.add_argument(
        "--torch-threads",
        type=int,
        default=int(env.get("VIT_EXPLORER_TORCH_THREADS", "1")),
        help="intra-op threads per request (default 1: two requests run side by side on two cores)",
    )
    p.add_argument(
        "--present",
        action="store_true",
        default=env.get("VIT_EXPLORER_PRESENT", "") == "1",
        help="presentation mode, for a projector: every text on the page and in the pictures at least 18 px at "
        "1280x720 (or VIT_EXPLORER_PRESENT=1)",
    )
    add_server_options(p)
    args = p.parse_args(argv)
    if problem := model_problem(args.model, args.max_params):  # only the bundled model may be missing
        p.error(problem)
    return args


def fetch_not_preloaded(catalog: ModelCatalog, names: tuple[str, ...] = NOT_PRELOADED) -> list[str]:
    """On a Space, before the page is built: the weights it opens on that its build does not
    preload (`ui.settings.NOT_PRELOADED`), downloaded now, so each lesson opens on the models it
    is about. One that cannot be had is a log line, and the app starts without it: its lesson
    opens on what it has and says which model is missing (issue 60: a missing preload failed the
    Space's build for everyone). One line for the log per name."""
    said = []
    for name in names:
        try:
            catalog.get(pretrained_key(name))
        except ModelUnavailable as e:
            said.append(f"{name} (not preloaded) cannot be had, starting without it: {e}")
        else:
            said.append(f"{name} (not preloaded) downloaded at start")
    return said


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    # Before the server starts its threads: few arenas, and large blocks mapped apiece, keep a
    # server's resident memory flat over a class period (ui/heap.py; docs/security.md, the soak).
    if bounded := bound_the_heap():
        print(bounded, flush=True)
    # One thread per request: on a small shared machine, intra-op threads fight the other
    # request (and anything else running) and made the nano model's forward pass ~100x slower.
    torch.set_num_threads(args.torch_threads)
    started = time.perf_counter()
    settings = ServerSettings.from_args(args)
    checkpoint, start = start_model(args.model)
    limits = {"limits": settings.load, "serving": settings.serving}
    catalog = ModelCatalog(
        checkpoint or BUNDLED_PATH, args.runs_dir, scan_runs=not args.public, default=start, **limits
    )
    catalog.check_downloads()  # offline, the pickers say so before anyone picks weights to download
    if "SPACE_ID" in os.environ and catalog.online:
        for line in fetch_not_preloaded(catalog):
            print(line, flush=True)
    server = ui.server_for(catalog, settings)
    demo = ui.build_page(server)
    # ZeroGPU: the models the Space opens on go to the GPU here, in the main thread (docs/space.md).
    if placed := zerogpu.preload(catalog, zerogpu.start_models(catalog)):
        print(f"on the GPU from the start: {', '.join(placed)}", flush=True)
    print(f"built in {time.perf_counter() - started:.1f} s", flush=True)
    ui.launch(demo, server, args.host, args.port, args.share)


if __name__ == "__main__":
    main()
