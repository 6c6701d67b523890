"""The command line in real subprocesses: errors, SIGKILL mid-epoch then --resume, torchrun DDP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import flip_byte
from training_helpers import write_image_folder

import vit
from training.cli import main
from training.evaluate import main as evaluate_main

REPO = Path(__file__).resolve().parents[1]
FAST = ["--model", "vit_cifar_nano", "--threads", "1", "--holdout", "6", "--no-eval-test", "--warmup-epochs", "0"]


def _env(tmp_path: Path) -> dict:
    return {**os.environ, "VIT_EXPLORER_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}


def _train(args: list[str], tmp_path: Path, launcher: list[str] | None = None, **kwargs) -> subprocess.Popen:
    command = [*(launcher or [sys.executable]), "-m", "training", *args]
    return subprocess.Popen(
        command, cwd=REPO, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs
    )


def test_resume_refuses_options_it_would_ignore(capsys):
    assert main(["--resume", "--out", "x", "--lr", "0.1"]) == 2
    assert "drop ['--lr']" in capsys.readouterr().out


def test_a_warm_up_as_long_as_the_run_is_refused_with_one_line(tmp_path, capsys):
    assert main(["--epochs", "5", "--warmup-epochs", "5", "--out", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err.startswith("error: warmup_epochs (5) must be shorter than the run (5 epochs)")


def test_bad_data_is_a_clear_error_and_exit_code(tmp_path, capsys):
    write_image_folder(tmp_path / "one", per_class=2, size=8, classes=("only",))
    assert main(["--data", str(tmp_path / "one"), "--out", str(tmp_path / "out")]) == 1
    assert "data error" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_damaged_checkpoint_is_refused_as_the_model_to_train(tiny_checkpoint, tmp_path, capsys):
    data = write_image_folder(tmp_path / "data", per_class=4, size=16)
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(tiny_checkpoint.read_bytes())
    flip_byte(damaged)
    args = [*FAST[2:], "--model", str(damaged), "--data", str(data), "--out", str(tmp_path / "out"), "--epochs", "1"]
    assert main(args) == 1
    assert "is corrupt: its tensors do not match the hash" in capsys.readouterr().err


def test_sigkill_mid_epoch_keeps_a_loadable_last_checkpoint_and_resume_finishes(tmp_path):
    data = write_image_folder(tmp_path / "data", per_class=30, size=16)
    out = tmp_path / "run"
    args = ["--data", str(data), "--out", str(out), "--epochs", "3", "--batch-size", "4", *FAST]
    proc = _train(args, tmp_path)
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 300  # generous: the machine may be busy with other work
    while not (metrics.exists() and metrics.read_text().count("\n") >= 1):
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "no epoch finished in 300 s"
        time.sleep(0.05)
    time.sleep(0.2)  # into epoch 2 (an epoch is 21 steps of 20 ms or more)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _, meta = vit.load_checkpoint(out / "last.safetensors")  # intact despite the kill
    done = meta.info["epoch"]
    assert 1 <= done < 3

    resumed = _train(["--resume", "--out", str(out)], tmp_path)
    log, _ = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, log
    _, meta = vit.load_checkpoint(out / "model.safetensors")
    assert meta.info["epoch"] == 3 and len(meta.info["history"]) == 3
    assert len(meta.info["commands"]) == 2 and "--resume" in meta.info["commands"][1]
    assert [json.loads(line)["epoch"] for line in metrics.read_text().splitlines()] == [1, 2, 3]


def test_torchrun_two_cpu_processes_with_gloo(tmp_path):
    data = write_image_folder(tmp_path / "data", per_class=12, size=16)
    single, ddp = tmp_path / "single", tmp_path / "ddp"
    common = ["--data", str(data), "--epochs", "2", "--batch-size", "4", *FAST]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    runs = [_train([*common, "--out", str(ddp)], tmp_path, launcher), _train([*common, "--out", str(single)], tmp_path)]
    for proc in runs:
        log, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, log
    lines = {name: (tmp_path / name / "metrics.jsonl").read_text().splitlines() for name in ("single", "ddp")}
    assert len(lines["ddp"]) == len(lines["single"]) == 2
    assert json.loads(lines["ddp"][0]).keys() == json.loads(lines["single"][0]).keys()
    _, meta = vit.load_checkpoint(ddp / "model.safetensors")
    assert meta.info["processes"] == 2
    # Each rank takes half of each epoch's steps at the same per-process batch size.
    assert meta.info["step"] * 2 == vit.load_checkpoint(single / "model.safetensors")[1].info["step"]
    assert not list(ddp.glob("*.tmp*")) and sorted(p.name for p in ddp.iterdir()) == [
        "last.safetensors",
        "metrics.jsonl",
        "model.safetensors",
    ]


@pytest.mark.parametrize(
    ("entry", "usage"), [(main, "python -m training"), (evaluate_main, "python -m training.evaluate")]
)
def test_help_names_the_command_and_its_options(entry, usage, capsys):
    with pytest.raises(SystemExit, match="^0$"):  # argparse exits with code 0 after --help
        entry(["--help"])
    text = capsys.readouterr().out
    assert text.startswith(f"usage: {usage}")
    assert ("--resume" in text) == (entry is main) and "--data" in text
