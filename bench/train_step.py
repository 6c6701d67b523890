"""The training step against its physical limit, side by side in one run, for several batch sizes:

  full       data on the device + augmentation + forward + backward + optimizer: the trainer's
             own `training.step.TrainStep` on batches gathered from a uint8 set on the device
  model      forward + backward + optimizer on one fixed, already normalised batch
             (`training.optim.model_step`): what the model alone costs
  timm       timm's VisionTransformer with the same dimensions and weights, trained the same
             way as `model`

Goals (issue 13): full >= 0.85x model, model >= 1.0x timm. Then MixUp/CutMix alone, ours
against timm.data.Mixup and torchvision.transforms.v2 MixUp/CutMix, and the per-image
augmentation, ours batched against torchvision.transforms.v2 image by image.

The contenders are interleaved round by round so machine noise hits all alike; medians over
rounds. CPU in fp32; on CUDA bf16 autocast (as the trainer does), synchronised before each
clock read.

    python -m bench.train_step [--model vit_cifar_nano] [--batches 32,64,128] [--rounds 3] [--steps 2]
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import timm
import torch
from torchvision.transforms import v2

import vit
from training.augment import AugmentConfig, AugmentDraw, augment_batch, draw_augmentation, mix
from training.config import resolve_device
from training.device_data import Normalizer
from training.graphs import CapturedStep
from training.optim import make_optimizer, model_step
from training.step import TrainStep
from vit.preprocessing import CIFAR10

DATA_SIZE = 4096  # uint8 training images held on the device


def timm_twin(model: vit.VisionTransformer) -> torch.nn.Module:
    """timm's VisionTransformer with our model's configuration and weights (timm's names are ours)."""
    c = model.config
    twin = timm.models.vision_transformer.VisionTransformer(
        img_size=c.image_size,
        patch_size=c.patch_size,
        num_classes=c.num_classes,
        embed_dim=c.dim,
        depth=c.depth,
        num_heads=c.heads,
        mlp_ratio=c.mlp_dim / c.dim,
        qkv_bias=c.qkv_bias,
        class_token=c.class_token,
        global_pool="token" if c.pool == "cls" else "avg",
        drop_path_rate=c.drop_path,
    )
    twin.load_state_dict(model.state_dict())
    return twin


def cpu_name() -> str:
    """The CPU model, e.g. 'AMD EPYC' (platform.processor() is often empty on Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


@dataclass
class Timer:
    """Times calls on `device` by `clock`: 'wall' (time.perf_counter) or 'cpu' (time.process_time,
    this process's CPU seconds only: on a machine shared with other jobs, whose load skews
    wall-clock by 2x and more, it measures the work itself; meant for --device cpu --threads 1,
    as more threads add their spin-waits)."""

    device: torch.device
    clock: str = "wall"

    def now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.process_time() if self.clock == "cpu" else time.perf_counter()

    def per_call(self, run: Callable[[], object], calls: int) -> float:
        start = self.now()
        for _ in range(calls):
            run()
        return (self.now() - start) / calls

    def measure(self, contenders: dict, rounds: int, calls: int) -> tuple[dict[str, float], dict[str, float]]:
        """(name -> median seconds per call, name -> seconds of the first call: with --compile the
        compilation). Contenders interleaved round by round so machine noise hits all alike."""
        first = {name: self.per_call(run, 1) for name, run in contenders.items()}
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(rounds):
            for name, run in contenders.items():
                times[name].append(self.per_call(run, calls))
        return {name: statistics.median(t) for name, t in times.items()}, first


def step_contenders(
    model_name: str, batch: int, device: torch.device, augment: AugmentConfig, compile: bool, graph: bool = False
) -> dict:
    """name -> a function doing one training step of `batch` images. With `graph`, ours (full and
    model-only) replay each step as one CUDA graph (training.graphs), and timm is timed both as
    people run it (eager, or compiled with `compile`) and graphed the same way."""
    torch.manual_seed(0)
    ours = vit.create_model(model_name).to(device).train()
    twin = timm_twin(ours).to(device).train()
    full_model = vit.create_model(model_name).to(device).train()
    full_model.load_state_dict(ours.state_dict())
    size, classes = ours.config.image_size, ours.config.num_classes
    data = torch.randint(0, 256, (DATA_SIZE, 3, size, size), dtype=torch.uint8, device=device)
    data_labels = torch.randint(0, classes, (DATA_SIZE,), device=device)
    full = TrainStep(
        full_model,
        make_optimizer(full_model, 1e-3, 0.05, device, capturable=graph),
        augment=augment,
        normalize=Normalizer(CIFAR10, device),
        num_classes=classes,
        image_size=size,
        label_smoothing=0.1,
        clip_grad=1.0,
        compile=compile,
        cuda_graph=graph,
    )
    gen = torch.Generator(device).manual_seed(0)
    order = torch.randperm(DATA_SIZE, device=device)
    starts = itertools.cycle(range(0, DATA_SIZE - batch + 1, batch))

    def full_step() -> None:
        index = order[(start := next(starts)) : start + batch]  # a gather, as the trainer's shard slices
        full(data[index], data_labels[index], gen, 1e-3)

    x = CIFAR10.normalize(data[:batch])
    targets = torch.eye(classes, device=device)[data_labels[:batch]]
    contenders = {"full": full_step}
    models = {"model": ours, "timm": twin}
    if graph:
        models["timm graphed"] = timm_twin(ours).to(device).train()
    for name, module in models.items():
        captured = graph and name != "timm"
        optimizer = make_optimizer(module, 1e-3, 0.05, device, capturable=captured)
        step = partial(
            model_step, torch.compile(module) if compile else module, optimizer, label_smoothing=0.1, clip_grad=1.0
        )
        contenders[name] = partial(CapturedStep(step, module, optimizer) if captured else step, x, targets)
    return contenders


def mix_contenders(batch: int, size: int, classes: int, device: torch.device, compile: bool) -> dict:
    """name -> one MixUp/CutMix of a normalised float batch with label smoothing 0.1 (with
    `compile`, ours also as compiled in the trainer: the draws eager, the mixing in the graph)."""
    x = torch.randn(batch, 3, size, size, device=device)
    labels = torch.randint(0, classes, (batch,), device=device)
    config = AugmentConfig(crop_padding=0, flip=False, randaug_ops=0, erase_prob=0, mixup_alpha=0.8, cutmix_alpha=1.0)
    gen = torch.Generator(device).manual_seed(0)
    timm_mix = timm.data.Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=classes)
    tv_mix = v2.RandomChoice([v2.MixUp(alpha=0.8, num_classes=classes), v2.CutMix(alpha=1.0, num_classes=classes)])

    def apply(d: AugmentDraw) -> tuple[torch.Tensor, torch.Tensor]:
        targets = (labels[:, None] == torch.arange(classes, device=device)).float() * 0.9 + 0.1 / classes
        return mix(x, targets, d.cutmix, d.mix_lam, d.cut_center)

    def draw() -> AugmentDraw:
        return draw_augmentation(config, x.shape, device, gen)

    contenders = {"ours": lambda: apply(draw())}
    if compile:
        compiled = torch.compile(apply, fullgraph=True)
        contenders["ours, compiled"] = lambda: compiled(draw())
    contenders["timm.data.Mixup"] = lambda: timm_mix(x.clone(), labels)  # in place: a fresh copy each call
    contenders["torchvision v2"] = lambda: tv_mix(x, labels)
    return contenders


def augment_contenders(batch: int, size: int, classes: int, device: torch.device) -> dict:
    """name -> the default per-image augmentation of a uint8 batch, MixUp/CutMix left out.

    torchvision's v2 transforms draw one set of parameters per call, so a batched call would crop,
    flip and RandAugment every image alike; per-image parameters need one call per image."""
    images = torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8, device=device)
    labels = torch.randint(0, classes, (batch,), device=device)
    config = AugmentConfig(mixup_alpha=0, cutmix_alpha=0)
    normalize = Normalizer(CIFAR10, device)
    gen = torch.Generator(device).manual_seed(0)
    per_image = v2.Compose(
        [
            v2.RandomCrop(size, padding=4),
            v2.RandomHorizontalFlip(),
            v2.RandAugment(num_ops=2, magnitude=5),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize(CIFAR10.mean, CIFAR10.std),
            v2.RandomErasing(p=0.25, value="random"),
        ]
    )
    return {
        "ours, batched": lambda: augment_batch(images, labels, classes, config, normalize, gen),
        "torchvision v2, image by image": lambda: torch.stack([per_image(image) for image in images]),
    }


def print_steps(args: argparse.Namespace, timer: Timer, augment: AugmentConfig) -> None:
    graphed = " (graphed: full, model-only, timm graphed)" if args.cuda_graph else ""
    extra = ("timm graphed img/s", "full / timm graphed") if args.cuda_graph else ()
    names = ("batch", "full img/s", "model-only img/s", "timm img/s", *extra[:1])
    print(f"# img/s{graphed}")
    print("| " + " | ".join((*names, "full / model", "model / timm", "full / timm", *extra[1:])) + " |")
    print("|" + "---|" * (len(names) + 3 + len(extra[1:])))
    for batch in args.batches:
        contenders = step_contenders(args.model, batch, timer.device, augment, args.compile, args.cuda_graph)
        if args.profile:
            profile_steps(contenders, Path(f"{args.profile}-{batch}.txt"), batch)
        t, first = timer.measure(contenders, args.rounds, args.steps)
        rate = {name: batch / seconds for name, seconds in t.items()}
        cells = [str(batch), *(f"{rate[n]:.0f}" for n in rate)]
        ratios = [rate["full"] / rate["model"], rate["model"] / rate["timm"], rate["full"] / rate["timm"]]
        if args.cuda_graph:
            ratios.append(rate["full"] / rate["timm graphed"])
        print("| " + " | ".join(cells + [f"{r:.2f}x" for r in ratios]) + " |")
        print(f"| {batch}, first step | " + " | ".join(f"{first[name]:.2f} s" for name in rate) + " |")


def profile_steps(contenders: dict, path: Path, batch: int, steps: int = 10) -> None:
    """torch.profiler's table of each contender's steps (after one warm-up step), written to `path`:
    where a step's time goes, host (CPU total) against device (the kernels' own time)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with path.open("w") as out:
        for name, run in contenders.items():
            run()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            start = time.perf_counter()
            with profile(activities=activities) as prof:
                for _ in range(steps):
                    run()
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
            wall = (time.perf_counter() - start) / steps * 1000
            table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25)
            # The table's own total of the kernels' time (summing its rows would count an op and its kernels twice).
            found = re.search(r"Self (?:CUDA|device) time total: ([\d.]+)(us|ms|s)\b", table, re.IGNORECASE)
            device = float(found[1]) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[found[2]] / steps if found else 0.0
            out.write(f"## {name}, batch {batch}: {wall:.2f} ms per step under the profiler, ")
            out.write(f"{device:.2f} ms of it kernels on the device\n\n{table}\n\n")


def print_ops(args: argparse.Namespace, timer: Timer, size: int) -> None:
    tables = (
        ("MixUp/CutMix", lambda b: mix_contenders(b, size, 10, timer.device, args.compile), 20),
        ("augmentation (defaults, no MixUp/CutMix)", lambda b: augment_contenders(b, size, 10, timer.device), 2),
    )
    for title, contenders, calls in tables:
        print(f"\n| batch | {title} | ms per batch |\n|---|---|---|")
        for batch in args.batches:
            for name, seconds in timer.measure(contenders(batch), args.rounds, calls)[0].items():
                print(f"| {batch} | {name} | {seconds * 1000:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="vit_cifar_nano", help="a vit preset")
    parser.add_argument("--batches", default="32,64,128", help="comma-separated batch sizes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2, help="timed steps per contender and round")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--device", default="auto")
    parser.add_argument("--compile", action="store_true", help="torch.compile every contender")
    parser.add_argument("--cuda-graph", action="store_true", help="ours replayed as one CUDA graph per step")
    parser.add_argument("--profile", help="write torch.profiler's table of each contender to PROFILE-<batch>.txt")
    parser.add_argument("--light", action="store_true", help="crop + flip only (default: the trainer's defaults)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="cpu: this process's CPU time")
    parser.add_argument("--ops-only", action="store_true", help="only the MixUp/CutMix and augmentation tables")
    args = parser.parse_args()
    args.batches = [int(b) for b in args.batches.split(",")]
    torch.set_num_threads(args.threads)
    timer = Timer(resolve_device(args.device), args.clock)
    light = AugmentConfig(randaug_ops=0, mixup_alpha=0, cutmix_alpha=0, erase_prob=0)
    if timer.device.type == "cuda":
        where = f"{torch.cuda.get_device_name(timer.device)}, bf16 autocast"
    else:
        where = f"{cpu_name()} ({os.cpu_count()} cores), {args.threads} threads, fp32"
    print(f"# {where}, torch {torch.__version__}, timm {timm.__version__}")
    print(
        f"# {args.model}, augmentation {'crop+flip' if args.light else 'defaults'}, compile {args.compile}, "
        f"CUDA graphs {args.cuda_graph}"
    )
    print(f"# {args.rounds} rounds x {args.steps} steps, medians, {args.clock} clock")
    if not args.ops_only:
        print_steps(args, timer, light if args.light else AugmentConfig())
    print_ops(args, timer, vit.create_model(args.model).config.image_size)


if __name__ == "__main__":
    main()
