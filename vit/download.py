"""Fill the Hugging Face (or torch.hub) cache with named pretrained weights before they are
needed, e.g. on a classroom server the day before class:

    python -m vit.download facebook/dinov2-small vit_small_patch16_224.dino

Prints the bytes and percent as they arrive; exits 1 with one line per name that failed.
"""

from __future__ import annotations

import argparse
import sys

from .hub import PretrainedUnavailable
from .pretrained import is_pretrained_cached, list_pretrained, load_pretrained


def _printer(name: str):
    """A progress callback that rewrites one status line per name."""

    def show(done: int, total: int | None) -> None:
        percent = f" ({100 * done / total:.0f}%)" if total else ""
        of = f" of {total / 2**20:.1f} MiB" if total else ""
        print(f"\r{name}: {done / 2**20:.1f} MiB{of}{percent}", end="", file=sys.stderr, flush=True)

    return show


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vit.download", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="+", metavar="NAME", help=f"pretrained names: {', '.join(list_pretrained())}")
    args = parser.parse_args(argv)
    failed = 0
    for name in args.names:
        if name not in list_pretrained():
            print(f"{name}: not a pretrained name (see python -m vit.download --help)")
            failed += 1
            continue
        if is_pretrained_cached(name):
            print(f"{name}: already cached")
            continue
        try:
            load_pretrained(name, progress=_printer(name))  # loading also checks the files are usable weights
        except PretrainedUnavailable as e:
            print(file=sys.stderr)
            print(f"{name}: {e}")
            failed += 1
            continue
        print(file=sys.stderr)
        print(f"{name}: cached")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
