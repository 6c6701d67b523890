"""The Explore tab's handlers called directly (no server): named outputs, query moves, playing
through the layers, export names, and the examples the tab offers."""

import tarfile

import gradio as gr
import numpy as np
import pytest
from conftest import SHARED
from PIL import Image

import vit
from explorer.catalog import BUNDLED, LoadedModel, ModelCatalog
from explorer.explain import explain
from ui import explore_handlers as h
from ui.explore import EXAMPLES_DIR, ExploreView, layout
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES

STYLE = ("inferno", 0.6, "nearest", "overlay", "layer")  # colour map, opacity, upsampling, display, scale
ARCHIVE = SHARED / "data" / "cifar10-jpeg.tar.gz"


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory) -> tuple[ExploreView, ModelCatalog]:
    catalog = ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs"))
    with gr.Blocks():
        view = layout(catalog)
    return view, catalog


@pytest.fixture(scope="module")
def explanation(tab):
    """The key a session's state holds: its explanation lives in the server-wide store."""
    _, catalog = tab
    loaded = catalog.get(BUNDLED)
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8))
    key = ("random.png", BUNDLED, id(loaded.model), "crop")
    h.STORE.get(key, lambda: explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, image))
    return key


def test_a_handler_returns_its_pictures_by_component(tab, explanation):
    view, _ = tab
    out = h.restyle(view, explanation, None, 3, "max", 0.5, *STYLE)
    assert set(out) == {view.heads, view.overview, view.rollout}
    assert all(Image.open(path).width > 0 for path in out.values())


def test_arrow_moves_start_at_the_centre_and_stop_at_the_edges(tab, explanation):
    view, _ = tab
    assert h.move_query(view, (0, 1), explanation, None, 6, *STYLE)[view.query] == (4, 4)  # 8 x 8 grid
    assert h.move_query(view, (0, 1), explanation, (2, 3), 6, *STYLE)[view.query] == (2, 4)
    assert h.move_query(view, (-1, 0), explanation, (0, 5), 6, *STYLE)[view.query] == (0, 5)
    moved = h.move_query(view, (1, 0), explanation, (2, 3), 6, *STYLE)
    assert "row 4, column 4" in moved[view.query_md]  # 0-based (3, 3) is row 4, column 4 for people


def test_play_steps_the_layer_slider_through_every_layer(tab, explanation, monkeypatch):
    view, _ = tab
    monkeypatch.setattr(h, "PLAY_STEP_S", 0.0)
    frames = list(h.play_layers(view, explanation, None, *STYLE))
    assert [f[view.layer] for f in frames] == [1, 2, 3, 4, 5, 6]
    pictures = [np.asarray(Image.open(f[view.heads])) for f in frames]
    assert not np.array_equal(pictures[0], pictures[-1])


def test_export_names_say_image_model_layer_and_query(tab):
    _, catalog = tab
    payload = {"path": "/tmp/gradio/abc/photo 1.jpg", "orig_name": "My cat (1).jpg"}
    assert h.export_name(payload, BUNDLED, catalog) == "My-cat-1-tiny"
    assert h.export_name(payload, "checkpoint:/runs/a/model.safetensors", catalog) == "My-cat-1-model"
    assert h.export_name(payload, "pretrained:vit_b_16.tv_in1k", catalog) == "My-cat-1-vit_b_16.tv_in1k"
    assert h.query_name(None) == "cls" and h.query_name((0, 6)) == "row1-col7"


def test_the_page_lists_the_models_classes():
    model = vit.create_model("vit_cifar_nano", num_classes=30)
    names = [f"class{i}" for i in range(30)]
    note = h.classes_note(LoadedModel("k", "label", model, vit.ModelMeta(names, CIFAR10)))
    assert note.startswith("**30 classes:** class0, class1") and "… (10 more)" in note and "class20" not in note
    assert "always answers with one of them" in note


@pytest.mark.parametrize(
    ("style", "message"),
    [
        (("jet2", 0.5, "nearest", "raw"), "unknown colour map 'jet2'"),
        (("gray", True, "nearest", "raw"), "opacity must be a number from 0.0 to 1.0, got True"),
        (("gray", float("inf"), "nearest", "raw"), "opacity must be a number from 0.0 to 1.0, got inf"),
        (("gray", 0.5, "Nearest", "raw"), "unknown upsampling 'Nearest'"),
    ],
)
def test_map_style_refuses_what_the_controls_cannot_send(style, message):
    with pytest.raises(gr.Error, match=message):
        h.map_style(*style)


def test_one_example_per_cifar10_class():
    for name in CIFAR10_CLASSES:
        with Image.open(EXAMPLES_DIR / f"{name}.jpg") as im:
            assert im.size == (32, 32) and im.format == "JPEG"


@pytest.mark.skipif(not ARCHIVE.exists(), reason=f"the CIFAR-10 archive is not at {ARCHIVE} (../shared is absent)")
def test_examples_are_the_first_test_image_of_each_class():
    """The rule of examples/cifar10/pick.py, checked independently: test/<class>/ sorted by name."""
    with tarfile.open(ARCHIVE) as archive:
        members = sorted(m.name for m in archive.getmembers() if m.isfile() and m.name.startswith("test/"))
        for name in CIFAR10_CLASSES:
            first = next(m for m in members if m.startswith(f"test/{name}/"))
            assert archive.extractfile(first).read() == (EXAMPLES_DIR / f"{name}.jpg").read_bytes(), name


def test_a_model_without_a_classifier_is_explained_and_says_it_predicts_nothing(tab, tmp_path):
    _, catalog = tab
    headless = vit.create_model("vit_cifar_nano", num_classes=0)
    vit.save_checkpoint(headless, tmp_path / "dino-like.safetensors", preprocessing=CIFAR10)
    loaded = catalog.get(catalog.register(tmp_path / "dino-like.safetensors", "alice"))
    assert "makes no predictions" in h.classes_note(loaded)
    image = tmp_path / "green.png"
    Image.new("RGB", (32, 32), (10, 200, 30)).save(image)
    pictures = h.full_analysis(loaded, str(image), "crop", 6, "mean", 0.0, h.map_style(*STYLE), store=None)
    assert pictures["label"] == {} and Image.open(pictures["heads"]).width > 0
