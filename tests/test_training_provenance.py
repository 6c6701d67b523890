"""Provenance: what a checkpoint records about the commands, code and data that made it."""

from __future__ import annotations

import hashlib
import sys

import torch

from training.provenance import Provenance, command_line, git_commit, sha256_file


def test_sha256_of_a_file_is_hashlibs(tmp_path):
    path = tmp_path / "archive.tar"
    path.write_bytes(b"x" * 3_000_000)  # more than one 1 MiB chunk
    assert sha256_file(path) == hashlib.sha256(b"x" * 3_000_000).hexdigest()


def test_command_line_names_the_module_not_the_interpreter_path(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/somewhere/training/__main__.py", "--out", "runs/a b"])
    assert command_line().endswith(" -m training --out 'runs/a b'")
    assert "/" not in command_line().split(" ")[0]


def test_git_commit_is_a_hash_when_run_from_a_checkout():
    commit = git_commit()
    if commit is not None:  # None outside a git checkout (e.g. an unpacked release)
        assert len(commit.removesuffix("+dirty")) == 40


def test_a_resumed_session_appends_its_command_and_commit(tmp_path):
    archive = tmp_path / "data.tar"
    archive.write_bytes(b"data")
    first = Provenance.now(str(archive))
    assert first.data_sha256 == hashlib.sha256(b"data").hexdigest()
    assert Provenance.now(str(archive), hash_archive=False).data_sha256 is None  # DDP ranks > 0 skip the hash
    second = Provenance(["python -m training --resume"], ["abc"], None).after(first.to_info())
    assert second.commands == [*first.commands, "python -m training --resume"]
    assert second.code_commits == [*first.code_commits, "abc"] and second.data_sha256 == first.data_sha256
    info = second.to_info()
    assert info["command"] == first.commands[0] and info["torch"] == torch.__version__
