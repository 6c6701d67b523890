"""How a model was made: the commands, code commits, data archive hash and machine of a run,
recorded in every checkpoint it writes, with no path of the machine that made it: a path is
kept as typed when it lies inside the working directory, else cut to its last part, and the
data archive is identified by its sha256 (docs/security.md).

`python -m training.clean_header FILE...` rewrites the header of checkpoints written before
that rule the same way (`clean_checkpoint`): the tensors are copied bit for bit and their hash
recorded again.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path

import torch

from vit.checkpoint import DIGEST_KEY, read_tensors, write_tensors


def git_commit() -> str | None:
    """The commit of the code being run, with '+dirty' when it has uncommitted changes."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True)
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def public_path(text: str) -> str:
    """A path as a checkpoint records it: relative to the working directory when it lies
    inside it (as typed, or made relative), else only its last part. Never a machine's
    absolute path, home folder or temporary folder."""
    path = Path(os.path.expanduser(text))
    if not path.is_absolute() and ".." not in path.parts:
        return text
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path.name


def _looks_like_path(text: str) -> bool:
    return os.sep in text or text.startswith("~")


def public_argv(argv: Sequence[str]) -> list[str]:
    """`argv` with every path in it (an argument, or the value of --option=value) made public."""
    out = []
    for arg in argv:
        flag, eq, value = arg.partition("=")
        if arg.startswith("--") and eq:
            out.append(f"{flag}={public_path(value) if _looks_like_path(value) else value}")
        else:
            out.append(public_path(arg) if _looks_like_path(arg) else arg)
    return out


def command_line(argv: Sequence[str] | None = None) -> str:
    """A training command (default: this process's), without the interpreter's path and with
    every path made public (`public_path`)."""
    args = sys.argv[1:] if argv is None else argv
    return shlex.join([Path(sys.executable).name, "-m", "training", *public_argv(args)])


def config_argv(config: object, default: object) -> list[str]:
    """The `python -m training` options that repeat the dataclass `config` (a TrainConfig and
    its nested AugmentConfig): those that differ from `default`, bools as --name/--no-name."""
    argv: list[str] = []
    for f in fields(config):  # type: ignore[arg-type]
        value, usual = getattr(config, f.name), getattr(default, f.name)
        if is_dataclass(value):
            argv += config_argv(value, usual)
        elif value != usual and value is not None:
            flag = f.name.replace("_", "-")
            argv += [f"--{flag}" if value else f"--no-{flag}"] if isinstance(value, bool) else [f"--{flag}", str(value)]
    return argv


def public_info(info: dict) -> dict:
    """A checkpoint's `info` with every recorded path made public: the commands, the data
    folder, the data archive (by name: its sha256 identifies it) and the run's config."""
    info = dict(info)
    if isinstance(info.get("commands"), list):
        info["commands"] = [_public_command(c) for c in info["commands"]]
    if isinstance(info.get("command"), str):
        info["command"] = _public_command(info["command"])
    for name in ("data", "data_archive"):
        if isinstance(info.get(name), str):
            info[name] = public_path(info[name]) if name == "data" else Path(info[name]).name
    if isinstance(info.get("train_config"), dict):
        info["train_config"] = public_config(info["train_config"])
    return info


def public_config(config: dict) -> dict:
    """A TrainConfig's dict with its paths (data, out, data_archive, a model file) made public."""
    return {k: public_path(v) if isinstance(v, str) and _looks_like_path(v) else v for k, v in config.items()}


def _public_command(command: str) -> str:
    return shlex.join(public_argv(shlex.split(command)))


@dataclass
class Provenance:
    """One entry per session in `commands` and `code_commits` (a resumed run appends)."""

    commands: list[str]
    code_commits: list[str | None]
    data_sha256: str | None

    @classmethod
    def now(cls, data_archive: str | None, hash_archive: bool = True, command: str | None = None) -> Provenance:
        """This session's: read at start, as the worktree may move on while a long run trains.
        `command`: the one to record (default: this process's `command_line`)."""
        digest = sha256_file(data_archive) if data_archive and hash_archive else None
        return cls([command or command_line()], [git_commit()], digest)

    def after(self, info: dict) -> Provenance:
        """This session continuing the run whose checkpoint `info` is given."""
        return Provenance(
            info["commands"] + self.commands, info["code_commits"] + self.code_commits, info.get("data_sha256")
        )

    def to_info(self) -> dict:
        """The provenance part of a checkpoint's `info`."""
        return {
            "trained_with": "python -m training",
            "command": self.commands[0],
            "commands": self.commands,
            "code_commit": self.code_commits[0],
            "code_commits": self.code_commits,
            "data_sha256": self.data_sha256,
            "torch": torch.__version__,
        }


def clean_checkpoint(path: str | os.PathLike) -> None:
    """Rewrite a checkpoint's header with `public_info`: its tensors are read (checked against
    their hash), written back bit for bit, and their hash recorded again."""
    tensors, header = read_tensors(path)
    header = {k: v for k, v in header.items() if k != DIGEST_KEY}
    write_tensors(path, tensors, {**header, "info": public_info(header.get("info") or {})})
