"""`python -m training.sweep`: several training runs side by side on one device, each sized to
the same wall-clock budget, then one table and one time-to-accuracy plot.

Why side by side: a CIFAR-size ViT leaves most of a large GPU idle between its small kernels,
so runs that share it finish sooner together than one after another. Each run's time is then
measured *while sharing*: a run that reaches an accuracy in t seconds here reaches it in at most
about t seconds alone.

How a budget becomes epochs: the cosine schedule needs the run's length up front, so every
configuration first trains a short probe (`--probe-epochs`, all of them side by side, as the real
runs will be); its slowest epoch after the first gives the time per epoch under that sharing, and its
first epoch's extra seconds the start-up (compilation). Each real run gets the epochs that fit.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import vit

from .run_files import METRICS, MODEL, read_metrics
from .time_to_accuracy import plot_curves, read_curve

# name -> `python -m training` options. The published recipes (docs/training.md, "Recipe") train
# 100-300 epochs; a few minutes allow fewer, so the sweep asks how much regularisation still pays.
SWEEPS: dict[str, dict[str, list[str]]] = {
    "gpu": {
        "tiny-b128-mix": ["--model", "vit_cifar_tiny", "--batch-size", "128", "--lr", "1e-3"],
        "tiny-b128-cutmix": [
            *("--model", "vit_cifar_tiny", "--batch-size", "128", "--lr", "1e-3"),
            *("--mixup-alpha", "0", "--erase-prob", "0"),
        ],
        "tiny-b256-cutmix": [
            *("--model", "vit_cifar_tiny", "--batch-size", "256", "--lr", "2e-3"),
            *("--mixup-alpha", "0", "--erase-prob", "0"),
        ],
        "nano-b128-cutmix": [
            *("--model", "vit_cifar_nano", "--batch-size", "128", "--lr", "1e-3"),
            *("--mixup-alpha", "0", "--erase-prob", "0"),
        ],
    },
    # One run with the GPU to itself (issue 46): each step one CUDA graph, so the run makes the
    # hundreds of epochs the published recipes train; the trainer's default augmentation.
    "alone": {"tiny-b256": ["--model", "vit_cifar_tiny", "--batch-size", "256", "--lr", "2e-3"]},
    # Seconds on two CPU cores: a rehearsal of the whole sweep on a small data folder.
    "smoke": {
        "nano-a": ["--model", "vit_cifar_nano", "--batch-size", "32", "--lr", "1e-3"],
        "nano-b": ["--model", "vit_cifar_nano", "--batch-size", "64", "--lr", "2e-3", "--mixup-alpha", "0"],
    },
}


@dataclass
class Result:
    name: str
    options: list[str]
    epochs: int
    img_per_s: float  # median over epochs, while sharing the device
    seconds: float  # wall-clock of the whole run: start-up, every epoch, evaluation
    val_acc: float
    test_acc: float | None
    seconds_to: dict[float, float | None]  # validation accuracy -> first elapsed second reaching it


def launch(runs: dict[str, list[str]], common: list[str], out: Path, timeout: float) -> dict[str, int]:
    """Start every run at once (`python -m training`), wait for all; return codes by name.
    A run still going after `timeout` seconds is ended (code -9): the others' results stand."""
    out.mkdir(parents=True, exist_ok=True)
    procs = {}
    for name, options in runs.items():
        log = open(out / f"{name}.log", "w")  # noqa: SIM115 - closed when the process ends, below
        cmd = [sys.executable, "-m", "training", "--out", str(out / name), *common, *options]
        procs[name] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log)
    deadline = time.monotonic() + timeout
    codes = {}
    for name, (proc, log) in procs.items():
        try:
            codes[name] = proc.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes[name] = proc.wait()
        log.close()
    return codes


def epochs_for(metrics: Path, budget: float) -> int:
    """Epochs that fit `budget` seconds, from a probe's metrics: the slowest of its epochs after
    the first as the time per epoch (the probes start-up at different moments, so an early epoch
    may have had the device to itself), and the first epoch's extra seconds as the start-up
    every run pays once."""
    records = read_metrics(metrics) if metrics.is_file() else []
    if len(records) < 2:
        raise ValueError(f"{metrics}: a probe needs two finished epochs, found {len(records)}")
    per_epoch = max(float(r["seconds"]) for r in records[1:])
    startup = max(float(records[0]["seconds"]) - per_epoch, 0.0)
    return max(1, math.floor((budget - startup) / per_epoch))


def read_result(name: str, options: list[str], folder: Path, levels: tuple[float, ...]) -> Result:
    """One finished run's row: from its metrics log and its model's recorded final accuracies."""
    records = read_metrics(folder / METRICS)
    final = vit.load_checkpoint(folder / MODEL)[1].info.get("final") or {}
    rates = sorted(float(r["img_per_s"]) for r in records)
    seconds_to = {
        level: next((float(r["elapsed_seconds"]) for r in records if r["val_acc"] >= level), None) for level in levels
    }
    return Result(
        name=name,
        options=options,
        epochs=len(records),
        img_per_s=rates[len(rates) // 2],
        seconds=float(records[-1]["elapsed_seconds"]),
        val_acc=float(records[-1]["val_acc"]),
        test_acc=final.get("test_acc"),
        seconds_to=seconds_to,
    )


def table(results: list[Result], levels: tuple[float, ...]) -> str:
    """A Markdown table, best validation accuracy first."""

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.2f} %"

    def secs(x: float | None) -> str:
        return "not reached" if x is None else f"{x:.0f} s"

    head = ["run", "options", "epochs", "img/s (shared)", "val acc", "test acc", "seconds"]
    head += [f"s to {100 * level:.0f} % val" for level in levels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in sorted(results, key=lambda r: -r.val_acc):
        cells = [r.name, "`" + " ".join(r.options) + "`", str(r.epochs), f"{r.img_per_s:,.0f}", pct(r.val_acc)]
        cells += [pct(r.test_acc), f"{r.seconds:.0f}"] + [secs(r.seconds_to[level]) for level in levels]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run_sweep(args: argparse.Namespace) -> list[Result]:
    runs = SWEEPS[args.sweep]
    common = ["--data", args.data, *args.common.split()]
    out = Path(args.out)
    probe = out / "probe"
    print(f"probe: {len(runs)} runs side by side, {args.probe_epochs} epochs each", flush=True)
    launch(runs, [*common, "--epochs", str(args.probe_epochs), "--no-eval-test"], probe, args.seconds * 2)
    sized = {}
    for name, options in runs.items():
        try:
            epochs = epochs_for(probe / name / METRICS, args.seconds)
        except ValueError as e:  # the probe failed: its log says why; the other runs go on
            print(f"{name}: left out ({e}); see {probe / f'{name}.log'}", flush=True)
            continue
        sized[name] = [*options, "--epochs", str(epochs)]
        print(f"{name}: {epochs} epochs fit {args.seconds:.0f} s", flush=True)
    codes = launch(sized, common, out, args.seconds * 1.5 + 120)
    results = []
    for name, options in sized.items():
        if codes[name] != 0 or not (out / name / MODEL).is_file():
            print(f"{name}: failed (exit {codes[name]}); see {out / f'{name}.log'}", flush=True)
            continue
        results.append(read_result(name, options, out / name, args.levels))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", choices=sorted(SWEEPS), default="gpu", help="which set of runs")
    parser.add_argument("--data", required=True, help="an ImageFolder root with train/ and test/, or 'cifar10'")
    parser.add_argument("--out", default="runs/sweep", help="folder for every run, the table and the plot")
    parser.add_argument("--seconds", type=float, default=270.0, help="wall-clock budget of each run")
    parser.add_argument("--probe-epochs", type=int, default=4, help="epochs of the sizing probe (at least 2)")
    parser.add_argument("--common", default="--compile", help="options every run gets (quoted)")
    parser.add_argument("--levels", type=lambda s: tuple(float(x) for x in s.split(",")), default=(0.8, 0.9))
    args = parser.parse_args(argv)
    if args.probe_epochs < 2 or args.seconds <= 0:
        parser.error("--probe-epochs must be at least 2 and --seconds positive")
    results = run_sweep(args)
    if not results:
        print("error: no run finished; the logs in the output folder say why", file=sys.stderr)
        return 1
    out = Path(args.out)
    text = table(results, args.levels)
    (out / "sweep.md").write_text(text + "\n")
    (out / "sweep.json").write_text(json.dumps([r.__dict__ for r in results], indent=1, default=str))
    curves = [read_curve(out / r.name, r.name) for r in results]
    shared = "one run alone" if len(curves) == 1 else "runs side by side"
    plot_curves(curves, f"CIFAR-10, {shared} ({args.seconds:.0f} s budget each)").savefig(
        out / "time_to_accuracy.png", dpi=120
    )
    print(text)
    best = max(results, key=lambda r: r.val_acc)
    print(f"best by validation accuracy: {best.name} -> {out / best.name / MODEL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
