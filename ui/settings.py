"""What the operator decides at start: public or local, shared runs, and the budgets that
keep one visitor from taking the server (docs/security.md). No Gradio here."""

from __future__ import annotations

import argparse
import html
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from training.registry import TrainLimits
from vit.checkpoint import CheckpointError, LoadLimits, load_checkpoint

MIB = 2**20
# Anything that looks like an absolute path: shown to visitors as its last part only.
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[/\\][^\s/\\'\"`<>()\[\]]+)+[/\\]?")


@dataclass(frozen=True)
class ServerSettings:
    public: bool = False  # a Space or any server strangers reach: no typed paths, no server paths shown
    shared_runs: bool = False  # a projector: everyone sees one run, only its starter stops it
    data_folder: Path | None = None  # a training folder the operator named (offered to visitors by name)
    train: TrainLimits = field(default_factory=TrainLimits)
    load: LoadLimits = field(default_factory=LoadLimits)
    cache_bytes: int = 2 * 1024 * MIB  # all explanations of all visitors
    uploads_bytes: int = 2 * 1024 * MIB  # Gradio's upload folder: uploads and rendered views
    live_streams: int = 1  # webcam streams drawn at once (the Live tab); the others are told to wait
    live_turn_s: float = 180.0  # one visitor's turn at the webcam stream while others wait

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ServerSettings:
        return cls(
            public=args.public,
            shared_runs=args.shared_runs,
            data_folder=Path(args.data_folder).resolve() if args.data_folder else None,
            train=TrainLimits(max_concurrent=args.max_runs, disk_budget_bytes=args.runs_budget_mb * MIB),
            load=LoadLimits(max_parameters=args.max_params),
            cache_bytes=args.cache_mb * MIB,
            uploads_bytes=args.uploads_budget_mb * MIB,
            live_streams=args.live_streams,
            live_turn_s=args.live_seconds,
        )


def add_server_options(p: argparse.ArgumentParser) -> None:
    """The command-line options behind ServerSettings (defaults: docs/security.md)."""
    space = "SPACE_ID" in os.environ  # Hugging Face sets it in every Space
    p.add_argument("--public", action=argparse.BooleanOptionalAction, default=space, help="public server mode")
    p.add_argument("--shared-runs", action="store_true", help="everyone sees one training run (a projector)")
    p.add_argument("--data-folder", help="a train/ + test/ image folder visitors may train on")
    p.add_argument("--max-runs", type=int, default=1, help="training runs at once, whole server")
    p.add_argument("--runs-budget-mb", type=int, default=2048, help="disk budget of the runs folder")
    p.add_argument("--cache-mb", type=int, default=2048, help="memory budget of all cached analyses")
    p.add_argument("--uploads-budget-mb", type=int, default=2048, help="disk budget of uploads and views")
    p.add_argument("--live-streams", type=_at_least_one(int), default=1, help="webcam streams drawn at once")
    p.add_argument("--live-seconds", type=_at_least_one(float), default=180.0, help="one turn at the webcam, s")
    p.add_argument("--max-params", type=int, default=LoadLimits.max_parameters, help="largest model loaded")


def _at_least_one(kind: type) -> Callable[[str], int | float]:
    """An argparse type: a number of `kind` that is at least 1, or a usage error."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value >= 1:  # also refuses NaN
            raise argparse.ArgumentTypeError(f"must be a number of at least 1, got {text!r}")
        return value

    return parse


def model_problem(path: str | None, max_parameters: int) -> str | None:
    """Why `--model PATH` cannot be the default model (a message for the command line), or None."""
    if not path:
        return None
    if not Path(path).is_file():
        return f"--model {path}: no such file"
    try:
        load_checkpoint(path, limits=LoadLimits(max_parameters=max_parameters))
    except CheckpointError as e:
        return f"--model {path}: {e}"
    return None


def for_visitors(message: str) -> str:
    """A message safe to show: server paths cut to their last part, HTML escaped."""
    return html.escape(_PATH.sub(lambda m: Path(m.group(0).rstrip("/\\")).name, message))
