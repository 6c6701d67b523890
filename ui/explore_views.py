"""The Explore tab's "More views", one record each (`MoreView`), registered once in `MORE`.

A record says everything the tab, its wiring and its handlers need to know of a view: its
field and tab, its named endpoint, its caption and alt text, the controls its tab holds, the
function that draws it (`Scene` in, the picture with its alt text out), the model's arithmetic
it runs again (a `ui.zerogpu.GpuTask`) and what it changes with (the image, the model, the
style). The lists the rest of the tab reads (`MORE_VIEWS`, `IMAGE_VIEWS`, ...) are derived from
`MORE`, so a new view is one record, one picture function and its test; ui/explore.py and
ui/explore_handlers.py name no view of it by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from explorer import render, texts, view_tasks, views
from explorer.controls import Drawing
from explorer.explain import Explanation, ExplanationKey, ModelInput, model_input
from explorer.images import load_image
from explorer.loaded import LoadedModel

from . import common
from .checks import yes_no
from .common import EXAMPLES_DIR, check_layer, model_name
from .pictures import picture, with_alt
from .zerogpu import ON_ZEROGPU, GpuTask

PREDICTED = "predicted class"  # the relevance picker's first choice: explain whatever the model predicts
# The examples one PCA may be fitted on beside the image: the six animal classes of CIFAR-10, whose
# parts (heads, legs, bodies) a good model's features match across images (DINOv2 Fig. 1).
PCA_EXAMPLES = ("bird", "cat", "deer", "dog", "frog", "horse")
NO_LENS = (
    "This model has no classifier head (a feature extractor such as DINO or DINOv2), so there are no classes to "
    "read after each layer: the logit lens needs a model with classes, e.g. the bundled model, DeiT or ViT-B/16."
)
LOGIT_LENS_HINT = (
    "The classifier is read after every layer, not only the last: where does the answer form? "
    f"**{texts.LENS_CAVEAT}** Only for models with a classifier head (not DINO, DINOv2, DINOv3 or CLIP)."
)
PCA_HINT = (
    "Each patch token of the chosen layer as a colour: its first three principal components as red, green and "
    "blue (DINOv2, Oquab et al. 2023, Fig. 1). With the examples, one PCA is fitted on this image and the six "
    "animal examples together, so the same part gets the same colour in every image."
)
# The PCA is fitted again for each layer (a pass up to it and two SVDs), unlike the other sliders'
# redraws: on ZeroGPU that is a GPU call, which the page says (issue 60; docs/space.md counts it).
PCA_ON_GPU = (
    " On this Space each change of the layer or of the examples is a GPU call of its own, charged to your "
    "daily GPU time (about 8 s), not a redraw."
)
RELEVANCE_HINT = (
    "Press **Explain this class** to draw the map (one forward and one backward pass); "
    "a new image or model clears it until you press it again."
)

# The GPU work of the views that run the model again (the names ZeroGPU's logs show).
RELEVANCE = GpuTask(view_tasks.relevance_map, view_tasks.relevance_cost, "The relevance map", backward=True)
PATCH_PCA = GpuTask(view_tasks.patch_features, view_tasks.patch_features_cost, "The patch-feature colours")
LOGIT_LENS = GpuTask(view_tasks.layer_predictions, view_tasks.layer_predictions_cost, "The logit lens")


@dataclass(frozen=True)
class PcaChoice:
    """The PCA tab's controls: the layer (1-based; None: the last), whether the animal examples
    are fitted with the image, whether the background is removed."""

    layer: object = None
    examples: bool = False
    background: bool = True


def pca_choice(pca_layer: float | None = None, pca_examples: bool = False, pca_background: bool = True) -> PcaChoice:
    """The PCA tab's three controls as one value (checked when the PCA is drawn: `pca_picture`)."""
    return PcaChoice(pca_layer, pca_examples, pca_background)


@dataclass(frozen=True)
class Scene:
    """What a view is drawn from: the model, the pictures' text size (the Server's `text_px`), and
    for a view of an image its analysis and key (None for a view of the model alone), how the maps
    are drawn and the PCA tab's choice."""

    loaded: LoadedModel | None
    text_px: int
    ex: Explanation | None = None
    key: ExplanationKey | None = None
    drawing: Drawing = Drawing()
    pca: PcaChoice = PcaChoice()


# Each view as its component's value, with the alt text explorer.texts writes for it.
def overview_picture(scene: Scene) -> gr.Image:
    ex, model = scene.ex, model_name(scene.key.model_key)
    return with_alt(views.overview(ex, scene.drawing.style, scene.text_px), texts.overview_alt(ex, model))


def rollout_picture(scene: Scene) -> gr.Image:
    ex, drawing = scene.ex, scene.drawing
    alt = texts.rollout_alt(ex, drawing.fusion, drawing.showing, model_name(scene.key.model_key))
    return with_alt(views.rollout(ex, drawing.fusion, drawing.style, drawing.showing, scene.text_px), alt)


def distance_picture(scene: Scene) -> gr.Image:
    ex, model = scene.ex, model_name(scene.key.model_key)
    return with_alt(views.distance_chart(ex, scene.text_px), texts.distance_alt(ex, model))


def similarity_picture(scene: Scene) -> gr.Image:
    """Position similarity: of the model alone, not of an image."""
    loaded = scene.loaded
    compared, grid = texts.position_words(loaded.model), loaded.model.config.grid
    step = views.similarity_step(grid, scene.text_px)  # DINOv2's 37 x 37 slots: a tile every 3 slots
    alt = texts.similarity_alt(grid, model_name(loaded.key), compared, step)
    similarity = loaded.position_similarity()
    tiles = render.position_similarity_tiles(similarity, compared=compared, text_px=scene.text_px, step=step)
    return with_alt(tiles, alt)


def pca_inputs(loaded: LoadedModel, ex: Explanation, examples: bool) -> list[tuple[str, ModelInput]]:
    """The images one PCA is fitted on: the explanation's model input, then (with `examples`)
    each of PCA_EXAMPLES as the model's own preprocessing gives it."""
    inputs = [("this image", ex.input)]
    for name in PCA_EXAMPLES if examples else ():
        image = load_image(str(EXAMPLES_DIR / f"{name}.jpg"))
        inputs.append((name, model_input(image, loaded.preprocessing, loaded.model.config.patch_size)))
    return inputs


def pca_picture(scene: Scene) -> gr.Image:
    """Patch features of the chosen layer in colour (DINOv2 Fig. 1), on the GPU where there is one."""
    loaded, ex, choice = scene.loaded, scene.ex, scene.pca
    layer = ex.depth if choice.layer is None else check_layer(choice.layer, ex.depth)
    examples = yes_no("with the examples", choice.examples)
    background = yes_no("remove the background", choice.background)
    names, inputs = zip(*pca_inputs(loaded, ex, examples), strict=True)
    computed = PATCH_PCA(loaded, [i.tensor for i in inputs], layer - 1, background)
    pixels = [i.pixels for i in inputs]
    drawn = views.pca_view(pixels, names, computed, layer, ex.depth, ex.prefix_names, scene.text_px)
    return with_alt(drawn, texts.pca_alt(names, computed, layer, ex.depth, model_name(scene.key.model_key)))


def logit_lens_picture(scene: Scene) -> gr.Image | None:
    """What each layer would answer; for a model without a classifier head, nothing and NO_LENS."""
    loaded = scene.loaded
    if loaded.model.config.num_classes < 1:
        gr.Warning(NO_LENS)
        return None
    probabilities = LOGIT_LENS(loaded, scene.ex.input.tensor).numpy()
    names = loaded.meta.class_names
    alt = texts.logit_lens_alt(probabilities, names, model_name(scene.key.model_key))
    return with_alt(views.logit_lens_view(probabilities, names, scene.text_px), alt)


def relevance_classes(loaded: LoadedModel) -> list[str]:
    """The relevance class picker's choices for a model: the predicted class, then every class
    by name (none but the first for a model without a classifier, which the handler refuses)."""
    return [PREDICTED, *loaded.meta.class_names]


# The controls a tab holds above its picture, by ExploreView field (placed inside the tab).
def rollout_controls(start: LoadedModel) -> dict[str, Any]:
    with gr.Row():
        return {
            "fusion": gr.Radio(list(common.FUSIONS), value="mean", label="Head fusion"),
            "discard": gr.Slider(
                0.0, common.DISCARD_MAX, value=0.0, step=0.05, label="Discard ratio (weakest attention zeroed)"
            ),
        }


def relevance_controls(start: LoadedModel) -> dict[str, Any]:
    with gr.Row():
        classes = relevance_classes(start)
        target = gr.Dropdown(classes, value=PREDICTED, label="Class to explain", scale=3)
        relevance_button = gr.Button("Explain this class", size="sm")
    # The picture stays empty until the button is pressed (a backward pass), and after each new image.
    gr.Markdown(RELEVANCE_HINT, elem_id="relevance-hint")
    return {"target": target, "relevance_button": relevance_button}


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


@dataclass(frozen=True)
class MoreView:
    """One view under "More views" (a closed accordion of tabs): drawn only while on screen."""

    name: str  # its ExploreView field, its tab's key, and `on_screen` while its tab is open
    tab: str  # the tab's label
    listed: str  # how the accordion's label names it
    caption: str  # Markdown above the picture (its plain text labels it in the API)
    alt: str  # the picture's alt text until it is first drawn
    draw: Callable[[Scene], gr.Image | None] | None  # None: drawn by a button of its own, not on opening
    api_name: str | None = None  # the named endpoint of its tab's opening; None: the page's only
    image: bool = True  # it changes with the image (False: with the model alone)
    style: bool = False  # it follows the style controls (/restyle redraws it when on screen)
    task: GpuTask | None = None  # the model's arithmetic it runs again beyond the analysis's pass
    hint: str = ""  # Markdown at the top of its tab
    controls: Callable[[LoadedModel], dict[str, Any]] | None = None  # its tab's controls, by field
    kept: str | None = None  # the ExploreView field (a gr.State) keeping what it drew, to redraw it in a new style

    @property
    def heavy(self) -> bool:
        """Opening its tab runs the model again: heavy work (ui/concurrency.py), not a redraw."""
        return self.draw is not None and self.task is not None

    @property
    def elem_id(self) -> str:
        return self.name.replace("_", "-")

    def layout(self, start: LoadedModel) -> dict[str, Any]:
        """Its tab's contents inside the current gr.Tab: its hint, its controls, its picture."""
        if self.hint:
            gr.Markdown(self.hint)
        parts = self.controls(start) if self.controls is not None else {}
        return parts | {self.name: picture(self.caption, self.alt, elem_id=self.elem_id)}


# The "More views", in the order of their tabs.
MORE = {
    view.name: view
    for view in (
        MoreView(
            "overview",
            "Layers x heads",
            "layers x heads",
            "**Attention of the default query (CLS)** in every head of every layer",
            "Attention of the default query in every head of every layer",
            overview_picture,
            api_name="overview",
            style=True,
        ),
        MoreView(
            "rollout",
            "Rollout",
            "rollout",
            "**Attention rollout** (Abnar & Zuidema, 2020)",
            "Attention rollout through all layers",
            rollout_picture,
            style=True,
            controls=rollout_controls,
        ),
        MoreView(
            "distance",
            "Mean attention distance",
            "distance",
            "**How far each head looks, in this image** (the ViT paper's Fig. 7, right, averages over many images)",
            "Mean attention distance per head, for this image",
            distance_picture,
            api_name="distance",
        ),
        MoreView(
            "similarity",
            "Position embeddings",
            "position embeddings",
            "**Position-embedding similarity** (ViT paper Fig. 7, centre)",
            "Position-embedding similarity of every patch slot",
            similarity_picture,
            api_name="similarity",
            image=False,
        ),
        MoreView(
            "relevance",
            "Relevance (Chefer et al. 2021)",
            "relevance",
            "**Class-specific relevance** (Chefer, Gur & Wolf, 2021): which patches made this class",
            "Class-specific relevance of every patch",
            None,  # a forward and a backward pass: drawn when its button is pressed (/relevance)
            style=True,
            task=RELEVANCE,
            controls=relevance_controls,
            kept="relevance_map",  # explore_handlers.RelevanceMap: a new style or "show" redraws it from this
        ),
        MoreView(
            "pca",
            "Patch features (PCA)",
            "patch features (PCA)",
            "**Patch features in colour** (DINOv2, Oquab et al. 2023, Fig. 1)",
            "The patch tokens of the chosen layer in colour",
            pca_picture,
            task=PATCH_PCA,
            hint=PCA_HINT + (PCA_ON_GPU if ON_ZEROGPU else ""),
            controls=pca_controls,
        ),
        MoreView(
            "logit_lens",
            "Logit lens",
            "logit lens",
            "**What each layer would answer** (logit lens)",
            "The classifier's reading after every layer",
            logit_lens_picture,
            api_name="logit_lens",
            task=LOGIT_LENS,
            hint=LOGIT_LENS_HINT,
        ),
    )
}
MORE_VIEWS = tuple(MORE)  # by ExploreView field
DRAWN_VIEWS = tuple(name for name, view in MORE.items() if view.draw is not None)  # drawn when opened
IMAGE_VIEWS = tuple(name for name in DRAWN_VIEWS if MORE[name].image)  # of those, the ones of an image
MODEL_ONLY_VIEWS = tuple(name for name in DRAWN_VIEWS if not MORE[name].image)  # of the model alone
STYLE_VIEWS = tuple(name for name in IMAGE_VIEWS if MORE[name].style)  # redrawn in a new style
# Drawn by a button of their own (relevance), with what the session keeps of each: cleared with the image.
ON_REQUEST = tuple(field for view in MORE.values() if view.draw is None for field in (view.name, view.kept) if field)
MORE_LABEL = "More views: " + ", ".join(view.listed for view in MORE.values())  # the accordion's label


def draw_on_screen(names: tuple[str, ...], on_screen: str | None, scene: Scene) -> dict[str, gr.Image | None]:
    """`names` (of DRAWN_VIEWS) by field: the one `on_screen` drawn from `scene`, the others None
    (so no picture of an earlier image, model or style is left in a closed tab; opening it draws it)."""
    return {name: MORE[name].draw(scene) if name == on_screen else None for name in names}
