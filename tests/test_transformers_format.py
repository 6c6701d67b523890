"""transformers-format weights: exact parity with transformers' own models (logits and every
head's attention from `output_attentions=True`, eager attention) on small randomly initialised
models of each family, from a module, a `save_pretrained` folder and a bare state dict, and
refusals by name."""

from __future__ import annotations

import json

import pytest
import timm
import torch
import transformers
from conftest import randomise_

import vit
from vit.transformers_format import rename_transformers, transformers_preprocessing

SMALL = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "attn_implementation": "eager",  # the path that materialises attention for output_attentions
}
# (model class, config class, image size, config extras, prefix token names)
FAMILIES = {
    "ViTForImageClassification": ("ViTConfig", 32, {"patch_size": 8, "num_labels": 5}, ("cls",)),
    "ViTModel": ("ViTConfig", 32, {"patch_size": 8}, ("cls",)),
    "DeiTModel": ("DeiTConfig", 32, {"patch_size": 8}, ("cls", "dist")),
    "DeiTForImageClassificationWithTeacher": ("DeiTConfig", 32, {"patch_size": 8, "num_labels": 5}, ("cls", "dist")),
    "Dinov2Model": ("Dinov2Config", 56, {"patch_size": 14}, ("cls",)),
    "Dinov2WithRegistersModel": (
        "Dinov2WithRegistersConfig",
        56,
        {"patch_size": 14},
        ("cls", "reg1", "reg2", "reg3", "reg4"),
    ),
}


def build(family: str, **overrides) -> tuple[torch.nn.Module, int]:
    config_class, size, extras, _ = FAMILIES[family]
    config = getattr(transformers, config_class)(image_size=size, **{**SMALL, **extras, **overrides})
    return randomise_(getattr(transformers, family)(config)).eval(), size


def reference(model: torch.nn.Module, images: torch.Tensor):
    """transformers' output in our model's terms (logits, or the features ours returns) and its attention."""
    out = model(pixel_values=images, output_attentions=True)
    if hasattr(out, "logits"):
        return out.logits, out.attentions
    hidden = out.last_hidden_state
    if isinstance(model, transformers.DeiTModel):
        return (hidden[:, 0] + hidden[:, 1]) / 2, out.attentions  # ours averages CLS and distillation features
    return hidden[:, 0], out.attentions


def assert_parity(foreign: torch.nn.Module, ours: vit.VisionTransformer, size: int) -> vit.AttentionMaps:
    images = torch.randn(2, 3, size, size)
    with torch.no_grad():
        expected, their_maps = reference(foreign, images)
        out, maps = ours(images, need_weights=True)
    assert out.shape == expected.shape
    assert (out - expected).abs().max().item() <= 1e-4
    assert len(their_maps) == len(maps) == ours.config.depth
    for theirs, mine in zip(their_maps, maps, strict=True):
        torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=0)
    return maps


@pytest.mark.parametrize("family", FAMILIES)
def test_family_loads_exactly_from_a_module(family: str) -> None:
    foreign, size = build(family)
    ours = vit.from_transformers(foreign)
    maps = assert_parity(foreign, ours, size)
    assert maps.prefix_names == FAMILIES[family][3]
    assert ours.config.heads == 4 and ours.config.norm_eps == foreign.config.layer_norm_eps


@pytest.mark.parametrize("family", FAMILIES)
def test_family_loads_exactly_from_a_saved_folder(family: str, tmp_path) -> None:
    # The Hub's key layout (encoder.layer.N.attention.attention.query), not the module's.
    foreign, size = build(family)
    foreign.save_pretrained(tmp_path)
    ours = vit.from_transformers(tmp_path)
    assert_parity(foreign, ours, size)
    assert vit.from_transformers(tmp_path / "model.safetensors").config == ours.config  # config.json beside it


def test_registers_fold_the_cls_position_into_the_cls_token() -> None:
    foreign, _ = build("Dinov2WithRegistersModel")
    ours = vit.from_transformers(foreign)
    pos = foreign.embeddings.position_embeddings
    assert ours.config.pos_embed_prefix is False and ours.pos_embed.shape[1] == pos.shape[1] - 1
    torch.testing.assert_close(ours.cls_token, foreign.embeddings.cls_token + pos[:, :1], atol=0, rtol=0)


def test_a_bare_state_dict_loads_as_the_named_configuration_that_fits() -> None:
    # Real DINOv2-S/14 shapes (one named configuration fits); eps from transformers' DINOv2 default.
    config = transformers.Dinov2Config(
        image_size=518, hidden_size=384, num_hidden_layers=12, num_attention_heads=6, attn_implementation="eager"
    )
    foreign = randomise_(transformers.Dinov2Model(config)).eval()
    ours = vit.from_transformers(foreign.state_dict())
    assert ours.config == vit.model.CONFIGS["vit_small_patch14_dinov2"]
    assert_parity(foreign, ours, 518)


def test_a_small_bare_state_dict_needs_its_config_spelled_out() -> None:
    foreign, size = build("ViTForImageClassification")
    with pytest.raises(vit.CheckpointError, match="fit no named configuration"):
        vit.from_transformers(foreign.state_dict())
    config = vit.from_transformers(foreign).config
    assert_parity(foreign, vit.from_transformers(foreign.state_dict(), config=config), size)


@pytest.mark.parametrize(
    ("family", "model_class", "message"),
    [
        ("DeiTModel", "DeiTForImageClassification", "reads only the CLS token of a distilled DeiT"),
        ("Dinov2Model", "Dinov2ForImageClassification", "classifies the CLS token concatenated with the mean patch"),
    ],
)
def test_classifiers_on_other_tokens_are_refused_by_name(family: str, model_class: str, message: str, tmp_path) -> None:
    config = getattr(transformers, FAMILIES[family][0])(image_size=FAMILIES[family][1], num_labels=3, **SMALL)
    model = getattr(transformers, model_class)(config)
    with pytest.raises(vit.CheckpointError, match=f"{model_class} {message}"):
        vit.from_transformers(model)
    model.save_pretrained(tmp_path)
    with pytest.raises(vit.CheckpointError, match=message):
        vit.from_transformers(tmp_path)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"hidden_act": "gelu_new"}, r"hidden_act='gelu_new' is not supported"),
        ({"use_swiglu_ffn": True}, r"SwiGLU MLP \(use_swiglu_ffn\)"),
    ],
)
def test_options_this_vit_lacks_are_refused_by_name(overrides: dict, message: str) -> None:
    foreign, _ = build("Dinov2Model", **overrides)
    with pytest.raises(vit.CheckpointError, match=message):
        vit.from_transformers(foreign)


def test_other_modules_are_refused_with_a_sentence() -> None:
    with pytest.raises(
        vit.CheckpointError, match="expects a transformers model .*got VisionTransformer .*vit.from_timm"
    ):
        vit.from_transformers(timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, depth=1))
    bert = transformers.BertModel(transformers.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2))
    with pytest.raises(vit.CheckpointError, match="transformers BertModel is not supported; supported: ViTModel"):
        vit.from_transformers(bert)


def test_missing_misshaped_and_unknown_keys_are_named(tmp_path) -> None:
    foreign, _ = build("ViTForImageClassification")
    config = vit.from_transformers(foreign).config
    sd = foreign.state_dict()
    broken = {k: v for k, v in sd.items() if k != "vit.layers.1.layernorm_after.weight"}
    with pytest.raises(vit.CheckpointError, match=r"missing keys \['blocks.1.norm2.weight'\]"):
        vit.from_transformers(broken, config=config)
    broken = {**sd, "vit.layers.0.mlp.fc2.bias": torch.zeros(7)}
    with pytest.raises(vit.CheckpointError, match=r"blocks.0.mlp.fc2.bias: file \(7,\) vs model \(64,\)"):
        vit.from_transformers(broken, config=config)
    with pytest.raises(vit.CheckpointError, match="unrecognised transformers ViT key 'vit.extra'"):
        vit.from_transformers({**sd, "vit.extra": torch.zeros(1)}, config=config)
    no_query = {k: v for k, v in sd.items() if not k.startswith("vit.layers.0.attention.q_proj.")}
    with pytest.raises(vit.CheckpointError, match=r"has 'blocks.0.attn.k.(weight|bias)' but not 'blocks.0.attn.q"):
        vit.from_transformers(no_query, config=config)
    with pytest.raises(vit.CheckpointError, match=f"^{tmp_path.name} holds no model.safetensors"):
        vit.from_transformers(tmp_path)  # the folder by name: a message never shows a server path


def test_both_key_layouts_rename_to_the_same_keys(tmp_path) -> None:
    foreign, _ = build("DeiTForImageClassificationWithTeacher")
    foreign.save_pretrained(tmp_path)
    from_file = rename_transformers(vit.load_state_dict_file(tmp_path / "model.safetensors"))
    assert sorted(from_file) == sorted(rename_transformers(foreign.state_dict()))
    assert any(k.startswith("deit.encoder.layer.") for k in vit.load_state_dict_file(tmp_path / "model.safetensors"))


def test_position_embeddings_resample_as_timm_does_not_as_transformers(tmp_path) -> None:
    # Away from the native grid the app resamples every family as timm does (bicubic with
    # antialias); transformers' interpolate_pos_encoding uses bicubic without it. Same weights,
    # different embeddings: docs/models.md says which convention the app uses.
    foreign, _ = build("Dinov2Model")
    ours = vit.from_transformers(foreign)
    with torch.no_grad():
        theirs = foreign.embeddings.interpolate_pos_encoding(torch.zeros(1, 1 + 9, 64), 42, 42)  # 4x4 -> 3x3
        mine = ours.position_embedding((3, 3))
    torch.testing.assert_close(mine[:, :1], theirs[:, :1], atol=0, rtol=0)  # the CLS slot is never resampled
    assert (mine[:, 1:] - theirs[:, 1:]).abs().max().item() > 1e-4


def test_preprocessing_comes_from_the_image_processor_config(tmp_path) -> None:
    transformers.ViTImageProcessor().save_pretrained(tmp_path)
    vit_pre = transformers_preprocessing(json.loads((tmp_path / "preprocessor_config.json").read_text()))
    assert (vit_pre.resize_size, vit_pre.crop_size, vit_pre.interpolation) == (224, 224, "bilinear")
    # The older Hub files store sizes as plain integers (google/vit-base-patch16-224's).
    old = transformers_preprocessing({"size": 224, "resample": 3, "image_mean": [0.5] * 3, "image_std": [0.5] * 3})
    assert (old.resize_size, old.crop_size, old.interpolation) == (224, 224, "bicubic")
