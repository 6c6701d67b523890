"""The training loop: schedule, decay groups, loss, exact resume, divergence, fine-tuning setup."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from training_helpers import write_image_folder

import vit
from training.augment import AugmentConfig
from training.data import DataError
from training.engine import (
    LAST,
    MODEL,
    Hooks,
    TrainConfig,
    Trainer,
    TrainingError,
    lr_at,
    param_groups,
    soft_cross_entropy,
)
from training.models import adapt, load_source
from vit.model import resample_pos_embed


@pytest.fixture
def tiny_data(tmp_path):
    return str(write_image_folder(tmp_path / "data", per_class=12, size=16))


def tiny_config(data: str, out, **overrides) -> TrainConfig:
    settings = dict(
        model="vit_cifar_nano",
        data=data,
        out=str(out),
        epochs=2,
        batch_size=8,
        lr=2e-3,
        warmup_epochs=1,
        holdout=6,
        threads=1,
        eval_test=False,
        deterministic=True,
    )
    return TrainConfig(**{**settings, **overrides})


def test_lr_warms_up_linearly_then_decays_to_zero():
    lrs = [lr_at(s, total_steps=100, warmup_steps=10, base_lr=1.0) for s in range(101)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0) and lrs[10] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:], strict=False))
    assert lrs[55] == pytest.approx(0.5) and lrs[100] == pytest.approx(0.0, abs=1e-12)


def test_weight_decay_skips_norms_biases_pos_embed_and_cls_token():
    model = vit.create_model("vit_cifar_nano")
    decay, no_decay = param_groups(model, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    kept = {names[id(p)] for p in no_decay["params"]}
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert {"pos_embed", "cls_token", "norm.weight", "head.bias", "blocks.0.norm1.weight"} <= kept
    assert {"head.weight", "blocks.0.attn.qkv.weight", "patch_embed.proj.weight"} <= decayed
    assert len(decayed) + len(kept) == len(list(model.parameters()))


def test_soft_cross_entropy_matches_torch_label_smoothing():
    logits = torch.randn(8, 5, generator=torch.Generator().manual_seed(0))
    labels = torch.arange(8) % 5
    ours = soft_cross_entropy(logits, F.one_hot(labels, 5).float(), 0.1)
    torch.testing.assert_close(ours, F.cross_entropy(logits, labels, label_smoothing=0.1))


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


def test_fine_tune_adapts_head_and_position_embeddings(tmp_path):
    source = vit.create_model("vit_cifar_nano")
    vit.save_checkpoint(source, tmp_path / "src.safetensors", class_names=[str(i) for i in range(10)])
    loaded, _ = load_source(str(tmp_path / "src.safetensors"))
    adapted = adapt(loaded, num_classes=3, image_size=16, drop_path=0.1)
    assert adapted.config.grid == (4, 4) and adapted.pos_embed.shape == (1, 1 + 16, 128)
    assert adapted.head.weight.shape == (3, 128)
    assert torch.equal(adapted.blocks[3].mlp.fc1.weight, source.blocks[3].mlp.fc1.weight)
    assert torch.equal(adapted.pos_embed[:, 0], source.pos_embed[:, 0])  # CLS slot kept as is
    expected = resample_pos_embed(source.pos_embed[:, 1:], (8, 8), (4, 4))  # (1, 16, D)
    torch.testing.assert_close(adapted.pos_embed[:, 1:], expected)
    assert not torch.equal(adapted.head.weight[:3], source.head.weight[:3])  # a fresh head


def test_fine_tune_from_a_timm_state_dict_file(tmp_path):
    timm = pytest.importorskip("timm")
    foreign = timm.models.vision_transformer.VisionTransformer(
        img_size=32, patch_size=4, embed_dim=128, depth=6, num_heads=4, mlp_ratio=2.0, num_classes=7
    )  # vit_cifar_nano's architecture: a bare state dict loads only as a named configuration it fits
    torch.save(foreign.state_dict(), tmp_path / "timm.pth")
    model, preprocessing = load_source(str(tmp_path / "timm.pth"))
    assert preprocessing is None and model.config.heads == 4
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(model.eval()(x), foreign.eval()(x), atol=1e-5, rtol=1e-4)
    assert math.isclose(adapt(model, 3, 32, None).head.weight.shape[0], 3)
