"""The sweep: a probe's epochs sized to a budget, the table of finished runs, and one whole
sweep of two runs side by side on a small image folder."""

from __future__ import annotations

import json
import re

import pytest
from training_helpers import write_image_folder

from training.sweep import Result, epochs_for, main, table


def _metrics(tmp_path, seconds: list[float]):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"epoch": i + 1, "seconds": s}) + "\n" for i, s in enumerate(seconds)))
    return path


def test_epochs_fit_the_budget_from_the_slowest_epoch_after_the_first_and_the_start_up(tmp_path):
    # epoch 1: 40 s of start-up + a 5 s epoch; the slowest later epoch takes 5 s
    assert epochs_for(_metrics(tmp_path, [45.0, 4.0, 5.0, 4.5]), budget=100.0) == 12  # (100 - 40) / 5
    assert epochs_for(_metrics(tmp_path, [45.0, 4.0, 5.0, 4.5]), budget=10.0) == 1  # never 0


@pytest.mark.parametrize("seconds", [[], [3.0]])
def test_a_probe_without_two_epochs_is_a_clear_error(tmp_path, seconds):
    with pytest.raises(ValueError, match="two finished epochs"):
        epochs_for(_metrics(tmp_path, seconds) if seconds else tmp_path / "missing.jsonl", budget=100.0)


def _result(name: str, val: float, reached: float | None) -> Result:
    return Result(name, ["--lr", "1e-3"], 10, 12345.6, 250.4, val, val - 0.01, {0.8: 30.0, 0.9: reached})


def test_the_table_puts_the_best_validation_first_and_says_when_a_level_is_not_reached():
    text = table([_result("a", 0.85, None), _result("b", 0.91, 200.0)], (0.8, 0.9))
    rows = text.splitlines()
    head = "| run | options | epochs | img/s (shared) | val acc | test acc | seconds | s to 80 % val | s to 90 % val |"
    assert rows[0] == head
    assert rows[2].startswith("| b |") and "| 91.00 % | 90.00 % | 250 | 30 s | 200 s |" in rows[2]
    assert rows[3].startswith("| a |") and rows[3].endswith("| 30 s | not reached |")
    assert "12,346" in rows[2] and "`--lr 1e-3`" in rows[2]


def test_a_whole_smoke_sweep_on_a_small_folder_writes_its_table_plot_and_best_run(tmp_path, capsys):
    data = tmp_path / "data"
    write_image_folder(data, per_class=8, size=32)
    out = tmp_path / "sweep"
    args = ["--sweep", "smoke", "--data", str(data), "--out", str(out), "--seconds", "30", "--probe-epochs", "2"]
    assert main([*args, "--common", "--holdout 20 --device cpu --threads 1 --eval-batch-size 50"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"nano-a: \d+ epochs fit 30 s", printed) and re.search(r"nano-b: \d+ epochs fit 30 s", printed)
    best = re.search(r"best by validation accuracy: (nano-[ab]) -> ", printed).group(1)
    assert (out / best / "model.safetensors").is_file()
    assert (out / "time_to_accuracy.png").stat().st_size > 10_000
    rows = (out / "sweep.md").read_text().splitlines()
    assert len(rows) == 4 and rows[2].startswith(f"| {best} |")
    saved = json.loads((out / "sweep.json").read_text())
    assert {r["name"] for r in saved} == {"nano-a", "nano-b"} and all(0 <= r["test_acc"] <= 1 for r in saved)
