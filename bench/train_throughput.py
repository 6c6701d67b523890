"""Training throughput (images/s) of our ViT against timm's VisionTransformer of the same
configuration and weights, both driven by the same training step (training.engine.train_step:
batched augmentation, forward, label-smoothed loss, backward, clipping, AdamW).

One process, the two models interleaved round by round so machine noise hits both alike;
medians over rounds. CPU in fp32; on CUDA with bf16 autocast (as the trainer does).

    python -m bench.train_throughput [--model vit_cifar_nano] [--batch 128] [--rounds 5] [--steps 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import timm
import torch

import vit
from training.augment import AugmentConfig, augment_batch
from training.config import resolve_device
from training.device_data import Normalizer
from training.optim import param_groups, train_step


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="vit_cifar_nano", help="a vit preset")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per model and round")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = resolve_device(args.device)

    ours = vit.create_model(args.model).to(device).train()
    models = {"ours": ours, "timm": timm_twin(ours).to(device).train()}
    optimizers = {name: torch.optim.AdamW(param_groups(m, 0.05), lr=1e-3) for name, m in models.items()}
    size, classes = ours.config.image_size, ours.config.num_classes
    images = torch.randint(0, 256, (args.batch, 3, size, size), dtype=torch.uint8, device=device)
    labels = torch.randint(0, classes, (args.batch,), device=device)
    normalize = Normalizer(vit.Preprocessing(size, size, mean=(0.5,) * 3, std=(0.5,) * 3), device)
    gen = torch.Generator(device).manual_seed(0)
    augment = AugmentConfig(randaug_ops=0, mixup_alpha=0, cutmix_alpha=0, erase_prob=0)  # crop + flip

    def steps(name: str, count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            x, targets = augment_batch(images, labels, classes, augment, normalize, gen)
            train_step(models[name], optimizers[name], x, targets, 0.1, 1.0)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return (time.perf_counter() - start) / count

    for name in models:  # warm-up
        steps(name, 2)
    per_step: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(args.rounds):
        for name in models:
            per_step[name].append(steps(name, args.steps))
    rate = {name: args.batch / statistics.median(t) for name, t in per_step.items()}

    if device.type == "cuda":
        where = f"{torch.cuda.get_device_name(device)}, bf16 autocast"
    else:
        where = f"{cpu_name()} ({os.cpu_count()} cores), {args.threads} threads, fp32"
    print(f"# {where}, torch {torch.__version__}")
    print(f"# {args.model}, batch {args.batch}, {args.rounds} rounds x {args.steps} steps, medians")
    print("| model | img/s | ratio ours/timm |")
    print("|---|---|---|")
    print(f"| timm VisionTransformer | {rate['timm']:.0f} | |")
    print(f"| ours | {rate['ours']:.0f} | {rate['ours'] / rate['timm']:.2f}x |")


if __name__ == "__main__":
    main()
