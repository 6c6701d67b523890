"""The canvas (explorer/canvas.py): maps over images, scales, patch grids and colour bars, checked
against hand-made maps where the right answer is known."""

import numpy as np
import pytest
from matplotlib import colormaps
from picture_helpers import RAW, gradient_runs, one_hot, top_of_bar

from explorer import canvas
from explorer.canvas import MapStyle


@pytest.mark.parametrize(("grid", "cell"), [((4, 4), 8), ((3, 5), 6), ((5, 2), 7)])
def test_nearest_raw_one_hot_lights_exactly_its_patch_block(grid, cell):
    gh, gw = grid
    image = np.zeros((gh * cell, gw * cell, 3), np.uint8)
    row, col = gh - 1, gw // 2  # off-centre on a non-square grid: a transposition would move it
    out = canvas.overlay(image, one_hot(grid, row, col), RAW)
    lit = out[..., 0] > 127
    expected = np.zeros(lit.shape, bool)
    expected[row * cell : (row + 1) * cell, col * cell : (col + 1) * cell] = True
    np.testing.assert_array_equal(lit, expected)


def test_smooth_upsampling_blurs_but_keeps_the_peak_in_place():
    grid, cell = (3, 5), 10
    image = np.zeros((30, 50, 3), np.uint8)
    smooth = canvas.overlay(image, one_hot(grid, 1, 3), MapStyle(cmap="gray", raw=True, smooth=True))[..., 0]
    nearest = canvas.overlay(image, one_hot(grid, 1, 3), RAW)[..., 0]
    assert not np.array_equal(smooth, nearest)
    y, x = np.unravel_index(smooth.argmax(), smooth.shape)
    assert (y // cell, x // cell) == (1, 3)
    assert 0 < smooth[15, 25] < 255  # a neighbour of the peak patch picks up some heat


def test_opacity_blends_image_and_heat():
    image = np.full((8, 8, 3), 200, np.uint8)
    amap = one_hot((2, 2), 0, 0)
    np.testing.assert_array_equal(canvas.overlay(image, amap, MapStyle(cmap="gray", opacity=0.0)), image)
    heat = canvas.overlay(image, amap, RAW)
    np.testing.assert_array_equal(canvas.overlay(image, amap, MapStyle(cmap="gray", opacity=1.0)), heat)


def test_colour_starts_at_zero_and_a_constant_map_is_one_flat_colour():
    amap = np.array([[0.0, 0.01], [0.02, 0.04]], np.float32)
    for cmap in ("inferno", "viridis"):
        out = canvas.overlay(np.zeros((4, 4, 3), np.uint8), amap, MapStyle(cmap=cmap, raw=True))
        bottom, top = (tuple(c) for c in colormaps[cmap]([0.0, 1.0], bytes=True)[:, :3].tolist())
        assert tuple(out[0, 0]) == bottom  # attention 0 is the colormap's bottom, never "the map's minimum"
        assert tuple(out[3, 3]) == top
        assert tuple(out[0, 2]) != bottom  # 0.01 is above 0: not stretched down to the bottom colour
    flat = canvas.overlay(np.zeros((4, 4, 3), np.uint8), np.full((2, 2), 0.25), RAW)
    assert np.isfinite(flat).all() and len(np.unique(flat.reshape(-1, 3), axis=0)) == 1
    zero = canvas.overlay(np.zeros((4, 4, 3), np.uint8), np.zeros((2, 2)), RAW)
    assert zero.max() == 0  # all-zero map: bottom colour, no division by zero


def test_fixed_scale_colours_a_weight_by_its_value():
    out = canvas.overlay(
        np.zeros((2, 2, 3), np.uint8), np.full((1, 1), 0.5), MapStyle(cmap="gray", raw=True, scale="fixed")
    )
    assert abs(int(out[0, 0, 0]) - 128) <= 1


def test_unknown_colour_scale_is_refused_clearly():
    with pytest.raises(ValueError, match="layer, head, fixed"):
        MapStyle(scale="global")


def test_fit_to_grid_gives_whole_cells_per_patch():
    image = np.zeros((32, 64, 3), np.uint8)
    out = canvas.fit_to_grid(image, (8, 16), 160)
    assert out.shape == (80, 160, 3)  # 10 px per patch, height and width not swapped


def test_patch_grid_lines_and_mark_sit_on_patch_boundaries():
    image = np.zeros((8, 12, 3), np.uint8)  # 2 x 3 grid of 4-px patches
    out = np.asarray(canvas.patch_grid_image(image, patch_size=4, scale=2, mark=(1, 2)))
    assert out.shape == (16, 24, 3)
    assert (out[:, 8] == canvas.GRID_COLOUR).all() and (out[:8, 16] == canvas.GRID_COLOUR).all()
    assert (out[8, :16] == canvas.GRID_COLOUR).all()
    assert tuple(out[12, 16]) == tuple(out[8, 23]) == canvas.MARK_COLOUR  # outline of patch (1, 2): x 16-23, y 8-15
    assert tuple(out[4, 1]) == (0, 0, 0)  # patch (0, 0) interior untouched


def test_the_uniform_value_is_marked_above_the_colour_bar_where_it_lies():
    plain = canvas.colour_bar("inferno", 0.0, 0.04, "rollout weight", canvas.TEXT_PX, 320)
    marked = canvas.colour_bar("inferno", 0.0, 0.04, "rollout weight", canvas.TEXT_PX, 320, mark=(0.01, "uniform 0.01"))
    assert marked.height == plain.height + canvas._line(canvas.TEXT_PX)  # one line above the bar holds the mark
    top = top_of_bar(marked, "inferno")
    ((_, start, end),) = {run for run in gradient_runs(marked, "inferno") if run[0] == "across"}
    above = np.asarray(marked)[:top].min(axis=(0, 2))  # darkest value per column above the bar
    ink = np.flatnonzero(above < 128)
    arrow_x = start + round(0.25 * (end - start - 1))  # 0.01 is a quarter of the way from 0 to 0.04
    assert ink.min() <= arrow_x + 1 and abs(ink.min() - arrow_x) <= canvas.text_width(
        "▼", canvas.TEXT_PX
    )  # ▼ starts the mark


def test_relative_colour_bar_ticks_step_evenly_on_each_side_of_uniform():
    """The "relative to uniform" bar read "0, 0.5, 1, 1.2, 1.6, 2" (1 and 1.2 crowded)."""
    assert canvas.bar_ticks(0.0, 2.0, centre=1.0) == [0.0, 0.5, 1.0, 1.5, 2.0]
    for top in (1.05, 2.0, 2.3, 3.7, 5.2, 12.0):
        ticks = np.array(canvas.bar_ticks(0.0, top, centre=1.0))
        below, above = ticks[ticks <= 1.0], ticks[ticks >= 1.0]
        assert below[-1] == 1.0 and above[0] == 1.0 and ticks[0] == 0.0 and ticks[-1] <= top
        for side in (below, above):
            steps = np.diff(side)
            np.testing.assert_allclose(steps, steps[0], rtol=1e-9)
        assert len(above) >= 2


def test_a_narrow_colour_bar_leaves_out_the_ticks_whose_words_would_touch_the_last_kept():
    """On a bar narrowed to its tiles (a phone's, in --present) "0 0.08 0.16 0.24" printed as "0 0.080.160.24"."""
    marks = [(0, "0"), (40, "0.08"), (80, "0.16"), (120, "0.24")]
    assert canvas.kept_ticks(marks, lambda text: 10 * len(text)) == [(0, "0"), (40, "0.08"), (120, "0.24")]
    assert canvas.kept_ticks(marks, lambda text: 5 * len(text)) == marks  # room for every one
    ticks = len(canvas.bar_text(0.0, 0.24)["ticks"])

    def drawn_ticks(width: int) -> int:  # the tick marks under the bar, in the words' colour
        row = np.asarray(canvas.colour_bar("inferno", 0.0, 0.24, "attention weight", 18, width))[canvas.BAR_PX + 1]
        return int(np.all(row == canvas.TEXT, axis=1).sum())

    assert drawn_ticks(320) == ticks and 1 <= drawn_ticks(120) < ticks
