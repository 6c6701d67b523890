"""Handlers of the Lessons tab: named inputs in, `{field: value}` out (see ui/binding.py).

Each lesson runs its own small forward passes (explorer/lessons.py) on the lesson image: the
models differ, so nothing is shared with the Explore tab's cached explanation. People type
1-based layers and heads; explorer.lessons gets 0-based ones. Every control follows the chosen
model (the layer slider's range, the heads' range); a model that downloads shows its progress.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import gradio as gr
from PIL import Image

from explorer import lessons
from explorer.canvas import MapStyle
from explorer.catalog import ModelCatalog, ModelUnavailable, no_internet
from explorer.controls import Showing
from explorer.explain import model_input
from explorer.images import ImageError, load_image
from explorer.loaded import LoadedModel
from explorer.prompts import PromptError, affordable_words, parse_prompts, zero_shot
from explorer.texts import prompt_note
from vit.messages import markdown_text, quoted
from vit.pretrained import is_clip

from . import downloads, pictures, zerogpu
from .checks import visitor_error, whole_number
from .common import (
    Server,
    check_upload_header,
    colour_map_style,
    layer_slider,
    model_name,
    uploaded_path,
    visitor_of,
    word_maps,
)
from .settings import in_markdown

MAX_COMPARED = 3
NORMS_LAYER_LABEL = "Layer (1 = first; up to the shallower model's depth)"
NO_IMAGE = "No lesson image yet: upload an image at the top of the Lessons tab first."
PROGRESS = gr.Progress()  # the handlers' default: Gradio gives each call its own, drawn on its outputs


def lesson_image(image: dict | None) -> Image.Image:
    """The uploaded lesson image, decoded (gr.Error without one or for a bad file)."""
    if image is None:
        raise visitor_error(NO_IMAGE)
    try:
        return load_image(uploaded_path(image))
    except ImageError as e:
        raise visitor_error(str(e)) from e


def check_lesson_image(image: dict | None) -> None:
    """A lesson's first step (ui.binding.checked_first): no image, or a file that is no image
    this app reads, refused from its header (nothing decoded) before the lesson runs, so the
    lesson's pictures and tables stay as they were."""
    if image is None:
        raise visitor_error(NO_IMAGE)
    check_upload_header(image)


def check_compared(image: dict | None, models: list[str] | None) -> None:
    """Lesson 1's first step: the image, and one to MAX_COMPARED models picked."""
    check_lesson_image(image)
    compared(models)


def compared(models: object) -> list[str]:
    """The models lesson 1 compares, if one to MAX_COMPARED are picked."""
    if not isinstance(models, list) or not 1 <= len(models) <= MAX_COMPARED:
        raise visitor_error(f"pick 1 to {MAX_COMPARED} models to compare (got {quoted(models)})")
    return models


def check_heads_off(
    server: Server, image: dict | None, model_key: str, heads: str | None, request: gr.Request | None = None
) -> None:
    """Lesson 3's first step: the image, and the heads typed against the model's layers and
    heads when the model is held already (picking it loaded it); one still to load is checked
    by `switch_heads_off`, after its download."""
    check_lesson_image(image)
    if model_key not in server.catalog.loaded_keys():
        return
    try:
        c = server.catalog.get(model_key, visitor=visitor_of(request)).model.config
    except ModelUnavailable:
        return  # `switch_heads_off` says why, as it does for an API client
    try:
        lessons.parse_heads(str(heads or ""), c.depth, c.heads)
    except lessons.LessonError as e:
        raise visitor_error(str(e)) from e


def colour_map(cmap: str) -> MapStyle:
    """The lessons' one style control, their colour map, as a MapStyle (for the binding:
    ui.binding.Controls); the rest is Explore's defaults (`ui.common.colour_map_style`)."""
    return colour_map_style(cmap)


def check_words(server: Server, image: dict | None, model_key: str, prompts: str) -> None:
    """Lesson 4's first step: the image, the words (two to MAX_PROMPTS, none repeated) and, on a
    machine known to be offline, a CLIP model already here: refused in the second step, that
    sentence faded and left both results marked "Error" with no words (a teacher's walk)."""
    check_lesson_image(image)
    try:
        parse_prompts(prompts)
    except PromptError as e:
        raise visitor_error(str(e)) from e
    catalog = server.catalog
    if catalog.online is False and not catalog.available(str(model_key)):
        raise _no_clip(catalog, str(model_key))


def _no_clip(catalog: ModelCatalog, key: str) -> gr.Error:
    """Lesson 4's refusal of a CLIP model this offline machine does not have, in plain words (a
    toast shows no Markdown): that none is here and what the operator does, or which one is."""
    if lessons.opening_models(catalog.available).words is None:
        return visitor_error(lessons.no_clip_offline())
    return visitor_error(no_internet(key.partition(":")[2]))


def open_lessons(
    server: Server, explore_image: str | None, followed: str | None, opening: str | None, request: gr.Request
) -> dict:
    """Opening the tab: the pickers and the lines about models as the catalogue is now
    (`lesson_models`), and the lessons take the Explore tab's image when it changed since they
    last took it (the teacher's photo, not the lessons' own 32 px example); an image uploaded
    here stays until Explore shows another. Opened first with no image on Explore, they show
    their own example, `opening` (the page starts without it: ui/lessons.py), once: `followed`
    is then "", which no Explore image is."""
    if bool(explore_image) and explore_image != followed:
        shown = took = explore_image
    elif followed is None and opening:
        shown, took = opening, ""
    else:
        shown = took = gr.skip()
    return {"image": shown, "followed": took} | lesson_models(server, request)


def clip_choices(catalog: ModelCatalog) -> list[tuple[str, str]]:
    """Lesson 4's picker: the CLIP models of the catalogue's list, labelled as the list labels them."""
    return [(label, key) for label, key in catalog.choices() if is_clip(key.partition(":")[2])]


def lesson_models(server: Server, request: gr.Request | None = None) -> dict:
    """What the lessons say about models, as the catalogue is now (the list Explore's picker shows,
    `ModelCatalog.here`): the pickers list this visitor's models (a checkpoint trained since the
    page opened; weights downloaded since, no longer "downloads once"), and each lesson's line
    names only the weights still missing. On opening the tab and after each lesson (which may
    have downloaded a model); `follow_lessons` comes next."""
    catalog, visitor = server.catalog, visitor_of(request)
    choices = catalog.choices(visitor)
    names = ("models", "with_registers", "without_registers", "heads_model")
    pickers = {name: gr.Dropdown(choices=choices) for name in names}
    notes = lessons.model_notes(lessons.opening_models(catalog.available, catalog.here(visitor)))
    better = {f"{lesson}_better": note for lesson, note in notes.items()}
    return pickers | better | {"words_model": gr.Dropdown(choices=clip_choices(catalog))}


def follow_lessons(
    server: Server,
    opened: dict | None,
    models: object,
    norms_current: list[str] | None,
    heads_current: str | None,
    request: gr.Request | None = None,
) -> dict:
    """After `lesson_models`: lessons 1 to 3's pickers that the visitor left on what the lesson
    opened on move to the models it opens on now (`follow`). `models` is lesson 1's picker as the
    page sent it (unchecked: it is only compared with what the lesson opened on)."""
    visitor = visitor_of(request)
    opening = lessons.opening_models(server.catalog.available, server.catalog.here(visitor))
    return follow(server, opening, opened, models, norms_current, heads_current, request)


def opened_models(compare: list[str], pair: list[str], heads: str) -> dict:
    """What lessons 1 to 3 opened on (or last followed the catalogue to): the `opened` state."""
    return {"compare": list(compare), "norms": list(pair), "heads": heads}


def follow(
    server: Server,
    opening: lessons.OpeningModels,
    opened: dict | None,
    models: object,
    norms_current: list[str] | None,
    heads_current: str | None,
    request: gr.Request | None,
) -> dict:
    """Lessons 1 to 3's pickers moved to `opening` where the visitor left them on what the lesson
    opened on (a choice of theirs stays), with the controls that follow them: lesson 2 opened on the
    bundled model twice and said "No model with registers is on this machine yet" after one had
    been downloaded on the Explore tab. `{}` without `opened` (an API client's call)."""
    if not opened:
        return {}
    out: dict = {}
    choices = server.catalog.choices(visitor_of(request))
    now = opened_models(opening.compare, [opening.with_registers, opening.without_registers], opening.heads)
    if models == opened["compare"] != now["compare"]:
        out["models"] = gr.Dropdown(choices=choices, value=now["compare"], multiselect=True)
    if norms_current == opened["norms"] != now["norms"]:
        pair = RegisterPair(*now["norms"])
        out |= norms_models(server, pair, norms_current, progress=None, request=request)
    if heads_current == opened["heads"] != now["heads"]:
        out |= heads_model(server, HeadsPick(now["heads"], heads_current), progress=None, request=request)
    for name in ("with_registers", "without_registers", "heads_model"):  # the choices, with the value
        if name in out and not isinstance(out[name], gr.Dropdown):
            out[name] = gr.Dropdown(choices=choices, value=out[name])
    return out | {"opened": now} if out else out


def new_image() -> dict:
    """A new lesson image: the lessons' pictures and tables of the old one (or their errors) go."""
    return {
        "compare_picture": None,
        "compare_note": "",
        "norms_picture": None,
        "norms_table": "",
        "top5": None,
        "ranking": None,
        "words_label": None,
        "words_note": "",
        "words_maps": None,
        "heads_note": gr.skip(),  # keeps "this model has no classifier"; its old error badge still goes
    }


def heads_box(loaded: LoadedModel) -> dict[str, str]:
    """The heads-off box's label and example, with the chosen model's own ranges."""
    c = loaded.model.config
    return {
        "label": f"Heads off (layer.head, from 1: layers 1 to {c.depth}, heads 1 to {c.heads})",
        "placeholder": f"1.1, {c.depth}.{c.heads}",
    }


def fetched(catalog: ModelCatalog, key: object, progress: gr.Progress | None, visitor: str) -> LoadedModel:
    """The model behind a lesson picker's `key` for `visitor` (ModelCatalog.check_use), its
    download drawn on `progress`; raises ModelUnavailable (one line, for the note beside the
    picker) if it cannot be had here."""
    on_bytes = downloads.download_progress(progress, str(key)) if progress is not None else None
    return catalog.get(str(key), progress=on_bytes, visitor=visitor)


class RegisterPair(NamedTuple):
    """Lesson 2's two models, as their pickers send them: one with registers, one without."""

    with_registers: str
    without_registers: str


def register_pair(with_registers: str, without_registers: str) -> RegisterPair:
    """The two pickers of lesson 2 as one value (for the binding: ui.binding.Controls)."""
    return RegisterPair(with_registers, without_registers)


def norms_models(
    server: Server,
    pair: RegisterPair,
    norms_current: list[str],
    progress: gr.Progress = PROGRESS,
    request: gr.Request | None = None,
) -> dict:
    """The layer slider for a newly chosen pair: layers 1 to the shallower model's depth,
    set to its last layer (the pair is loaded, downloading if needed, progress shown), and the
    note saying when the pair cannot differ. A model that cannot be had here is said in the
    note and both pickers return to `norms_current`, the pair the slider still describes."""
    try:
        models = [fetched(server.catalog, key, progress, visitor_of(request)) for key in pair]
    except ModelUnavailable as e:
        first, second = norms_current
        return {
            "with_registers": first,
            "without_registers": second,
            "layer": gr.skip(),
            "norms_note": f"⚠️ {in_markdown(str(e))}",
        }
    depth = min(m.model.config.depth for m in models)
    return {
        "with_registers": models[0].key,
        "without_registers": models[1].key,
        "norms_current": [m.key for m in models],
        "layer": layer_slider(depth, depth),
        "norms_note": norms_note(server.catalog, *models),
    }


def norms_note(catalog: ModelCatalog, with_registers: LoadedModel, without: LoadedModel) -> str:
    """Said above lesson 2's picture when its two rows cannot differ (explorer.lessons.registers_note)."""
    missing = lessons.registers_missing(lessons.opening_models(catalog.available, catalog.here()))
    return lessons.registers_note(with_registers, without, missing)


class HeadsPick(NamedTuple):
    """Lesson 3's picker as it sends a pick: the model chosen, and the one the heads box still
    describes (where the picker returns if the chosen one cannot be had)."""

    model_key: str
    current: str


def heads_pick(model_key: str, heads_current: str) -> HeadsPick:
    """Lesson 3's picker and the model its box describes as one value (ui.binding.Controls)."""
    return HeadsPick(model_key, heads_current)


def heads_model(
    server: Server, pick: HeadsPick, progress: gr.Progress = PROGRESS, request: gr.Request | None = None
) -> dict:
    """The heads-off box for a newly chosen model: its label gives that model's layers and
    heads; a model without classes is named at once (it makes no predictions to change). A
    model that cannot be had here is said in the note, and the picker returns to the model
    the box still describes (no Error badge hides the box or the top-5)."""
    try:
        loaded = fetched(server.catalog, pick.model_key, progress, visitor_of(request))
    except ModelUnavailable as e:
        back = pick.current
        return {
            "heads_model": back,
            "heads_current": back,
            "heads": gr.skip(),
            "heads_note": f"⚠️ {in_markdown(str(e))}",
        }
    try:
        lessons.require_head(loaded)
        note = ""
    except lessons.LessonError as e:
        note = f"⚠️ {in_markdown(str(e))}"  # it names the model: an uploaded checkpoint's file name
    return {
        "heads_model": loaded.key,
        "heads_current": loaded.key,
        "heads": gr.Textbox(**heads_box(loaded)),
        "heads_note": note,
    }


def compare_models(
    server: Server,
    image: dict | None,
    models: list[str] | None,
    style: MapStyle,
    progress: gr.Progress = PROGRESS,
    request: gr.Request | None = None,
) -> dict:
    """Supervised vs self-supervised: the last-layer CLS heads of up to three models (keys of the
    model picker, e.g. a supervised ViT, DINO and DINOv2) side by side on one colour scale.
    Models that cannot be loaded here (offline) are named; the others are still compared."""
    picture = lesson_image(image)
    loaded, missing = [], []  # each model that cannot be had here, as the catalogue says why (it names the model)
    for key in compared(models):
        try:
            loaded.append(fetched(server.catalog, key, progress, visitor_of(request)))
        except ModelUnavailable as e:
            missing.append(str(e))
    if not loaded:
        raise visitor_error(f"none of these models can be loaded here: {missing[0]}")
    note = (
        "**Not available here**: the comparison shows the other models.\n\n"
        + "\n".join(f"- {in_markdown(why)}" for why in missing)
        if missing
        else ""
    )
    try:
        heads = [zerogpu.CLS_HEADS(m, picture) for m in loaded]
        drawn = lessons.compare_cls_heads(loaded, heads, style, server.text_px)
    except lessons.LessonError as e:
        raise visitor_error(str(e)) from e
    alt = lessons.compare_alt(loaded)
    return {
        "compare_picture": pictures.with_alt(drawn, alt, "lesson-supervised-vs-self-supervised.png"),
        "compare_note": note,
    }


def compare_token_norms(
    server: Server,
    image: dict | None,
    pair: RegisterPair,
    layer: float,
    style: MapStyle,
    progress: gr.Progress = PROGRESS,
    request: gr.Request | None = None,
) -> dict:
    """Artefacts and registers: the L2 norm of every patch token after `layer` (1-based) for a
    model with registers and one without, on one colour scale; patches above 2 x the median
    norm outlined and listed with their norm and their share of the last layer's CLS attention."""
    picture = lesson_image(image)
    models = [downloads.load(server.catalog, key, progress, visitor_of(request)) for key in pair]
    depth = min(m.model.config.depth for m in models)
    index = whole_number("layer", layer, 1, depth) - 1
    try:
        reports = [zerogpu.NORMS(m, picture, index, lessons.register_role(m)) for m in models]
    except lessons.LessonError as e:
        raise visitor_error(str(e)) from e
    drawn = lessons.token_norm_maps(reports, index, style, server.text_px)
    alt = lessons.norms_alt(reports, index)
    return {
        "norms_picture": pictures.with_alt(drawn, alt, f"lesson-token-norms-layer{index + 1}.png"),
        "norms_table": lessons.describe_norms(reports),
    }


def switch_heads_off(
    server: Server,
    image: dict | None,
    model_key: str,
    heads: str | None,
    progress: gr.Progress = PROGRESS,
    request: gr.Request | None = None,
) -> dict:
    """Which heads matter: the top-5 predictions with the heads in `heads` switched off, as
    1-based "layer.head" items separated by commas ("3.2, 11.7"); empty: every head on."""
    picture, loaded = lesson_image(image), downloads.load(server.catalog, model_key, progress, visitor_of(request))
    c = loaded.model.config
    try:
        off = lessons.parse_heads(str(heads or ""), c.depth, c.heads)
        before, after = zerogpu.HEADS_OFF(loaded, picture, off)
    except lessons.LessonError as e:
        raise visitor_error(str(e)) from e
    top, p = next(iter(before.items()))
    now = after.get(top)
    change = f"{p:.3f} → {now:.3f}" if now is not None else f"{p:.3f} → below the top 5"
    which = ", ".join(f"{layer + 1}.{head + 1}" for layer, head in off) or "none"
    note = (
        f"Heads off: **{which}** (of {c.depth} layers × {c.heads} heads). With every head on the model "
        f"says **{markdown_text(top)}**; its probability: {change}."
    )
    return {"top5": after, "heads_note": note}


def clip_model(catalog: ModelCatalog, key: object, progress: gr.Progress | None) -> LoadedModel:
    """Lesson 4's model (downloading it, progress shown); offline with no CLIP model on this
    machine, gr.Error says that none is and what the operator does (explorer.lessons.no_clip_offline)."""
    try:
        return fetched(catalog, key, progress, None)
    except ModelUnavailable as e:
        raise (_no_clip(catalog, str(key)) if catalog.online is False else visitor_error(str(e))) from e


def compare_words(
    server: Server,
    image: dict | None,
    model_key: str,
    prompts: str,
    style: MapStyle,
    progress: gr.Progress = PROGRESS,
) -> dict:
    """One picture, many words: a CLIP model's probabilities over `prompts` (comma-separated) for
    the lesson image, and each word's relevance map (Chefer et al. 2021), as Explore's words."""
    picture, loaded = lesson_image(image), clip_model(server.catalog, model_key, progress)
    if loaded.text is None:
        raise visitor_error(f"{loaded.label} is not a CLIP model: only a CLIP model understands words")
    try:
        inp = model_input(picture, loaded.preprocessing, loaded.model.config.patch_size)
        size = inp.tensor.shape[-2:]
        words, left_out = affordable_words(loaded, size, parse_prompts(prompts), server.store.max_request_bytes)
    except (PromptError, ImageError) as e:
        raise visitor_error(str(e)) from e
    zs = zero_shot(loaded, words, zerogpu.PROMPTS(loaded, inp.tensor, words))
    grid = loaded.model.patch_grid(*size)
    maps = word_maps(inp.pixels, grid, zs, style, Showing(), model_name(loaded.key), server.text_px)
    return {"words_label": zs.probabilities, "words_note": prompt_note(zs, left_out), "words_maps": maps}


def rank_heads(
    server: Server,
    image: dict | None,
    model_key: str,
    request: gr.Request,
    progress: gr.Progress = PROGRESS,
) -> Iterator[dict]:
    """The heads whose removal lowers the predicted class's probability most, one head off at
    a time: layers x heads forward passes, refused past explorer.lessons.MAX_RANKING_FLOPS and
    stopped after MAX_RANKING_S seconds. One ranking at a time per visitor; the ranking so far
    is shown after every layer, and *Stop* (or leaving the page) ends it there."""
    picture, loaded = lesson_image(image), downloads.load(server.catalog, model_key, progress, visitor_of(request))
    c = loaded.model.config
    with server.rankings.claim(visitor_of(request), lessons.MAX_RANKING_S):
        try:
            for ranking in zerogpu.RANKING(loaded, picture):
                yield {"ranking": ranking.rows, "heads_note": ranking_note(ranking, c.depth, c.heads)}
        except lessons.LessonError as e:
            raise visitor_error(str(e)) from e


def ranking_note(ranking: lessons.Ranking, depth: int, heads: int) -> str:
    """Markdown: what the ranking measured, and how far it got; the class as its checkpoint names it,
    shown as written (a visitor's upload names its classes)."""
    note = (
        f"Predicted class **{markdown_text(ranking.predicted)}**. Ranked by the drop of its probability when each "
        f"head alone is switched off ({depth} × {heads} = {ranking.total} forward passes). The table shows the top "
        f"{len(ranking.rows)} of the {ranking.done} heads ranked."
    )
    if ranking.done < ranking.total:
        note += f" **{ranking.done} of {ranking.total} heads ranked so far.**"
    return note
