"""Views written for Gradio to serve: lossless, so the colours a visitor reads are the colours drawn."""

import numpy as np
from picture_helpers import gradient_runs
from PIL import Image

from explorer import render
from explorer.render import MapStyle
from ui.outputs import saved


def test_a_written_view_reads_back_pixel_for_pixel_with_its_colour_bar():
    maps = np.random.default_rng(0).random((3, 8, 8))
    maps /= maps.sum(axis=(1, 2), keepdims=True)  # softmax-like rows over 64 patches
    image = np.full((160, 160, 3), 128, np.uint8)
    picture = render.head_grid(image, maps, MapStyle(), "layer 1")
    path = saved(picture)
    read = Image.open(path)
    assert read.format == "PNG"  # lossless: PNG at compress_level 1, the fastest level that stays small
    assert np.array_equal(np.asarray(read.convert("RGB")), np.asarray(picture))
    assert gradient_runs(read.convert("RGB"), "inferno")  # the colour bar reads back colour for colour
