"""The Lessons tab: four views a teacher can show and read aloud (docs/lessons.md), their
components (`LessonsTab`), layout and wiring to ui/lessons_handlers.py under API names: each
event's inputs are the fields its handler's parameters name (`TabComponents.event`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import gradio as gr

from explorer import lessons
from explorer.canvas import COLORMAPS, MapStyle
from explorer.catalog import BUNDLED, ModelCatalog, ModelUnavailable
from explorer.loaded import LoadedModel
from explorer.prompts import DEFAULT_PROMPTS, MAX_PROMPTS

from . import concurrency, pictures
from . import lessons_handlers as h
from .binding import Controls, TabComponents, checked_first
from .common import EXAMPLES_DIR, Server, layer_slider

# inputs checked by the handlers (ui/checks.py), as in the Explore tab; every lesson runs models,
# so they share the server's heavy slots, but the ranking and the words (ui/concurrency.py)
RAW = {"preprocess": False, **concurrency.HEAVY}
# Every lesson opens on this picture (one of the Explore tab's examples), so its first press works
# (shown when the tab is first opened: `lessons_handlers.open_lessons`).
OPENING_IMAGE = EXAMPLES_DIR / "cat.jpg"
FIRST_ROW, SECOND_ROW = "First row: a model with registers", "Second row: a model without"
# The lessons' pictures, by element id: the result a teacher's page shows, which a class's pages are shown
# too (ui/js/classlessons.js; ui/class_route.py reads the teacher's once for the class).
COMPARE_ID, NORMS_ID = "lesson-compare", "lesson-norms"
PICTURES = (COMPARE_ID, NORMS_ID)
# Lesson 4's word maps (a gallery, one picture a word), which a class's pages are shown each (ui/js/classmaps.js).
WORD_MAPS_ID = "lesson-word-maps"
# What a class's pages are told of a lesson in words (ui/js/classresult.js), by class: its pickers and notes
# (name and words: every lesson's choices, the teacher's, never set on a student's components, whose change would
# run the lesson there), and its results that are no picture, as tables of text (lesson 3's top-5 and ranking,
# lesson 4's words' fit).
SAID, TABLE = "lesson-said", "lesson-table"
# Class mode (issue 59) on the Lessons tab: Start a class (the Explore tab's class, one a teacher), the
# class's code as text, and on a student's page the teacher's lesson and its picture (ui/js/classlessons.js).
CLASS_START = '<button id="lesson-class-start" type="button">Start a class</button>'
CLASS_PANEL = """<div class="lesson-class">{start}<p class="lesson-class-code" role="status"></p>
<figure class="class-lesson" hidden><figcaption class="class-lesson-view"></figcaption><img alt="">
<div class="class-lesson-maps"></div><dl class="class-lesson-said"></dl><div class="class-lesson-tables"></div>
</figure></div>"""
CLASS_JS = "window.pageMaps.then(() => window.classroom.lessons.attach(element));"


# What the lessons say about models (ui.lessons_handlers.lesson_models): the pickers and each
# lesson's line about the weights it lacks, drawn again as the catalogue changes.
MODEL_WORDS = ("models", "with_registers", "without_registers", "heads_model", "words_model")
MODEL_WORDS += ("compare_better", "norms_better", "heads_better", "words_better")
# Then, where a lesson's pickers still hold what it opened on, the models it opens on now with the
# controls that follow them (`lessons_handlers.follow_lessons`).
FOLLOWED = ("opened", "models", "with_registers", "without_registers", "norms_current", "layer", "norms_note")
FOLLOWED += ("heads_model", "heads_current", "heads", "heads_note")


@dataclass(frozen=True)
class LessonsTab(TabComponents):
    """Every component of the Lessons tab, by name."""

    controls: ClassVar = (
        Controls.of(MapStyle, h.colour_map),
        Controls.of(h.RegisterPair, h.register_pair),
        Controls.of(h.HeadsPick, h.heads_pick),
    )

    explore_image: gr.Image  # the Explore tab's, which opening the tab brings here
    class_panel: gr.HTML  # Start a class, and a student's page's copy of the teacher's lesson (CLASS_PANEL)
    image: gr.Image
    followed: gr.State  # the Explore tab's image the lesson image last took (lessons_handlers.open_lessons)
    opening: gr.State  # Gradio's cached copy of OPENING_IMAGE, which opening the tab first shows
    opened: gr.State  # what lessons 1 to 3's pickers opened on (lessons_handlers.opened_models, `follow`)
    cmap: gr.Dropdown
    # supervised vs self-supervised
    models: gr.Dropdown
    compare_better: gr.Markdown
    compare_button: gr.Button
    compare_note: gr.Markdown
    compare_picture: gr.Image
    # artefacts and registers
    with_registers: gr.Dropdown
    without_registers: gr.Dropdown
    norms_current: gr.State  # the pair the slider describes: the pickers return to it after a failed pick
    norms_better: gr.Markdown
    layer: gr.Slider
    norms_button: gr.Button
    norms_note: gr.Markdown  # when the two rows cannot differ (the same model, no registers)
    norms_picture: gr.Image
    norms_table: gr.Markdown
    # which heads matter
    heads_model: gr.Dropdown
    heads_current: gr.State  # the model the heads box describes: the picker returns to it after a failed pick
    heads_better: gr.Markdown
    heads: gr.Textbox
    heads_button: gr.Button
    rank_button: gr.Button
    rank_stop: gr.Button
    top5: gr.Label
    heads_note: gr.Markdown
    ranking: gr.Dataframe
    # one picture, many words (a CLIP model)
    words_model: gr.Dropdown
    words_better: gr.Markdown
    prompts: gr.Textbox
    words_button: gr.Button
    words_label: gr.Label
    words_note: gr.Markdown
    words_maps: gr.Gallery


def _opening(catalog: ModelCatalog, key: str) -> LoadedModel:
    """A lesson's opening model, loaded now to size its controls; the bundled one if it fails
    (the catalogue logged why)."""
    try:
        return catalog.get(key)
    except ModelUnavailable:
        return catalog.get(BUNDLED)


def _common() -> dict[str, Any]:
    with gr.Row():
        image = gr.Image(
            str(OPENING_IMAGE),
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
    # Gradio copies the opening picture into its cache here; as the image's value, that copy's
    # server path would be in the page's description (/config) and on the API page for anyone to
    # read (issue 56). The page starts empty and opening the tab hands it the copy
    # (`lessons_handlers.open_lessons`): the path reaches only a page given that file.
    opening = gr.State(image.value["path"])
    image.value = None
    return {"image": image, "cmap": cmap, "followed": gr.State(None), "opening": opening}


def _compare(choices: list[tuple[str, str]], opening: list[str], better: str) -> dict[str, Any]:
    gr.Markdown(lessons.SUPERVISED_VS_SELF)
    with gr.Row():
        models = gr.Dropdown(
            choices,
            value=opening,
            multiselect=True,
            max_choices=h.MAX_COMPARED,
            label="Models to compare (up to 3)",
            scale=4,
            elem_classes=["picker", SAID],
        )
        button = gr.Button("Compare", scale=1)
    note = gr.Markdown(label="Models not available here")
    picture = pictures.picture(
        "**Last-layer CLS heads**, one row per model, one colour scale",
        "Last-layer CLS attention of every head, one row per compared model",
        elem_id=COMPARE_ID,
    )
    return {
        "models": models,
        "compare_better": gr.Markdown(better, label="Better models for this lesson"),
        "compare_button": button,
        "compare_note": note,
        "compare_picture": picture,
    }


def _norms(
    choices: list[tuple[str, str]], pair: tuple[LoadedModel, LoadedModel], better: str, note: str
) -> dict[str, Any]:
    gr.Markdown(lessons.ARTEFACTS)
    depth = min(m.model.config.depth for m in pair)
    with gr.Row():
        # named by what each row is for: the model chosen may have no registers (the note then says so)
        with_reg = gr.Dropdown(choices, value=pair[0].key, label=FIRST_ROW, elem_classes=["picker", SAID])
        without = gr.Dropdown(choices, value=pair[1].key, label=SECOND_ROW, elem_classes=["picker", SAID])
        layer = layer_slider(depth, depth, step=1, label=h.NORMS_LAYER_LABEL, elem_classes=SAID)
        button = gr.Button("Show token norms")
    warning = gr.Markdown(note, label="Why the rows look the same")
    picture = pictures.picture(
        "**Token norms** after the chosen layer, high-norm patches outlined",
        "Token norms of every patch after the chosen layer, with and without registers",
        elem_id=NORMS_ID,
    )
    table = gr.Markdown(label="High-norm patches: norm and share of CLS attention")
    return {
        "with_registers": with_reg,
        "without_registers": without,
        "norms_current": gr.State([pair[0].key, pair[1].key]),
        "norms_better": gr.Markdown(better, label="Better models for this lesson"),
        "layer": layer,
        "norms_button": button,
        "norms_note": warning,
        "norms_picture": picture,
        "norms_table": table,
    }


def _heads(choices: list[tuple[str, str]], start: LoadedModel, better: str) -> dict[str, Any]:
    gr.Markdown(lessons.WHICH_HEADS)
    with gr.Row():
        # room for a model's whole name (the bundled model's, "CIFAR-10 nano (bundled)", was cut at 1280 px)
        model = gr.Dropdown(
            choices,
            value=start.key,
            label="Model (with classes)",
            scale=2,
            min_width=300,
            elem_classes=["picker", SAID],
        )
        off = gr.Textbox(**h.heads_box(start), elem_classes=SAID)
        button = gr.Button("Switch these heads off")
        rank = gr.Button("Rank every head (one forward pass per head)")
        stop = gr.Button("Stop the ranking", variant="stop")
    with gr.Row():
        top5 = gr.Label(
            num_top_classes=5, label="Top-5 with these heads off", elem_id="lesson-top5", elem_classes=TABLE
        )
        with gr.Column():
            note = gr.Markdown(label="What changed", elem_classes=SAID)
            ranking = gr.Dataframe(
                headers=["rank", "layer.head", "drop in probability"],
                label=f"Most important heads (the top {lessons.RANKING_ROWS})",
                interactive=False,
                elem_classes=TABLE,
            )
    return {
        "heads_model": model,
        "heads_current": gr.State(start.key),
        "heads_better": gr.Markdown(better, label="Better models for this lesson"),
        "heads": off,
        "heads_button": button,
        "rank_button": rank,
        "rank_stop": stop,
        "top5": top5,
        "heads_note": note,
        "ranking": ranking,
    }


def _words(catalog: ModelCatalog, opening: lessons.OpeningModels) -> dict[str, Any]:
    gr.Markdown(lessons.MANY_WORDS)
    clip = h.clip_choices(catalog)
    with gr.Row():
        model = gr.Dropdown(
            clip, value=opening.words or clip[0][1], label="Model (CLIP)", scale=2, min_width=300, elem_classes=SAID
        )
        prompts = gr.Textbox(
            DEFAULT_PROMPTS,
            label=f"Words, separated by commas (2 to {MAX_PROMPTS})",
            scale=3,
            elem_id="lesson-words",
            elem_classes=SAID,
        )
        button = gr.Button("Compare these words", elem_id="lesson-words-button")
    with gr.Row():
        label = gr.Label(
            num_top_classes=MAX_PROMPTS, label="How well each word fits (softmax over these words)", elem_classes=TABLE
        )
        note = gr.Markdown(label="The template", elem_classes=SAID)
    maps = pictures.word_maps("**Relevance of each word** (Chefer et al. 2021)", elem_id=WORD_MAPS_ID)
    return {
        "words_model": model,
        "words_better": gr.Markdown(lessons.words_missing(opening), label="CLIP on this machine"),
        "prompts": prompts,
        "words_button": button,
        "words_label": label,
        "words_note": note,
        "words_maps": maps,
    }


def layout(catalog: ModelCatalog, explore_image: gr.Image, classes: bool = True) -> LessonsTab:
    """Place the tab's components inside the current Blocks, one sub-tab per lesson, each
    opening on models that load now (explorer.lessons.opening_models), kept loaded; the tab
    also names the Explore tab's image (`explore_image`), which opening the tab brings; `classes`:
    whether the server allows a class (Start a class)."""
    choices = catalog.choices()
    opening = lessons.opening_models(catalog.available, catalog.here())
    catalog.pinned |= {*opening.compare, opening.with_registers, opening.without_registers, opening.heads}
    pair = (_opening(catalog, opening.with_registers), _opening(catalog, opening.without_registers))
    heads = _opening(catalog, opening.heads)
    better = lessons.model_notes(opening)
    opened = h.opened_models(opening.compare, [pair[0].key, pair[1].key], heads.key)
    panel = CLASS_PANEL.replace("{start}", CLASS_START * classes)
    parts = {"class_panel": gr.HTML(None, html_template=panel, js_on_load=CLASS_JS, padding=False)}
    parts |= _common() | {"explore_image": explore_image, "opened": gr.State(opened)}
    with gr.Tabs(overflow_behavior="wrap"):  # on a phone all four stay in view (no "…" menu)
        with gr.Tab("Supervised vs self-supervised"):
            parts |= _compare(choices, opening.compare, better["compare"])
        with gr.Tab("Artefacts and registers"):
            note = lessons.registers_note(*pair, lessons.registers_missing(opening))
            parts |= _norms(choices, pair, better["norms"], note)
        with gr.Tab("Which heads matter"):
            parts |= _heads(choices, heads, better["heads"])
        with gr.Tab("One picture, many words"):
            parts |= _words(catalog, opening)
    return LessonsTab(**parts)


# A new image makes every lesson's result (or error) stale: cleared, so no old Error badge stays.
RESULTS = ("compare_picture", "compare_note", "norms_picture", "norms_table", "top5", "ranking", "heads_note")
RESULTS += ("words_label", "words_note", "words_maps")


def build_lessons_tab(server: Server, page_tab: gr.Tab, explore_image: gr.Image) -> LessonsTab:
    """The Lessons tab inside `page_tab` (its gr.Tab), the current Blocks' context, wired to its API endpoints;
    opening it brings the Explore tab's image (`explore_image`) and the visitor's models."""
    tab = layout(server.catalog, explore_image, classes=server.settings.classes.classes > 0)
    page_tab.select(
        **tab.event(h.open_lessons, server),
        outputs=tab.pick("image", "followed", *MODEL_WORDS),
        api_visibility="private",
        show_progress="hidden",  # a quick update: no spinner over the pickers a teacher is about to open
    ).then(**_follow(tab, server))
    tab.image.change(**tab.event(h.new_image), outputs=tab.pick(*RESULTS), api_visibility="private")
    ranking = _wire_buttons(tab, server)
    # Stop ends the ranking at its next step (it is a generator); so does leaving the page.
    tab.rank_stop.click(None, cancels=[ranking], api_visibility="private")
    return tab


def _checked(trigger: Any, check: dict[str, Any], run: dict[str, Any], **event: Any) -> Any:
    """`run` (a `tab.event`) on `trigger` after `check` (another) in a first step with no outputs:
    a refusal is a toast, and the lesson's results stay as they were (ui.binding.checked_first)."""
    return checked_first(trigger, check["fn"], check["inputs"], **run, **event)


def _wire_buttons(tab: LessonsTab, server: Server) -> Any:
    """Each lesson's buttons under their API names (and `_wire_pickers`). A button checks its inputs
    first (`_checked`). Returns the ranking's event, which Stop cancels."""
    image_first = tab.event(h.check_lesson_image)
    heads_model = {"model_key": "heads_model"}  # lessons 3 and 4 each send their picker as `model_key`
    events = _wire_pickers(tab, server)
    events.append(
        _checked(
            tab.compare_button.click,
            tab.event(h.check_compared),
            tab.event(h.compare_models, server),
            outputs=tab.pick("compare_picture", "compare_note"),
            api_name="lesson_compare",
            **RAW,
        )
    )
    events.append(
        _checked(
            tab.norms_button.click,
            image_first,
            tab.event(h.compare_token_norms, server),
            outputs=tab.pick("norms_picture", "norms_table"),
            api_name="lesson_token_norms",
            **RAW,
        )
    )
    events.append(
        _checked(
            tab.heads_button.click,
            tab.event(h.check_heads_off, server, **heads_model),
            tab.event(h.switch_heads_off, server, **heads_model),
            outputs=tab.pick("top5", "heads_note"),
            api_name="lesson_heads_off",
            **RAW,
        )
    )
    events.append(
        ranking := _checked(
            tab.rank_button.click,
            image_first,
            tab.event(h.rank_heads, server, **heads_model),
            outputs=tab.pick("ranking", "heads_note"),
            api_name="lesson_head_ranking",
            **(RAW | concurrency.RANKING),
        )
    )
    events.append(
        _checked(
            tab.words_button.click,
            tab.event(h.check_words, server, model_key="words_model"),
            tab.event(h.compare_words, server, model_key="words_model"),
            outputs=tab.pick("words_label", "words_note", "words_maps"),
            api_name="lesson_words",
            **(RAW | concurrency.WORDS),
        )
    )
    # After each (which may have downloaded a model), what the lessons say about models follows.
    refresh = {**tab.event(h.lesson_models, server), "outputs": tab.pick(*MODEL_WORDS)}
    for event in events:
        event.then(**refresh, api_visibility="private", show_progress="hidden", queue=False).then(
            **_follow(tab, server)
        )
    return ranking


def _follow(tab: LessonsTab, server: Server) -> dict[str, Any]:
    """The event that moves pickers left where their lesson opened to the models it opens on now
    (`lessons_handlers.follow_lessons`): it may load a model from the cache, so in the heavy slots
    and, as lesson 1's picker is among its inputs, unchecked by Gradio (RAW: the handler only
    compares it)."""
    return {
        **tab.event(h.follow_lessons, server),
        "outputs": tab.pick(*FOLLOWED),
        "api_visibility": "private",
        "show_progress": "hidden",
        **RAW,
    }


def _wire_pickers(tab: LessonsTab, server: Server) -> list[Any]:
    """Lessons 2 and 3's pickers under their API names (each loads the model picked); their events."""
    events: list[Any] = []
    # .input, as lesson 3's picker: a failed pick sets the pickers back, which must not count as a pick
    events.append(
        gr.on(
            [tab.with_registers.input, tab.without_registers.input],
            **tab.event(h.norms_models, server),
            outputs=tab.pick("with_registers", "without_registers", "norms_current", "layer", "norms_note"),
            api_name="lesson_norms_models",
            **RAW,
        )
    )
    # .input: a failed pick sets the picker back, which must not count as another pick
    events.append(
        tab.heads_model.input(
            **tab.event(h.heads_model, server, model_key="heads_model"),
            outputs=tab.pick("heads_model", "heads_current", "heads", "heads_note"),
            api_name="lesson_heads_model",
            **RAW,
        )
    )
    return events
