"""The Lessons tab's handlers called directly (no server): named outputs, 1-based heads and
layers, models that cannot be loaded named while the others are compared, clear refusals."""

import gradio as gr
import numpy as np
import pytest
import torch
from PIL import Image

import vit
from explorer.catalog import BUNDLED, ModelCatalog
from ui import lessons_handlers as h
from ui.lessons import LessonsView, layout
from ui.outputs import cache_path
from vit.preprocessing import CIFAR10, CIFAR10_CLASSES


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory) -> tuple[LessonsView, ModelCatalog]:
    catalog = ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs"))
    with gr.Blocks():
        view = layout(catalog)
    return view, catalog


@pytest.fixture(scope="module")
def registers(tab, tmp_path_factory) -> str:
    """The key of a headless model with 4 registers, registered in the tab's catalogue."""
    _, catalog = tab
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("models") / "registers.safetensors"
    model = vit.create_model("vit_cifar_nano", register_tokens=4, pos_embed_prefix=False, num_classes=0)
    vit.save_checkpoint(model, path, class_names=[], preprocessing=CIFAR10)
    return catalog.register(path, "*")


@pytest.fixture
def image() -> dict:
    """An upload payload, as the browser sends it (the file lies in Gradio's upload folder)."""
    path = cache_path("lesson.png")
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8)).save(path)
    return {"path": str(path), "orig_name": "lesson.png"}


def test_the_comparison_names_models_it_cannot_load_and_compares_the_rest(tab, registers, image):
    view, catalog = tab
    out = h.compare_models(view, catalog, image, [BUNDLED, registers, "pretrained:nonexistent"], "viridis")
    assert Image.open(out[view.compare_picture].value["path"]).width > 0
    assert out[view.compare_picture].alt_text.startswith("Last-layer CLS attention of every head, one row per model: ")
    assert "Not available here" in out[view.compare_note] and "pretrained:nonexistent" in out[view.compare_note]
    clean = h.compare_models(view, catalog, image, [BUNDLED], "viridis")
    assert clean[view.compare_note] == ""


def test_the_comparison_refuses_no_models_too_many_or_none_loadable(tab, image):
    view, catalog = tab
    with pytest.raises(gr.Error, match="models must be a list of 1 to 3 model keys"):
        h.compare_models(view, catalog, image, [], "inferno")
    with pytest.raises(gr.Error, match="models must be a list of 1 to 3 model keys"):
        h.compare_models(view, catalog, image, [BUNDLED] * 4, "inferno")
    with pytest.raises(gr.Error, match="none of these models can be loaded here"):
        h.compare_models(view, catalog, image, ["pretrained:nonexistent"], "inferno")
    with pytest.raises(gr.Error, match="upload an image at the top of the Lessons tab first"):
        h.compare_models(view, catalog, None, [BUNDLED], "inferno")


def test_token_norms_of_a_model_with_and_without_registers(tab, registers, image):
    view, catalog = tab
    out = h.token_norms(view, catalog, image, registers, BUNDLED, 3, "inferno")
    assert Image.open(out[view.norms_picture].value["path"]).width > 0
    table = out[view.norms_table]
    assert "median patch norm" in table and "reg4" in table  # the registers' norms are listed by name
    with pytest.raises(gr.Error, match="layer must be a whole number from 1 to 6, got 7"):
        h.token_norms(view, catalog, image, registers, BUNDLED, 7, "inferno")


def test_heads_off_by_1_based_layer_dot_head(tab, image):
    view, catalog = tab
    on = h.switch_heads_off(view, catalog, image, BUNDLED, "")
    every = ", ".join(f"{layer}.{head}" for layer in range(1, 7) for head in range(1, 5))
    off = h.switch_heads_off(view, catalog, image, BUNDLED, every)
    assert set(on[view.top5]) <= set(CIFAR10_CLASSES) and len(on[view.top5]) == 5
    assert off[view.top5] != on[view.top5]
    assert "Heads off: **none**" in on[view.heads_note] and "Heads off: **1.1, 1.2" in off[view.heads_note]
    with pytest.raises(gr.Error, match="head 5 in '1.5' is out of range; each layer has heads 1 to 4"):
        h.switch_heads_off(view, catalog, image, BUNDLED, "1.5")
    with pytest.raises(gr.Error, match="layer 7 in '7.1' is out of range; this model has layers 1 to 6"):
        h.switch_heads_off(view, catalog, image, BUNDLED, "7.1")


def test_the_ranking_and_its_refusal_for_a_model_without_a_head(tab, registers, image):
    view, catalog = tab
    out = h.rank_heads(view, catalog, image, BUNDLED)
    rows = out[view.ranking]
    assert [r[0] for r in rows] == list(range(1, 11)) and "6 × 4 = 24 forward passes" in out[view.heads_note]
    with pytest.raises(gr.Error, match="has no classifier head, so it makes no predictions"):
        h.rank_heads(view, catalog, image, registers)
    with pytest.raises(gr.Error, match="pretrained:nonexistent"):
        h.rank_heads(view, catalog, image, "pretrained:nonexistent")
