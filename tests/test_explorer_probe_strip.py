"""The Train tab's probe strip (explorer/probe_strip.py): its rows, colour bars and bounded height."""

import numpy as np
from picture_helpers import gradient_runs

from explorer import canvas, probe_strip, render
from explorer.canvas import MapStyle


def test_probe_strip_has_a_row_per_epoch_each_with_its_colour_bar():
    image = np.zeros((64, 64, 3), np.uint8)
    probes = [(e, np.random.default_rng(e).random((2, 3, 2, 2)) / 8) for e in (1, 2, 3, 4)]
    strip = probe_strip.probe_strip(image, probes, MapStyle(cmap="viridis"))
    assert strip.height >= 4 * (64 + canvas.GAP) and strip.width >= 3 * (64 + canvas.GAP)
    assert len(gradient_runs(strip, "viridis")) == 4


def test_probe_strip_prints_the_cls_share_only_for_models_with_a_cls_token():
    image = np.zeros((64, 64, 3), np.uint8)
    rows = np.random.default_rng(0).random((1, 2, 4))
    gap = rows / rows.sum(-1, keepdims=True)  # patch rows that sum to 1: nothing left out
    with_cls = probe_strip.probe_strip(image, [(1, (0.6 * gap).reshape(1, 2, 2, 2))], MapStyle())
    without = probe_strip.probe_strip(image, [(1, gap.reshape(1, 2, 2, 2))], MapStyle())
    assert with_cls.height > without.height  # the "CLS 0.40" caption line (and the caption sentence)
    assert render.prefix_lines(render.Prefix(1.0 - (0.6 * gap).sum(-1)[0, :1])) == ["CLS 0.40"]


def test_a_long_runs_probe_strip_has_a_bounded_height_and_says_which_epochs_it_shows():
    # A 200-epoch run once drew a row per epoch, past WebP's 16,383 px: every status poll failed.
    image = np.zeros((64, 64, 3), np.uint8)
    maps = np.random.default_rng(0).random((2, 3, 2, 2)) / 8
    strip = probe_strip.probe_strip(image, [(e, maps) for e in range(201)], MapStyle())
    assert strip.height <= probe_strip.PROBE_ROWS * (64 + 3 * canvas._line(canvas.TEXT_PX) + canvas.GAP) + 600 < 16_383
    shown = probe_strip.probe_shown(201, 3)
    assert shown[0] == 0 and shown[-1] == 200 and len(shown) == probe_strip.PROBE_ROWS
    assert probe_strip.probe_shown(5, 3) == [0, 1, 2, 3, 4]  # a short run: every epoch
    assert probe_strip.probe_shown(101, 12) == [round(i * 100 / 11) for i in range(12)]  # two rows per reading
    assert probe_strip.probe_epochs([0, 100, 200]) == "before training and after epochs 100 and 200"


def test_a_probe_strip_of_the_reading_before_training_alone_is_drawn():
    """A run polled before its first epoch ended: its strip failed (IndexError) and left the poll's log."""
    assert probe_strip.probe_epochs([0]) == "before training"
    assert probe_strip.probe_epochs([3]) == "after epoch 3"
    assert probe_strip.probe_epochs([0, 1, 2]) == "before training and after epochs 1 and 2"
    maps = np.random.default_rng(0).random((2, 3, 2, 2)) / 8
    strip = probe_strip.probe_strip(np.zeros((64, 64, 3), np.uint8), [(0, maps)], MapStyle())
    assert strip.height > 64  # one row of tiles, with its colour bar
