"""A run in chunks: bit-identical to the unchunked run, a stop across processes, the time budget."""

from __future__ import annotations

import pickle

import pytest
import torch
from conftest import flip_byte
from training_helpers import tiny_config, write_image_folder

import vit
from training import chunks
from training.augment import AugmentConfig
from training.chunks import Budget, request_stop, start_run, stop_requested, train_chunk
from training.engine import Hooks, Trainer
from training.run_files import LAST, MODEL
from vit.checkpoint import CheckpointError

# Every source of randomness on: RandAugment, MixUp/CutMix, erasing (the augmentation generator)
# and stochastic depth (torch's global RNG).
RANDOM = dict(epochs=3, augment=AugmentConfig(randaug_ops=1, mixup_alpha=0.8, cutmix_alpha=1.0, erase_prob=0.25))


@pytest.fixture
def tiny_data(tmp_path):
    return str(write_image_folder(tmp_path / "data", per_class=12, size=16))


def straight_run(data: str, out) -> list[tuple[float, float]]:
    """The unchunked run; returns its loss readings."""
    readings: list[tuple[float, float]] = []

    def read(trainer: Trainer, _step: int) -> None:
        if (reading := chunks.new_reading(trainer, readings)) is not None:
            readings.append(reading)

    Trainer(tiny_config(data, out, drop_path=0.1, **RANDOM), hooks=Hooks(on_step=read), progress=False).run()
    return readings


def test_a_run_in_chunks_ends_bit_identical_to_the_unchunked_run(tiny_data, tmp_path):
    readings = straight_run(tiny_data, tmp_path / "straight")
    out = start_run(tiny_config(tiny_data, tmp_path / "chunked", drop_path=0.1, **RANDOM))
    assert not (out / LAST).exists()  # starting trains nothing
    reports = []
    while not (reports and reports[-1].finished):
        reports.append(pickle.loads(pickle.dumps(train_chunk(out, max_steps=3))))  # as across a fork
        assert reports[-1].error is None and len(reports) < 10

    # 4 steps an epoch, 3 a chunk: the chunks pause inside epochs 1 and 2, at steps 3, 2 and 1
    assert [(r.epoch, r.step) for r in reports[:3]] == [(0, 3), (1, 2), (2, 1)]
    assert reports[-1].steps_per_epoch == 4 and reports[-1].epoch == 3
    a, meta_a = vit.load_checkpoint(tmp_path / "straight" / MODEL)
    b, meta_b = vit.load_checkpoint(out / MODEL)
    for name, tensor in a.state_dict().items():
        assert torch.equal(tensor, b.state_dict()[name]), name
    keys = ("train_loss", "train_acc", "val_loss", "val_acc", "lr")
    assert [[r[k] for k in keys] for r in meta_a.info["history"]] == [[r[k] for k in keys] for r in reports[-1].history]
    assert [reading for r in reports for reading in r.step_losses] == readings
    assert [epoch for r in reports for epoch, _ in r.probe] == [0, 1, 2, 3]  # before training, after each epoch
    assert reports[-1].summary["val_acc"] == meta_a.info["final"]["val_acc"]


def test_a_stop_file_ends_the_next_step_and_keeps_the_model(tiny_data, tmp_path):
    out = start_run(tiny_config(tiny_data, tmp_path / "run"))
    check = stop_requested(out)
    first = train_chunk(out, max_steps=2)
    assert not check() and not first.stopped and first.checkpoint is None
    request_stop(out)  # as the app's process does, while or between chunks
    assert check()
    stopped = train_chunk(out, max_steps=2)
    assert stopped.stopped and not stopped.finished and (stopped.epoch, stopped.step) == (0, 2)  # no step more
    assert stopped.checkpoint == str(out / MODEL) and vit.load_checkpoint(stopped.checkpoint)[1].info["stopped"]


def test_a_chunk_pauses_before_a_step_that_would_end_in_the_save_margin(monkeypatch):
    clock = iter([0.0, 0.0, 10.0, 20.0, 30.0])
    monkeypatch.setattr(chunks.time, "perf_counter", lambda: next(clock))
    budget = Budget(seconds=40)  # margin min(8, 40 / 4) = 8 s: no step may end after 32 s
    # steps of 10 s: after 2 steps, one more ends at 30 s; after 3, it would end at 40 s
    assert [budget() for _ in range(4)] == [False, False, False, True]


def test_every_chunk_takes_at_least_one_step():
    budget = Budget(seconds=0, max_steps=0)
    assert [budget(), budget()] == [False, True]


def test_a_failed_chunk_reports_its_error_in_words(tmp_path):
    report = train_chunk(tmp_path / "no-run", max_steps=1)
    assert report.error.startswith("the run stopped: ") and "run.json" in report.error  # no "FileNotFoundError"


def test_a_damaged_checkpoint_is_refused_at_the_start_not_in_a_chunk(tiny_data, tiny_checkpoint, tmp_path):
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(tiny_checkpoint.read_bytes())
    flip_byte(damaged)
    with pytest.raises(CheckpointError, match="corrupt"):
        start_run(tiny_config(tiny_data, tmp_path / "run", model=str(damaged)))
    assert not (tmp_path / "run" / "run.json").exists()
