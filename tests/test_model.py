"""The from-scratch ViT: published parameter counts, patch embedding, both attention paths,
attention maps, non-square inputs and position-embedding interpolation."""

import pytest
import torch
import torch.nn.functional as F
from tolerance import assert_close_up_to_rounding, forward_tolerance, rounding_tolerance

import vit
from vit.model import AttentionMaps, ViTConfig, resample_pos_embed


def count_params(name: str, **overrides) -> int:
    with torch.device("meta"):  # no memory, no init time: H/14 has 632M parameters
        model = vit.create_model(name, **overrides)
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("vit_b_16", 86_567_656),
        ("vit_b_32", 88_224_232),
        ("vit_l_16", 304_326_632),
        ("vit_l_32", 306_535_400),
        ("vit_h_14", 632_045_800),
        ("vit_tiny_patch16_224", 5_717_416),
        ("vit_small_patch16_224", 22_050_664),
        ("vit_cifar_showcase", 847_626),  # the classic CIFAR-10 showcase's published figure
    ],
)
def test_parameter_counts_match_published_figures(name: str, expected: int) -> None:
    assert count_params(name) == expected


def test_named_builders_are_the_registered_configs() -> None:
    assert vit.vit_b_16(num_classes=10).config == vit.create_model("vit_b_16", num_classes=10).config
    with pytest.raises(ValueError, match="unknown model"):
        vit.create_model("vit_z_99")


def test_conv_patch_embedding_equals_unfold_and_linear() -> None:
    model = vit.create_model("vit_cifar_nano")
    images = torch.randn(2, 3, 32, 48)
    conv = model.patch_embed(images)  # (B, N, D)
    weight = model.patch_embed.proj.weight  # (D, C, P, P)
    patches = F.unfold(images, kernel_size=4, stride=4).transpose(1, 2)  # (B, N, C*P*P), row-major patches
    flat = weight.reshape(weight.shape[0], -1).T  # (C*P*P, D)
    linear = patches @ flat + model.patch_embed.proj.bias
    terms = (patches.abs() @ flat.abs()).max().item()  # the largest sum of |terms| of one output
    assert_close_up_to_rounding(conv, linear, reduction=flat.shape[0], magnitude=terms)


@pytest.mark.parametrize("name", ["vit_cifar_nano", "vit_cifar_showcase", "vit_tiny_patch16_224"])
def test_fused_and_explicit_attention_give_the_same_logits(name: str) -> None:
    model = vit.create_model(name).eval()
    size = model.config.image_size
    images = torch.randn(3, 3, size, size)
    with torch.no_grad():
        fast = model(images)
        explicit, maps = model(images, need_weights=True)
    assert fast.shape == (3, model.config.num_classes)
    torch.testing.assert_close(fast, explicit, atol=forward_tolerance(model.config, fast.abs().max().item()), rtol=0)
    assert len(maps) == model.config.depth


def test_attention_maps_are_row_stochastic_and_carry_the_grid() -> None:
    model = vit.create_model("vit_cifar_nano").eval()
    with torch.no_grad():
        _, maps = model(torch.randn(2, 3, 32, 32), need_weights=True)
    assert isinstance(maps, tuple) and isinstance(maps, AttentionMaps)
    assert maps.grid == (8, 8) and maps.prefix_tokens == 1
    for layer in maps:
        assert layer.shape == (2, 4, 65, 65)
        assert (layer >= 0).all()
        torch.testing.assert_close(layer.sum(-1), torch.ones(2, 4, 65))


def test_explicit_attention_matches_a_hand_computed_softmax() -> None:
    model = vit.create_model("vit_cifar_nano").eval()
    block = model.blocks[0]
    images = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        _, maps = model(images, need_weights=True)
        tokens = torch.cat([model.cls_token, model.patch_embed(images)], 1) + model.pos_embed
        q, k, _ = block.attn.qkv(block.norm1(tokens)).chunk(3, dim=-1)  # (1, T, D) each
        head = 2
        qh, kh = q[0, :, head * 32 : (head + 1) * 32], k[0, :, head * 32 : (head + 1) * 32]
        expected = torch.softmax(qh @ kh.T / 32**0.5, dim=-1)
    # Another order of the same sums: LayerNorm and q;k;v over D = 128, q·k over 32, the softmax.
    assert_close_up_to_rounding(maps[0][0, head], expected, reduction=128, magnitude=1.0, steps=3)


def test_block_weights_equal_pytorch_multihead_attention() -> None:
    # Our attention with the same q;k;v and output projection loaded into PyTorch's own
    # nn.MultiheadAttention: same output, same per-head weights (need_weights=True,
    # average_attn_weights=False is the per-head form our blocks return).
    dim, heads = 48, 4
    ours = vit.model.Attention(dim, heads, qkv_bias=True, attn_dropout=0.0, dropout=0.0).eval()
    torch_mha = torch.nn.MultiheadAttention(dim, heads, batch_first=True).eval()
    with torch.no_grad():
        ours.qkv.bias.normal_()  # non-zero biases, so a q/k/v order mix-up would show
        torch_mha.in_proj_weight.copy_(ours.qkv.weight)
        torch_mha.in_proj_bias.copy_(ours.qkv.bias)
        torch_mha.out_proj.weight.copy_(ours.proj.weight)
        torch_mha.out_proj.bias.copy_(ours.proj.bias)
        x = torch.randn(2, 7, dim)
        out, weights = ours(x, need_weights=True)
        ref_out, ref_weights = torch_mha(x, x, x, need_weights=True, average_attn_weights=False)
    assert weights.shape == ref_weights.shape == (2, heads, 7, 7)
    # PyTorch's kernels sum in their own order: q;k;v over D, q·k, the softmax, the projection.
    assert_close_up_to_rounding(weights, ref_weights, reduction=dim, magnitude=1.0, steps=3)
    assert_close_up_to_rounding(out, ref_out, reduction=dim, steps=4)
    assert ours(x)[1] is None  # need_weights=False: the fused path builds no map


def test_non_square_input_reports_height_and_width_in_order() -> None:
    model = vit.create_model("vit_cifar_nano").eval()
    with torch.no_grad():
        logits, maps = model(torch.randn(1, 3, 24, 40), need_weights=True)
    assert maps.grid == (6, 10)  # (gh, gw) = (24/4, 40/4), never (10, 6)
    assert maps[0].shape[-1] == 1 + 6 * 10
    assert model.patch_grid(24, 40) == (6, 10)


def test_input_not_a_multiple_of_the_patch_is_refused_clearly() -> None:
    model = vit.create_model("vit_cifar_nano")
    with pytest.raises(ValueError, match="not a multiple of the patch size 4"):
        model(torch.randn(1, 3, 30, 32))


def test_position_embedding_resampling_matches_timm_and_keeps_cls() -> None:
    from timm.layers import resample_abs_pos_embed

    model = vit.create_model("vit_cifar_nano")
    patches = torch.randn(1, 64, 128)
    ours = resample_pos_embed(patches, (8, 8), (6, 10))
    theirs = resample_abs_pos_embed(patches, new_size=(6, 10), old_size=(8, 8), num_prefix_tokens=0)
    # The same F.interpolate call; the tensors' memory layouts may pick other vector paths.
    # Antialiased bicubic 8 -> 6 has about 6 taps a side: two sums of <= 16 terms.
    assert_close_up_to_rounding(ours, theirs, reduction=16, magnitude=patches.abs().max().item(), steps=2)
    resized = model.position_embedding((6, 10))
    assert resized.shape == (1, 61, 128)
    torch.testing.assert_close(resized[:, 0], model.pos_embed[:, 0])  # CLS slot untouched
    torch.testing.assert_close(model.position_embedding((8, 8)), model.pos_embed)  # native grid: identity


def test_resampling_keeps_rows_as_rows() -> None:
    # A position embedding that encodes the row index must still encode rows after resizing
    # to a non-square grid; a transposed reshape would turn it into columns.
    rows = torch.arange(8.0).repeat_interleave(8).reshape(1, 64, 1)  # value = row index
    resized = resample_pos_embed(rows, (8, 8), (4, 16)).reshape(4, 16)
    along_row = (resized[:, 0] - resized[:, -1]).abs().max().item()
    assert along_row <= rounding_tolerance(torch.float32, 16, magnitude=7.0, steps=2)  # constant along a row
    assert (resized[1:, 0] > resized[:-1, 0]).all()  # increasing down the rows


def test_gap_pooling_is_the_mean_of_patch_tokens() -> None:
    model = vit.create_model("vit_cifar_nano", pool="gap").eval()
    images = torch.randn(2, 3, 32, 32)
    captured = {}
    model.norm.register_forward_hook(lambda mod, inp, out: captured.update(tokens=out))
    with torch.no_grad():
        logits = model(images)
    expected = model.head(captured["tokens"][:, 1:].mean(1))  # skip the CLS token
    torch.testing.assert_close(logits, expected)


def test_stochastic_depth_and_dropout_are_off_in_eval_mode() -> None:
    model = vit.create_model("vit_cifar_nano", drop_path=0.5, dropout=0.3, attn_dropout=0.3)
    images = torch.randn(2, 3, 32, 32)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(images), model(images))
    model.train()
    with torch.no_grad():
        assert not torch.allclose(model(images), model(images))


def nano(**fields) -> vit.VisionTransformer:
    return vit.create_model("vit_cifar_nano", depth=2, **fields).eval()


def test_layer_scale_gammas_scale_each_residual_branch() -> None:
    model = nano(layer_scale=0.1)
    block = model.blocks[0]
    assert block.ls1.gamma.shape == block.ls2.gamma.shape == (128,)  # (D,)
    assert torch.equal(block.ls1.gamma, torch.full((128,), 0.1))  # initialised to the config's value
    x = torch.randn(2, 65, 128)
    with torch.no_grad():
        block.ls1.gamma.normal_()
        block.ls2.gamma.normal_()
        y = x + block.ls1.gamma * block.attn(block.norm1(x))[0]
        expected = y + block.ls2.gamma * block.mlp(block.norm2(y))
        torch.testing.assert_close(block(x)[0], expected)
        block.ls1.gamma.zero_()
        block.ls2.gamma.zero_()
        torch.testing.assert_close(block(x)[0], x, atol=0, rtol=0)  # both branches switched off
    assert not hasattr(nano().blocks[0].ls1, "gamma")  # None: no LayerScale parameters


def test_prefix_tokens_in_timms_order_with_their_own_parameters() -> None:
    model = nano(distill_token=True, register_tokens=3)
    assert model.cls_token.shape == model.dist_token.shape == (1, 1, 128)
    assert model.reg_token.shape == (1, 3, 128)  # (1, R, D)
    assert model.pos_embed.shape == (1, 5 + 64, 128)  # a slot for every prefix token
    with torch.no_grad():
        tokens, grid = model.embed(torch.randn(2, 3, 32, 32))
        _, maps = model(torch.randn(2, 3, 32, 32), need_weights=True)
    assert tokens.shape == (2, 5 + 64, 128) and grid == (8, 8)
    torch.testing.assert_close(tokens[0, 1], (model.dist_token + model.pos_embed[:, 1])[0, 0])  # order: cls, dist, regs
    torch.testing.assert_close(tokens[0, 2:5], (model.reg_token + model.pos_embed[:, 2:5])[0])
    assert maps.prefix_tokens == 5 and maps.prefix_names == ("cls", "dist", "reg1", "reg2", "reg3")
    assert maps[0].shape == (2, 4, 69, 69)
    doubled = maps.apply(torch.Tensor.double)  # same layout, every layer converted
    assert (doubled.grid, doubled.prefix_names, doubled[1].dtype) == (maps.grid, maps.prefix_names, torch.float64)


def test_position_embeddings_without_prefix_slots_touch_patches_only() -> None:
    model = nano(register_tokens=2, pos_embed_prefix=False)
    assert model.pos_embed.shape == (1, 64, 128)  # (1, N, D): timm's no_embed_class=True
    images = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        tokens, _ = model.embed(images)
        torch.testing.assert_close(tokens[0, 0], model.cls_token[0, 0])  # no position added
        torch.testing.assert_close(tokens[0, 1:3], model.reg_token[0])
        torch.testing.assert_close(tokens[:, 3:], model.patch_embed(images) + model.pos_embed)
        assert model.position_embedding((4, 6)).shape == (1, 24, 128)  # resampled, still no prefix slots


def test_distilled_model_averages_its_two_heads() -> None:
    model = nano(distill_token=True)
    assert model.head_dist.weight.shape == model.head.weight.shape == (10, 128)
    captured = {}
    model.norm.register_forward_hook(lambda mod, inp, out: captured.update(tokens=out))
    with torch.no_grad():
        logits = model(torch.randn(2, 3, 32, 32))
        tokens = captured["tokens"]
        expected = (model.head(tokens[:, 0]) + model.head_dist(tokens[:, 1])) / 2  # DeiT's inference rule
    torch.testing.assert_close(logits, expected)


def test_no_classes_means_no_head_and_pooled_features() -> None:
    model = nano(num_classes=0)
    assert not any(k.startswith("head") for k in model.state_dict())
    captured = {}
    model.norm.register_forward_hook(lambda mod, inp, out: captured.update(tokens=out))
    with torch.no_grad():
        features = model(torch.randn(2, 3, 32, 32))
    torch.testing.assert_close(features, captured["tokens"][:, 0])  # (B, D): the normed CLS token


def test_fc_norm_normalises_the_pooled_vector_instead_of_every_token() -> None:
    model = nano(pool="gap", fc_norm=True)
    assert isinstance(model.norm, torch.nn.Identity) and model.fc_norm.weight.shape == (128,)
    captured = {}
    model.blocks[-1].register_forward_hook(lambda mod, inp, out: captured.update(tokens=out[0]))
    with torch.no_grad():
        model.fc_norm.weight.normal_()
        logits = model(torch.randn(2, 3, 32, 32))
        expected = model.head(model.fc_norm(captured["tokens"][:, 1:].mean(1)))
    torch.testing.assert_close(logits, expected)


def test_distilled_and_dinov2_configs_match_timms_parameter_counts() -> None:
    # timm's own modules are the reference (built on the meta device: shapes only).
    timm = pytest.importorskip("timm")
    for name in ("vit_small_patch14_dinov2", "vit_small_patch14_reg4_dinov2", "deit_tiny_distilled_patch16_224"):
        with torch.device("meta"):
            reference = sum(p.numel() for p in timm.create_model(name, pretrained=False).parameters())
        assert count_params(name) == reference, name


def test_config_rejects_unknown_fields_from_files() -> None:
    with pytest.raises(ValueError, match=r"unknown ViT config field\(s\) \['flash_heads'\]"):
        ViTConfig.from_dict({**ViTConfig().to_dict(), "flash_heads": 2})
    with pytest.raises(ValueError, match="ViT config field 'pool' = 'mean' is not allowed: expected 'cls' or 'gap'"):
        ViTConfig.from_dict({"pool": "mean"})
    assert ViTConfig.from_dict(ViTConfig(dim=96, heads=3).to_dict()) == ViTConfig(dim=96, heads=3)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"dim": 100, "heads": 3}, "'heads' = 3 is not allowed: must divide dim 100"),
        ({"class_token": False, "pool": "cls"}, "'pool' = 'cls' is not allowed: 'cls' needs class_token=True"),
        ({"image_size": 30}, "'image_size' = 30 is not allowed: expected a multiple of patch_size 16"),
        ({"depth": 0}, "'depth' = 0 is not allowed: expected a positive integer"),
        ({"drop_path": 1.0}, r"'drop_path' = 1.0 is not allowed: expected a rate in \[0, 1\)"),
        ({"norm_eps": 0.0}, "'norm_eps' = 0.0 is not allowed: expected a positive number"),
        ({"num_classes": -1}, "'num_classes' = -1 is not allowed: expected an integer >= 0"),
        ({"register_tokens": -2}, "'register_tokens' = -2 is not allowed: expected an integer >= 0"),
        ({"distill_token": True, "pool": "gap"}, r"'distill_token' = True .* needs class_token=True and pool='cls'"),
        ({"fc_norm": True, "final_norm": False}, r"'fc_norm' = True is not allowed: needs final_norm=True"),
        ({"layer_scale": 0.0}, "'layer_scale' = 0.0 is not allowed: expected None or a number > 0"),
    ],
)
def test_config_refuses_bad_values_with_a_value_error(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match="ViT config field " + message):
        ViTConfig(**fields)


def test_forward_refuses_images_of_the_wrong_shape() -> None:
    model = vit.create_model("vit_cifar_nano")
    with pytest.raises(ValueError, match=r"expected images \(B, 3, H, W\), got shape \(3, 32, 32\)"):
        model(torch.randn(3, 32, 32))
    with pytest.raises(ValueError, match=r"expected images \(B, 3, H, W\), got shape \(1, 1, 32, 32\)"):
        model(torch.randn(1, 1, 32, 32))
