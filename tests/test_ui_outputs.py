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


class CountedSpace:
    """An upload folder's budget that records what is counted against it."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.counted = (lambda: folder), []

    def added(self, size: int) -> None:
        self.counted.append(size)


def test_a_file_from_outside_the_folder_is_served_as_one_copy_counted_against_the_budget(gradio_folder, tmp_path):
    """Handed a run's checkpoint from the runs folder, Gradio copied it into its folder itself,
    uncounted: the soak's folder went 25 MB past its budget (issue 56). One copy a version."""
    from ui.outputs import ServedCopies

    space, model = CountedSpace(gradio_folder), tmp_path / "runs" / "model.safetensors"
    model.parent.mkdir()
    model.write_bytes(b"w" * 1000)
    copies = ServedCopies(space)
    first = Path(copies.copy(model))
    assert first.is_relative_to(gradio_folder) and first.read_bytes() == model.read_bytes()
    assert space.counted == [1000]
    assert copies.copy(model) == str(first) and space.counted == [1000]  # the next poll: no copy
    first.unlink()  # the budget pruned it
    second = Path(copies.copy(model))
    assert second != first and second.is_file() and space.counted == [1000, 1000]
    model.write_bytes(b"v" * 1500)  # a new version (a run continued)
    assert Path(copies.copy(model)).read_bytes() == b"v" * 1500 and space.counted == [1000, 1000, 1500]
    assert copies.copy(second) == str(second.resolve()) and len(space.counted) == 3  # already in the folder
    model.unlink()
    assert copies.copy(model) is None  # gone: nothing offered, no error


def test_the_copies_remembered_are_bounded(gradio_folder, tmp_path):
    from ui.outputs import ServedCopies

    copies = ServedCopies(CountedSpace(gradio_folder), kept=2)
    files = [tmp_path / f"{i}.bin" for i in range(3)]
    for f in files:
        f.write_bytes(f.name.encode())
        copies.copy(f)
    assert len(copies._copies) == 2 and str(files[0]) not in {v[0] for v in copies._copies}
