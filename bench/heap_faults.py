"""Page faults and CPU of one analysis's forward pass under each heap setting, printed as Markdown.

    python -m bench.heap_faults --model /tmp/vit_s16.safetensors
    python -m bench.heap_faults --model bundled --trim-mib 0.125 16 32

Each setting runs in a fresh interpreter (glibc's heap is set before any thread allocates, as
app.py sets it): glibc's defaults; then the app's bound (`ui.heap.bound_the_heap`: 2 arenas,
blocks of 1 MiB and more mapped apiece) with each `--trim-mib`, the free memory an arena keeps
at its top before giving it back (0.125 MiB is glibc's own, which a fixed mmap threshold fixes
it at). Per analysis, after 3 warm-up passes, mean of `--repeats`, one torch thread (as the
app): minor page faults, user and system CPU (`getrusage`), and wall time. The settings run one
after the other on the same machine, so compare rows of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# In a fresh interpreter: argv = [setting ("defaults" or the trim threshold in bytes), model, repeats].
ONE_SETTING = """
import json, resource, sys, time
from ui.heap import bound_the_heap
if sys.argv[1] != "defaults":
    bound_the_heap(trim_threshold=int(sys.argv[1]))
import numpy as np, torch
from PIL import Image
import vit
from explorer.catalog import BUNDLED_PATH
from explorer.explain import explain
torch.set_num_threads(1)
net, meta = vit.load_checkpoint(BUNDLED_PATH if sys.argv[2] == "bundled" else sys.argv[2])
pre = meta.preprocessing or vit.preprocessing.CIFAR10
side = pre.crop_size
image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (side, side, 3), dtype=np.uint8))
for _ in range(3):
    explain(net.eval(), meta.class_names, pre, image)
n = int(sys.argv[3])
before, began = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
for _ in range(n):
    explain(net, meta.class_names, pre, image)
wall, after = time.perf_counter() - began, resource.getrusage(resource.RUSAGE_SELF)
per = lambda field: (getattr(after, field) - getattr(before, field)) / n
print(json.dumps({"faults": per("ru_minflt"), "user_ms": 1e3 * per("ru_utime"), "system_ms": 1e3 * per("ru_stime"),
                  "wall_ms": 1e3 * wall / n}))
"""


def one_setting(setting: str, model: str, repeats: int) -> dict[str, float]:
    """Faults and milliseconds per analysis under `setting`, in a fresh interpreter."""
    # No MALLOC_* variable: an operator's value would replace the setting named.
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", ONE_SETTING, setting, model, str(repeats)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="bundled", help="'bundled' or a checkpoint (bench.checkpoints writes them)")
    p.add_argument("--trim-mib", type=float, nargs="+", default=[0.125, 16, 32])
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args(argv)
    print(f"`python -m bench.heap_faults {' '.join(sys.argv[1:] if argv is None else argv)}`\n")
    print("| heap | page faults per analysis | user CPU ms | system CPU ms | wall ms |")
    print("|---|---|---|---|---|")
    settings = [("glibc's defaults", "defaults")]
    settings += [(f"app's bound, trim threshold {t:g} MiB", str(int(t * 2**20))) for t in args.trim_mib]
    for name, setting in settings:
        r = one_setting(setting, args.model, args.repeats)
        print(f"| {name} | {r['faults']:,.0f} | {r['user_ms']:.1f} | {r['system_ms']:.1f} | {r['wall_ms']:.1f} |")


if __name__ == "__main__":
    main()
