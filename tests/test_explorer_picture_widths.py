"""Pictures drawn no wider than the page shows them (issue 42, item 1): a register model's head
maps and DINOv2's 37 x 37 position similarity, on a projector and in the presentation mode."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import vit
from explorer import canvas, render, views
from explorer.canvas import MapStyle
from explorer.explain import explain
from explorer.more_views import similarity as similarity_view
from vit.preprocessing import CIFAR10

SIZES = [canvas.TEXT_PX, canvas.PRESENT_TEXT_PX]


def registers_explained():
    """DINOv2 S/14 with 4 registers' layout (6 heads, 16 x 16 patches at 224 px), one small layer."""
    config = vit.ViTConfig(
        image_size=224, patch_size=14, num_classes=0, dim=48, depth=1, heads=6, mlp_dim=48, register_tokens=4
    )
    model = vit.VisionTransformer(config).eval()
    image = Image.fromarray(np.random.default_rng(1).integers(0, 256, (240, 300, 3), dtype=np.uint8))
    return explain(model, [], vit.Preprocessing(224, 224), image)


@pytest.mark.parametrize("text_px", SIZES)
def test_a_register_models_head_maps_fit_their_column_with_every_caption_under_its_tile(text_px):
    """Six tiles a row, each widened by "CLS 0.00 · reg1 0.00": 858 px (1302 in `--present`) in a
    546-px column. Now one share a line, and as many tiles a row as their captions leave room for."""
    ex = registers_explained()
    for scale in ("layer", "head"):
        style = MapStyle(scale=scale)
        picture = views.heads(ex, None, 0, style, text_px=text_px)
        assert picture.width <= views.DISPLAY_WIDTH["heads"], (scale, picture.size)
        cols, tile = views.head_layout(ex, None, style, text_px)
        widest = views.caption_px(ex, style, text_px)
        assert cols * (max(tile, widest) + canvas.GAP) <= views.DISPLAY_WIDTH["heads"]
    assert views.head_layout(ex, None, MapStyle(), canvas.TEXT_PX) == (6, 80)  # as DINOv2 without registers


def test_a_model_with_only_cls_keeps_its_layout():
    """The bundled model's head maps (CLS alone under each tile) are laid out as before."""
    model = vit.create_model("vit_cifar_nano")
    ex = explain(model, [f"c{i}" for i in range(10)], CIFAR10, Image.new("RGB", (32, 32)))
    for text_px in SIZES:
        assert views.head_layout(ex, None, MapStyle(), text_px) == views.head_layout(ex)


@pytest.mark.parametrize("text_px", SIZES)
@pytest.mark.parametrize("side", [4, 8, 14, 16, 37])
def test_the_position_similarity_fits_the_screen_one_tile_every_few_slots_where_all_would_not(side, text_px):
    """DINOv2's 37 x 37 slots drew 4,307 px, shown at 0.28 of that on a 1280-px screen."""
    similarity = np.random.default_rng(0).uniform(-1, 1, (side, side, side, side))
    step = similarity_view.similarity_step((side, side), text_px)
    tiles = render.position_similarity_tiles(similarity, text_px=text_px, step=step)
    assert tiles.width <= views.DISPLAY_WIDTH["more"], (side, tiles.size)
    assert step == (1 if side <= 16 else 3)
    alt = similarity_view.similarity_alt((side, side), "m", step=step)
    assert ("one every 3 slots" in alt) == (step == 3) and (f"{side} × {side}" in alt)
