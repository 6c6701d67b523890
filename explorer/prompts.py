"""One picture, many words: a CLIP model's zero-shot probabilities over a teacher's prompts and,
for each prompt, the relevance map of its image-text similarity (Chefer et al. 2021).

The arithmetic is one task (explorer/compute.py), `prompt_relevance`: the prompts through
open_clip's text tower, one forward pass of our image tower with its attention, and one backward
pass per prompt (vit.relevance.similarity_relevance). Its memory is estimated from the model's
shapes before it runs (`words_bytes`) and held to what one request may use (`affordable_words`).
The pictures are drawn by explorer.views.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from vit.relevance import similarity_relevance

from .compute import model_device, pass_seconds, place, to_model, work_seconds

if TYPE_CHECKING:
    from vit import VisionTransformer

    from .loaded import LoadedModel

# Five things a class can point at in almost any photo, or see missing: ready to press at once.
DEFAULT_PROMPTS = "a cat, a dog, a teapot, a rainbow, a car"
MIN_PROMPTS = 2  # CLIP's probabilities compare the words: one word is always 100 %
MAX_PROMPTS = 8  # each prompt is one backward pass, and one picture on the screen
MAX_PROMPT_CHARS = 60  # a phrase: words fit CLIP's 77 tokens in the template; emoji may not (the note says so)
# Invisible characters (Unicode categories): controls (Cc: NUL, ESC), formats (Cf: zero-width space,
# right-to-left override, BOM), and surrogates (Cs), which no browser sends and no UTF-8 reply holds.
_INVISIBLE = {"Cc", "Cf", "Cs"}
_JOINERS = "\u200c\u200d"  # ZWNJ, ZWJ: formats that join an emoji (👩‍🔬) or shape a Persian word, kept


class PromptError(ValueError):
    """The prompts typed cannot be used; the message is one sentence for the teacher."""


def normal_text(text: str) -> str:
    """`text` as it reads: NFKC (full-width "ａ" is "a", "，" a comma), invisible characters
    removed but the joiners, each run of whitespace one space. Look-alikes become equal."""
    text = unicodedata.normalize("NFKC", text)
    seen = (c for c in text if c.isspace() or c in _JOINERS or unicodedata.category(c) not in _INVISIBLE)
    return " ".join("".join(seen).split())


def parse_prompts(text: str) -> list[str]:
    """The comma-separated prompts of `text`, each as it reads (`normal_text`), empty ones and
    repeats dropped: one that differs only by a joiner (a ZWJ inside "a cat") repeats "a cat"."""
    if not isinstance(text, str):
        raise PromptError("type some words, separated by commas (e.g. a cat, a dog, a teapot)")
    kept: dict[str, str] = {}
    for prompt in (p.strip() for p in normal_text(text).split(",")):
        if prompt:
            kept.setdefault(prompt.translate(dict.fromkeys(map(ord, _JOINERS))), prompt)
    prompts = list(kept.values())
    if len(prompts) < MIN_PROMPTS:
        raise PromptError("type at least two words, separated by commas (e.g. a cat, a teapot): CLIP compares them")
    if len(prompts) > MAX_PROMPTS:
        raise PromptError(f"type at most {MAX_PROMPTS} words, separated by commas ({len(prompts)} were typed)")
    long = next((p for p in prompts if len(p) > MAX_PROMPT_CHARS), None)
    if long is not None:
        raise PromptError(f"each word or phrase may have up to {MAX_PROMPT_CHARS} characters: '{long[:20]}…' has more")
    return prompts


@dataclass(frozen=True)
class ZeroShot:
    """What a CLIP model says about one image and the prompts: each prompt's logit
    exp(t)·cos(image, text), and its relevance map (gh, gw) for the query CLS."""

    prompts: tuple[str, ...]
    template: str  # each prompt was put into it ("a photo of {}.") before the text tower
    logits: np.ndarray  # (P,)
    relevance: np.ndarray  # (P, gh, gw)
    cut: tuple[str, ...] = ()  # the prompts longer than the text tower reads: only their beginning was used
    context: int = 77  # tokens the text tower reads, the template's and [start], [end] included

    @property
    def probabilities(self) -> dict[str, float]:
        """prompt -> softmax probability over the prompts (CLIP's zero-shot classifier), in the
        order typed (gr.Label sorts them itself)."""
        probs = torch.from_numpy(self.logits).double().softmax(-1)
        return {p: float(q) for p, q in zip(self.prompts, probs, strict=True)}


def prompt_relevance(loaded: LoadedModel, tensor: Tensor, prompts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Task (explorer/compute.py): for `tensor` (1, 3, H, W) and the prompts, the logits (P,) and
    the relevance maps (P, gh, gw), from the text tower and image tower on the model's device."""
    text = loaded.text
    if text is None:
        raise ValueError(f"{loaded.label} is not a CLIP model: it has no text tower to compare prompts with")
    text = replace(text, model=place(text.model, model_device(loaded.model)))
    logits, relevance = similarity_relevance(
        loaded.model, to_model(loaded.model, tensor), text.embed(prompts), text.logit_scale
    )
    return logits[0].float().cpu().numpy(), relevance[0].float().cpu().numpy()


def prompt_cost(loaded: LoadedModel, tensor: Tensor, prompts: list[str]) -> float:
    """GPU seconds of `prompt_relevance`: one forward pass of the image tower and a backward pass
    (about twice a forward's work) per prompt, plus the text tower, 2 · parameters · tokens
    FLOPs per prompt (Kaplan et al. 2020, Sec. 2.1)."""
    image = (1 + 2 * len(prompts)) * pass_seconds(loaded.model, tensor.shape[-2:])
    if loaded.text is None:
        return image
    text_params = sum(p.numel() for p in loaded.text.model.parameters())
    context = loaded.text.model.positional_embedding.shape[0]  # 77 tokens, padded
    return image + work_seconds(2 * text_params * context * len(prompts))


# Floats the relevance pass keeps, in units of T tokens, width D, MLP width M and H heads (measured
# with bench.request_memory: CLIP B/16 at 224 × 768, 673 tokens, 8 words: +679 MiB of an estimated
# 856; at 224 × 224, 197 tokens: +177 MiB of 220). Per block, what the backward pass to the maps
# needs (the weights need no gradient, explorer/loaded.py): the maps (H·T², for the softmax's and
# the values' gradients), LayerNorms' inputs, q, k, v and the packed qkv they view (6·T·D), and
# QuickGELU's input, sigmoid and product (3·T·M).
GRAPH_TOKEN_SQUARES, GRAPH_TOKEN_WIDTHS, GRAPH_MLP_WIDTHS = 1, 6, 3
# One backward pass at a time, one layer at a time (vit.relevance takes each layer's term as its
# gradient arrives): the maps' gradient, the softmax's and their product, H·T² each.
PASS_TOKEN_SQUARES = 3
# Each word: Eq. (6)'s T × T matrices (Ā, Ā·R and R), with room for what a word's pass leaves in
# the heap (measured 3 MiB a word at 673 tokens).
WORD_TOKEN_SQUARES = 4
# The text tower's pass over the words and autograd's first pass in a process (measured +53 MiB
# on a process's first words at 197 tokens, against its second).
WORDS_FIXED_BYTES = 64 * 2**20


def words_bytes(model: VisionTransformer, size: tuple[int, int], words: int) -> int:
    """Peak bytes of `prompt_relevance` of `words` words on an (H, W) input (see the constants)."""
    c = model.config
    gh, gw = model.patch_grid(*size)
    t = model.prefix_tokens + gh * gw
    block = GRAPH_TOKEN_SQUARES * c.heads * t * t + GRAPH_TOKEN_WIDTHS * t * c.dim + GRAPH_MLP_WIDTHS * t * c.mlp_dim
    floats = c.depth * block + PASS_TOKEN_SQUARES * c.heads * t * t + words * WORD_TOKEN_SQUARES * t * t
    return 4 * floats + WORDS_FIXED_BYTES


def affordable_words(
    loaded: LoadedModel, size: tuple[int, int], prompts: list[str], max_bytes: int | None
) -> tuple[list[str], str]:
    """The first of `prompts` whose relevance passes on an (H, W) input fit `max_bytes` (all with
    None), and a sentence saying so when some are left out; PromptError, one sentence, when not
    even MIN_PROMPTS fit. Checked before any pass runs."""
    if max_bytes is None or words_bytes(loaded.model, size, len(prompts)) <= max_bytes:
        return prompts, ""
    kept = max(
        (n for n in range(MIN_PROMPTS, len(prompts)) if words_bytes(loaded.model, size, n) <= max_bytes), default=0
    )
    budget = f"{max_bytes / 2**20:,.0f} MiB"
    if not kept:
        least = words_bytes(loaded.model, size, MIN_PROMPTS) / 2**20
        raise PromptError(
            f"comparing words on this image would take about {least:,.0f} MiB of memory with {loaded.label}, "
            f"more than the {budget} one request may use on this server: use the centre-crop mode or a smaller model"
        )
    rest = "the last one" if len(prompts) - kept == 1 else f"the other {len(prompts) - kept}"
    return prompts[:kept], (
        f"The first {kept} words are explained; {rest} would take more memory than the {budget} one request may "
        "use on this server (the centre-crop mode takes less)."
    )


def zero_shot(loaded: LoadedModel, prompts: list[str], computed: tuple[np.ndarray, np.ndarray]) -> ZeroShot:
    """The task's result `computed` for `prompts` as a ZeroShot, with the prompts the text
    tower read only the beginning of."""
    (logits, relevance), text = computed, loaded.text
    cut = tuple(p for p in prompts if not text.reads_whole(p))
    return ZeroShot(tuple(prompts), text.template, logits, relevance, cut, text.context_length)
