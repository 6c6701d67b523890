"""explorer.prompts: the prompts a teacher types, the task that scores them and draws their
relevance (vit.relevance.similarity_relevance), its GPU estimate, and the views of explorer.views."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from clip_helpers import tiny_loaded
from PIL import Image

from explorer import controls, texts, views
from explorer.canvas import MapStyle
from explorer.explain import explain
from explorer.prompts import (
    DEFAULT_PROMPTS,
    MAX_PROMPTS,
    PromptError,
    ZeroShot,
    affordable_words,
    parse_prompts,
    prompt_cost,
    prompt_relevance,
    words_bytes,
    zero_shot,
)
from vit.clip import as_typed, sentence
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
    assert f"“{long}” is longer than CLIP reads (77 tokens" in texts.prompt_note(zs)
    assert "only its beginning was used" in texts.prompt_note(zs)
    whole = zero_shot(clip, ["a cat", "🦜" * 30], (np.zeros(2), np.zeros((2, 4, 4))))  # 66 tokens
    assert whole.cut == () and "longer than" not in texts.prompt_note(whole)


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


def test_a_prompt_that_already_reads_as_the_sentence_is_not_templated_again(clip) -> None:
    """ "a photo of a cat, dog" became "a photo of a photo of a cat." and the note printed that as
    its example: a word that begins with the template's own opening is read as typed."""
    template = "a photo of {}."
    assert sentence(template, "a photo of a cat") == "a photo of a cat."
    assert sentence(template, "A photo of my dog.") == "A photo of my dog."  # its own full stop, any case
    assert sentence(template, "dog") == "a photo of dog."
    assert sentence(template, "a photographer") == "a photo of a photographer."  # a word, not the opening
    assert as_typed(template, "a photo of a cat") and not as_typed(template, "a photon")
    assert clip.text.embed(["a photo of a cat"]).equal(clip.text.embed(["a photo of a cat."]))  # what the tower reads
    zs = ZeroShot(("a photo of a cat", "dog"), template, np.zeros(2), np.zeros((2, 4, 4)))
    note = texts.prompt_note(zs)
    assert "a photo of a photo" not in note
    assert "(e.g. “a photo of dog.”); words that already begin with “a photo of” were read as typed" in note
    whole = texts.prompt_note(
        ZeroShot(("a photo of a cat", "a photo of a dog"), template, np.zeros(2), np.zeros((2, 4, 4)))
    )
    assert "(e.g. “a photo of a cat.”)" in whole and "a photo of a photo" not in whole


def test_a_model_without_a_text_tower_is_refused(clip) -> None:
    with pytest.raises(ValueError, match="is not a CLIP model"):
        prompt_relevance(replace(clip, text=None), torch.randn(1, 3, 32, 32), ["a", "b"])


def test_each_prompt_map_names_its_words_probability_and_template(clip) -> None:
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), np.uint8))
    ex = explain(clip.model, [], clip.preprocessing, image)
    assert ex.probabilities == {}  # a CLIP image tower has no classes: the prompts answer instead
    zs = ZeroShot(("a cat", "a dog"), "a photo of {}.", np.array([2.0, 0.0]), np.random.rand(2, 4, 4))
    picture = views.prompt_relevance(ex.input.pixels, ex.grid, zs, 1, MapStyle(), controls.Showing("weights"))
    assert picture.width > 100
    alt = texts.prompt_alt(ex.grid, zs, 0, controls.Showing("weights", 0.6), "clip")
    assert "'a cat' (probability 88% among 2 prompts" in alt and "weights from 0" in alt
    assert "“a photo of {}.”" in texts.prompt_note(zs) and "“a photo of a cat.”" in texts.prompt_note(zs)


def test_words_are_cut_to_what_one_request_may_use_before_any_pass(clip) -> None:
    """Issue 43: 8 words of CLIP B/16 at 224 × 768 cost +1,272 MiB against a 1 GiB request budget.
    The words' passes are estimated from the model's shapes first: the first words that fit are
    explained, and the note says so; when not even two fit, one sentence says what to do."""
    size, typed = (32, 32), ["a cat", "a dog", "a teapot", "a rainbow", "a car"]
    assert affordable_words(clip, size, typed, None) == (typed, "")
    assert affordable_words(clip, size, typed, words_bytes(clip.model, size, 5)) == (typed, "")
    kept, said = affordable_words(clip, size, typed, words_bytes(clip.model, size, 3))
    assert kept == typed[:3]
    assert said.startswith("The first 3 words are explained; the other 2 would take more memory than the ")
    assert "one request may use on this server" in said and "a car" not in said
    _, said = affordable_words(clip, size, typed, words_bytes(clip.model, size, 4))
    assert "explained; the last one would take" in said
    with pytest.raises(PromptError, match=r"would take about \d+ MiB of memory with .*: use the centre-crop mode"):
        affordable_words(clip, size, typed, words_bytes(clip.model, size, 2) - 1)
    assert words_bytes(clip.model, (32, 64), 2) > words_bytes(clip.model, size, 2)  # more tokens, more memory


MEASURE = """
import resource, sys, torch
from ui.heap import bound_the_heap
bound_the_heap()
torch.set_num_threads(1)
import vit
from explorer.loaded import LoadedModel
from explorer.prompts import words_bytes
from vit.clip import as_typed, sentence
from vit.relevance import similarity_relevance
config = vit.ViTConfig(image_size=192, patch_size=8, num_classes=0, dim=128, depth=6, heads=16, mlp_dim=512,
                       pre_norm=True, act="quick_gelu", patch_bias=False, embed_dim=32)
torch.manual_seed(0)
loaded = LoadedModel("clip", "clip", vit.VisionTransformer(config).eval(), vit.ModelMeta([], None, {}))
texts = torch.nn.functional.normalize(torch.randn(3, 32), dim=-1)
similarity_relevance(loaded.model, torch.randn(1, 3, 32, 32), texts, 100.0)  # autograd's first pass
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
similarity_relevance(loaded.model, torch.randn(1, 3, 192, 192), texts, 100.0)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024, words_bytes(loaded.model, (192, 192), 3))
"""


def test_the_words_passes_stay_within_their_estimate() -> None:
    """A CLIP-shaped tower of 6 layers × 16 heads at 577 tokens, 3 words, in a fresh process with the
    app's heap: every layer's gradients returned at once, the previous word's kept through the next
    pass, and the weights' own graph took 434 MB against an estimate of 307 MB; now 240 MB."""
    repo = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-c", MEASURE], cwd=repo, capture_output=True, text=True, check=True)
    peak, estimate = map(int, run.stdout.split())
    assert peak <= estimate, f"the words' passes took {peak / 2**20:.0f} MiB, estimated {estimate / 2**20:.0f}"
