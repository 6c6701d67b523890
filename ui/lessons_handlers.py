"""Handlers of the Lessons tab: named inputs in, `{component: value}` out (see ui/explore_handlers.py).

Each lesson runs its own small forward passes (explorer/lessons.py) on the lesson image: the
models differ, so nothing is shared with the Explore tab's cached explanation. People type
1-based layers and heads; explorer.lessons gets 0-based ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gradio as gr
from PIL import Image

from explorer import lessons
from explorer.catalog import LoadedModel, ModelCatalog, ModelUnavailable
from explorer.images import ImageError, load_image
from explorer.render import COLORMAPS, MapStyle

from .checks import one_of, whole_number
from .explore_handlers import uploaded_path
from .pictures import shown

if TYPE_CHECKING:
    from .lessons import LessonsView

MAX_COMPARED = 3


def lesson_image(image: dict | None) -> Image.Image:
    """The uploaded lesson image, decoded (gr.Error without one or for a bad file)."""
    if image is None:
        raise gr.Error("No lesson image yet: upload an image at the top of the Lessons tab first.")
    try:
        return load_image(uploaded_path(image))
    except ImageError as e:
        raise gr.Error(str(e)) from e


def lesson_style(cmap: str) -> MapStyle:
    return MapStyle(cmap=one_of("colour map", cmap, COLORMAPS), opacity=0.6)


def load(catalog: ModelCatalog, key: object) -> LoadedModel:
    """One model of the catalogue (gr.Error with the catalogue's message if it cannot load)."""
    try:
        return catalog.get(str(key))
    except ModelUnavailable as e:
        raise gr.Error(f"{key}: {e}") from e


def compare_models(
    view: LessonsView, catalog: ModelCatalog, image: dict | None, models: list[str] | None, cmap: str
) -> dict:
    """Supervised vs self-supervised: the last-layer CLS heads of up to three models (keys of the
    model picker, e.g. a supervised ViT, DINO and DINOv2) side by side on one colour scale.
    Models that cannot be loaded here (offline) are named; the others are still compared."""
    picture, style = lesson_image(image), lesson_style(cmap)
    if not isinstance(models, list) or not 1 <= len(models) <= MAX_COMPARED:
        raise gr.Error(f"models must be a list of 1 to {MAX_COMPARED} model keys, got {models!r}")
    loaded, missing = [], {}
    for key in models:
        try:
            loaded.append(catalog.get(str(key)))
        except ModelUnavailable as e:
            missing[str(key)] = str(e)
    if not loaded:
        first = next(iter(missing.values()))
        raise gr.Error(
            f"none of these models can be loaded here: {', '.join(missing)}. Pick models that are available, e.g. "
            f"the bundled one or a checkpoint. The first one's reason: {first}"
        )
    note = (
        "**Not available here** (weights cannot be downloaded): the comparison shows the other models; pick any "
        "model that loads instead.\n\n" + "\n".join(f"- `{key}`: {why}" for key, why in missing.items())
        if missing
        else ""
    )
    drawn = lessons.compare_cls_heads(loaded, picture, style)
    alt = "Last-layer CLS attention of every head, one row per model: " + ", ".join(m.label for m in loaded)
    return view.update(compare_picture=shown(drawn, alt, "lesson-supervised-vs-self-supervised.png"), compare_note=note)


def token_norms(
    view: LessonsView,
    catalog: ModelCatalog,
    image: dict | None,
    with_registers: str,
    without_registers: str,
    layer: float,
    cmap: str,
) -> dict:
    """Artefacts and registers: the L2 norm of every patch token after `layer` (1-based) for a
    model with registers and one without, on one colour scale; patches above 2 x the median
    norm outlined and listed with their norm and their share of the last layer's CLS attention."""
    picture, style = lesson_image(image), lesson_style(cmap)
    models = [load(catalog, with_registers), load(catalog, without_registers)]
    depth = min(m.model.config.depth for m in models)
    index = whole_number("layer", layer, 1, depth) - 1
    reports = [lessons.norm_report(m, picture, index) for m in models]
    drawn = lessons.token_norm_maps(reports, index, style)
    return view.update(
        norms_picture=shown(
            drawn,
            f"Token norms of every patch after layer {index + 1}: " + " and ".join(m.label for m in models),
            f"lesson-token-norms-layer{index + 1}.png",
        ),
        norms_table=lessons.describe_norms(reports),
    )


def switch_heads_off(
    view: LessonsView, catalog: ModelCatalog, image: dict | None, model_key: str, heads: str | None
) -> dict:
    """Which heads matter: the top-5 predictions with the heads in `heads` switched off, as
    1-based "layer.head" items separated by commas ("3.2, 11.7"); empty: every head on."""
    picture, loaded = lesson_image(image), load(catalog, model_key)
    c = loaded.model.config
    try:
        off = lessons.parse_heads(str(heads or ""), c.depth, c.heads)
        before, after = lessons.predictions_with_heads_off(loaded, picture, off)
    except lessons.LessonError as e:
        raise gr.Error(str(e)) from e
    top, p = next(iter(before.items()))
    now = after.get(top)
    change = f"{p:.3f} → {now:.3f}" if now is not None else f"{p:.3f} → below the top 5"
    which = ", ".join(f"{layer + 1}.{head + 1}" for layer, head in off) or "none"
    note = (
        f"Heads off: **{which}** (of {c.depth} layers × {c.heads} heads). With every head on the model "
        f"says **{top}**; its probability: {change}."
    )
    return view.update(top5=after, heads_note=note)


def rank_heads(view: LessonsView, catalog: ModelCatalog, image: dict | None, model_key: str) -> dict:
    """The heads whose removal lowers the predicted class's probability most, one head off at
    a time: layers x heads forward passes (refused past explorer.lessons.MAX_RANKING_PASSES)."""
    picture, loaded = lesson_image(image), load(catalog, model_key)
    try:
        predicted, rows = lessons.head_ranking(loaded, picture)
    except lessons.LessonError as e:
        raise gr.Error(str(e)) from e
    c = loaded.model.config
    note = (
        f"Predicted class **{predicted}**. Ranked by the drop of its probability when each head alone is "
        f"switched off ({c.depth} × {c.heads} = {c.depth * c.heads} forward passes)."
    )
    return view.update(ranking=rows, heads_note=note)
