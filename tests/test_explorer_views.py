"""The app's pictures as a class sees them: a near-uniform model draws a flat picture, every
caption says what the maps leave out, and sizes read rows × columns (height × width)."""

import numpy as np
import pytest
import torch
from matplotlib import colormaps
from PIL import Image

import vit
from explorer import render, views
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
    np.testing.assert_allclose(
        uniform.query_maps((1, 2)).sum((-2, -1)) + uniform.prefix_attention((1, 2))[..., 0], 1.0, rtol=1e-6
    )
    text = views.describe_rollout(uniform, "mean", 0.5)
    assert "0.5·A + 0.5·I" in text and "weakest 50%" in text and "never all zero" in text
    cls = float(uniform.rollout_prefix("mean", 0.5)[0])
    assert f"its share on CLS itself, {cls:.2f}, is left out" in text
    assert abs(cls + uniform.rollout("mean", 0.5).sum() - 1) < 1e-5


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


def test_rollout_marks_uniform_and_says_what_above_and_below_mean(uniform):
    shares = uniform.rollout("mean", 0.0)
    assert views.uniform_value(shares) == pytest.approx(shares.sum() / 64)
    for show in views.SHOWS:
        picture = views.rollout(uniform, "mean", 0.0, MapStyle(), show)
        assert picture.width >= views.ROLLOUT_PX
    with pytest.raises(ValueError, match="show must be one of weights, relative, top mass"):
        views.rollout(uniform, "mean", 0.0, MapStyle(), "sideways")


def test_one_map_keeps_the_top_mass_and_dims_the_rest():
    base = np.full((40, 40, 3), 255, np.uint8)  # a 4 x 4 grid in 10-pixel cells
    amap = np.full((4, 4), 0.28 / 13)
    amap[0, :3] = [0.4, 0.17, 0.15]  # 0.4 + 0.17 fall short of 0.6 of the total 1, so 0.15 is kept too
    style = MapStyle(cmap="gray", raw=True)
    top = render.text_block("t", 320).height + render.GAP  # the body starts under the one-line title
    cells = [
        np.asarray(views.one_map(base, amap, style, "t", "u", "", show, 0.6))[top + 5 : top + 40 : 10, 5:40:10, 0]
        for show in ("top mass", "weights")
    ]
    masked, weights = (c.astype(int) for c in cells)
    kept = np.zeros((4, 4), bool)
    kept[0, :3] = True
    assert (masked[kept] == weights[kept]).all()
    assert (np.abs(masked[~kept] - weights[~kept] * render.DIMMED) <= 1).all()


def test_every_picture_has_an_alt_text_naming_view_layer_query_and_model(uniform):
    model = "CIFAR-10 nano"
    texts = {
        "input": views.input_alt(uniform, (2, 4), model),
        "heads": views.heads_alt(uniform, (2, 4), 3, model),
        "overview": views.overview_alt(uniform, model),
        "rollout": views.rollout_alt(uniform, "max", "relative", model),
        "relevance": views.relevance_alt(uniform, "cat", "top mass", model),
        "distance": views.distance_alt(uniform, model),
        "similarity": views.similarity_alt(uniform.grid, model),
    }
    assert all(model in text and "8 × 8" in text for text in texts.values())
    assert "patch (3, 5)" in texts["input"] and "outlined" in texts["input"]
    assert "4 heads of layer 3 of 6" in texts["heads"] and "query patch (3, 5)" in texts["heads"]
    assert "query CLS" in texts["overview"] and "layers 1 to 6" in texts["overview"]
    assert (
        "rollout" in texts["rollout"]
        and "max over heads" in texts["rollout"]
        and "multiples of uniform" in texts["rollout"]
    )
    assert "'cat'" in texts["relevance"] and "dimmed" in texts["relevance"]
    assert "mean attention distance" in texts["distance"]
    assert "position embeddings" in texts["similarity"]
