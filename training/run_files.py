"""The files a run writes under its `--out` folder, and its metrics log."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from vit.checkpoint import TRAINING_STATE

LAST = TRAINING_STATE  # full training state, rewritten atomically after every epoch
MODEL = "model.safetensors"  # model only: what the app and `vit.load_checkpoint` read
METRICS = "metrics.jsonl"  # one JSON line per finished epoch
RUN_CONFIG = "run.json"  # a chunked run's config, written before its first chunk (training/chunks.py)
STOP = "STOP"  # a chunked run's stop request, written by the process that watches the run


def model_file(folder: Path) -> Path | None:
    """The run's model file: MODEL as `python -m training` writes it, or the name the Train tab
    gives it when the run ends (`training.job.named_checkpoint`, e.g.
    `vit_cifar_nano_5epochs_acc41.safetensors`); None while the run has none."""
    if (folder / MODEL).is_file():
        return folder / MODEL
    named = [p for p in folder.glob("*_*epochs*.safetensors") if p.is_file()]
    return max(named, key=lambda p: p.stat().st_mtime) if named else None


def append_metrics(out: Path, record: dict) -> None:
    with open(out / METRICS, "a") as f:
        f.write(json.dumps(record) + "\n")


def write_metrics(out: Path, history: list[dict]) -> None:
    """Rewrite the log from a checkpoint's history: the file may hold an epoch the checkpoint does not."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / METRICS, "w") as f:
        f.writelines(json.dumps(record) + "\n" for record in history)


def read_metrics(path: str | Path) -> list[dict]:
    """The records of a metrics.jsonl file (a run folder or the file itself); ValueError on a bad line."""
    path = Path(path)
    if path.is_dir():
        path = path / METRICS
    records = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{number}: not a JSON line ({e.msg})") from e
    return records


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temp file beside `path`, then rename it over `path`: a reader in
    another process sees the old file or the whole new one, never a part."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
