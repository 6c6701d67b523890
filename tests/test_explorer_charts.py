"""The matplotlib charts (explorer/charts.py): attention distance, training curves, logit lens."""

import numpy as np
import pytest
from matplotlib import colormaps
from picture_helpers import expected_ring_heights, has_rising_bar, ring_heights
from PIL import Image

from explorer import canvas, charts, views


def test_attention_distance_chart_puts_each_heads_ring_at_its_distance():
    layers, heads = 6, 4
    distance = 4 + 6 * np.arange(layers)[:, None] + 1.5 * np.arange(heads)[None]  # rising with layer and head
    charts.distance_axes.cache_clear()
    chart = charts.attention_distance_chart(distance, (32, 32))
    assert chart.size == (640, 360)
    axes = charts.distance_axes(layers, heads, (32, 32))
    drawn = ring_heights(chart, axes, heads)  # picture rows, read from the pixels
    diameter = np.sqrt(axes.dots.get_sizes()[0]) * axes.canvas.figure.dpi / 72
    assert np.abs(drawn - expected_ring_heights(axes, distance, chart.height)).max() < diameter / 4
    assert (np.diff(drawn, axis=0) < -diameter).all()  # rows grow downwards: farther layers sit higher
    assert (np.diff(drawn, axis=1) < 0).all()  # and so does each farther head within a layer


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

    falling = charts.training_curves(history([2.0, 1.5, 1.0, 0.5]))
    rising = charts.training_curves(history([0.5, 1.0, 1.5, 2.0]))
    assert falling.width == views.DISPLAY_WIDTH["curves"]  # the Train tab's column: never shrunk to fit it
    start, end = line_heights(falling)
    assert start < end - 50  # image rows grow downwards: a falling loss starts high, ends low
    start, end = line_heights(rising)
    assert start > end + 50


def test_distance_chart_has_a_legend_for_every_head():
    # Dots far below the axes are not drawn, so the head colours can only come from the legend.
    charts.distance_axes.cache_clear()
    chart = np.asarray(charts.attention_distance_chart(np.full((3, 12), -100.0), (32, 32)))
    colours = {tuple(c) for c in chart.reshape(-1, 3).tolist()}
    heads = [*range(0, 20, 2), 1, 3]  # tab20 indices of heads 1-12: the 10 dark colours, then light twins
    expected = {tuple(colormaps["tab20"](i, bytes=True)[:3]) for i in heads}
    assert len(expected) == 12 and expected <= colours


def test_distance_chart_redraws_only_the_dots_and_never_keeps_old_ones():
    rng = np.random.default_rng(0)
    first, second = rng.random((4, 3)) * 40, rng.random((4, 3)) * 40
    charts.distance_axes.cache_clear()
    fresh = np.asarray(charts.attention_distance_chart(second, (48, 48)))
    charts.distance_axes.cache_clear()
    charts.attention_distance_chart(first, (48, 48))
    reused = np.asarray(charts.attention_distance_chart(second, (48, 48)))  # same axes, new dots
    np.testing.assert_array_equal(reused, fresh)
    assert not np.array_equal(np.asarray(charts.attention_distance_chart(first, (48, 48))), fresh)


def test_training_curves_show_the_loss_before_the_first_epoch_ends():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    steps = [(0.1, 2.3), (0.2, 2.1), (0.3, 1.9)]  # (epochs done, running loss): falling
    figure = charts.training_figure([], steps)
    FigureCanvasAgg(figure).draw()  # lays the figure out as training_curves does
    early = np.asarray(charts.training_curves([], steps))
    np.testing.assert_array_equal(early, np.asarray(figure.canvas.buffer_rgba())[..., :3])  # the same picture
    loss = figure.axes[0]
    x0, y0, x1, y1 = loss.bbox.extents  # the loss panel, in display pixels (y upwards)
    height = early.shape[0]

    def grey(picture: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows and columns of the step line's pixels (matplotlib's "0.6" grey) inside the loss panel."""
        rows, cols = np.nonzero(np.abs(picture.astype(int) - 153).sum(-1) < 30)
        inside = (cols > x0 + 1) & (cols < x1 - 1) & (rows > height - y1 + 1) & (rows < height - y0 - 1)
        return rows[inside], cols[inside]

    empty = np.asarray(charts.training_curves([]))
    assert empty.shape == early.shape and grey(empty)[0].size == 0  # no line before any step
    rows, cols = grey(early)
    (first_x, first_y), (last_x, last_y) = loss.transData.transform([steps[0], steps[-1]])
    start, end = rows[np.abs(cols - first_x) < 2].mean(), rows[np.abs(cols - last_x) < 2].mean()
    assert abs(start - (height - first_y)) < 3 and abs(end - (height - last_y)) < 3  # at the first and last loss
    assert start < end - 20  # rows grow downwards: the falling loss ends lower than it starts


@pytest.mark.parametrize("heads, apart", [(4, 1.0), (12, 0.5)])
def test_distance_chart_heads_at_equal_distance_do_not_hide_each_other(heads, apart):
    """Layer 1 showed 3 of its 4 heads (two dots on one spot); the title says it is
    one image. Four heads sit a whole ring apart; twelve overlap by at most half a ring, and the
    rings are hollow, so each still shows."""
    charts.distance_axes.cache_clear()
    charts.attention_distance_chart(np.full((6, heads), 20.0), (32, 32))  # every head at the same distance
    axes = charts.distance_axes(6, heads, (32, 32))
    centres = axes.dots.axes.transData.transform(axes.dots.get_offsets())[:, 0].reshape(6, heads)  # pixels
    diameter = np.sqrt(axes.dots.get_sizes()[0]) * axes.canvas.figure.dpi / 72  # marker size is in points²
    assert np.diff(np.sort(centres, axis=1), axis=1).min() >= apart * diameter
    assert (axes.dots.get_facecolors()[:, 3] == 0).all()  # hollow
    layers = axes.dots.axes.transData.transform(np.column_stack([np.arange(1, 7), np.zeros(6)]))[:, 0]
    assert (np.abs(centres - layers[:, None]) < np.diff(layers)[0] / 2).all()  # each nearest its own layer
    assert "this image" in axes.dots.axes.get_title()


def test_logit_lens_chart_carries_a_probability_bar_and_grows_with_the_layers():
    probs = np.linspace(0, 1, 5 * 6).reshape(5, 6)
    small = charts.logit_lens_chart(probs, list("abcde"), ["a"] * 6, "title", "note")
    large = charts.logit_lens_chart(np.repeat(probs, 4, axis=1), list("abcde"), ["a"] * 24, "title", "note")
    assert small.width < large.width <= 1192
    present = charts.logit_lens_chart(probs, list("abcde"), ["a"] * 6, "title", "note", canvas.PRESENT_TEXT_PX)
    assert present.height > small.height and present.width <= 1192  # the presentation mode's larger words
    right = np.asarray(small)[:, -small.width // 6 :]  # the colour bar, 0 to 1, is right of the map
    assert has_rising_bar(right, charts.LOGIT_LENS_CMAP)
