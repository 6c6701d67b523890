"""The app's pictures as a class sees them: a near-uniform model draws a flat picture, every
caption says what the maps leave out, and sizes read rows × columns (height × width)."""

import numpy as np
import pytest
import torch
from matplotlib import colormaps
from PIL import Image
from tolerance import assert_close_up_to_rounding, rounding_tolerance

import vit
from explorer import views
from explorer.explain import explain, model_input
from explorer.render import MapStyle
from vit.preprocessing import CIFAR10


def near_uniform_model() -> vit.VisionTransformer:
    """Random weights, with queries and keys shrunk so far that every attention weight is
    within 0.1% of 1/T (T = 65 tokens), yet not exactly uniform."""
    model = vit.create_model("vit_cifar_nano")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
        for block in model.blocks:
            dim = block.attn.qkv.in_features
            block.attn.qkv.weight[: 2 * dim] *= 0.05  # rows: queries, then keys, then values
    return model.eval()


@pytest.fixture(scope="module")
def uniform():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    return explain(near_uniform_model(), [str(i) for i in range(10)], CIFAR10, image)


def test_a_near_uniform_model_draws_flat_maps_in_heads_and_overview(uniform):
    deviation = np.abs(uniform.query_maps(None) * 65 - 1)
    assert 0 < deviation.max() < 1e-3  # near uniform, not exactly
    top = tuple(colormaps["inferno"](1.0, bytes=True)[:3])
    for picture, tiles, side in (
        (views.heads(uniform, None, 3, MapStyle(raw=True)), uniform.heads, views.HEAD_PX),
        (views.overview(uniform, MapStyle(raw=True)), uniform.heads * uniform.depth, views.OVERVIEW_PX),
    ):
        flat = (np.asarray(picture) == top).all(-1).sum()
        # The tiles are one flat colour: the top of the map (the colour bar adds a few pixels).
        assert 0.95 * tiles * side**2 <= flat <= 1.05 * tiles * side**2


def test_captions_say_what_the_maps_leave_out(uniform):
    assert views.left_out(uniform) == (
        "Maps show attention to the 64 patches; attention to CLS (printed under each head) is left out."
    )
    np.testing.assert_allclose(uniform.prefix_attention(None), 1 / 65, rtol=1e-3)
    rows = uniform.query_maps((1, 2)).sum((-2, -1)) + uniform.prefix_attention((1, 2))[..., 0]
    assert_close_up_to_rounding(torch.from_numpy(rows), torch.ones(rows.shape), reduction=65, steps=2)
    text = views.describe_rollout(uniform, "mean", 0.5)
    assert "0.5·A + 0.5·I" in text and "weakest 50%" in text and "never all zero" in text
    cls = float(uniform.rollout_prefix("mean", 0.5)[0])
    assert f"its share on CLS itself, {cls:.2f}, is left out" in text
    total = cls + float(uniform.rollout("mean", 0.5).sum())  # a product of 6 row-normalised 65 x 65 matrices
    assert abs(total - 1) <= rounding_tolerance(torch.float32, 65, steps=2 * uniform.depth)


def test_whole_image_mode_states_its_aspect_cap_and_sizes_read_height_by_width():
    wide = Image.new("RGB", (400, 40))  # width 400, height 40: 10:1
    policy = model_input(wide, CIFAR10, 4, "whole").policy
    assert "32 × 128 px (height × width" in policy and "more elongated than 4:1" in policy
    assert "elongated" not in model_input(Image.new("RGB", (120, 40)), CIFAR10, 4, "whole").policy


def test_a_model_without_cls_says_nothing_is_left_out():
    model = vit.create_model("vit_cifar_nano", class_token=False, pool="gap").eval()
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    ex = explain(model, [str(i) for i in range(10)], CIFAR10, image)
    assert ex.prefix_attention(None).shape == (ex.depth, ex.heads, 0)
    assert "nothing is left out" in views.left_out(ex) and "nothing is left out" in views.describe_rollout(
        ex, "mean", 0
    )
    with_cls = views.heads(
        explain(near_uniform_model(), [str(i) for i in range(10)], CIFAR10, image), None, 1, MapStyle()
    )
    assert views.heads(ex, None, 1, MapStyle()).height < with_cls.height  # no "CLS 0.xx" line under the tiles


def _tiny(**prefix) -> vit.VisionTransformer:
    """A 2-layer model on a 4 x 4 grid with the given prefix-token options."""
    config = vit.ViTConfig(image_size=32, patch_size=8, num_classes=3, dim=16, depth=2, heads=2, mlp_dim=32, **prefix)
    torch.manual_seed(0)
    return vit.VisionTransformer(config).eval()


def _explained(**prefix):
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    return explain(_tiny(**prefix), ["a", "b", "c"], CIFAR10, image)


def test_captions_name_the_prefix_tokens_of_deit_with_registers():
    ex = _explained(distill_token=True, register_tokens=4)
    assert ex.has_prefix and ex.has_cls
    numbers = views.describe_input(ex)
    assert "**22 tokens** (6 prefix tokens: CLS, dist, reg1, reg2, reg3, reg4 + 16 patches)" in numbers
    assert "6 CLS" not in numbers
    assert "the CLS token" in views.describe_query(None, ex.has_cls)


def test_captions_of_a_model_without_prefix_tokens_never_name_a_cls_token():
    ex = _explained(class_token=False, pool="gap")
    assert not ex.has_prefix and not ex.has_cls
    assert "**16 tokens**\n" in views.describe_input(ex)  # no "(... + 16 patches)" part
    assert "no CLS token" in views.describe_query(None, ex.has_cls)
    assert "the CLS token" not in views.describe_query(None, ex.has_cls)
    assert "nothing is left out" in views.describe_rollout(ex, "mean", 0.0)


def test_registers_without_cls_query_the_mean_patch_and_leave_the_registers_out():
    ex = _explained(class_token=False, pool="gap", register_tokens=2)
    assert ex.has_prefix and not ex.has_cls
    assert "(2 prefix tokens: reg1, reg2 + 16 patches)" in views.describe_input(ex)
    assert "the CLS token" not in views.describe_query(None, ex.has_cls)
    rollout = views.describe_rollout(ex, "mean", 0.0)
    assert "the mean patch row of R over the patches" in rollout and "reg1" in rollout and "CLS row" not in rollout
