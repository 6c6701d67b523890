"""The logit lens: what each layer would answer, the classifier read after every block (its task,
its picture, its text)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from PIL import Image

from vit.probes import logit_lens

from .. import canvas, charts
from ..compute import pass_seconds, to_model, work_seconds
from ..loaded import LoadedModel
from .base import Drawn, MoreView, NoControls, NotDrawn, Scene, Task, register

LENS_TOP = 5  # classes shown: the last layer's top 5
LENS_CAVEAT = (
    "Intermediate layers were never trained to be read this way: only the last layer's reading is the model's "
    "prediction. An earlier reading is what the classifier makes of an unfinished representation, not what the "
    "model 'thought' at that layer."
)
NO_LENS = (
    "This model has no classifier head (a feature extractor such as DINO or DINOv2), so there are no classes to "
    "read after each layer: the logit lens needs a model with classes, e.g. the bundled model, DeiT or ViT-B/16."
)
HINT = (
    "The classifier is read after every layer, not only the last: where does the answer form? "
    f"**{LENS_CAVEAT}** Only for models with a classifier head (not DINO, DINOv2, DINOv3 or CLIP)."
)


def layer_predictions(loaded: LoadedModel, tensor: torch.Tensor) -> torch.Tensor:
    """Task (explorer/compute.py): (layers, classes) class probabilities read after every block
    of one image (1, 3, H, W): `vit.probes.logit_lens`."""
    return logit_lens(loaded.model, to_model(loaded.model, tensor))[0].cpu()


def layer_predictions_cost(loaded: LoadedModel, tensor: torch.Tensor) -> float:
    """GPU seconds of `layer_predictions`: one forward pass and the head after every block."""
    c = loaded.model.config
    return pass_seconds(loaded.model, tensor.shape[-2:]) + work_seconds(c.depth * 2 * c.dim * c.num_classes)


TASK = Task(layer_predictions, layer_predictions_cost, "The logit lens")


def class_name(class_names: Sequence[str], index: int) -> str:
    return class_names[index] if index < len(class_names) else f"class {index}"


def logit_lens_view(
    probabilities: np.ndarray, class_names: Sequence[str], text_px: int = canvas.TEXT_PX
) -> Image.Image:
    """What each layer would answer (`layer_predictions`' (layers, classes) probabilities): the
    last layer's top LENS_TOP classes at every layer, and each layer's own top class."""
    layers, classes = probabilities.shape
    top = np.argsort(-probabilities[-1], kind="stable")[: min(LENS_TOP, classes)]
    names = [class_name(class_names, i) for i in top]
    top1 = [class_name(class_names, i) for i in probabilities.argmax(axis=1)]
    title = (
        "What each layer would answer (logit lens): the token the classifier reads, taken after each block and "
        "passed through the model's final norm and classifier head"
    )
    note = (
        f"{LENS_CAVEAT} Rows: the last layer's top {len(top)} classes, their probability after every layer; the other "
        f"{classes - len(top)} classes' share is left out (printed on top: each layer's own top class)."
    )
    return charts.logit_lens_chart(probabilities[:, top].T, names, top1, title, note, text_px)


def logit_lens_alt(probabilities: np.ndarray, class_names: Sequence[str], model: str) -> str:
    """The logit lens chart: every layer's top class in words."""
    read = ", ".join(
        f"layer {i + 1}: {class_name(class_names, int(row.argmax()))} {float(row.max()):.2f}"
        for i, row in enumerate(probabilities)
    )
    return (
        f"Heat map of the probability, 0 to 1, of the last layer's top {min(LENS_TOP, probabilities.shape[1])} classes "
        f"read after each of the {len(probabilities)} layers (logit lens; intermediate layers were never trained to "
        f"be read this way). Top class per layer: {read}; model: {model}."
    )


def picture(scene: Scene, _: NoControls) -> Drawn:
    """What each layer would answer; NotDrawn (NO_LENS) for a model without a classifier head."""
    loaded = scene.loaded
    if loaded.model.config.num_classes < 1:
        raise NotDrawn(NO_LENS)
    probabilities = scene.run(TASK, loaded, scene.ex.input.tensor).numpy()
    names = loaded.meta.class_names
    return Drawn(
        logit_lens_view(probabilities, names, scene.text_px), logit_lens_alt(probabilities, names, scene.model)
    )


VIEW = register(
    MoreView(
        "logit_lens",
        "Logit lens",
        "logit lens",
        "**What each layer would answer** (logit lens)",
        "The classifier's reading after every layer",
        picture,
        api_name="logit_lens",
        chart=True,
        task=TASK,
        hint=HINT,
    )
)
