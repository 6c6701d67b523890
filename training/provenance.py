"""How a model was made: the commands, code commits, data archive hash and machine of a run,
recorded in every checkpoint it writes."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import torch


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


def command_line() -> str:
    """This process's training command, without the interpreter's path."""
    return shlex.join([Path(sys.executable).name, "-m", "training", *sys.argv[1:]])


@dataclass
class Provenance:
    """One entry per session in `commands` and `code_commits` (a resumed run appends)."""

    commands: list[str]
    code_commits: list[str | None]
    data_sha256: str | None

    @classmethod
    def now(cls, data_archive: str | None, hash_archive: bool = True) -> Provenance:
        """This session's: read at start, as the worktree may move on while a long run trains."""
        digest = sha256_file(data_archive) if data_archive and hash_archive else None
        return cls([command_line()], [git_commit()], digest)

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
