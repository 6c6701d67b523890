"""The metrics log a run writes: appended per epoch, rewritten on resume, read back for plots."""

from __future__ import annotations

import pytest

from training.run_files import METRICS, append_metrics, read_metrics, write_metrics


def test_metrics_append_rewrite_and_read_back(tmp_path):
    append_metrics(tmp_path, {"epoch": 1, "val_acc": 0.5})
    append_metrics(tmp_path, {"epoch": 2, "val_acc": 0.6})
    assert read_metrics(tmp_path) == [{"epoch": 1, "val_acc": 0.5}, {"epoch": 2, "val_acc": 0.6}]
    write_metrics(tmp_path, [{"epoch": 1, "val_acc": 0.5}])  # the checkpoint's history wins on resume
    assert read_metrics(tmp_path / METRICS) == [{"epoch": 1, "val_acc": 0.5}]


def test_a_broken_line_names_the_file_and_line(tmp_path):
    (tmp_path / METRICS).write_text('{"epoch": 1}\n{"epoch": 2\n')
    with pytest.raises(ValueError, match=r"metrics\.jsonl:2: not a JSON line"):
        read_metrics(tmp_path)
