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

With --serving, it asks what would make a served analysis cheaper (issue 30): the
milliseconds per image of one named model's forward pass with every map at several batch
sizes, then float32 against bfloat16 autocast and int8 dynamic quantisation of the linear
layers, each with its largest difference from float32 in the maps and the probabilities, e.g.

    python -m bench.forward --model vit_small_patch16_224 --serving --batches 1 2 4 8 --threads 1
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


def peaked(model: vit.VisionTransformer, gain: float = 6.0) -> vit.VisionTransformer:
    """Random weights whose attention is peaked, as a trained model's is: near-uniform maps (the
    random initialisation's) would hide any error cheaper arithmetic makes in them."""
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qkv.weight[: 2 * model.config.dim] *= gain  # queries and keys only
    return model


def cheaper_modes(model: vit.VisionTransformer) -> dict[str, Callable[[torch.Tensor], tuple]]:
    """float32 and the cheaper ways to run `model` with every map, by name."""

    def bf16(images: torch.Tensor) -> tuple:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(images, need_weights=True)

    modes = {"float32": partial(model, need_weights=True), "bfloat16 autocast": bf16}
    mlp = {name for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and ".mlp." in name}
    for label, layers in (("int8 dynamic, every linear layer", {torch.nn.Linear}), ("int8 dynamic, MLPs only", mlp)):
        try:
            quantised = torch.ao.quantization.quantize_dynamic(model, layers, dtype=torch.qint8)
        except (RuntimeError, AttributeError) as e:  # no quantised kernels in this build
            print(f"# {label}: unavailable ({e})")
            continue
        modes[label] = partial(quantised, need_weights=True)
    return modes


def serving(name: str, batches: list[int], repeats: int) -> None:
    """Median ms per image with every map at each batch size, then the cheaper arithmetic at
    batch 1: its speed-up and its largest differences from float32."""
    model = peaked(vit.create_model(name).eval())
    side = model.config.image_size
    print(f"# {name}, forward pass with every map, {torch.get_num_threads()} threads, median of {repeats}")
    print("| batch | ms per batch | ms per image | images/s vs batch 1 |")
    print("|---|---|---|---|")
    runs = {b: partial(model, torch.randn(b, 3, side, side), need_weights=True) for b in batches}
    per_image = {b: statistics.median(t) * 1000 / b for b, t in interleaved_times(runs, repeats).items()}
    for b in batches:
        print(f"| {b} | {per_image[b] * b:.1f} | {per_image[b]:.1f} | {per_image[batches[0]] / per_image[b]:.2f}x |")
    images = torch.randn(1, 3, side, side)
    modes = cheaper_modes(model)
    times = interleaved_times({k: partial(fn, images) for k, fn in modes.items()}, repeats)
    with torch.inference_mode():
        exact_logits, exact_maps = modes["float32"](images)
        exact_p = exact_logits.softmax(-1)
        print("\n| arithmetic | ms per image | speed-up | max difference in a map | max difference in a probability |")
        print("|---|---|---|---|---|")
        for k, fn in modes.items():
            logits, maps = fn(images)
            d_map = max((a.float() - e).abs().max().item() for a, e in zip(maps, exact_maps, strict=True))
            d_p = (logits.float().softmax(-1) - exact_p).abs().max().item()
            ms, exact_ms = (statistics.median(times[name]) * 1000 for name in (k, "float32"))
            print(f"| {k} | {ms:.1f} | {exact_ms / ms:.2f}x | {d_map:.2e} | {d_p:.2e} |")
    brightest = max(m.max().item() for m in exact_maps)
    print(f"\n(maps are weights in [0, 1]; largest weight in a float32 map: {brightest:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--model", default="vit_small_patch14_reg4_dinov2", help="the named model for --sizes")
    parser.add_argument("--sizes", type=int, nargs="+", help="time --model at these input sides instead")
    parser.add_argument("--positions", action="store_true", help="with --sizes: rotary vs learned positions")
    parser.add_argument("--serving", action="store_true", help="--model's batch sizes and cheaper arithmetic")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.serving:
        serving(args.model, args.batches, args.repeats)
        return
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
