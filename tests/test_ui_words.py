"""The Explore tab's words (a CLIP model): the prompts box, /zero_shot's probabilities and maps,
the box shown only for CLIP models, and every refusal as one sentence."""

from __future__ import annotations

from dataclasses import replace

import gradio as gr
import numpy as np
import pytest
from app_helpers import asked
from clip_helpers import CLIP_KEY, clip_app, tiny_clip
from PIL import Image

import vit
from explorer.canvas import TEXT_PX, MapStyle
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.controls import Showing
from explorer.prompts import DEFAULT_PROMPTS, words_bytes
from ui import explore_handlers as h
from ui import explore_views as ev
from ui.common import Server
from ui.explore import ExploreTab, layout

STYLE = ("inferno", 0.6, "nearest", "overlay", "layer")  # colour map, opacity, upsampling, display, scale
SHOWN = (MapStyle(), Showing())  # the handlers' style and showing, as the binding parses STYLE and the defaults


@pytest.fixture(scope="module")
def tab(tiny_checkpoint, tmp_path_factory) -> tuple[ExploreTab, Server]:
    """The tab on a catalogue whose CLIP B/16 is a tiny random CLIP (no download: the loader is
    replaced, as the Hub stand-in test of tests/test_clip.py covers the real one)."""
    patch = pytest.MonkeyPatch()
    patch.setattr(vit.pretrained, "load_pretrained_clip", lambda name, progress=None: tiny_clip())
    catalog = ModelCatalog(tiny_checkpoint, tmp_path_factory.mktemp("runs"), default=CLIP_KEY)
    with gr.Blocks():
        explore = layout(catalog)
    yield explore, Server(catalog)
    patch.undo()


def analysed(server: Server, key: str, tmp_path) -> tuple:
    path = tmp_path / "photo.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 48, 3), np.uint8)).save(path)
    out = h.full_analysis(server.catalog.get(key), str(path), "crop", 2, TEXT_PX, MapStyle(), server.store)
    return out["explanation_key"], out


def test_a_clip_model_opens_with_the_words_box_and_no_classes(tab, tmp_path) -> None:
    explore, server = tab
    assert explore.words.visible and explore.prompts.value == DEFAULT_PROMPTS
    assert "it answers your words ('a photo of {}.')" in explore.model_info.value
    key, out = analysed(server, CLIP_KEY, tmp_path)
    assert out["label"] == {}  # no classes: the words' probabilities take their place


def test_three_words_give_three_probabilities_and_three_maps(tab, tmp_path) -> None:
    explore, server = tab
    key, _ = analysed(server, CLIP_KEY, tmp_path)
    out = h.compare_words(server, key, "a cat, a teapot, a rainbow", *SHOWN)
    probabilities, maps = out["label"], out["prompt_maps"]
    assert list(probabilities) == ["a cat", "a teapot", "a rainbow"]
    assert sum(probabilities.values()) == pytest.approx(1.0)
    assert len(maps) == 3
    for (path, alt), word in zip(maps, probabilities, strict=True):
        assert Image.open(path).width > 100 and f"the words '{word}'" in alt
    assert "“a photo of {}.”" in out["prompt_note"]
    after = h.words_after(server, key, "a cat, a dog", *SHOWN)  # the analysis' follow-up draws them at once
    assert list(after["label"]) == ["a cat", "a dog"]
    cleared = {"prompt_maps": None, "prompt_note": "", "words_result": None}
    assert h.words_after(server, None, "a cat, a dog", *SHOWN) == cleared
    # a new style redraws the kept maps without a backward pass; maps of another image are left alone
    kept = out["words_result"]
    assert kept[0] == key and list(kept[1].prompts) == ["a cat", "a teapot", "a rainbow"]
    restyled = h.restyle_words(server, key, kept, MapStyle(cmap="viridis"), Showing("relative"))
    assert len(restyled["prompt_maps"]) == 3
    assert all("multiples of uniform" in alt for _, alt in restyled["prompt_maps"])
    assert h.restyle_words(server, replace(key, path="other.png", content="other"), kept, *SHOWN) == {}


def test_words_for_a_model_without_text_or_unusable_words_are_one_sentence(tab, tmp_path) -> None:
    explore, server = tab
    key, _ = analysed(server, CLIP_KEY, tmp_path)
    with pytest.raises(gr.Error, match="type at least two words"):
        h.compare_words(server, key, "a cat", *SHOWN)
    bundled, _ = analysed(server, BUNDLED, tmp_path)
    with pytest.raises(gr.Error, match="answers with its own classes, not with words: pick a CLIP model"):
        h.compare_words(server, bundled, DEFAULT_PROMPTS, *SHOWN)
    assert h.words_after(server, bundled, DEFAULT_PROMPTS, *SHOWN) == {}  # nothing changes


def test_one_word_after_a_new_example_is_a_sentence_in_the_note_not_an_error(tab, tmp_path) -> None:
    """Issue 61: with one word in the box, every new example ran the words again into an error, whose
    red "Error" badges covered the note, the maps and Top predictions ("Error (2)"). Now the note says
    what to type, the last maps go, and the button's first step refuses with a toast alone."""
    explore, server = tab
    key, _ = analysed(server, CLIP_KEY, tmp_path)
    after = h.words_after(server, key, "a cat", *SHOWN)
    note = after.pop("prompt_note")  # Markdown, its words escaped (a word a visitor typed may be quoted)
    assert after == {"prompt_maps": None, "words_result": None}
    assert note.startswith("**No words compared:** type at least two words") and note.endswith("CLIP compares them.")
    with pytest.raises(gr.Error, match="type at least two words"):
        h.check_words(server, key, "a cat")
    with pytest.raises(gr.Error, match="upload an image first"):
        h.check_words(server, None, "a cat, a dog")
    assert h.check_words(server, key, "a cat, a dog") is None


def test_words_over_the_request_budget_are_cut_or_refused_before_any_pass(tab, tmp_path, monkeypatch) -> None:
    """Issue 43: the words' backward passes are held to what one request may use (--request-mb):
    the first words that fit are explained and the note says so first; when two do not fit, one
    sentence says what to do, and no pass runs."""
    explore, server = tab
    key, _ = analysed(server, CLIP_KEY, tmp_path)
    ex, model = server.store.peek(key), server.catalog.get(CLIP_KEY).model
    size = ex.input.tensor.shape[-2:]
    monkeypatch.setattr(server.store, "max_request_bytes", words_bytes(model, size, 2))
    out = h.compare_words(server, key, "a cat, a teapot, a rainbow", *SHOWN)
    assert list(out["label"]) == ["a cat", "a teapot"] and len(out["prompt_maps"]) == 2
    assert out["prompt_note"].startswith("**The first 2 words are explained; the last one would take more memory")
    monkeypatch.setattr(server.store, "max_request_bytes", words_bytes(model, size, 2) - 1)
    monkeypatch.setattr(h.zerogpu, "PROMPTS", None)  # a pass would fail: none may run
    with pytest.raises(gr.Error, match="comparing words on this image would take about"):
        h.compare_words(server, key, "a cat, a teapot, a rainbow", *SHOWN)


def test_the_words_box_follows_the_model(tab, monkeypatch) -> None:
    explore, server = tab

    class Request:
        session_hash = "s"

    for key, visible in ((BUNDLED, False), (CLIP_KEY, True)):
        out = h.load_model(server, key, None, asked(ev.ModelAsked), Request(), progress=lambda *a, **k: None)
        assert out["words"].visible is visible


def test_zero_shot_through_the_api(tiny_checkpoint, tmp_path_factory, tmp_path) -> None:
    from app_helpers import analyze, save_rgb
    from gradio_client import Client

    photo = save_rgb(tmp_path / "photo.png", np.random.default_rng(1).integers(0, 256, (40, 40, 3), np.uint8))
    with clip_app(tiny_checkpoint, tmp_path_factory) as url:
        client = Client(url, verbose=False)
        assert "/zero_shot" in client.view_api(print_info=False, return_format="dict")["named_endpoints"]
        analyze(client, photo, model=CLIP_KEY, layer=2)
        label, maps, note = client.predict("a cat, a teapot, a rainbow", *STYLE, "weights", 60, api_name="/zero_shot")
    assert sorted(c["label"] for c in label["confidences"]) == ["a cat", "a rainbow", "a teapot"]
    assert [item["caption"] for item in maps][0].startswith("Relevance of each patch for the words 'a cat'")
    assert len(maps) == 3 and "a photo of {}." in note


def test_the_words_lesson_scores_the_lesson_image(tab, tmp_path) -> None:
    from ui import lessons_handlers as lh
    from ui.lessons import layout
    from ui.outputs import cache_path

    _, server = tab
    with gr.Blocks():
        lessons_view = layout(server.catalog, gr.Image())
    assert lessons_view.words_model.value == CLIP_KEY  # loaded already: the lesson opens on it
    path = cache_path("lesson.png")  # in Gradio's upload folder, as the browser's upload is
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8)).save(path)
    image = {"path": str(path), "orig_name": "lesson.png"}
    out = lh.compare_words(server, image, CLIP_KEY, "a cat, a dog, a teapot", lh.colour_map("inferno"), None)
    assert list(out["words_label"]) == ["a cat", "a dog", "a teapot"]
    assert len(out["words_maps"]) == 3 and "a photo of {}." in out["words_note"]
    with pytest.raises(gr.Error, match="is not a CLIP model: only a CLIP model understands words"):
        lh.compare_words(server, image, BUNDLED, "a cat, a dog", lh.colour_map("inferno"), None)


def test_the_words_lesson_without_a_clip_model_says_what_to_do() -> None:
    from explorer import lessons

    opening = lessons.opening_models(lambda key: False)
    assert opening.words is None and "vit_base_patch16_clip_224.openai" in lessons.lesson_weights()
    line = lessons.words_missing(opening)
    assert "No CLIP model is on this machine yet" in line
    assert "python -m vit.download vit_base_patch16_clip_224.openai" in line


def test_a_zerogpu_start_puts_both_towers_of_clip_on_the_gpu(tab, monkeypatch) -> None:
    from explorer import compute
    from ui import zerogpu

    catalog = tab[1].catalog
    placed = []
    monkeypatch.setattr(zerogpu, "ON_ZEROGPU", True)
    monkeypatch.setattr(compute, "place", lambda model, device: placed.append((model, device)))
    assert zerogpu.preload(catalog, [CLIP_KEY]) == [CLIP_KEY]
    loaded = catalog.get(CLIP_KEY)
    assert placed == [(loaded.model, "cuda"), (loaded.text.model, "cuda")]


def test_a_zerogpu_space_puts_every_model_a_lesson_opens_on_on_the_gpu_at_start(tab, monkeypatch) -> None:
    """Lesson 1's pair and lesson 4's CLIP were loaded at first use, so every worker copied them
    itself, which docs/space.md said they did not (issue 44, item 5)."""
    from explorer import compute, lessons
    from ui import zerogpu

    catalog = tab[1].catalog
    monkeypatch.setattr(zerogpu, "ON_ZEROGPU", True)
    monkeypatch.setattr(compute, "place", lambda model, device: None)
    opening = lessons.opening_models(catalog.available)
    assert opening.words == CLIP_KEY
    keys = zerogpu.start_models(catalog)
    assert set(lessons.opening_keys(opening)) | set(catalog.loaded_keys()) == set(keys) and CLIP_KEY in keys
    assert zerogpu.preload(catalog, [*keys, "pretrained:vit_huge_patch14_224.not_here"]) == keys  # the missing left out
    assert set(keys) <= catalog.pinned  # kept: one dropped would be loaded again by each worker
