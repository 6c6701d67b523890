"""How long a Train-tab run takes to show something: seconds from Start to the job's first
loss reading and first probe row, with the nano model on a CIFAR-10 folder, as the Train tab
starts it (`training.job.TrainingJob`, the tab's default batch size and learning rate).

    python -m bench.train_start /tmp/cifar10              # train/<class>/*.jpg, test/<class>/*.jpg
    python -m bench.train_start /tmp/cifar10 --repeats 3

Prints one Markdown row per start with the machine and its load: the goal (issue 19) is the
first loss point within 10 s of Start on the 2-core machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch._dynamo  # noqa: F401 - the app imports these once its page is up (ui.app.launch),
import torchvision  # noqa: F401 - before any Start: a Start does not pay for them there

from training.job import TrainingJob

from .visitors import load_average, machine

POLL_S = 0.05


def first_readings(data: str, model: str, batch_size: int, timeout: float) -> tuple[float, float, int]:
    """(seconds to the first probe row, seconds to the first loss reading, its step)."""
    job = TrainingJob()
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        job.start(model=model, data=data, epochs=5, lr=1e-3, batch_size=batch_size, out_dir=out)
        probe = None
        try:
            while time.perf_counter() - start < timeout:
                s = job.snapshot()
                if s.error:
                    raise RuntimeError(s.error)
                if probe is None and s.probe:
                    probe = time.perf_counter() - start
                if s.step_losses:
                    return probe or float("nan"), time.perf_counter() - start, s.step
                time.sleep(POLL_S)
            raise TimeoutError(f"no loss reading within {timeout} s")
        finally:
            job.stop()
            job.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="an ImageFolder root holding train/ and test/")
    parser.add_argument("--model", default="vit_cifar_nano")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    print(f"{machine()}; model {args.model}, batch {args.batch_size}\n")
    print("| start | load before | first probe row s | first loss reading s (step) | load after |")
    print("|---|---|---|---|---|")
    for i in range(args.repeats):
        before = load_average()
        probe, loss, step = first_readings(args.data, args.model, args.batch_size, args.timeout)
        print(f"| {i + 1} | {before} | {probe:.1f} | {loss:.1f} ({step}) | {load_average()} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
