"""The Explore tab's "More views", as ui/ needs them: each view of the registry
(explorer.more_views, one module a view) with what Gradio adds to it (`MoreTab`): the record of its
controls as the binding parses them, its GPU task as ui.zerogpu runs it, its tab's controls (a view
with controls of its own registers their layout with `controls_for`), and its picture as a component's
value. The lists the rest of the tab reads (`MORE_VIEWS`, `IMAGE_VIEWS`, ...) and the records of
several views' controls that one event takes (`ImageAsked`, ...) are derived from the registry, so
ui/explore.py and ui/explore_handlers.py name no view of it by hand.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any

import gradio as gr

from explorer import more_views
from explorer.explain import Explanation, ExplanationKey
from explorer.loaded import LoadedModel
from explorer.more_views import NotDrawn, Scene, Task
from explorer.more_views.pca import PcaChoice

from . import common
from .binding import Controls
from .checks import yes_no
from .common import check_layer, model_name
from .pictures import picture, with_alt
from .zerogpu import ON_ZEROGPU, GpuTask

PREDICTED = "predicted class"  # the relevance picker's first choice: explain whatever the model predicts
# The PCA is fitted again for each layer (a pass up to it and two SVDs), unlike the other sliders'
# redraws: on ZeroGPU that is a GPU call, which the page says (issue 60; docs/space.md counts it).
ON_GPU_NOTES = {
    "pca": " On this Space each change of the layer or of the examples is a GPU call of its own, charged to your "
    "daily GPU time (about 8 s), not a redraw."
}
RELEVANCE_HINT = (
    "Press **Explain this class** to draw the map (one forward and one backward pass); "
    "a new image or model clears it until you press it again."
)

# Every record a view's controls make, and the values they are made of (a Drawing of a MapStyle, ...):
# those every view shares (ui/common.py), then each view's own, parsed by its module's function.
SHARED = (common.STYLE, common.SHOWING, common.FUSION, common.DRAWING)
OWN = {
    spec.record: Controls.of(spec.record, spec.parse) for spec in more_views.REGISTRY.values() if spec.parse is not None
}
KINDS = (*SHARED, *OWN.values())
# Each task a view runs again, as ZeroGPU runs it (each made once, at import: ui/zerogpu.py, TASKS).
GPU_TASKS = {
    spec.task: GpuTask(spec.task.run, spec.task.cost, spec.task.what, backward=spec.task.backward)
    for spec in more_views.REGISTRY.values()
    if spec.task is not None
}
LAYOUTS: dict[str, Callable[[LoadedModel], dict[str, Any]]] = {}  # a tab's controls, by view (`controls_for`)
# What a new model sets anew in a tab's controls, by view, then by ExploreTab field (`renewed_for`)
RENEWALS: dict[str, dict[str, Callable[[LoadedModel], Any]]] = {}
CHECKS: dict[str, Callable[[Scene, Any], Any]] = {}  # a record's check before it is drawn, by view (`checked_for`)


def run_task(task: Task, loaded: LoadedModel, *args: Any) -> Any:
    """`task` on `loaded` with `args`, on the GPU where the platform lends one (`Scene.run`)."""
    return GPU_TASKS[task](loaded, *args)


def view_scene(
    loaded: LoadedModel, text_px: int, ex: Explanation | None = None, key: ExplanationKey | None = None
) -> Scene:
    """What a view is drawn from: `loaded`, its text `text_px` high, and for a view of an image its
    analysis `ex` and key (whose model the alt text names; none: `loaded`'s)."""
    return Scene(loaded, model_name(key.model_key if key is not None else loaded.key), text_px, run_task, ex)


def controls_for(name: str) -> Callable:
    """Register the decorated function as view `name`'s tab's controls: the start model in, its
    components by ExploreTab field out (placed inside the tab, above the picture)."""

    def register(layout: Callable[[LoadedModel], dict[str, Any]]) -> Callable[[LoadedModel], dict[str, Any]]:
        LAYOUTS[name] = layout
        return layout

    return register


def renewed_for(name: str, control: str) -> Callable:
    """Register the decorated function as what a new model makes of view `name`'s control `control`
    (its layers, its classes): the new model in, the control's update out (ui/explore_handlers.py,
    load_model, sets it; its values were the old model's)."""

    def register(renew: Callable[[LoadedModel], Any]) -> Callable[[LoadedModel], Any]:
        RENEWALS.setdefault(name, {})[control] = renew
        return renew

    return register


def checked_for(name: str) -> Callable:
    """Register the decorated function as view `name`'s check of its controls' record: a visitor's
    error for a value its controls could not send (an API client's), the record to draw from otherwise."""

    def register(check: Callable[[Scene, Any], Any]) -> Callable[[Scene, Any], Any]:
        CHECKS[name] = check
        return check

    return register


def relevance_classes(loaded: LoadedModel) -> list[str]:
    """The relevance class picker's choices for a model: the predicted class, then every class
    by name (none but the first for a model without a classifier, which the handler refuses)."""
    return [PREDICTED, *loaded.meta.class_names]


@controls_for("rollout")
def rollout_controls(start: LoadedModel) -> dict[str, Any]:
    with gr.Row():
        return {
            "fusion": gr.Radio(list(common.FUSIONS), value="mean", label="Head fusion"),
            "discard": gr.Slider(
                0.0, common.DISCARD_MAX, value=0.0, step=0.05, label="Discard ratio (weakest attention zeroed)"
            ),
        }


@controls_for("relevance")
def relevance_controls(start: LoadedModel) -> dict[str, Any]:
    with gr.Row():
        classes = relevance_classes(start)
        target = gr.Dropdown(classes, value=PREDICTED, label="Class to explain", scale=3)
        relevance_button = gr.Button("Explain this class", size="sm")
    # The picture stays empty until the button is pressed (a backward pass), and after each new image.
    gr.Markdown(RELEVANCE_HINT, elem_id="relevance-hint")
    return {"target": target, "relevance_button": relevance_button}


@renewed_for("relevance", "target")
def relevance_target(loaded: LoadedModel) -> gr.Dropdown:
    """The new model's classes to explain, its prediction picked."""
    return gr.Dropdown(choices=relevance_classes(loaded), value=PREDICTED)


@controls_for("pca")
def pca_controls(start: LoadedModel) -> dict[str, Any]:
    depth = start.model.config.depth
    with gr.Row(elem_classes="phone-lines"):  # on a phone each on a line of its own: the labels were cut
        return {
            "pca_layer": common.layer_slider(
                depth, depth, step=1, label="Layer of the patch tokens (1 = first)", scale=2
            ),
            "pca_examples": gr.Checkbox(False, label="Fit one PCA on this image and the six animal examples"),
            "pca_background": gr.Checkbox(True, label="Remove the background (component 1 below 0, as DINOv2)"),
        }


@renewed_for("pca", "pca_layer")
def pca_layer(loaded: LoadedModel) -> gr.Slider:
    """The new model's layers, its last picked."""
    depth = loaded.model.config.depth
    return common.layer_slider(depth, depth)


@checked_for("pca")
def checked_pca(scene: Scene, choice: PcaChoice) -> PcaChoice:
    """The PCA's layer a layer of the model, its two choices true or false."""
    layer = None if choice.layer is None else check_layer(choice.layer, scene.ex.depth)
    examples = yes_no("with the examples", choice.examples)
    return PcaChoice(layer, examples, yes_no("remove the background", choice.background))


@dataclass(frozen=True)
class MoreTab(more_views.MoreView):
    """A view of the registry (its fields) as the Explore tab lays out its tab and wires it, named
    apart from the registry's `MoreView` so that one name is one class. What ui/ adds: `asked`, the
    record its own controls make as the binding parses it (what a call of its endpoint takes, and
    nothing else); `gpu`, its task as ZeroGPU runs it; `controls`, its tab's controls
    (`controls_for`); `check`, its record's check (`checked_for`); `renewed`, what a new model sets
    anew in its controls (`renewed_for`)."""

    asked: Controls | None = None
    gpu: GpuTask | None = None
    controls: Callable[[LoadedModel], dict[str, Any]] | None = None
    check: Callable[[Scene, Any], Any] | None = None
    renewed: Mapping[str, Callable[[LoadedModel], Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: more_views.MoreView) -> MoreTab:
        asked = OWN.get(spec.record) or next(c for c in SHARED if c.kind is spec.record)
        gpu = GPU_TASKS.get(spec.task) if spec.task is not None else None
        own = {f.name: getattr(spec, f.name) for f in fields(more_views.MoreView)}
        own["hint"] = spec.hint + (ON_GPU_NOTES.get(spec.name, "") if ON_ZEROGPU else "")
        layout, check, renewed = LAYOUTS.get(spec.name), CHECKS.get(spec.name), RENEWALS.get(spec.name, {})
        return cls(**own, asked=asked, gpu=gpu, controls=layout, check=check, renewed=renewed)

    @property
    def heavy(self) -> bool:
        """Opening its tab runs the model again: heavy work (ui/concurrency.py), not a redraw."""
        return self.picture is not None and self.task is not None

    @property
    def own_controls(self) -> tuple[str, ...]:
        """The controls of `asked` that redraw it alone when they change: all but the style's, whose
        change redraws every picture that follows it at once (/restyle)."""
        return tuple(name for name in self.asked.leaves(KINDS) if name not in common.STYLE.names)

    def draw(self, scene: Scene, asked: Any) -> gr.Image | None:
        """Its picture from `scene` and its controls' record, as its component's value with its alt
        text; None, and a toast saying why, where this model has no such picture."""
        try:
            drawn = self.picture(scene, self.check(scene, asked) if self.check is not None else asked)
        except NotDrawn as why:
            gr.Warning(str(why))
            return None
        return with_alt(*drawn)

    def layout(self, start: LoadedModel) -> dict[str, Any]:
        """Its tab's contents inside the current gr.Tab: its hint, its controls, its picture."""
        if self.hint:
            gr.Markdown(self.hint)
        parts = self.controls(start) if self.controls is not None else {}
        return parts | {self.name: picture(self.caption, self.alt, elem_id=self.elem_id)}


# The "More views", in the order of their tabs.
MORE = {name: MoreTab.of(spec) for name, spec in more_views.REGISTRY.items()}
MORE_VIEWS = tuple(MORE)  # by ExploreTab field
DRAWN_VIEWS = tuple(name for name, more in MORE.items() if more.picture is not None)  # drawn when opened
IMAGE_VIEWS = tuple(name for name in DRAWN_VIEWS if MORE[name].image)  # of those, the ones of an image
MODEL_ONLY_VIEWS = tuple(name for name in DRAWN_VIEWS if not MORE[name].image)  # of the model alone
STYLE_VIEWS = tuple(name for name in IMAGE_VIEWS if MORE[name].style)  # redrawn in a new style
# Drawn by a button of their own (relevance), with what the session keeps of each: cleared with the image.
ON_REQUEST = tuple(field for more in MORE.values() if more.picture is None for field in (more.name, more.kept) if field)
# What a new model changes in the tabs (ExploreTab fields, view by view in the order of their tabs): a
# view of the model alone (drawn if on screen), then the controls it sets anew (`switched_model`).
MODEL_SWITCHED = tuple(
    name
    for more in MORE.values()
    for name in ((more.name,) if more.name in MODEL_ONLY_VIEWS else ()) + tuple(more.renewed)
)
KEPT = tuple(more.kept for more in MORE.values() if more.kept)  # of those, what the session keeps
MORE_LABEL = "More views: " + ", ".join(more.listed for more in MORE.values())  # the accordion's label
# The pictures on the page that follow the style controls, as the page finds them: the style views
# (relevance among them) and a CLIP model's word maps (ui/explore.py, `WORD_MAPS_ID`). The page asks
# the server to redraw them after it redraws its own maps (ui/js/explore.js, setStyle).
FOLLOW_STYLE = tuple(more.elem_id for more in MORE.values() if more.style)


class ViewsAsked(dict[str, Any]):
    """Several views' records of their own controls, by view name: what one event takes where it may
    draw any of those views (the page's analysis, a new style, a new model, the accordion opened)."""


class DrawnAsked(ViewsAsked):
    """DRAWN_VIEWS' records (the accordion opened on any of them)."""


class ImageAsked(ViewsAsked):
    """IMAGE_VIEWS' records (the page's analysis draws the one on screen)."""


class StyleAsked(ViewsAsked):
    """STYLE_VIEWS' records (a new style redraws the one on screen)."""


class ModelAsked(ViewsAsked):
    """MODEL_ONLY_VIEWS' records (a new model redraws the one on screen)."""


def _by_view(kind: type[ViewsAsked], names: tuple[str, ...], *records: Any) -> ViewsAsked:
    return kind(zip(names, records, strict=True))


def views_controls(kind: type[ViewsAsked], names: Sequence[str]) -> Controls:
    """`names`' records as one value of `kind`. The views with the most controls come first, so that
    the controls the views share (the style, rollout's fusion) lead the API page's parameters and
    a new view's own controls come after them: an endpoint that takes these records keeps the order
    of the parameters it had when a view is added."""
    widest = tuple(sorted(names, key=lambda name: -len(MORE[name].asked.leaves(KINDS))))
    parameters = tuple(
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=MORE[name].asked.kind)
        for name in widest
    )
    return Controls(kind, parameters, partial(_by_view, kind, widest))


VIEWS_OF = {DrawnAsked: DRAWN_VIEWS, ImageAsked: IMAGE_VIEWS, StyleAsked: STYLE_VIEWS, ModelAsked: MODEL_ONLY_VIEWS}
# What the binding parses (ExploreTab.controls): each view's record and several views' together.
CONTROLS = (*KINDS, *(views_controls(kind, names) for kind, names in VIEWS_OF.items()))


def draw_on_screen(
    names: tuple[str, ...], on_screen: str | None, scene: Scene, asked: ViewsAsked
) -> dict[str, gr.Image | None]:
    """`names` (of DRAWN_VIEWS) by field: the one `on_screen` drawn from `scene` and its record in
    `asked`, the others None (so no picture of an earlier image, model or style is left in a closed
    tab; opening it draws it)."""
    return {name: MORE[name].draw(scene, asked[name]) if name == on_screen else None for name in names}


def switched_model(loaded: LoadedModel, on_screen: str | None, scene: Scene, asked: ModelAsked) -> dict[str, Any]:
    """MODEL_SWITCHED's values for `loaded`, a new model: each view of the model alone drawn from
    `scene` if `on_screen` (`draw_on_screen`), each control a view sets anew as `loaded` has it."""
    drawn = draw_on_screen(MODEL_ONLY_VIEWS, on_screen, scene, asked)
    renewed = {name: renew(loaded) for more in MORE.values() for name, renew in more.renewed.items()}
    return {name: (drawn | renewed)[name] for name in MODEL_SWITCHED}
