"""`python -m training.clean_header FILE...`: remove the paths of the machine that trained them
from checkpoint headers written before checkpoints left them out (training.provenance), the
weights unchanged bit for bit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vit.checkpoint import CheckpointError

from .provenance import clean_checkpoint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.clean_header",
        description="Remove this machine's paths from checkpoint headers written before they were left out "
        "(weights unchanged bit for bit).",
    )
    parser.add_argument("files", nargs="+", help="checkpoints to rewrite in place")
    for name in parser.parse_args(argv).files:
        try:
            clean_checkpoint(name)
        except CheckpointError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"{Path(name).name}: header cleaned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
