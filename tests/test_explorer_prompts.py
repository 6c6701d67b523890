"""explorer.prompts: the prompts a teacher types, the task that scores them and draws their
relevance (vit.relevance.similarity_relevance), its GPU estimate, and the views of explorer.views."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from clip_helpers import tiny_loaded
from PIL import Image

from explorer import views
from explorer.canvas import MapStyle
from explorer.explain import explain
from explorer.prompts import (
    DEFAULT_PROMPTS,
    MAX_PROMPTS,
    PromptError,
    ZeroShot,
    parse_prompts,
    prompt_cost,
    prompt_relevance,
    zero_shot,
)
from vit.relevance import similarity_relevance


@pytest.fixture(scope="module")
def clip():
    return tiny_loaded()


def test_prompts_are_split_on_commas_stripped_and_deduplicated() -> None:
    assert parse_prompts(" a cat,a dog ,, a cat, a teapot ") == ["a cat", "a dog", "a teapot"]
    assert len(parse_prompts(DEFAULT_PROMPTS)) == 5


def test_look_alike_prompts_are_one_prompt() -> None:
    """Zero-width characters, a right-to-left override, full-width letters, a no-break space or a
    joiner inside a word look like "a cat" and are it (NFKC, invisible controls removed)."""
    look_alikes = ["a c\u200bat", "\u202ea cat", "ａ ｃａｔ", "a\u00a0cat", "a  cat", "a c\u200dat", "\ufeffa cat\x00"]
    assert parse_prompts(", ".join(["a cat", *look_alikes, "a dog"])) == ["a cat", "a dog"]
    assert parse_prompts("a cat， a dog") == ["a cat", "a dog"]  # a full-width comma separates too
    assert parse_prompts("a\u2066 cat\u2069, a\tdog") == ["a cat", "a dog"]


def test_emoji_and_words_keep_their_joiners_and_read_as_typed() -> None:
    scientist, persian = "👩\u200d🔬", "می\u200cخواهم"  # a ZWJ emoji; a Persian word with its ZWNJ
    typed = f"{scientist}, {persian}, <b>, ![x](y), 🏳️\u200d🌈"
    assert parse_prompts(typed) == [scientist, persian, "<b>", "![x](y)", "🏳️\u200d🌈"]


def test_a_prompt_longer_than_clip_reads_is_said_to_be_cut(clip) -> None:
    long = "🦜" * 40  # 40 characters, 86 tokens once in the template: open_clip keeps the first 77
    prompts = parse_prompts(f"a cat, {long}")
    zs = zero_shot(clip, prompts, (np.zeros(2), np.zeros((2, 4, 4))))
    assert zs.cut == (long,) and zs.context == 77
    assert f"“{long}” is longer than CLIP reads (77 tokens" in views.prompt_note(zs)
    assert "only its beginning was used" in views.prompt_note(zs)
    whole = zero_shot(clip, ["a cat", "🦜" * 30], (np.zeros(2), np.zeros((2, 4, 4))))  # 66 tokens
    assert whole.cut == () and "longer than" not in views.prompt_note(whole)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("a cat", "at least two words"),
        (", ,", "at least two words"),
        (",".join(f"w{i}" for i in range(MAX_PROMPTS + 1)), f"at most {MAX_PROMPTS} words"),
        ("a cat, " + "x" * 61, "up to 60 characters"),
        (None, "type some words"),
    ],
)
def test_unusable_prompts_are_one_sentence(text, said) -> None:
    with pytest.raises(PromptError, match=said) as caught:
        parse_prompts(text)
    assert "\n" not in str(caught.value)


def test_the_task_is_similarity_relevance_with_the_text_towers_embeddings(clip) -> None:
    image = torch.randn(1, 3, 32, 32)
    prompts = ["a cat", "a teapot", "a rainbow"]
    logits, relevance = prompt_relevance(clip, image, prompts)
    assert logits.shape == (3,) and relevance.shape == (3, 4, 4) and (relevance >= 0).all()
    expected_logits, expected = similarity_relevance(clip.model, image, clip.text.embed(prompts), clip.text.logit_scale)
    # the same function on the same inputs in the same process: the same numbers
    np.testing.assert_array_equal(logits, expected_logits[0].numpy())
    np.testing.assert_array_equal(relevance, expected[0].numpy())
    zs = zero_shot(clip, prompts, (logits, relevance))
    assert list(zs.probabilities) == prompts and sum(zs.probabilities.values()) == pytest.approx(1.0)
    assert zs.template == "a photo of {}."


def test_the_gpu_estimate_grows_with_each_prompts_backward_pass(clip) -> None:
    image = torch.randn(1, 3, 32, 32)
    two, three = prompt_cost(clip, image, ["a", "b"]), prompt_cost(clip, image, ["a", "b", "c"])
    assert 0 < two < three


def test_a_model_without_a_text_tower_is_refused(clip) -> None:
    with pytest.raises(ValueError, match="is not a CLIP model"):
        prompt_relevance(replace(clip, text=None), torch.randn(1, 3, 32, 32), ["a", "b"])


def test_each_prompt_map_names_its_words_probability_and_template(clip) -> None:
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8))
    ex = explain(clip.model, [], clip.preprocessing, image)
    assert ex.probabilities == {}  # a CLIP image tower has no classes: the prompts answer instead
    zs = ZeroShot(("a cat", "a dog"), "a photo of {}.", np.array([2.0, 0.0]), np.random.rand(2, 4, 4))
    picture = views.prompt_relevance(ex.input.pixels, ex.grid, zs, 1, MapStyle(), views.Showing("weights"))
    assert picture.width > 100
    alt = views.prompt_alt(ex.grid, zs, 0, views.Showing("weights", 0.6), "clip")
    assert "'a cat' (probability 88% among 2 prompts" in alt and "weights from 0" in alt
    assert "“a photo of {}.”" in views.prompt_note(zs) and "“a photo of a cat.”" in views.prompt_note(zs)
