"""The training loop: exact resume, divergence, refusals before any work, metrics lines."""

from __future__ import annotations

import json

import pytest
import torch
from training_helpers import tiny_config, write_image_folder

import vit
from training.augment import AugmentConfig
from training.config import TrainConfig
from training.data import DataError
from training.engine import Hooks, Trainer, TrainingError
from training.run_files import LAST, METRICS, MODEL


@pytest.fixture
def tiny_data(tmp_path):
    return str(write_image_folder(tmp_path / "data", per_class=12, size=16))


def test_resume_after_an_epoch_equals_the_uninterrupted_run(tiny_data, tmp_path):
    augment = AugmentConfig(randaug_ops=1, mixup_alpha=0.8, cutmix_alpha=1.0, erase_prob=0.25)
    settings = dict(epochs=3, augment=augment, drop_path=0.1)
    Trainer(tiny_config(tiny_data, tmp_path / "straight", **settings), progress=False).run()

    interrupted = tiny_config(tiny_data, tmp_path / "resumed", **settings)
    first = Trainer(interrupted, hooks=Hooks(should_stop=lambda: first.epoch >= 1), progress=False)
    first.run()
    assert vit.load_checkpoint(tmp_path / "resumed" / LAST)[1].info["epoch"] == 1
    resumed = Trainer(TrainConfig(out=str(tmp_path / "resumed")), resume=True, progress=False)
    assert resumed.epoch == 1 and resumed.step == first.steps_per_epoch
    resumed.run()

    a, meta_a = vit.load_checkpoint(tmp_path / "straight" / MODEL)
    b, meta_b = vit.load_checkpoint(tmp_path / "resumed" / MODEL)
    # Bit-identical: a resumed run repeats the same kernels on the same batches in the same order
    # with the same random state, so any difference, however small, is state the checkpoint lost.
    for name, tensor in a.state_dict().items():
        assert torch.equal(tensor, b.state_dict()[name]), name
    assert [r["val_loss"] for r in meta_a.info["history"]] == [r["val_loss"] for r in meta_b.info["history"]]
    lines = (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 3  # no duplicated epoch after the resume


def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tiny_data, tmp_path):
    def poison(trainer: Trainer, step: int) -> None:
        if trainer.epoch == 1 and step == 1:  # after epoch 1 was saved, break the weights
            with torch.no_grad():
                trainer.model.head.weight.fill_(float("nan"))

    with pytest.raises(TrainingError, match=r"loss became nan in epoch 2.*last good checkpoint .*last\.safetensors"):
        Trainer(tiny_config(tiny_data, tmp_path / "run"), hooks=Hooks(on_step=poison), progress=False).run()
    model, meta = vit.load_checkpoint(tmp_path / "run" / LAST)
    assert meta.info["epoch"] == 1
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"lr": -1.0}, ValueError, "lr must be"),
        ({"epochs": 0}, ValueError, "epochs must be"),
        ({"model": "vit_unknown"}, ValueError, "unknown model"),
        ({"label_smoothing": 1.0}, ValueError, "label_smoothing"),
        ({"holdout": 0}, ValueError, "holdout"),
        ({"data": "/no/such/folder"}, DataError, "no such folder"),
    ],
)
def test_bad_arguments_fail_before_any_work(tiny_data, tmp_path, overrides, error, match):
    config = tiny_config(tiny_data, tmp_path / "out")
    for name, value in overrides.items():
        setattr(config, name, value)
    with pytest.raises(error, match=match):
        Trainer(config, progress=False)
    assert not (tmp_path / "out").exists()


def test_resume_without_a_training_state_says_so(tmp_path):
    with pytest.raises(TrainingError, match=r"--resume: .*last\.safetensors does not exist"):
        Trainer(TrainConfig(out=str(tmp_path / "empty")), resume=True, progress=False)


def test_resume_of_a_state_with_a_bad_config_names_the_field(tiny_data, tmp_path):
    out = tmp_path / "run"
    Trainer(tiny_config(tiny_data, out, epochs=1, warmup_epochs=0.5), progress=False).run()
    model, meta = vit.load_checkpoint(out / LAST)
    bad = {**meta.info, "train_config": {**meta.info["train_config"], "batch_size": "eight"}}
    vit.save_checkpoint(
        model, out / LAST, class_names=meta.class_names, preprocessing=meta.preprocessing, extra=meta.extra, **bad
    )
    with pytest.raises(ValueError, match=r"training config field 'batch_size' = 'eight' is not allowed: expected int"):
        Trainer(TrainConfig(out=str(out)), resume=True, progress=False)


def test_metrics_lines_are_the_checkpoint_history(tiny_data, tmp_path):
    out = tmp_path / "run"
    Trainer(tiny_config(tiny_data, out), progress=False).run()
    lines = [json.loads(line) for line in (out / METRICS).read_text().splitlines()]
    history = vit.load_checkpoint(out / MODEL)[1].info["history"]
    assert lines == history and [r["epoch"] for r in lines] == [1, 2]
