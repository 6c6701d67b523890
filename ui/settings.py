"""What the operator decides at start: public or local, shared runs, and the budgets that
keep one visitor from taking the server (docs/security.md). No Gradio here."""

from __future__ import annotations

import argparse
import html
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import vit
from explorer.catalog import ServingLimits
from explorer.lessons import lesson_weights
from training.registry import RUN_LIMIT_S, VISITOR_GONE_S, TrainLimits
from vit.checkpoint import CheckpointError, LoadLimits, load_checkpoint
from vit.messages import markdown_text

from .classroom import ClassLimits

MIB = 2**20
MAX_MESSAGE_CHARS = 1000  # a message for a visitor is cut here (it may list a model's 1,000 classes)
BUNDLED_NAME = "bundled"  # `--model bundled`: the CIFAR-10 model shipped in checkpoints/
# A Space's first model: ImageNet's 1,000 classes at 224 px (a 14 x 14 grid), 22 M parameters
# (88 MB, ~0.1 s a forward pass on a CPU), and the weights lessons 1 and 3 are about, so one
# preloaded file serves Explore and two lessons (docs/space.md).
SPACE_MODEL = "deit_small_patch16_224.fb_in1k"
# A server path, shown to visitors as its last part only: absolute (from /, ~, a drive letter
# or a \\host share) with at least two parts. Never right after a letter, digit, ".", ":", "/",
# "~" or "<", so fractions ("epoch 15/30"), model names ("timm/deit_small…"), URLs
# ("https://huggingface.co/timm/x") and closing tags a visitor typed ("</script>") stay as written.
_PART = r"[^\s/\\'\"`<>()\[\]]+"
_PATH = re.compile(rf"(?<![\w.:/\\~<])(?:~|[A-Za-z]:|\\)?(?:[/\\]{_PART}){{2,}}[/\\]?")


@dataclass(frozen=True)
class ServerSettings:
    public: bool = False  # a Space or any server strangers reach: no typed paths, no server paths shown
    shared_runs: bool = False  # a projector: everyone sees one run, only its starter stops it
    data_folder: Path | None = None  # a training folder the operator named (offered to visitors by name)
    train: TrainLimits = field(default_factory=TrainLimits)
    load: LoadLimits = field(default_factory=LoadLimits)
    serving: ServingLimits = field(default_factory=ServingLimits)  # what one request may compute
    cache_bytes: int = 2 * 1024 * MIB  # all explanations of all visitors
    uploads_bytes: int = 2 * 1024 * MIB  # Gradio's upload folder: uploads and rendered views
    live_streams: int = 1  # webcam streams drawn at once (the Live tab); the others are told to wait
    live_turn_s: float = 180.0  # one visitor's turn at the webcam stream while others wait
    trusted_hops: int = 0  # proxies in front of the server, each appending to X-Forwarded-For (ui.limits.sender)
    present: bool = False  # the presentation mode (`--present`, docs/app.md): larger words on the page and pictures
    classes: ClassLimits = field(default_factory=ClassLimits)  # class mode (ui/classroom.py)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ServerSettings:
        return cls(
            public=args.public,
            shared_runs=args.shared_runs,
            data_folder=Path(args.data_folder).resolve() if args.data_folder else None,
            train=TrainLimits(
                max_concurrent=args.max_runs,
                disk_budget_bytes=args.runs_budget_mb * MIB,
                memory_bytes=args.train_mb * MIB,
                idle_s=args.train_idle_s,
                time_limit_s=args.train_limit_s,
            ),
            load=LoadLimits(max_parameters=args.max_params),
            serving=ServingLimits(request_bytes=args.request_mb * MIB),
            cache_bytes=args.cache_mb * MIB,
            uploads_bytes=args.uploads_budget_mb * MIB,
            live_streams=args.live_streams,
            live_turn_s=args.live_seconds,
            trusted_hops=args.trusted_hops,
            present=args.present,
            classes=ClassLimits(classes=args.max_classes),
        )


def add_server_options(p: argparse.ArgumentParser) -> None:
    """The command-line options behind ServerSettings (defaults: docs/security.md)."""
    space = "SPACE_ID" in os.environ  # Hugging Face sets it in every Space
    p.add_argument("--public", action=argparse.BooleanOptionalAction, default=space, help="public server mode")
    p.add_argument("--shared-runs", action="store_true", help="everyone sees one training run (a projector)")
    p.add_argument(
        "--data-folder",
        default=os.environ.get("VIT_EXPLORER_DATA_FOLDER"),  # a Space runs `python app.py`: its settings are variables
        help="a train/ + test/ image folder visitors may train on (or VIT_EXPLORER_DATA_FOLDER)",
    )
    p.add_argument("--max-runs", type=int, default=1, help="training runs at once, whole server")
    p.add_argument("--runs-budget-mb", type=int, default=3072, help="disk budget of the runs folder")
    p.add_argument("--train-mb", type=int, default=3072, help="memory one training run may allocate")
    p.add_argument(
        "--train-idle-s",
        type=_at_least(float, 1),
        default=VISITOR_GONE_S,
        help="seconds: a training run whose page has not polled for this long is set aside, saved, and frees its slot",
    )
    p.add_argument(
        "--train-limit-s",
        type=_at_least(float, 1),
        default=RUN_LIMIT_S,
        help="seconds: a training run's longest turn at its slot; then it stops, its model saved",
    )
    p.add_argument("--cache-mb", type=int, default=2048, help="memory budget of all cached analyses")
    p.add_argument("--uploads-budget-mb", type=int, default=2048, help="disk budget of uploads and views")
    p.add_argument("--request-mb", type=int, default=1024, help="memory one request may compute")
    p.add_argument("--live-streams", type=_at_least(int, 1), default=1, help="webcam streams drawn at once")
    p.add_argument("--live-seconds", type=_at_least(float, 1), default=180.0, help="one turn at the webcam, s")
    p.add_argument(
        "--max-classes",
        type=_at_least(int, 0),
        default=ClassLimits.classes,
        help="classes at once (class mode: a teacher's page leads up to 60 students'); 0: no class mode",
    )
    p.add_argument("--max-params", type=int, default=LoadLimits.max_parameters, help="largest model loaded")
    p.add_argument(
        "--trusted-hops",
        type=_at_least(int, 0),
        default=os.environ.get("VIT_EXPLORER_TRUSTED_HOPS", "1" if space else "0"),
        help="proxies in front of the server that append the visitor's address to X-Forwarded-For; a network's "
        "upload share goes by the address the outermost one saw (default 1 on a Hugging Face Space, else 0: the "
        "connection's address; or VIT_EXPLORER_TRUSTED_HOPS)",
    )


def space_weights() -> list[str]:
    """The pretrained weights a Space opens on: its first model, then the lessons' own, each
    once. README.md's front matter preloads exactly these (tests/test_space.py checks)."""
    return list(dict.fromkeys([SPACE_MODEL, *lesson_weights()]))


# Weights the Space opens on but does not preload. A file `preload_from_hub:` names must exist in
# its repo, or the Space's build fails for everyone (issue 60). CLIP B/16's one safetensors file,
# open_clip_model.safetensors, is not in every public snapshot of its repo: the Hub's listing of
# timm/vit_base_patch16_clip_224.openai at da6e9e1 has only pytorch_model.bin (a pickle, which the
# app never loads), while B/32's repo added open_clip_model.safetensors later (ab5b8ef). The app
# downloads it itself when lesson 4 or a visitor first asks for it, saying so on the page; a repo
# without it leaves lesson 4 saying in words that the model cannot be had.
NOT_PRELOADED = ("vit_base_patch16_clip_224.openai",)


def preloaded_weights() -> list[str]:
    """The weights README's `preload_from_hub:` fetches when the Space is built: those the Space
    opens on whose safetensors file every public snapshot of their repo lists."""
    return [name for name in space_weights() if name not in NOT_PRELOADED]


def default_model(environ: Mapping[str, str]) -> str | None:
    """`--model`'s default: $VIT_EXPLORER_MODEL, else SPACE_MODEL on a Hugging Face Space
    (which sets SPACE_ID), else None (the bundled model: works offline)."""
    return environ.get("VIT_EXPLORER_MODEL") or (SPACE_MODEL if "SPACE_ID" in environ else None)


def start_model(value: str | None) -> tuple[str | None, str]:
    """(the checkpoint file shown as the "bundled" model, or None for the shipped one; the key
    of the model visitors start on) for `--model` `value`: a file, a pretrained name, "bundled"."""
    if value and value != BUNDLED_NAME and value in vit.list_pretrained():
        return None, f"pretrained:{value}"
    return (value if value and value != BUNDLED_NAME else None), BUNDLED_NAME


def _at_least(kind: type, least: int) -> Callable[[str], int | float]:
    """An argparse type: a number of `kind` that is at least `least`, or a usage error."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            value = least - 1
        if not value >= least:  # also refuses NaN
            raise argparse.ArgumentTypeError(f"must be a number of at least {least}, got {text!r}")
        return value

    return parse


def model_problem(path: str | None, max_parameters: int) -> str | None:
    """Why `--model PATH` (a checkpoint file, a name of vit.list_pretrained(), or "bundled")
    cannot be the default model (a message for the command line), or None. A pretrained name
    is not downloaded here: if it cannot be had at start, the app falls back to the bundled model."""
    if not path or path == BUNDLED_NAME or path in vit.list_pretrained():
        return None
    if not Path(path).is_file():
        return f"--model {path}: no such file, and not a pretrained name (vit.list_pretrained() lists them)"
    try:
        load_checkpoint(path, limits=LoadLimits(max_parameters=max_parameters))
    except CheckpointError as e:
        return f"--model {path}: {e}"
    return None


def visible(message: str) -> str:
    """A message with server paths cut to their last part, at most MAX_MESSAGE_CHARS characters:
    escape it for where it is shown (`for_visitors` for HTML, vit.messages.markdown_text for Markdown)."""
    text = _PATH.sub(lambda m: re.split(r"[/\\]", m.group(0).rstrip("/\\"))[-1], message)
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 1] + "…"


def for_visitors(message: str) -> str:
    """A message safe to show as HTML (or as text): `visible`, HTML escaped."""
    return html.escape(visible(message), quote=False)  # text, never an attribute: quotes stay readable for API clients


def in_markdown(message: str) -> str:
    """A message safe to show in Markdown: `visible`, every character shown as written
    (vit.messages.markdown_text). A message may name what a visitor or a checkpoint wrote (an
    uploaded checkpoint's file name, a model key sent, a class name), whose `![x](url)` would be
    fetched by every browser showing it, `*` emphasis, `<b>` a tag."""
    return markdown_text(visible(message))
