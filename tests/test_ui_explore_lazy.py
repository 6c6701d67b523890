"""Only what is on screen is drawn: the "More views" (a closed accordion of tabs) cost nothing
until opened, and opening one draws exactly the picture the eager analysis used to draw."""

from collections import Counter

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from explorer import render, views
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.explain import explain
from ui import explore_handlers as h
from ui.explore import build_explore_tab

STYLE = ("inferno", 0.6, "nearest", "overlay", "layer")  # colour map, opacity, upsampling, display, scale
DRAWERS = {
    "overview": (views, "overview"),
    "rollout": (views, "rollout"),
    "distance": (views, "distance_chart"),
    "similarity": (render, "position_similarity_tiles"),
}


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory):
    """(view, catalog, demo): the Explore tab alone in a Blocks."""
    catalog = ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs"))
    with gr.Blocks() as demo:
        view = build_explore_tab(catalog)
    return view, catalog, demo


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("images") / "noise.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8)).save(path)
    return str(path)


@pytest.fixture(scope="module")
def explanation(tab, image):
    _, catalog, _ = tab
    loaded = catalog.get(BUNDLED)
    key = ("noise.png", BUNDLED, id(loaded.model), "crop")
    h.STORE.get(key, lambda: explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, Image.open(image)))
    return key


@pytest.fixture
def drawn(monkeypatch) -> Counter:
    """How often each "More views" picture was drawn during a test."""
    counts = Counter()
    for name, (module, attr) in DRAWERS.items():
        original = getattr(module, attr)

        def counting(*args, _name=name, _original=original, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, attr, counting)
    return counts


def pixels(picture: gr.Image) -> np.ndarray:
    """The pixels of a view a handler returned with its alt text (ui.pictures.with_alt)."""
    assert picture.alt_text  # lazy or not, a drawn view says what it shows
    return np.asarray(Image.open(picture.value["path"]).convert("RGB"))


def test_an_analysis_draws_no_view_of_the_closed_accordion(tab, image, drawn):
    _, catalog, _ = tab
    out = h.full_analysis(catalog.get(BUNDLED), image, "crop", 6, "mean", 0.0, h.map_style(*STYLE), store=None)
    assert drawn == Counter()
    assert out["overview"] is None and out["rollout"] is None and out["distance"] is None
    assert pixels(out["heads"]).size and pixels(out["input_img"]).size  # what the first screen shows


def test_an_analysis_draws_the_one_view_on_screen(tab, image, drawn):
    _, catalog, _ = tab
    style = h.map_style(*STYLE)
    out = h.full_analysis(catalog.get(BUNDLED), image, "crop", 6, "max", 0.0, style, store=None, on_screen="rollout")
    assert drawn == Counter(rollout=1)
    assert out["overview"] is None and out["distance"] is None and pixels(out["rollout"]).size


@pytest.mark.parametrize("name", ["overview", "rollout", "distance", "similarity"])
def test_opening_a_view_draws_what_the_eager_analysis_drew(tab, explanation, name):
    view, catalog, _ = tab
    ex, style, loaded = h.STORE.peek(explanation), h.map_style(*STYLE), catalog.get(BUNDLED)
    eager = {  # what main's full_analysis (and load_model) drew for every upload
        "overview": lambda: views.overview(ex, style),
        "rollout": lambda: views.rollout(ex, "max", 0.5, style),
        "distance": lambda: views.distance_chart(ex),
        "similarity": lambda: render.position_similarity_tiles(loaded.position_similarity()),
    }[name]()
    out = h.show_more(view, catalog, name, explanation, BUNDLED, "max", 0.5, *STYLE)
    assert out[view.on_screen] == name and out[view.more_tab] == name
    assert np.array_equal(pixels(out[getattr(view, name)]), np.asarray(eager))


def test_before_any_upload_opening_draws_only_the_models_own_view(tab, drawn):
    view, catalog, _ = tab
    assert set(h.show_more(view, catalog, "overview", None, BUNDLED, "mean", 0.0, *STYLE)) == {
        view.on_screen,
        view.more_tab,
    }
    assert view.similarity in h.show_more(view, catalog, "similarity", None, BUNDLED, "mean", 0.0, *STYLE)
    assert drawn == Counter(similarity=1)


def test_relevance_waits_for_its_button_and_closing_puts_nothing_on_screen(tab, explanation, drawn):
    view, catalog, _ = tab
    out = h.show_more(view, catalog, "relevance", explanation, BUNDLED, "mean", 0.0, *STYLE)
    assert out == {view.on_screen: "relevance", view.more_tab: "relevance"} and drawn == Counter()
    assert h.hide_more(view) == {view.on_screen: None}
    with pytest.raises(gr.Error, match="view"):
        h.show_more(view, catalog, "../etc", explanation, BUNDLED, "mean", 0.0, *STYLE)


def test_a_restyle_redraws_the_open_view_and_clears_the_closed_one(tab, explanation, drawn):
    view, _, _ = tab
    out = h.restyle(view, explanation, "overview", None, 3, "max", 0.5, *STYLE)
    assert drawn == Counter(overview=1)
    assert out[view.rollout] is None and pixels(out[view.overview]).size and pixels(out[view.heads]).size
    closed = h.restyle(view, explanation, None, None, 3, "max", 0.5, *STYLE)
    assert drawn == Counter(overview=1) and closed[view.overview] is None


def test_a_model_switch_draws_position_similarity_only_on_screen(tab, drawn):
    view, catalog, _ = tab
    assert h.load_model(view, catalog, BUNDLED, None, None)[view.similarity] is None
    assert drawn == Counter()
    assert pixels(h.load_model(view, catalog, BUNDLED, "similarity", None)[view.similarity]).size
    assert drawn == Counter(similarity=1)


def test_every_tab_and_the_accordion_draw_when_opened(tab):
    view, _, demo = tab
    triggers = {(target[0], target[1]) for fn in demo.fns.values() for target in fn.targets}
    assert all((t._id, "select") in triggers for t in view.more_tabs.values())
    assert set(view.more_tabs) == set(h.MORE_VIEWS)
    assert {(view.more._id, "expand"), (view.more._id, "collapse")} <= triggers
    assert view.more.open is False  # closed at first: an analysis draws none of it
    named = {fn.api_name for fn in demo.fns.values()}
    assert {"overview", "distance", "similarity", "rollout"} <= named
