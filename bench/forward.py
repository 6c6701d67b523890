"""Forward-pass speed of our ViT-B/16 against torchvision's and timm's, with the same weights.

Runs the models interleaved in one process (so machine noise hits all of them alike) and
prints medians and ratios:
  (a) ours with need_weights=True      vs torchvision's plain forward   (goal <= 1.00x)
  (b) ours without maps (fused SDPA)   vs timm's fused forward          (goal <= 1.00x)

    python -m bench.forward [--batches 1 8] [--repeats 15] [--threads N]

With --sizes, it instead times one named model (random weights) on one image at several input
sizes, with and without maps: the cost of running DINOv2 above its 224 px default, e.g.

    python -m bench.forward --model vit_small_patch14_reg4_dinov2 --sizes 224 336 448 518

With --positions, it times one named model side by side with the same model whose position
scheme is the other one (rotary <-> learned), at each of --sizes: what DINOv3's rotary
embeddings cost over DINOv2-style learned ones, e.g.

    python -m bench.forward --model vit_small_patch16_dinov3 --positions --sizes 256 512
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import timm
import torch
import torchvision

import vit


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved_times(runs: dict, repeats: int) -> dict:
    """Each run's seconds over `repeats` rounds after one warm-up, the runs interleaved (machine
    noise hits all alike) and their order rotated each round (no run always goes first)."""
    times: dict = {k: [] for k in runs}
    names = list(runs)
    with torch.inference_mode():
        for fn in runs.values():  # warm-up
            fn()
        for r in range(repeats):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                times[name].append(timed(runs[name]))
    return times


def input_sizes(name: str, sizes: list[int], repeats: int) -> None:
    """Best-of-`repeats` milliseconds of one image through `name` at each side in `sizes`,
    interleaved (the best run is the one other processes disturbed least on a shared machine)."""
    model = vit.create_model(name).eval()
    patch = model.config.patch_size
    print(f"# {name}: {sum(p.numel() for p in model.parameters()):,} parameters, one image, best of {repeats}")
    print("| input | grid | tokens | fused | with maps |")
    print("|---|---|---|---|---|")
    runs = {}
    for size in sizes:
        images = torch.randn(1, 3, size, size)
        runs[(size, False)] = partial(model, images)
        runs[(size, True)] = partial(model, images, need_weights=True)
    times = interleaved_times(runs, repeats)
    for size in sizes:
        side = size // patch
        fused, maps = (min(times[(size, m)]) * 1000 for m in (False, True))
        tokens = model.prefix_tokens + side * side
        print(f"| {size} px | {side}x{side} | {tokens} | {fused:.0f} ms | {maps:.0f} ms |")


def positions(name: str, sizes: list[int], repeats: int) -> None:
    """Best-of-`repeats` milliseconds of one image through `name` and through its twin with the
    other position scheme (same weights shapes otherwise), interleaved, with and without maps."""
    named = vit.create_model(name).eval()
    other = "learned" if named.config.pos_embed == "rope" else "rope"
    twin = vit.VisionTransformer(replace(named.config, pos_embed=other, pos_embed_prefix=False)).eval()
    models = {named.config.pos_embed: named, other: twin}
    runs = {
        (kind, size, maps): partial(model, torch.randn(1, 3, size, size), need_weights=maps)
        for size in sizes
        for kind, model in models.items()
        for maps in (False, True)
    }
    times = interleaved_times(runs, repeats)
    print(f"# {name}: rotary vs learned positions, one image, best of {repeats}")
    print("| input | positions | fused | with maps |")
    print("|---|---|---|---|")
    for size in sizes:
        for kind in ("rope", "learned"):
            fused, maps = (min(times[(kind, size, m)]) * 1000 for m in (False, True))
            print(f"| {size} px | {kind} | {fused:.1f} ms | {maps:.1f} ms |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--model", default="vit_small_patch14_reg4_dinov2", help="the named model for --sizes")
    parser.add_argument("--sizes", type=int, nargs="+", help="time --model at these input sides instead")
    parser.add_argument("--positions", action="store_true", help="with --sizes: rotary vs learned positions")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.sizes and args.positions:
        positions(args.model, args.sizes, args.repeats)
        return
    if args.sizes:
        input_sizes(args.model, args.sizes, args.repeats)
        return

    tv = torchvision.models.vit_b_16().eval()
    for p in tv.parameters():  # random weights everywhere, incl. the zero-initialised head
        p.data.normal_(0, 0.02)
    ours = vit.from_torchvision(tv).eval()
    tm = timm.create_model("vit_base_patch16_224", pretrained=False).eval()
    tm.load_state_dict(ours.state_dict())  # timm's names are ours

    print(f"# {platform.machine()} {platform.processor() or ''}, {args.threads} threads, torch {torch.__version__}")
    print("| batch | torchvision | ours + maps | ratio (a) | timm fused | ours fused | ratio (b) |")
    print("|---|---|---|---|---|---|---|")
    for batch in args.batches:
        images = torch.randn(batch, 3, 224, 224)
        runs = {
            "tv": partial(tv, images),
            "ours_maps": partial(ours, images, need_weights=True),
            "timm": partial(tm, images),
            "ours_fused": partial(ours, images),
        }
        times = interleaved_times(runs, args.repeats)
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        print(
            f"| {batch} | {med['tv']:.1f} ms | {med['ours_maps']:.1f} ms | {med['ours_maps'] / med['tv']:.2f}x "
            f"| {med['timm']:.1f} ms | {med['ours_fused']:.1f} ms | {med['ours_fused'] / med['timm']:.2f}x |"
        )


if __name__ == "__main__":
    main()
