"""`python -m training.time_to_accuracy RUN [RUN ...] --out plot.png`: accuracy against
wall-clock seconds for several training runs, one line per run.

A RUN is a run folder (`--out` of `python -m training`) or its metrics.jsonl. Each epoch's
held-out (validation) accuracy is plotted at the run's cumulative wall-clock seconds
(`elapsed_seconds`; for logs written before that field existed, the running sum of each
epoch's `seconds`). When the folder holds the run's model (model.safetensors, or the name the Train tab gives
it) with a final test accuracy, a star marks it at the end of the line.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import vit

from .run_files import METRICS, model_file, read_metrics

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class Curve:
    label: str
    seconds: list[float]  # cumulative wall-clock at the end of each epoch
    accuracy: list[float]  # validation accuracy, 0..1
    test_accuracy: float | None  # after the last epoch, when recorded


def _cumulative(records: list[dict]) -> list[float]:
    if all("elapsed_seconds" in r for r in records):
        return [float(r["elapsed_seconds"]) for r in records]
    total, out = 0.0, []
    for r in records:
        total += float(r["seconds"])
        out.append(total)
    return out


def _final_test_accuracy(folder: Path) -> float | None:
    model = model_file(folder)
    if model is None:
        return None
    final = vit.load_checkpoint(model)[1].info.get("final") or {}
    return final.get("test_acc")


def read_curve(run: str | Path, label: str | None = None) -> Curve:
    """The curve of one run (a folder or a metrics.jsonl); ValueError when it has none."""
    path = Path(run)
    folder = path if path.is_dir() else path.parent
    metrics = folder / METRICS if path.is_dir() else path
    if not metrics.is_file():
        raise ValueError(f"{run}: no {METRICS} found (pass a run folder or its {METRICS})")
    records = read_metrics(metrics)
    if not records:
        raise ValueError(f"{metrics}: no finished epoch recorded yet")
    missing = [key for key in ("val_acc", "seconds") if key not in records[0]]
    if missing:
        raise ValueError(f"{metrics}: records lack {missing}; is this a training metrics log?")
    return Curve(
        label=label or folder.name,
        seconds=_cumulative(records),
        accuracy=[float(r["val_acc"]) for r in records],
        test_accuracy=_final_test_accuracy(folder),
    )


def plot_curves(curves: list[Curve], title: str = "Time to accuracy") -> Figure:
    """A matplotlib Figure: validation accuracy (%) against wall-clock seconds, one line per run."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for curve in curves:
        (line,) = ax.plot(curve.seconds, [100 * a for a in curve.accuracy], marker=".", label=curve.label)
        if curve.test_accuracy is not None:
            ax.plot(curve.seconds[-1], 100 * curve.test_accuracy, marker="*", markersize=12, color=line.get_color())
    ax.set_xlabel("wall-clock time (s)")
    ax.set_ylabel("validation accuracy (%)  [star: final test accuracy]")
    ax.set_ylim(0, 100)  # the whole scale: a short axis would make a few points look like a leap
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.time_to_accuracy", description=__doc__)
    parser.add_argument("runs", nargs="+", help="run folders or metrics.jsonl files")
    parser.add_argument("--labels", help="comma-separated legend labels, one per run (default: folder names)")
    parser.add_argument("--title", default="Time to accuracy")
    parser.add_argument("--out", required=True, help="the PNG to write")
    args = parser.parse_args(argv)
    labels = args.labels.split(",") if args.labels else [None] * len(args.runs)
    try:
        if len(labels) != len(args.runs):
            raise ValueError(f"--labels gives {len(labels)} labels for {len(args.runs)} runs")
        curves = [read_curve(run, label) for run, label in zip(args.runs, labels, strict=True)]
    except ValueError as e:  # CheckpointError is a ValueError too
        print(f"error: {e}", file=sys.stderr)
        return 1
    fig = plot_curves(curves, args.title)
    fig.savefig(args.out, dpi=120)
    print(f"time-to-accuracy plot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
