"""`python -m training.evaluate`: accuracy, per-class accuracy and confusion matrix of a
checkpoint on a data split."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from torch import Tensor

import vit

from .config import resolve_device
from .data import DataError, load_split
from .device_data import Normalizer, predict


def confusion_matrix(labels: Tensor, predictions: Tensor, num_classes: int) -> Tensor:
    """(K, K) counts: row = true class, column = predicted class."""
    flat = labels.long() * num_classes + predictions.long()  # (N,) cell index
    return torch.bincount(flat, minlength=num_classes * num_classes).reshape(num_classes, num_classes)


def evaluate_checkpoint(
    checkpoint: str, data: str, split: str = "test", *, device: str = "auto", batch_size: int = 500
) -> dict:
    """Score `checkpoint` on `data`'s `split`: a JSON-able dict of the results."""
    dev = resolve_device(device)
    model, meta = vit.load_checkpoint(checkpoint, device=dev)
    if meta.preprocessing is None:
        raise ValueError(f"{checkpoint} records no preprocessing; cannot know how to normalise images for it")
    images = load_split(data, split)
    if images.class_names != meta.class_names:
        raise DataError(f"the data's classes {images.class_names} differ from the model's {meta.class_names}")
    logits = predict(model, images.images, Normalizer(meta.preprocessing, dev), model.config.image_size, batch_size)
    matrix = confusion_matrix(images.labels, logits.argmax(dim=-1).cpu(), len(meta.class_names))
    per_class = (matrix.diag() / matrix.sum(dim=1).clamp(min=1)).tolist()
    return {
        "checkpoint": str(checkpoint),
        "data": str(data),
        "split": split,
        "images": len(images),
        "accuracy": matrix.diag().sum().item() / len(images),
        "per_class_accuracy": dict(zip(meta.class_names, per_class, strict=True)),
        "class_names": meta.class_names,
        "confusion_matrix": matrix.tolist(),
    }


def plot_confusion(results: dict, path: str | Path) -> None:
    """Save the confusion matrix as a PNG, rows normalised to the fraction of each true class."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    matrix = torch.tensor(results["confusion_matrix"], dtype=torch.float64)
    fractions = matrix / matrix.sum(dim=1, keepdim=True).clamp(min=1)
    names = results["class_names"]
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(names), 0.8 + 0.6 * len(names)))
    ax.imshow(fractions.numpy(), cmap="Blues", vmin=0, vmax=1)
    for i in range(len(names)):
        for j in range(len(names)):
            value = fractions[i, j].item()
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color="white" if value > 0.5 else "k")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(f"{results['split']} accuracy {results['accuracy']:.2%} ({results['images']} images)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def format_results(results: dict) -> str:
    width = max(len(name) for name in results["class_names"])
    lines = [f"{results['split']} accuracy: {results['accuracy']:.4f} on {results['images']} images"]
    lines += [f"  {name:<{width}}  {acc:.4f}" for name, acc in results["per_class_accuracy"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.evaluate", description=__doc__)
    parser.add_argument("--checkpoint", required=True, help="a model checkpoint (.safetensors)")
    parser.add_argument("--data", required=True, help="an ImageFolder root with <split>/<class>/*, or 'cifar10'")
    parser.add_argument("--split", default="test", choices=("train", "test"))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--confusion", help="write the confusion matrix picture (PNG) here")
    parser.add_argument("--json", help="write the results as JSON here")
    args = parser.parse_args(argv)
    try:
        results = evaluate_checkpoint(
            args.checkpoint, args.data, args.split, device=args.device, batch_size=args.batch_size
        )
    except ValueError as e:  # DataError and CheckpointError are ValueErrors
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(format_results(results))
    if args.confusion:
        plot_confusion(results, args.confusion)
        print(f"confusion matrix: {args.confusion}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
        print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
