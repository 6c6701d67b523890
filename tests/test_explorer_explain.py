"""The one-forward-pass analysis behind the app: preprocessing, grid orientation, patch picking."""

import numpy as np
import pytest
import torch
from PIL import Image
from tolerance import assert_close_up_to_rounding

import vit
from explorer import texts
from explorer.explain import explain, model_input, whole_image_size
from vit.preprocessing import CIFAR10, INTERPOLATIONS

BRIGHT = (2, 11)  # (row, col) of the bright patch on a 32 x 64 (H x W) image: 8 x 16 patches of 4 px


def bright_patch_image(h=32, w=64, patch=4, where=BRIGHT) -> Image.Image:
    pixels = np.zeros((h, w, 3), np.uint8)
    r, c = where
    pixels[r * patch : (r + 1) * patch, c * patch : (c + 1) * patch] = 255
    return Image.fromarray(pixels)


def brightness_seeking_model() -> vit.VisionTransformer:
    """One layer, one head, built so the CLS token attends to the brightest patch: the patch
    embedding writes brightness into channel 0, the CLS query reads channel 2 and keys read
    channel 0, and position embeddings are zero so only content decides."""
    model = vit.create_model("vit_cifar_nano", depth=1, heads=1, dim=8, mlp_dim=8)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.patch_embed.proj.weight[0] = 1.0  # channel 0: sum of the patch's pixels
        model.patch_embed.proj.bias[1] = 1.0  # channel 1: constant, so LayerNorm keeps brightness
        model.cls_token[0, 0, 2] = 1.0
        for ln in (model.blocks[0].norm1, model.blocks[0].norm2, model.norm):
            ln.weight.fill_(1.0)
        qkv = model.blocks[0].attn.qkv.weight  # rows 0-7 queries, 8-15 keys
        qkv[0, 2] = 10.0
        qkv[8, 0] = 10.0
    return model.eval()


def test_preprocessing_knows_torchvisions_interpolation_modes():
    from torchvision.transforms import InterpolationMode

    assert set(INTERPOLATIONS) == {m.value for m in InterpolationMode}  # vit spells them out to import lazily


def test_crop_mode_gives_the_model_exactly_its_own_transform():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (50, 70, 3), dtype=np.uint8))
    pre = vit.Preprocessing(resize_size=40, crop_size=32, mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3))
    got = model_input(image, pre, patch_size=4, mode="crop")
    expected = pre.transform()(image)  # the same pixels, normalised in another order: (x - m) / s against x / s - m / s
    assert_close_up_to_rounding(got.tensor[0], expected, reduction=1, steps=2)
    assert got.pixels.shape == (32, 32, 3) and got.pixels.dtype == np.uint8
    assert "non-square" in got.policy


@pytest.mark.parametrize(
    ("size", "expected"),
    [((32, 64), (32, 64)), ((64, 32), (64, 32)), ((100, 150), (32, 48)), ((10, 1000), (32, 128)), ((1, 1), (32, 32))],
)
def test_whole_image_size_keeps_aspect_in_whole_patches(size, expected):
    assert whole_image_size(size, short_side=32, patch_size=4) == expected


def test_whole_image_mode_keeps_rows_as_rows():
    ex = explain(brightness_seeking_model(), [str(i) for i in range(10)], CIFAR10, bright_patch_image(), "whole")
    assert ex.grid == (8, 16) and ex.input.pixels.shape == (32, 64, 3)
    lit = np.argwhere(ex.input.pixels[..., 0] > 127)
    assert (lit // 4 == BRIGHT).all() and len(lit) == 16  # the bright block is still at (row 2, col 11)
    cls_map = ex.query_maps(None)[0, 0]  # layer 1, head 1
    assert cls_map.shape == (8, 16)
    assert np.unravel_index(cls_map.argmax(), cls_map.shape) == BRIGHT
    rollout = ex.rollout()
    assert np.unravel_index(rollout.argmax(), rollout.shape) == BRIGHT


def test_patch_at_maps_display_pixels_to_grid_cells():
    ex = explain(brightness_seeking_model(), [str(i) for i in range(10)], CIFAR10, bright_patch_image(), "whole")
    scale = 6  # each 4-px patch is 24 display pixels
    assert ex.patch_at(x=11 * 24 + 3, y=2 * 24 + 20, scale=scale) == (2, 11)
    assert ex.patch_at(x=10_000, y=-5, scale=scale) == (0, 15)  # clamped into the grid


def test_explanation_reports_top_classes_and_distances():
    torch.manual_seed(0)
    model = vit.create_model("vit_cifar_nano").eval()
    names = [f"class {i}" for i in range(10)]
    ex = explain(model, names, CIFAR10, bright_patch_image(40, 40), "crop", top_k=3)
    assert len(ex.probabilities) == 3 and set(ex.probabilities) <= set(names)
    assert list(ex.probabilities.values()) == sorted(ex.probabilities.values(), reverse=True)
    assert ex.tokens == 65 and ex.depth == 6 and ex.heads == 4
    d = ex.attention_distance()
    assert d.shape == (6, 4) and (d > 0).all() and (d < 32 * 2**0.5).all()


def test_models_without_a_cls_token_say_what_the_default_query_is():
    model = vit.create_model("vit_cifar_showcase").eval()  # mean pooling, no CLS token
    ex = explain(model, [str(i) for i in range(10)], CIFAR10, bright_patch_image(32, 32), "crop")
    assert not ex.has_cls and ex.tokens == 16
    assert "no CLS token" in texts.describe_query(None, ex.has_cls)
    assert ex.query_maps(None).shape == (2, 2, 4, 4)


def test_a_model_without_a_classifier_explains_with_no_predictions() -> None:
    from PIL import Image

    import vit
    from explorer.explain import explain
    from vit.preprocessing import CIFAR10

    model = vit.create_model("vit_cifar_nano", num_classes=0).eval()
    ex = explain(model, [], CIFAR10, Image.new("RGB", (32, 32), (10, 200, 30)))
    assert ex.probabilities == {} and len(ex.attention) == 6
