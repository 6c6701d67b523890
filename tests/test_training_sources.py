"""Where a model to train comes from (preset, pretrained name, file) and how it is adapted."""

from __future__ import annotations

import pytest
import torch
from conftest import flip_byte
from tolerance import forward_tolerance

import vit
from training.sources import adapt, check_model_spec, load_source
from vit.model import resample_pos_embed


def test_a_preset_is_fresh_and_has_no_preprocessing():
    model, preprocessing = load_source("vit_cifar_nano")
    assert preprocessing is None and model.config == vit.create_model("vit_cifar_nano").config


def test_an_unknown_spec_lists_the_presets():
    with pytest.raises(ValueError, match=r"unknown model 'nope': not a preset \(.*vit_cifar_nano"):
        check_model_spec("nope")


def test_fine_tune_adapts_head_and_position_embeddings(tmp_path):
    source = vit.create_model("vit_cifar_nano")
    vit.save_checkpoint(source, tmp_path / "src.safetensors", class_names=[str(i) for i in range(10)])
    loaded, _ = load_source(str(tmp_path / "src.safetensors"))
    adapted = adapt(loaded, num_classes=3, image_size=16, drop_path=0.1)
    assert adapted.config.grid == (4, 4) and adapted.pos_embed.shape == (1, 1 + 16, 128)
    assert adapted.head.weight.shape == (3, 128) and adapted.config.drop_path == 0.1
    assert torch.equal(adapted.blocks[3].mlp.fc1.weight, source.blocks[3].mlp.fc1.weight)
    assert torch.equal(adapted.pos_embed[:, 0], source.pos_embed[:, 0])  # CLS slot kept as is
    expected = resample_pos_embed(source.pos_embed[:, 1:], (8, 8), (4, 4))  # (1, 16, D)
    torch.testing.assert_close(adapted.pos_embed[:, 1:], expected)
    assert not torch.equal(adapted.head.weight[:3], source.head.weight[:3])  # a fresh head


def test_fine_tune_of_a_rotary_model_keeps_every_weight():
    # DINOv3-style rotary positions have no weights: a new grid changes nothing to copy.
    source = vit.create_model("vit_cifar_nano", pos_embed="rope", pos_embed_prefix=False, num_classes=0)
    adapted = adapt(source, num_classes=0, image_size=16, drop_path=None)
    assert adapted.config.grid == (4, 4) and adapted.pos_embed is None
    for (name, mine), theirs in zip(adapted.state_dict().items(), source.state_dict().values(), strict=True):
        assert torch.equal(mine, theirs), name


def test_nothing_to_adapt_returns_the_model_itself():
    model = vit.create_model("vit_cifar_nano")
    assert adapt(model, 10, 32, None) is model


def test_fine_tune_from_a_timm_state_dict_file(tmp_path):
    timm = pytest.importorskip("timm")
    foreign = timm.models.vision_transformer.VisionTransformer(
        img_size=32, patch_size=4, embed_dim=128, depth=6, num_heads=4, mlp_ratio=2.0, num_classes=7
    )  # vit_cifar_nano's architecture: a bare state dict loads only as a named configuration it fits
    torch.save(foreign.state_dict(), tmp_path / "timm.pth")
    model, preprocessing = load_source(str(tmp_path / "timm.pth"))
    assert preprocessing is None and model.config.heads == 4
    x = torch.randn(2, 3, 32, 32)
    expected = foreign.eval()(x)
    tol = forward_tolerance(model.config, expected.abs().max().item())
    torch.testing.assert_close(model.eval()(x), expected, atol=tol, rtol=0)
    assert adapt(model, 3, 32, None).head.weight.shape == (3, 128)


def test_fine_tuning_a_distilled_model_gives_both_heads_the_new_classes():
    model = vit.create_model("vit_cifar_nano", distill_token=True)
    adapted = adapt(model, num_classes=3, image_size=32, drop_path=None)
    assert adapted.head.weight.shape == (3, 128) and adapted.head_dist.weight.shape == (3, 128)
    assert torch.equal(adapted.dist_token, model.dist_token)


def test_a_damaged_checkpoint_is_refused_not_retried_as_foreign_weights(tiny_checkpoint, tmp_path):
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(tiny_checkpoint.read_bytes())
    flip_byte(damaged)
    with pytest.raises(vit.CheckpointError, match="is corrupt: its tensors do not match the hash"):
        load_source(str(damaged))
    assert load_source(str(tiny_checkpoint))[1] == vit.load_checkpoint(tiny_checkpoint)[1].preprocessing
