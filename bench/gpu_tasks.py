"""What a ZeroGPU call costs, measured on a CUDA GPU (docs/space.md, explorer.compute's constants).

The Space's models are built at their real shapes with random weights (no download: the
arithmetic does not depend on the values). Two parts:

1. **Worker calls, as `spaces` makes them** (spaces/zero/wrappers.py, torch/patching.py): the
   main process holds the models on the CPU and never starts CUDA; each GPU function gets a worker
   forked from it, which at its first call starts CUDA and copies every model the Space put on
   `cuda` at start to the GPU, then runs the task; the arguments and the result cross the fork
   pickled through a queue. A later call reuses the worker. Timed from the main process: first
   call (fork, CUDA start, copies, task, pickling) and later calls (task, pickling).
2. **Each task's own seconds** in a warm process (median of `--repeats`), against the estimate
   `explorer.compute` asks for, and a Train-tab step's images a second fine-tuning DeiT-S at 224 px.

    python -m bench.gpu_tasks [--out results.json] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import queue
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import vit
from explorer import compute, explain, gallery, prompts, view_tasks
from explorer.loaded import LoadedModel
from explorer.more_views import logit_lens, pca
from vit.pretrained import PRETRAINED

# The Space's models (docs/space.md, "What the Space preloads"): key -> preset of the same shapes.
SPACE_MODELS = {
    "deit_small_patch16_224.fb_in1k": "vit_small_patch16_224",
    "vit_small_patch16_224.dino": "vit_small_patch16_224",
    "vit_small_patch14_dinov2.lvd142m": "vit_small_patch14_dinov2",
    "vit_large_patch14_reg4_dinov2.lvd142m": "vit_large_patch14_reg4_dinov2",
    "vit_large_patch14_dinov2.lvd142m": "vit_large_patch14_dinov2",
}
WORDS = ["a photo of a cat", "a dog", "a car", "a bird", "grass"]
DEVICE = "cuda"  # --device cpu: a rehearsal of the script on a machine without a GPU


def synchronize() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def space_models(small: bool = False) -> dict[str, LoadedModel]:
    """Every model the Space opens on, random weights at the real shapes, CLIP B/16 included
    (`small`: ViT-S/14 in place of each ViT-L/14, for a rehearsal on the CPU)."""
    from bench.request_memory import clip_standin

    torch.manual_seed(0)
    loaded = {}
    for key, preset in SPACE_MODELS.items():
        model = vit.create_model(preset.replace("large", "small") if small else preset).eval()
        loaded[key] = LoadedModel(f"pretrained:{key}", key, model, vit.ModelMeta([], None, {}))
    loaded["clip"] = clip_standin()
    return loaded


def image(loaded: LoadedModel, images: int = 1) -> torch.Tensor:
    """Random pixels at the side the app gives the model (DINOv2: 224 px, not its weights' 518:
    issue 60 found the ViT-L/14 row measured at 518 px, a call the app never makes)."""
    known = PRETRAINED.get(loaded.label)
    size = (known.input_size if known else None) or loaded.model.config.image_size
    return torch.randn(images, 3, size, size, generator=torch.Generator().manual_seed(0))


def tasks(
    models: dict[str, LoadedModel], small: bool = False
) -> dict[str, tuple[Callable, LoadedModel, tuple, Callable]]:
    """name -> (task, model, arguments, the cost function GpuTask asks with)."""
    deit, dinov2 = models["deit_small_patch16_224.fb_in1k"], models["vit_small_patch14_dinov2.lvd142m"]
    large, clip = models["vit_large_patch14_reg4_dinov2.lvd142m"], models["clip"]
    pca_images = [image(dinov2) for _ in range(4)]
    # Lesson 2's ViT-L/14s have no classifier; relevance needs one, so this ViT-L/14 gets ImageNet's head.
    preset = SPACE_MODELS["vit_large_patch14_dinov2.lvd142m"].replace("large", "small" if small else "large")
    headed = LoadedModel(
        "vit_l14_head", "ViT-L/14 + head", vit.create_model(preset, num_classes=1000).eval(), deit.meta
    )
    return {
        "forward with maps, DeiT-S": (explain.forward_maps, deit, (image(deit),), explain.forward_cost),
        "forward with maps, ViT-L/14 reg4": (explain.forward_maps, large, (image(large),), explain.forward_cost),
        "relevance, DeiT-S": (view_tasks.relevance_map, deit, (image(deit), None), view_tasks.relevance_cost),
        "relevance, ViT-L/14 + head": (
            view_tasks.relevance_map,
            headed,
            (image(headed), None),
            view_tasks.relevance_cost,
        ),
        "CLIP words (5), B/16": (prompts.prompt_relevance, clip, (image(clip), WORDS), prompts.prompt_cost),
        "PCA, 4 images, DINOv2 S/14": (
            pca.patch_features,
            dinov2,
            (pca_images, 11, False),
            pca.patch_features_cost,
        ),
        "logit lens, DeiT-S": (logit_lens.layer_predictions, deit, (image(deit),), logit_lens.layer_predictions_cost),
        # class mode's gallery (issue 59): a class's 30 pictures in one call, layer 12, the mean of the heads
        "gallery, 30 images, DeiT-S": (gallery.gallery_maps, deit, (image(deit, 30), 11, None), gallery.gallery_cost),
    }


def _worker(models: dict[str, LoadedModel], calls: multiprocessing.Queue, results: multiprocessing.Queue) -> None:
    """A GPU worker as the package's: CUDA and the copies at the first call, then tasks."""
    started = False
    while (call := calls.get()) is not None:
        task, key, args = call
        timings = {}
        if not started:
            t = time.perf_counter()
            torch.Tensor([0]).to(DEVICE)  # spaces.zero.torch.init
            timings["cuda start"] = time.perf_counter() - t
            t = time.perf_counter()
            for loaded in models.values():  # the models the Space put on cuda at start (ui.zerogpu.preload)
                compute.place(loaded.model, DEVICE)
                if loaded.text is not None:
                    compute.place(loaded.text.model, DEVICE)
            synchronize()
            timings["copies to the GPU"] = time.perf_counter() - t
            started = True
        t = time.perf_counter()
        value = compute.run_here(task, models[key], *args, device=DEVICE)
        synchronize()
        timings["task s"] = time.perf_counter() - t
        results.put((value, timings))


def worker_calls(models: dict[str, LoadedModel], runs: dict, later: int = 3) -> list[dict]:
    """First and later calls of each task through its own forked worker, as the package keeps one per function."""
    context = multiprocessing.get_context("fork")
    rows = []
    for name, (task, loaded, args, _) in runs.items():
        calls, results = context.Queue(), context.Queue()
        worker = context.Process(target=_worker, args=(models, calls, results), daemon=True)
        key = next(k for k, v in models.items() if v is loaded)
        t = time.perf_counter()
        worker.start()
        for call in range(1 + later):
            calls.put((task, key, args))
            try:
                _, timings = results.get(timeout=180)
            except queue.Empty:
                rows.append({"task": name, "call": "first" if call == 0 else "later", "seconds": "no answer in 180 s"})
                break
            total = time.perf_counter() - t
            rows.append({"task": name, "call": "first" if call == 0 else "later", "seconds": total, **timings})
            t = time.perf_counter()
        calls.put(None)
        worker.join(30)
        worker.kill()
    return rows


def task_seconds(runs: dict, repeats: int) -> list[dict]:
    """Each task's median seconds in this (warm) process on the GPU, and what GpuTask asks for."""
    rows = []
    for name, (task, loaded, args, cost) in runs.items():
        compute.run_here(task, loaded, *args, device=DEVICE)  # warm-up: cuBLAS choices, the copy
        times = []
        for _ in range(repeats):
            synchronize()
            t = time.perf_counter()
            compute.run_here(task, loaded, *args, device=DEVICE)
            synchronize()
            times.append(time.perf_counter() - t)
        estimate = cost(loaded, *args)
        rows.append(
            {
                "task": name,
                "seconds": statistics.median(times),
                "estimated work s": estimate,
                "asked s": compute.gpu_seconds(estimate),
            }
        )
    return rows


def train_rate(batch: int = 64, steps: int = 10) -> dict[str, Any]:
    """Images a second of the Train tab's step fine-tuning a ViT-S/16 at 224 px on 10 classes (eager, bf16)."""
    from training.augment import AugmentConfig
    from training.device_data import Normalizer
    from training.optim import make_optimizer
    from training.step import TrainStep
    from vit.preprocessing import IMAGENET_MEAN, IMAGENET_STD, Preprocessing

    device = torch.device(DEVICE)
    model = vit.create_model("vit_small_patch16_224", num_classes=10).to(device).train()
    step = TrainStep(
        model,
        make_optimizer(model, 1e-4, 0.05, device),
        augment=AugmentConfig(),
        normalize=Normalizer(Preprocessing(224, 224, IMAGENET_MEAN, IMAGENET_STD), device),
        num_classes=10,
        image_size=224,
        label_smoothing=0.1,
        clip_grad=1.0,
    )
    images = torch.randint(0, 256, (batch, 3, 32, 32), dtype=torch.uint8, device=device)  # CIFAR, upsampled
    labels = torch.randint(0, 10, (batch,), device=device)
    gen = torch.Generator(device).manual_seed(0)
    for _ in range(3):
        step(images, labels, gen, 1e-4)
    synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step(images, labels, gen, 1e-4)
    synchronize()
    return {
        "task": f"Train step, ViT-S/16 at 224 px, batch {batch}",
        "img/s": batch * steps / (time.perf_counter() - t),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu_tasks.json")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cuda", help="cpu: a rehearsal without a GPU")
    parser.add_argument("--train-batch", type=int, default=64)
    parser.add_argument("--small", action="store_true", help="ViT-S/14 for the ViT-L/14s (a CPU rehearsal)")
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device
    # One thread, as the app runs (app.py --torch-threads 1): a process forked after a
    # multi-threaded torch operation can hang at its first one (docs/space.md).
    torch.set_num_threads(1)
    models = space_models(args.small)
    runs = tasks(models, args.small)
    report = {"workers": worker_calls(models, {k: runs[k] for k in list(runs)[:1] + list(runs)[4:5]})}
    # CUDA starts in this process only after the forks, as in the Space's main process.
    report["gpu"] = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
    report["tasks"] = task_seconds(runs, args.repeats)
    report["train"] = train_rate(args.train_batch)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1, default=str)
    for part in ("workers", "tasks"):
        for row in report[part]:
            print(" | ".join(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}" for k, v in row.items()))
    print(report["train"])


if __name__ == "__main__":
    main()
