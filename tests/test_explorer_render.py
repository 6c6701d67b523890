"""Rendering: every picture is checked against hand-made maps where the right answer is known."""

import numpy as np
import pytest
from PIL import Image

from explorer import render
from explorer.render import MapStyle

RAW = MapStyle(cmap="gray", raw=True)


def one_hot(grid, row, col):
    m = np.zeros(grid, dtype=np.float32)
    m[row, col] = 1.0
    return m


@pytest.mark.parametrize(("grid", "cell"), [((4, 4), 8), ((3, 5), 6), ((5, 2), 7)])
def test_nearest_raw_one_hot_lights_exactly_its_patch_block(grid, cell):
    gh, gw = grid
    image = np.zeros((gh * cell, gw * cell, 3), np.uint8)
    row, col = gh - 1, gw // 2  # off-centre on a non-square grid: a transposition would move it
    out = render.overlay(image, one_hot(grid, row, col), RAW)
    lit = out[..., 0] > 127
    expected = np.zeros(lit.shape, bool)
    expected[row * cell : (row + 1) * cell, col * cell : (col + 1) * cell] = True
    np.testing.assert_array_equal(lit, expected)


def test_smooth_upsampling_blurs_but_keeps_the_peak_in_place():
    grid, cell = (3, 5), 10
    image = np.zeros((30, 50, 3), np.uint8)
    smooth = render.overlay(image, one_hot(grid, 1, 3), MapStyle(cmap="gray", raw=True, smooth=True))[..., 0]
    nearest = render.overlay(image, one_hot(grid, 1, 3), RAW)[..., 0]
    assert not np.array_equal(smooth, nearest)
    y, x = np.unravel_index(smooth.argmax(), smooth.shape)
    assert (y // cell, x // cell) == (1, 3)
    assert 0 < smooth[15, 25] < 255  # a neighbour of the peak patch picks up some heat


def test_opacity_blends_image_and_heat():
    image = np.full((8, 8, 3), 200, np.uint8)
    amap = one_hot((2, 2), 0, 0)
    np.testing.assert_array_equal(render.overlay(image, amap, MapStyle(cmap="gray", opacity=0.0)), image)
    heat = render.overlay(image, amap, RAW)
    np.testing.assert_array_equal(render.overlay(image, amap, MapStyle(cmap="gray", opacity=1.0)), heat)


def test_constant_map_does_not_divide_by_zero():
    out = render.overlay(np.zeros((4, 4, 3), np.uint8), np.full((2, 2), 0.25), RAW)
    assert np.isfinite(out).all() and out.max() == 0


def test_fit_to_grid_gives_whole_cells_per_patch():
    image = np.zeros((32, 64, 3), np.uint8)
    out = render.fit_to_grid(image, (8, 16), 160)
    assert out.shape == (80, 160, 3)  # 10 px per patch, height and width not swapped


def test_patch_grid_lines_and_mark_sit_on_patch_boundaries():
    image = np.zeros((8, 12, 3), np.uint8)  # 2 x 3 grid of 4-px patches
    out = np.asarray(render.patch_grid_image(image, patch_size=4, scale=2, mark=(1, 2)))
    assert out.shape == (16, 24, 3)
    assert (out[:, 8] == render.GRID_COLOUR).all() and (out[:8, 16] == render.GRID_COLOUR).all()
    assert (out[8, :16] == render.GRID_COLOUR).all()
    assert tuple(out[12, 16]) == tuple(out[8, 23]) == render.MARK_COLOUR  # outline of patch (1, 2): x 16-23, y 8-15
    assert tuple(out[4, 1]) == (0, 0, 0)  # patch (0, 0) interior untouched


def test_head_grid_wraps_heads_into_rows():
    image = np.zeros((16, 16, 3), np.uint8)
    maps = np.random.default_rng(0).random((12, 4, 4))
    one_row = render.head_grid(image, maps[:4], MapStyle())
    two_rows = render.head_grid(image, maps, MapStyle(), max_cols=6)
    assert one_row.width > 4 * 16 and two_rows.width > 6 * 16 > two_rows.width - 6 * (16 + render.GAP)
    assert two_rows.height > 2 * one_row.height - 20


def test_layers_by_heads_has_one_tile_per_layer_and_head():
    image = np.zeros((10, 10, 3), np.uint8)
    out = render.layers_by_heads(image, np.random.default_rng(0).random((3, 5, 2, 2)), MapStyle())
    # Each row: label + 5 tiles of 10 px plus gaps; 3 rows plus a header line.
    assert out.width >= 5 * (10 + render.GAP) and out.height >= 3 * (10 + render.GAP)
    assert out.height < 3 * (10 + render.GAP) + 3 * (render._FONT.size + render.GAP)


def test_gif_has_one_frame_per_layer(tmp_path):
    image = np.zeros((16, 16, 3), np.uint8)
    frames = render.layer_frames(image, np.random.default_rng(0).random((5, 2, 4, 4)), MapStyle())
    path = tmp_path / "layers.gif"
    render.save_gif(frames, path)
    with Image.open(path) as gif:
        assert gif.n_frames == 5
        assert gif.info["loop"] == 0


def test_position_similarity_tile_is_brightest_at_its_own_slot():
    gh, gw = 2, 3
    pos = np.random.default_rng(0).normal(size=(gh * gw, 16))
    unit = pos / np.linalg.norm(pos, axis=1, keepdims=True)
    sim = (unit @ unit.T).reshape(gh, gw, gh, gw)
    out = np.asarray(render.position_similarity_tiles(sim, cmap="gray", tile_scale=1)).astype(int)
    # Tile (1, 2) starts after the title line; its own slot (1, 2) has similarity 1 = white.
    top = render._FONT.size + render.GAP
    tile = out[top + 1 * (gh + render.GAP) :, 2 * (gw + render.GAP) :][:gh, :gw, 0]
    assert tile[1, 2] == 255 and tile.argmax() == 1 * gw + 2


def test_attention_distance_chart_draws_something():
    chart = render.attention_distance_chart(np.random.default_rng(0).random((6, 4)) * 20, (32, 32))
    assert chart.size == (500, 320)
    assert np.asarray(chart).std() > 10


def line_heights(curves: Image.Image) -> tuple[float, float]:
    """Mean pixel row of the train-loss line (matplotlib's first colour) in the left and
    right quarter of the loss panel (the left half of the picture)."""
    rgb = np.asarray(curves).astype(int)
    blue = (np.abs(rgb - (31, 119, 180)).sum(-1) < 40)[:, : rgb.shape[1] // 2]
    ys, xs = np.nonzero(blue)
    lo, hi = xs.min(), xs.max()
    quarter = (hi - lo) / 4
    return ys[xs < lo + quarter].mean(), ys[xs > hi - quarter].mean()


def test_training_curves_draw_the_history():
    def history(losses):
        return [
            {"epoch": e + 1, "train_loss": v, "train_acc": 0.5, "val_loss": None, "val_acc": None}
            for e, v in enumerate(losses)
        ]

    falling = render.training_curves(history([2.0, 1.5, 1.0, 0.5]))
    rising = render.training_curves(history([0.5, 1.0, 1.5, 2.0]))
    assert falling.size == (700, 280)
    start, end = line_heights(falling)
    assert start < end - 50  # image rows grow downwards: a falling loss starts high, ends low
    start, end = line_heights(rising)
    assert start > end + 50


def test_distance_chart_redraws_only_the_dots_and_never_keeps_old_ones():
    rng = np.random.default_rng(0)
    first, second = rng.random((4, 3)) * 40, rng.random((4, 3)) * 40
    render._distance_axes.cache_clear()
    fresh = np.asarray(render.attention_distance_chart(second, (48, 48)))
    render._distance_axes.cache_clear()
    render.attention_distance_chart(first, (48, 48))
    reused = np.asarray(render.attention_distance_chart(second, (48, 48)))  # same axes, new dots
    np.testing.assert_array_equal(reused, fresh)
    assert not np.array_equal(np.asarray(render.attention_distance_chart(first, (48, 48))), fresh)


def test_probe_strip_has_a_row_per_epoch():
    image = np.zeros((8, 8, 3), np.uint8)
    probes = [(e, np.random.default_rng(e).random((2, 3, 2, 2))) for e in (1, 2, 3, 4)]
    strip = render.probe_strip(image, probes, MapStyle())
    assert strip.height >= 4 * (8 + render.GAP) and strip.width >= 3 * (8 + render.GAP)
