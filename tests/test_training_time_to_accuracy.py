"""The time-to-accuracy plot: curves read from metrics.jsonl files, one line per run, a PNG."""

from __future__ import annotations

import json

import pytest

import vit
from training.time_to_accuracy import main, plot_curves, read_curve


def _run(folder, records: list[dict]):
    folder.mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


@pytest.fixture
def two_runs(tmp_path):
    fast = _run(
        tmp_path / "fast",
        [{"epoch": e, "val_acc": 0.3 * e, "seconds": 10.0, "elapsed_seconds": 10.0 * e} for e in (1, 2, 3)],
    )
    # An older log without elapsed_seconds: the running sum of each epoch's seconds.
    slow = _run(tmp_path / "slow", [{"epoch": e, "val_acc": 0.2 * e, "seconds": 25.0} for e in (1, 2)])
    return fast, slow


def test_curves_use_cumulative_seconds_and_validation_accuracy(two_runs):
    fast, slow = read_curve(two_runs[0]), read_curve(two_runs[1] / "metrics.jsonl", label="old recipe")
    assert (
        fast.label == "fast" and fast.seconds == [10.0, 20.0, 30.0] and fast.accuracy == pytest.approx([0.3, 0.6, 0.9])
    )
    assert slow.label == "old recipe" and slow.seconds == [25.0, 50.0] and slow.test_accuracy is None


@pytest.mark.parametrize(
    "name",
    ["model.safetensors", "vit_cifar_nano_3epochs_acc90.safetensors"],  # as the CLI and the Train tab name it
)
def test_final_test_accuracy_comes_from_the_model_checkpoint(two_runs, name):
    model = vit.create_model("vit_cifar_nano", depth=1)
    vit.save_checkpoint(model, two_runs[0] / name, class_names=[str(i) for i in range(10)], final={"test_acc": 0.85})
    assert read_curve(two_runs[0]).test_accuracy == 0.85


def test_the_figure_has_one_line_per_run_in_percent_against_seconds(two_runs):
    fig = plot_curves([read_curve(run) for run in two_runs])
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if line.get_label() in ("fast", "slow")]
    assert [line.get_label() for line in lines] == ["fast", "slow"]
    assert list(lines[0].get_xdata()) == [10.0, 20.0, 30.0]
    assert list(lines[1].get_ydata()) == pytest.approx([20.0, 40.0])
    assert "(s)" in ax.get_xlabel() and "(%)" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["fast", "slow"]


def test_cli_writes_a_png(two_runs, tmp_path, capsys):
    out = tmp_path / "tta.png"
    assert main([str(run) for run in two_runs] + ["--labels", "a,b", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "tta.png" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (None, "no metrics.jsonl found"),
        ("", "no finished epoch"),
        ('{"epoch": 1}\n', r"records lack \['val_acc', 'seconds'\]"),
    ],
)
def test_a_run_without_usable_metrics_is_a_clear_error(tmp_path, capsys, content, match):
    run = tmp_path / "run"
    run.mkdir()
    if content is not None:
        (run / "metrics.jsonl").write_text(content)
    assert main([str(run), "--out", str(tmp_path / "x.png")]) == 1
    assert "error: " in capsys.readouterr().err
    with pytest.raises(ValueError, match=match):
        read_curve(run)
