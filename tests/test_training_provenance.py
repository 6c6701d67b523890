"""Provenance: what a checkpoint records about the commands, code and data that made it."""

from __future__ import annotations

import hashlib
import json
import shlex
import sys

import torch
from training_helpers import machine_paths, write_image_folder

import training.cli
import vit
from training import clean_header
from training.provenance import (
    Provenance,
    command_line,
    git_commit,
    public_info,
    public_path,
    sha256_file,
)
from vit.checkpoint import read_header, read_tensors


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


def test_paths_are_kept_inside_the_working_directory_and_cut_to_their_name_outside(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert public_path("runs/a b") == "runs/a b" and public_path("cifar10") == "cifar10"  # as typed
    assert public_path(str(tmp_path / "runs" / "x")) == "runs/x"  # absolute, inside: relative
    assert public_path("/srv/data/cifar10-jpeg") == "cifar10-jpeg"
    assert public_path("~/.cache/cifar10-jpeg") == "cifar10-jpeg"
    assert public_path("../../home/alice/data") == "data"  # relative, but leaving the directory
    line = command_line(["--data=/srv/d", "--out", str(tmp_path / "runs" / "r"), "--data-archive", "/x/a.tar"])
    assert shlex.split(line)[3:] == ["--data=d", "--out", "runs/r", "--data-archive", "a.tar"]


def test_cli_and_train_tab_checkpoints_hold_no_machine_path(tmp_path, monkeypatch):
    data = write_image_folder(tmp_path / "data", per_class=4, size=16)
    archive = tmp_path / "data.tar"
    archive.write_bytes(b"the archive")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")  # every path below is outside the working directory
    out = tmp_path / "cli"
    args = ["--model", "vit_cifar_nano", "--data", str(data), "--out", str(out), "--data-archive", str(archive)]
    fast = ["--epochs", "1", "--batch-size", "8", "--holdout", "3", "--threads", "1", "--no-eval-test"]
    assert training.cli.main([*args, *fast]) == 0
    header, _ = read_header(out / "model.safetensors")
    assert machine_paths(header, tmp_path) == []
    info = header["info"]
    assert info["data_archive"] == "data.tar" and info["data_sha256"] == hashlib.sha256(b"the archive").hexdigest()
    assert "--data data --out cli --data-archive data.tar" in info["command"]
    # The training state keeps the data folder and archive: --resume reads them from it.
    state, _ = read_header(out / "last.safetensors")
    assert state["info"]["train_config"]["data"] == str(data) and machine_paths(state["info"]["commands"]) == []

    from training.job import TrainingJob  # the Train tab's path: a server folder, a run folder

    job = TrainingJob()
    job.start(model="vit_cifar_nano", data=str(data), epochs=1, lr=1e-3, batch_size=8, out_dir=str(tmp_path / "tab"))
    assert job.wait(120) and job.snapshot().error is None
    (final,) = [p for p in (tmp_path / "tab").glob("*.safetensors") if p.name != "last.safetensors"]
    header, _ = read_header(final)  # named after model, epochs and accuracy
    assert machine_paths(header, tmp_path) == []
    assert header["info"]["command"].startswith("python") and "--data data --out tab" in header["info"]["command"]


def test_an_old_header_is_cleaned_with_the_weights_unchanged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "old.safetensors"
    command = "python -m training --data /root/.cache/c10 --data-archive /work/shared/c10.tar --out /work/runs/b"
    info = {"command": command, "commands": [command], "data": "/root/.cache/c10", "data_archive": "/work/c10.tar"}
    info["train_config"] = {"data": "/root/.cache/c10", "out": "/work/runs/b", "data_archive": "/work/c10.tar"}
    vit.save_checkpoint(vit.create_model("vit_cifar_nano"), path, **info)
    before, old = read_tensors(path)
    assert clean_header.main([str(path)]) == 0
    after, new = read_tensors(path)  # the hash checked again
    assert sorted(after) == sorted(before) and all(torch.equal(after[k], before[k]) for k in before)
    assert new["tensor_sha256"] == old["tensor_sha256"] and machine_paths(new) == []
    assert new["info"] == public_info(old["info"]) and new["info"]["command"].endswith("--out b")
    vit.load_checkpoint(path)
    assert json.loads(json.dumps(new))["config"] == old["config"]
