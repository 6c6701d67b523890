"""Only what is on screen is drawn: the "More views" (a closed accordion of tabs) cost nothing
until opened, and opening one draws exactly the picture the eager analysis used to draw."""

from collections import Counter
from dataclasses import replace

import gradio as gr
import numpy as np
import pytest
from app_helpers import asked
from PIL import Image

from explorer import more_views
from explorer.canvas import TEXT_PX, MapStyle
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.controls import Drawing, Fusion
from explorer.explain import ExplanationKey, explain
from explorer.more_views import NoControls, Scene
from ui import explore_handlers as h
from ui import explore_views as ev
from ui.common import Server
from ui.explore import build_explore_tab

STYLE = MapStyle()  # inferno at opacity 0.6, nearest upsampling, overlay, one scale per layer
MAX = Drawing(Fusion("max", 0.5), STYLE)  # rollout with max fusion, half the weights discarded


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory):
    """(view, server, demo): the Explore tab alone in a Blocks, and the server's context it is bound to."""
    server = Server(ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs")))
    with gr.Blocks() as demo:
        explore = build_explore_tab(server)
    return explore, server, demo


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
    """How many times each "More views" view was drawn, by name: every record's picture function counted."""
    counts = Counter()
    for name, more in ev.MORE.items():
        if more.picture is None:
            continue

        def counting(*args, _name=name, _original=more.picture, **kwargs):
            counts[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setitem(ev.MORE, name, replace(more, picture=counting))
    return counts


def pixels(picture: gr.Image) -> np.ndarray:
    """The pixels of a view a handler returned with its alt text (ui.pictures.with_alt)."""
    assert picture.alt_text  # lazy or not, a drawn view says what it shows
    return np.asarray(Image.open(picture.value["path"]).convert("RGB"))


def test_an_analysis_draws_no_view_of_the_more_views(tab, image, drawn):
    catalog = tab[1].catalog
    out = h.full_analysis(catalog.get(BUNDLED), image, "crop", 6, TEXT_PX, STYLE, store=None)
    assert drawn == Counter() and not set(out) & set(ev.MORE_VIEWS)  # each is a call of its own
    assert pixels(out["heads_img"]).size and pixels(out["input_img"]).size  # what the first screen shows
    page = h.page_analysis(tab[1], catalog.get(BUNDLED), image, "crop", 6, None, asked(ev.ImageAsked, MAX))
    assert drawn == Counter() and all(page[name] is None for name in ev.IMAGE_VIEWS)  # the accordion closed


@pytest.mark.parametrize("name", ev.IMAGE_VIEWS)
def test_the_pages_analysis_draws_the_one_view_on_screen(tab, image, drawn, name):
    server = tab[1]
    out = h.page_analysis(server, server.catalog.get(BUNDLED), image, "crop", 6, name, asked(ev.ImageAsked, MAX))
    assert drawn == Counter({name: 1})
    assert all(out[other] is None for other in ev.IMAGE_VIEWS if other != name)


@pytest.mark.parametrize("name", ev.DRAWN_VIEWS)
def test_opening_a_view_draws_its_picture_of_this_image_and_its_controls(tab, explanation, name):
    """Opening a tab draws the view's own picture (its module's) of the session's image, from the
    record of its controls (MAX: max fusion, half the weights discarded), as the analysis drew it
    for every upload before the views waited to be opened."""
    explore, server, _ = tab
    ex, loaded, record = server.store.peek(explanation), server.catalog.get(BUNDLED), asked(ev.DrawnAsked, MAX)[name]
    scene = Scene(loaded, "the bundled model", server.text_px, more_views.run_here, ex)
    expected = more_views.REGISTRY[name].picture(scene, record)
    out = h.show_more(server, name, explanation, BUNDLED, record)
    assert out["on_screen"] == name and out["more_tab"] == name
    assert np.array_equal(pixels(out[name]), np.asarray(expected.image.convert("RGB")))
    assert out[name].alt_text == expected.alt


@pytest.mark.parametrize("name", ev.DRAWN_VIEWS)
def test_before_any_upload_opening_draws_only_the_models_own_view(tab, drawn, name):
    explore, server, _ = tab
    out = h.show_more(server, name, None, BUNDLED, asked(ev.DrawnAsked, MAX)[name])
    assert (name in out) is (name in ev.MODEL_ONLY_VIEWS)
    assert drawn == Counter({name: 1} if name in ev.MODEL_ONLY_VIEWS else {})


def test_relevance_waits_for_its_button_and_closing_puts_nothing_on_screen(tab, explanation, drawn):
    explore, server, _ = tab
    out = h.show_more(server, "relevance", explanation, BUNDLED, NoControls())
    assert out == {"on_screen": "relevance", "more_tab": "relevance"} and drawn == Counter()
    assert h.hide_more() == {"on_screen": None}
    with pytest.raises(gr.Error, match="view"):
        h.show_more(server, "../etc", explanation, BUNDLED, NoControls())


def test_a_restyle_redraws_the_open_view_and_clears_the_closed_one(tab, explanation, drawn):
    explore, server, _ = tab
    out = h.restyle(server, explanation, "overview", None, 3, asked(ev.StyleAsked, MAX, STYLE), STYLE)
    assert drawn == Counter(overview=1)
    assert out["rollout"] is None and pixels(out["overview"]).size and pixels(out["heads_img"]).size
    closed = h.restyle(server, explanation, None, None, 3, asked(ev.StyleAsked, MAX, STYLE), STYLE)
    assert drawn == Counter(overview=1) and closed["overview"] is None


def test_a_model_switch_draws_position_similarity_only_on_screen(tab, drawn):
    explore, server, _ = tab
    assert h.load_model(server, BUNDLED, None, asked(ev.ModelAsked), None)["similarity"] is None
    assert drawn == Counter()
    assert pixels(h.load_model(server, BUNDLED, "similarity", asked(ev.ModelAsked), None)["similarity"]).size
    assert drawn == Counter(similarity=1)


def test_every_tab_and_the_accordion_draw_when_opened(tab):
    explore, _, demo = tab
    triggers = {(target[0], target[1]) for fn in demo.fns.values() for target in fn.targets}
    assert all((t._id, "select") in triggers for t in explore.more_tabs.values())
    assert set(explore.more_tabs) == set(h.MORE_VIEWS)
    assert {(explore.more._id, "expand"), (explore.more._id, "collapse")} <= triggers
    assert explore.more.open is False  # closed at first: an analysis draws none of it
    named = {fn.api_name for fn in demo.fns.values()}
    assert {more.api_name for more in ev.MORE.values() if more.api_name} <= named
