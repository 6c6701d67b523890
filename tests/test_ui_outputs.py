"""Views written for Gradio to serve: lossless (WebP on the page, PNG for exports), so the colours a
visitor reads are the colours drawn."""

from pathlib import Path

import numpy as np
import pytest
from app_helpers import analyze
from picture_helpers import gradient_runs
from PIL import Image

from explorer import render
from explorer.canvas import MapStyle
from ui.outputs import saved


def head_maps() -> Image.Image:
    maps = np.random.default_rng(0).random((3, 8, 8))
    maps /= maps.sum(axis=(1, 2), keepdims=True)  # softmax-like rows over 64 patches
    return render.head_grid(np.full((160, 160, 3), 128, np.uint8), maps, MapStyle(), "layer 1")


@pytest.mark.parametrize(("name", "encoding"), [("view.webp", "WEBP"), ("cat_layer6_cls.png", "PNG")])
def test_a_written_view_reads_back_pixel_for_pixel_with_its_colour_bar(name, encoding):
    picture = head_maps()
    read = Image.open(saved(picture, name))
    assert read.format == encoding  # views on the page: WebP; exports: PNG; both lossless
    assert np.array_equal(np.asarray(read.convert("RGB")), np.asarray(picture))  # tolerance 0
    assert gradient_runs(read.convert("RGB"), "inferno")  # the colour bar reads back colour for colour


def test_views_are_webp_unless_named_as_a_png_export():
    assert Image.open(saved(head_maps())).format == "WEBP"


def test_names_of_written_files_are_cut_to_what_a_file_system_takes():
    """File systems refuse names over 255 bytes: a long name is cut, its suffix (the encoding) kept."""
    from ui.outputs import MAX_NAME_BYTES, cache_path

    path = Path(saved(head_maps(), "é" * 300 + "_layer6_cls.png"))  # 611 bytes
    assert len(path.name.encode()) <= MAX_NAME_BYTES and path.name.endswith(".png") and path.name.startswith("é")
    assert Image.open(path).format == "PNG"
    assert cache_path("../../escape.gif").parent.parent.name == "vit-explorer"  # one name, never a folder


def test_the_tests_write_views_into_their_own_folder_not_the_machines(gradio_folder, client):
    """A run once left 257 MB in /tmp/gradio, the folder every app on the machine shares: the
    views written here, the served app's and what the client downloads of them land in the run's."""
    assert Path(saved(head_maps())).is_relative_to(gradio_folder)
    before = set(gradio_folder.rglob("*.webp"))
    downloaded = Path(analyze(client, Path(__file__).parents[1] / "examples" / "cifar10" / "cat.jpg")[0]["value"])
    assert downloaded.is_relative_to(gradio_folder) and downloaded.is_file()
    assert len(set(gradio_folder.rglob("*.webp")) - before) >= 2  # the server's view and the client's copy
