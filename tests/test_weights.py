"""Foreign weights: exact parity with torchvision and timm on randomly initialised models,
loud refusals (named pretrained weights: tests/test_pretrained.py)."""

from dataclasses import replace

import pytest
import timm
import torch
import torchvision
import transformers
from conftest import randomise_
from timm.layers import set_fused_attn
from timm.utils import AttentionExtract
from tolerance import forward_tolerance

import vit
from vit.analysis import query_attention

# tv_small's architecture: no named configuration has it, so a bare state dict needs it spelled out.
TV_SMALL = vit.ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=64, depth=3, heads=4, mlp_dim=128)


def tv_small() -> torchvision.models.VisionTransformer:
    return torchvision.models.VisionTransformer(
        image_size=32, patch_size=4, num_layers=3, num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10
    )


def legacy_names(state_dict: dict) -> dict:
    """torchvision's older MLP key names, as in its downloadable .pth files."""
    return {k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."): v for k, v in state_dict.items()}


@pytest.fixture(scope="module")
def tv_b16() -> torchvision.models.VisionTransformer:
    torch.manual_seed(1)
    return randomise_(torchvision.models.vit_b_16()).eval()


@pytest.fixture(scope="module")
def timm_b16() -> torch.nn.Module:
    torch.manual_seed(2)
    return randomise_(timm.create_model("vit_base_patch16_224", pretrained=False)).eval()


def assert_same_logits(foreign: torch.nn.Module, ours: vit.VisionTransformer, size: int, batch: int = 2) -> None:
    """The same logits up to rounding: the other library sums in its own order (tests/tolerance.py)."""
    images = torch.randn(batch, 3, size, size)
    with torch.no_grad():
        expected = foreign(images)
        tol = forward_tolerance(ours.config, expected.abs().max().item())
        torch.testing.assert_close(ours(images), expected, atol=tol, rtol=0)


def test_torchvision_b16_parity(tv_b16) -> None:
    ours = vit.from_torchvision(tv_b16)
    assert ours.config == vit.create_model("vit_b_16").config
    assert_same_logits(tv_b16, ours, 224)


def test_torchvision_small_config_parity_from_state_dict() -> None:
    foreign = randomise_(tv_small()).eval()
    ours = vit.from_torchvision(foreign.state_dict(), config=TV_SMALL)
    assert ours.config == TV_SMALL
    assert_same_logits(foreign, ours, 32, batch=4)


def test_torchvision_legacy_mlp_names_are_accepted() -> None:
    foreign = randomise_(tv_small()).eval()
    legacy = legacy_names(foreign.state_dict())
    assert any("linear_1" in k for k in legacy)
    assert_same_logits(foreign, vit.from_torchvision(legacy, config=TV_SMALL), 32)


def test_every_layer_gets_its_own_weights(tv_b16) -> None:
    # A known third-party loader copied layer 0 into every layer; compare per layer.
    ours = vit.from_torchvision(tv_b16)
    for i, block in enumerate(ours.blocks):
        theirs = tv_b16.encoder.layers[i].self_attention.in_proj_weight
        assert torch.equal(block.attn.qkv.weight, theirs)


def test_timm_b16_parity(timm_b16) -> None:
    ours = vit.from_timm(timm_b16)
    assert ours.config == vit.create_model("vit_base_patch16_224").config
    assert_same_logits(timm_b16, ours, 224)


def test_timm_small_gap_model_parity() -> None:
    foreign = randomise_(
        timm.create_model(
            "vit_tiny_patch16_224",
            pretrained=False,
            img_size=32,
            patch_size=4,
            depth=2,
            num_classes=10,
            global_pool="avg",
            fc_norm=False,
            class_token=False,
        )
    ).eval()
    ours = vit.from_timm(foreign)
    assert (ours.config.pool, ours.config.class_token) == ("gap", False)
    assert_same_logits(foreign, ours, 32, batch=4)


def timm_unfused(name: str, **kwargs) -> torch.nn.Module:
    """A randomly initialised timm model that materialises its attention (fused attention off)."""
    set_fused_attn(False)  # timm only materialises attention when built with fused attention off
    try:
        return randomise_(timm.create_model(name, pretrained=False, **kwargs)).eval()
    finally:
        set_fused_attn(True)


def assert_timm_parity(
    foreign: torch.nn.Module, ours: vit.VisionTransformer, size: int | tuple[int, int]
) -> vit.AttentionMaps:
    """Logits (or features) and every head's attention equal timm's up to rounding (tests/tolerance.py),
    on images of `size` pixels (a side, or (height, width))."""
    height, width = (size, size) if isinstance(size, int) else size
    images = torch.randn(2, 3, height, width)
    with torch.no_grad():
        theirs = AttentionExtract(foreign, method="fx")(images)  # {name: (B, H, T, T)} in block order
        expected = foreign(images)
        out, maps = ours(images, need_weights=True)
    assert out.shape == expected.shape
    torch.testing.assert_close(out, expected, atol=forward_tolerance(ours.config, expected.abs().max().item()), rtol=0)
    assert len(theirs) == len(maps) == ours.config.depth
    for reference, mine in zip(theirs.values(), maps, strict=True):
        torch.testing.assert_close(mine, reference, atol=forward_tolerance(ours.config, 1.0), rtol=0)  # weights <= 1
    return maps


def test_per_head_attention_equals_timm_maps() -> None:
    foreign = timm_unfused("vit_tiny_patch16_224", img_size=64)
    maps = assert_timm_parity(foreign, vit.from_timm(foreign), 64)
    cls_maps = query_attention(maps)  # (B, L, H, gh, gw)
    first = maps[0]
    # The same numbers read from the same tensor, so exactly equal.
    torch.testing.assert_close(cls_maps[:, 0], first[:, :, 0, 1:].reshape(2, 3, 4, 4), atol=0, rtol=0)


# timm's families, built locally at small sizes (weights cannot be downloaded here): the
# distillation token and second head, headless DINO, DINOv2's LayerScale, and registers with
# position embeddings for the patches only (no_embed_class).
FAMILIES = {
    "deit_tiny_distilled_patch16_224": ({"img_size": 64}, ("cls", "dist")),
    "vit_small_patch16_224.dino": ({"img_size": 64}, ("cls",)),
    "vit_small_patch14_dinov2": ({"img_size": 70}, ("cls",)),
    "vit_small_patch14_reg4_dinov2": ({"img_size": 70}, ("cls", "reg1", "reg2", "reg3", "reg4")),
}


@pytest.mark.parametrize("name", FAMILIES)
def test_timm_families_load_exactly(name: str) -> None:
    kwargs, prefix = FAMILIES[name]
    foreign = timm_unfused(name, **kwargs)
    ours = vit.from_timm(foreign)
    maps = assert_timm_parity(foreign, ours, kwargs["img_size"])
    assert maps.prefix_names == prefix and maps.prefix_tokens == foreign.num_prefix_tokens == len(prefix)
    assert ours.config.num_classes == foreign.num_classes  # 0 for DINO and DINOv2: features, not logits
    # A bare state dict: the one named configuration that fits gives the same model.
    again = vit.from_timm(foreign.state_dict())
    assert again.config == ours.config


@pytest.mark.parametrize("name", ["vit_small_patch14_dinov2", "vit_small_patch14_reg4_dinov2"])
def test_dinov2_position_embeddings_resample_as_timm_does(name: str) -> None:
    # DINOv2 is trained at 518 px and run at other sizes; timm resamples with dynamic_img_size.
    foreign = timm_unfused(name, img_size=70, dynamic_img_size=True)
    ours = vit.from_timm(foreign)
    assert ours.config.image_size == 70
    maps = assert_timm_parity(foreign, ours, 42)  # a 3x3 grid from the 5x5 one
    assert maps.grid == (3, 3)


def sharpen_(model: torch.nn.Module) -> torch.nn.Module:
    """Random weights whose attention is peaked, not uniform: LayerNorm gains near 1 (randomise_
    leaves them near 0) and larger query/key weights. With near-uniform attention the position
    of a key hardly matters, so a wrong rotation would pass a parity test unseen."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.add_(1.0)
            elif name.endswith("attn.qkv.weight"):
                p.normal_(0.0, 0.1)
    return model


REGISTERS4 = ("cls", "reg1", "reg2", "reg3", "reg4")
DINOV3 = ["vit_small_patch16_dinov3", "vit_base_patch16_dinov3", "vit_small_patch16_dinov3_qkvb"]


def final_tokens(model: vit.VisionTransformer, images: torch.Tensor) -> torch.Tensor:
    """Our last normed tokens (B, T, D), what timm's forward_features returns."""
    captured = {}
    hook = model.norm.register_forward_hook(lambda mod, inp, out: captured.update(tokens=out))
    try:
        with torch.no_grad():
            model(images)
    finally:
        hook.remove()
    return captured["tokens"]


@pytest.mark.parametrize("name", DINOV3)
def test_dinov3_loads_exactly(name: str) -> None:
    # DINOv3 (timm's Eva): 1 CLS + 4 registers, 2-D RoPE, LayerScale, eps 1e-5; global_pool='token'
    # reads the CLS token as upstream DINOv3 does (our named configuration's pooling).
    foreign = sharpen_(timm_unfused(name, global_pool="token"))
    ours = vit.from_timm(foreign)
    assert ours.config == vit.model.CONFIGS[name] and ours.config.pos_embed == "rope"
    maps = assert_timm_parity(foreign, ours, (64, 96))  # a 4 x 6 grid: rows and columns are not swapped
    assert maps.grid == (4, 6) and maps.prefix_names == REGISTERS4 and foreign.num_prefix_tokens == 5
    images = torch.randn(2, 3, 48, 80)
    with torch.no_grad():
        expected = foreign.forward_features(images)  # (B, 5 + N, D): every token after the final norm
    tokens = final_tokens(ours, images)
    torch.testing.assert_close(
        tokens, expected, atol=forward_tolerance(ours.config, expected.abs().max().item()), rtol=0
    )
    assert vit.from_timm(foreign.state_dict()).config == ours.config  # a bare state dict: the one named fit


def test_dinov3_parity_would_catch_a_missing_rotation() -> None:
    # The parity above means something only if the rotation changes the numbers far beyond the
    # tolerance: without it (no positions at all) the features are off by much more.
    foreign = sharpen_(timm_unfused("vit_small_patch16_dinov3", global_pool="token"))
    ours = vit.from_timm(foreign)
    images = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        expected = foreign(images)
        ours.rope = None
        unrotated = ours(images)
    tol = forward_tolerance(ours.config, expected.abs().max().item())
    assert (unrotated - expected).abs().max() > 100 * tol


def test_dinov3_with_timms_default_mean_pooling() -> None:
    # timm's Eva pools the patch mean by default: read from the module, the pooling follows it.
    foreign = sharpen_(timm_unfused("vit_small_patch16_dinov3"))
    ours = vit.from_timm(foreign)
    assert ours.config == replace(vit.model.CONFIGS["vit_small_patch16_dinov3"], pool="gap")
    assert_timm_parity(foreign, ours, 64)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("vit_medium_patch16_rope_reg1_gap_256", "RotaryEmbeddingCat is not supported: only DINOv3's"),
        ("vit_small_plus_patch16_dinov3", "Eva built of EvaBlock/EvaAttention/SwiGLU/SiLU is not supported"),
    ],
)
def test_other_eva_variants_are_refused_by_name(name: str, message: str) -> None:
    with pytest.raises(vit.CheckpointError, match=message):
        vit.from_timm(timm.create_model(name, pretrained=False))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"qk_norm": True}, "QK-norm"),
        ({"pre_norm": True}, r"pre-encoder LayerNorm \(norm_pre\)"),
        ({"global_pool": "map"}, r"attention pooling \(MAP head\)"),
    ],
)
def test_unsupported_timm_extras_are_refused_by_name(kwargs: dict, message: str) -> None:
    foreign = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, depth=1, **kwargs)
    with pytest.raises(vit.CheckpointError, match=message):
        vit.from_timm(foreign.state_dict())


def test_missing_and_misshaped_keys_are_named() -> None:
    sd = tv_small().state_dict()
    broken = dict(sd)
    del broken["encoder.layers.encoder_layer_1.ln_2.weight"]
    with pytest.raises(vit.CheckpointError, match=r"missing keys \['blocks.1.norm2.weight'\]"):
        vit.from_torchvision(broken, config=TV_SMALL)
    broken = dict(sd)
    broken["encoder.layers.encoder_layer_2.mlp.3.bias"] = torch.zeros(7)
    with pytest.raises(vit.CheckpointError, match=r"blocks.2.mlp.fc2.bias: file \(7,\) vs model \(64,\)"):
        vit.from_torchvision(broken, config=TV_SMALL)
    with pytest.raises(vit.CheckpointError, match="unrecognised torchvision ViT key 'encoder.extra'"):
        vit.from_torchvision({**sd, "encoder.extra": torch.zeros(1)}, config=TV_SMALL)


def test_weights_that_fit_no_named_configuration_are_refused() -> None:
    with pytest.raises(vit.CheckpointError, match=r"fit no named configuration .* pass config=ViTConfig"):
        vit.from_torchvision(tv_small().state_dict())


@pytest.mark.parametrize(("name", "heads"), [("vit_cifar_tiny", 12), ("vit_cifar_small", 12)])
def test_bare_state_dict_of_a_named_model_keeps_its_heads(name: str, heads: int) -> None:
    # dim 192 / 384 with 12 heads: a guess by width (3 / 6 heads, the ImageNet models') gets
    # every per-head map wrong while the shapes still fit. The only named fit is used instead.
    original = vit.create_model(name).eval()
    ours = vit.from_timm(original.state_dict())
    assert ours.config == original.config and ours.config.heads == heads
    images = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        expected, expected_maps = original(images, need_weights=True)
        logits, maps = ours(images, need_weights=True)
    # The same weights through the same code and kernels: bit-identical, so any difference is a
    # weight in the wrong place or the wrong head split, however small.
    torch.testing.assert_close(logits, expected, atol=0, rtol=0)
    assert maps[0].shape[1] == heads
    torch.testing.assert_close(maps[-1], expected_maps[-1], atol=0, rtol=0)


def test_fine_tuned_copies_keep_the_named_architecture() -> None:
    # Another class count and resolution than the preset: still the preset's heads.
    original = vit.create_model("vit_cifar_small", num_classes=7, image_size=48)
    assert vit.from_timm(original.state_dict()).config == original.config


def test_ambiguous_weights_are_refused_with_the_candidates(monkeypatch, tmp_path) -> None:
    tiny = vit.model.CONFIGS["vit_cifar_tiny"]
    monkeypatch.setitem(vit.model.CONFIGS, "vit_cifar_tiny_3h", replace(tiny, heads=3))
    monkeypatch.setitem(vit.model.CONFIGS, "vit_cifar_tiny_gap", replace(tiny, pool="gap"))
    sd = vit.create_model("vit_cifar_tiny").state_dict()
    listed = r"vit_cifar_tiny \(12 heads, pool 'cls'\), vit_cifar_tiny_3h \(3 heads, pool 'cls'\), vit_cifar_tiny_gap"
    with pytest.raises(vit.CheckpointError, match=r"3 named configurations fit them: " + listed):
        vit.from_timm(sd)
    with pytest.raises(vit.CheckpointError, match=r"choose one with name=NAME .* --model model.safetensors"):
        vit.from_timm(sd)
    assert vit.from_timm(sd, name="vit_cifar_tiny_3h").config.heads == 3
    # The command-line route the message gives: a checkpoint records the chosen configuration.
    vit.save_checkpoint(vit.from_timm(sd, name="vit_cifar_tiny_3h"), tmp_path / "model.safetensors")
    assert vit.load_checkpoint(tmp_path / "model.safetensors")[0].config.heads == 3
    assert vit.from_timm(sd, name="vit_cifar_tiny_gap").config.pool == "gap"
    with pytest.raises(vit.CheckpointError, match=r"do not fit 'vit_cifar_small': dim 192 \(weights\) vs 384"):
        vit.from_timm(sd, name="vit_cifar_small")
    with pytest.raises(vit.CheckpointError, match="unknown model 'vit_nope'"):
        vit.from_timm(sd, name="vit_nope")
    with pytest.raises(ValueError, match="pass config= or name=, not both"):
        vit.from_timm(sd, name="vit_cifar_tiny", config=tiny)


def test_torchvision_imagenet_state_dict_is_a_unique_fit(tv_b16) -> None:
    # vit_b_16 and timm's vit_base_patch16_224 are one architecture: two names, one config.
    ours = vit.from_torchvision(tv_b16.state_dict())
    assert ours.config == vit.create_model("vit_b_16").config


def test_a_module_of_another_library_is_refused_with_a_sentence() -> None:
    # Not an AttributeError from deep inside the converter: the message names what to call instead.
    tiny = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}
    hf = transformers.ViTModel(transformers.ViTConfig(image_size=32, patch_size=16, **tiny))
    with pytest.raises(
        vit.CheckpointError, match="expected timm's VisionTransformer or Eva, got ViTModel .*from_transformers"
    ):
        vit.from_timm(hf)
    with pytest.raises(vit.CheckpointError, match="expected torchvision.models.VisionTransformer, got ViTModel"):
        vit.from_torchvision(hf)
    timm_model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, depth=1)
    with pytest.raises(vit.CheckpointError, match="got VisionTransformer from timm; use vit.from_timm"):
        vit.from_torchvision(timm_model)
    with pytest.raises(vit.CheckpointError, match="got VisionTransformer from torchvision; use vit.from_torchvision"):
        vit.from_timm(tv_small())
