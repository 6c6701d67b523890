"""The Lessons tab: three views a teacher can show and read aloud (docs/lessons.md), their
components (`LessonsView`), layout and wiring to ui/lessons_handlers.py under API names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from explorer import lessons
from explorer.catalog import BUNDLED, ModelCatalog
from explorer.render import COLORMAPS

from . import lessons_handlers as h
from . import pictures
from .binding import bound

# The models each lesson is about, when the catalogue offers them (downloaded on first use).
COMPARED = (
    "pretrained:deit_small_patch16_224.fb_in1k",  # supervised on ImageNet labels
    "pretrained:vit_small_patch16_224.dino",  # self-supervised, no labels
    "pretrained:vit_small_patch14_dinov2.lvd142m",
)
WITH_REGISTERS = "pretrained:vit_large_patch14_reg4_dinov2.lvd142m"  # artefacts show in large models
WITHOUT_REGISTERS = "pretrained:vit_large_patch14_dinov2.lvd142m"
RANKED = "pretrained:deit_small_patch16_224.fb_in1k"
MAX_LAYER = 32  # the deepest model of the zoo (ViT-H/14) has 32 layers
RAW = {"preprocess": False}  # inputs checked by the handlers (ui/checks.py), as in the Explore tab


@dataclass(frozen=True)
class LessonsView:
    """Every component of the Lessons tab, by name."""

    image: gr.Image
    cmap: gr.Dropdown
    # supervised vs self-supervised
    compare_models: gr.Dropdown
    compare_button: gr.Button
    compare_note: gr.Markdown
    compare_picture: gr.Image
    # artefacts and registers
    with_registers: gr.Dropdown
    without_registers: gr.Dropdown
    norms_layer: gr.Slider
    norms_button: gr.Button
    norms_picture: gr.Image
    norms_table: gr.Markdown
    # which heads matter
    heads_model: gr.Dropdown
    heads_off: gr.Textbox
    heads_button: gr.Button
    rank_button: gr.Button
    top5: gr.Label
    heads_note: gr.Markdown
    ranking: gr.Dataframe

    def update(self, **values: Any) -> dict[gr.components.Component, Any]:
        """A handler's result, {component: value}, from values given by component name."""
        return {getattr(self, name): value for name, value in values.items()}


def _offered(keys: tuple[str, ...], offered: set[str], fallback: str) -> list[str]:
    return [k for k in keys if k in offered] or [fallback]


def _common() -> dict[str, Any]:
    with gr.Row():
        image = gr.Image(
            type="filepath",
            label="Lesson image (upload, paste or webcam)",
            show_label=False,  # the badge covered the preview; the placeholder says what to drop here
            placeholder="**Lesson image**: drop, upload, paste or take one with the webcam",
            buttons=[],
            alt_text="The lesson image",
            height=200,
            scale=3,
            elem_id="lesson-image",
        )
        cmap = gr.Dropdown(list(COLORMAPS), value="inferno", label="Colour map", scale=1)
    return {"image": image, "cmap": cmap}


def _compare(choices: list[tuple[str, str]], offered: set[str]) -> dict[str, Any]:
    gr.Markdown(lessons.SUPERVISED_VS_SELF)
    with gr.Row():
        models = gr.Dropdown(
            choices,
            value=_offered(COMPARED, offered, BUNDLED),
            multiselect=True,
            max_choices=h.MAX_COMPARED,
            label="Models to compare (up to 3)",
            scale=4,
        )
        button = gr.Button("Compare", scale=1)
    note = gr.Markdown(label="Models not available here")
    picture = pictures.picture(
        "**Last-layer CLS heads**, one row per model, one colour scale",
        "Last-layer CLS attention of every head, one row per compared model",
        elem_id="lesson-compare",
    )
    return {"compare_models": models, "compare_button": button, "compare_note": note, "compare_picture": picture}


def _norms(choices: list[tuple[str, str]], offered: set[str]) -> dict[str, Any]:
    gr.Markdown(lessons.ARTEFACTS)
    with gr.Row():
        with_reg = gr.Dropdown(choices, value=_offered((WITH_REGISTERS,), offered, BUNDLED)[0], label="With registers")
        without = gr.Dropdown(choices, value=_offered((WITHOUT_REGISTERS,), offered, BUNDLED)[0], label="Without")
        layer = gr.Slider(1, MAX_LAYER, value=24, step=1, label="Layer (1 = first; up to the shallower model's depth)")
        button = gr.Button("Show token norms")
    picture = pictures.picture(
        "**Token norms** after the chosen layer, high-norm patches outlined",
        "Token norms of every patch after the chosen layer, with and without registers",
        elem_id="lesson-norms",
    )
    table = gr.Markdown(label="High-norm patches: norm and share of CLS attention")
    return {
        "with_registers": with_reg,
        "without_registers": without,
        "norms_layer": layer,
        "norms_button": button,
        "norms_picture": picture,
        "norms_table": table,
    }


def _heads(choices: list[tuple[str, str]], offered: set[str]) -> dict[str, Any]:
    gr.Markdown(lessons.WHICH_HEADS)
    with gr.Row():
        model = gr.Dropdown(choices, value=_offered((RANKED,), offered, BUNDLED)[0], label="Model (with classes)")
        off = gr.Textbox(label="Heads off (layer.head, from 1, e.g. 3.2, 11.7)", placeholder="3.2, 11.7")
        button = gr.Button("Switch these heads off")
        rank = gr.Button("Rank every head (one forward pass per head)")
    with gr.Row():
        top5 = gr.Label(num_top_classes=5, label="Top-5 with these heads off")
        with gr.Column():
            note = gr.Markdown(label="What changed")
            ranking = gr.Dataframe(
                headers=["rank", "layer.head", "drop in probability"], label="Most important heads", interactive=False
            )
    return {
        "heads_model": model,
        "heads_off": off,
        "heads_button": button,
        "rank_button": rank,
        "top5": top5,
        "heads_note": note,
        "ranking": ranking,
    }


def layout(catalog: ModelCatalog) -> LessonsView:
    """Place the tab's components inside the current Blocks, one sub-tab per lesson."""
    choices = catalog.choices()
    offered = {key for _, key in choices}
    parts = _common()
    with gr.Tab("Supervised vs self-supervised"):
        parts |= _compare(choices, offered)
    with gr.Tab("Artefacts and registers"):
        parts |= _norms(choices, offered)
    with gr.Tab("Which heads matter"):
        parts |= _heads(choices, offered)
    return LessonsView(**parts)


def build_lessons_tab(catalog: ModelCatalog) -> LessonsView:
    """The Lessons tab inside the current Blocks, wired to its API endpoints."""
    v = layout(catalog)
    v.compare_button.click(
        bound(h.compare_models, v, catalog),
        [v.image, v.compare_models, v.cmap],
        [v.compare_picture, v.compare_note],
        api_name="lesson_compare",
        **RAW,
    )
    v.norms_button.click(
        bound(h.token_norms, v, catalog),
        [v.image, v.with_registers, v.without_registers, v.norms_layer, v.cmap],
        [v.norms_picture, v.norms_table],
        api_name="lesson_token_norms",
        **RAW,
    )
    v.heads_button.click(
        bound(h.switch_heads_off, v, catalog),
        [v.image, v.heads_model, v.heads_off],
        [v.top5, v.heads_note],
        api_name="lesson_heads_off",
        **RAW,
    )
    v.rank_button.click(
        bound(h.rank_heads, v, catalog),
        [v.image, v.heads_model],
        [v.ranking, v.heads_note],
        api_name="lesson_head_ranking",
        **RAW,
    )
    return v
