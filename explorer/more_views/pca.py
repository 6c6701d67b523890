"""Patch features in colour (DINOv2, Oquab et al. 2023, Fig. 1): each patch token of the chosen layer
as a colour, its first three principal components as red, green and blue."""

from __future__ import annotations

from dataclasses import dataclass

from .. import texts, view_tasks, views
from ..explain import ModelInput, model_input
from ..images import EXAMPLES_DIR, load_image
from .base import Drawn, MoreView, Scene, Task, register

# The examples one PCA may be fitted on beside the image: the six animal classes of CIFAR-10, whose
# parts (heads, legs, bodies) a good model's features match across images (DINOv2 Fig. 1).
EXAMPLES = ("bird", "cat", "deer", "dog", "frog", "horse")
HINT = (
    "Each patch token of the chosen layer as a colour: its first three principal components as red, green and "
    "blue (DINOv2, Oquab et al. 2023, Fig. 1). With the examples, one PCA is fitted on this image and the six "
    "animal examples together, so the same part gets the same colour in every image."
)
TASK = Task(view_tasks.patch_features, view_tasks.patch_features_cost, "The patch-feature colours")


@dataclass(frozen=True)
class PcaChoice:
    """The PCA tab's controls: the layer (1-based; None: the last), whether the animal examples
    are fitted with the image, whether the background is removed (checked by ui/explore_views.py)."""

    layer: object = None
    examples: bool = False
    background: bool = True


def pca_choice(pca_layer: float | None = None, pca_examples: bool = False, pca_background: bool = True) -> PcaChoice:
    """The PCA tab's three controls as one value."""
    return PcaChoice(pca_layer, pca_examples, pca_background)


def inputs(scene: Scene, examples: bool) -> list[tuple[str, ModelInput]]:
    """The images one PCA is fitted on: the analysis's model input, then (with `examples`) each of
    EXAMPLES as the model's own preprocessing gives it."""
    loaded, ex = scene.loaded, scene.ex
    fitted = [("this image", ex.input)]
    for name in EXAMPLES if examples else ():
        image = load_image(str(EXAMPLES_DIR / f"{name}.jpg"))
        fitted.append((name, model_input(image, loaded.preprocessing, loaded.model.config.patch_size)))
    return fitted


def picture(scene: Scene, choice: PcaChoice) -> Drawn:
    """Patch features of the chosen layer (1-based; None: the last) in colour, on the GPU where there is one."""
    ex = scene.ex
    layer = ex.depth if choice.layer is None else int(choice.layer)
    names, fitted = zip(*inputs(scene, choice.examples), strict=True)
    computed = scene.run(TASK, scene.loaded, [i.tensor for i in fitted], layer - 1, choice.background)
    pixels = [i.pixels for i in fitted]
    drawn = views.pca_view(pixels, names, computed, layer, ex.depth, ex.prefix_names, scene.text_px)
    return Drawn(drawn, texts.pca_alt(names, computed, layer, ex.depth, scene.model))


VIEW = register(
    MoreView(
        "pca",
        "Patch features (PCA)",
        "patch features (PCA)",
        "**Patch features in colour** (DINOv2, Oquab et al. 2023, Fig. 1)",
        "The patch tokens of the chosen layer in colour",
        picture,
        record=PcaChoice,
        parse=pca_choice,
        api_name="patch_pca",
        task=TASK,
        hint=HINT,
    )
)
