"""Only what is on screen is drawn: the "More views" (a closed accordion of tabs) cost nothing
until opened, and opening one draws exactly the picture the eager analysis used to draw."""

from collections import Counter

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from explorer import controls, render, views
from explorer.canvas import TEXT_PX, MapStyle
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.controls import Drawing, Fusion
from explorer.explain import ExplanationKey, explain
from ui import explore_handlers as h
from ui.common import Server
from ui.explore import build_explore_tab

STYLE = MapStyle()  # inferno at opacity 0.6, nearest upsampling, overlay, one scale per layer
MAX = Drawing(Fusion("max", 0.5), STYLE)  # rollout with max fusion, half the weights discarded
DRAWERS = {
    "overview": (views, "overview"),
    "rollout": (views, "rollout"),
    "distance": (views, "distance_chart"),
    "similarity": (render, "position_similarity_tiles"),
}


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory):
    """(view, server, demo): the Explore tab alone in a Blocks, and the server's context it is bound to."""
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs")))
    with gr.Blocks() as demo:
        view = build_explore_tab(server)
    return view, server, demo


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("images") / "noise.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8)).save(path)
    return str(path)


@pytest.fixture(scope="module")
def explanation(tab, image):
    _, server, _ = tab
    loaded = server.catalog.get(BUNDLED)
    key = ExplanationKey("noise.png", BUNDLED, id(loaded.model), "crop", "noise")
    server.store.get(
        key, lambda: explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, Image.open(image))
    )
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
    catalog = tab[1].catalog
    out = h.full_analysis(catalog.get(BUNDLED), image, "crop", 6, TEXT_PX, Drawing(), store=None)
    assert drawn == Counter()
    assert out["overview"] is None and out["rollout"] is None and out["distance"] is None
    assert pixels(out["heads"]).size and pixels(out["input_img"]).size  # what the first screen shows


def test_an_analysis_draws_the_one_view_on_screen(tab, image, drawn):
    catalog = tab[1].catalog
    drawing = Drawing(Fusion("max", 0.0), STYLE)
    out = h.full_analysis(catalog.get(BUNDLED), image, "crop", 6, TEXT_PX, drawing, store=None, on_screen="rollout")
    assert drawn == Counter(rollout=1)
    assert out["overview"] is None and out["distance"] is None and pixels(out["rollout"]).size


@pytest.mark.parametrize("name", ["overview", "rollout", "distance", "similarity"])
def test_opening_a_view_draws_what_the_eager_analysis_drew(tab, explanation, name):
    view, server, _ = tab
    ex, style, loaded = server.store.peek(explanation), STYLE, server.catalog.get(BUNDLED)
    eager = {  # what main's full_analysis (and load_model) drew for every upload
        "overview": lambda: views.overview(ex, style),
        "rollout": lambda: views.rollout(ex, controls.Fusion("max", 0.5), style),
        "distance": lambda: views.distance_chart(ex),
        "similarity": lambda: render.position_similarity_tiles(loaded.position_similarity()),
    }[name]()
    out = h.show_more(server, name, explanation, BUNDLED, MAX, h.PcaChoice())
    assert out["on_screen"] == name and out["more_tab"] == name
    assert np.array_equal(pixels(out[name]), np.asarray(eager))


def test_before_any_upload_opening_draws_only_the_models_own_view(tab, drawn):
    view, server, _ = tab
    assert set(h.show_more(server, "overview", None, BUNDLED, Drawing(), h.PcaChoice())) == {"on_screen", "more_tab"}
    assert "similarity" in h.show_more(server, "similarity", None, BUNDLED, Drawing(), h.PcaChoice())
    assert drawn == Counter(similarity=1)


def test_relevance_waits_for_its_button_and_closing_puts_nothing_on_screen(tab, explanation, drawn):
    view, server, _ = tab
    out = h.show_more(server, "relevance", explanation, BUNDLED, Drawing(), h.PcaChoice())
    assert out == {"on_screen": "relevance", "more_tab": "relevance"} and drawn == Counter()
    assert h.hide_more() == {"on_screen": None}
    with pytest.raises(gr.Error, match="view"):
        h.show_more(server, "../etc", explanation, BUNDLED, Drawing(), h.PcaChoice())


def test_a_restyle_redraws_the_open_view_and_clears_the_closed_one(tab, explanation, drawn):
    view, server, _ = tab
    out = h.restyle(server, explanation, "overview", None, 3, MAX)
    assert drawn == Counter(overview=1)
    assert out["rollout"] is None and pixels(out["overview"]).size and pixels(out["heads"]).size
    closed = h.restyle(server, explanation, None, None, 3, MAX)
    assert drawn == Counter(overview=1) and closed["overview"] is None


def test_a_model_switch_draws_position_similarity_only_on_screen(tab, drawn):
    view, server, _ = tab
    assert h.load_model(server, BUNDLED, None, None)["similarity"] is None
    assert drawn == Counter()
    assert pixels(h.load_model(server, BUNDLED, "similarity", None)["similarity"]).size
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
