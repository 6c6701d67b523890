"""The logit lens: what each layer would answer, the classifier read after every block."""

from __future__ import annotations

from .. import texts, view_tasks, views
from .base import Drawn, MoreView, NoControls, NotDrawn, Scene, Task, register

NO_LENS = (
    "This model has no classifier head (a feature extractor such as DINO or DINOv2), so there are no classes to "
    "read after each layer: the logit lens needs a model with classes, e.g. the bundled model, DeiT or ViT-B/16."
)
HINT = (
    "The classifier is read after every layer, not only the last: where does the answer form? "
    f"**{texts.LENS_CAVEAT}** Only for models with a classifier head (not DINO, DINOv2, DINOv3 or CLIP)."
)
TASK = Task(view_tasks.layer_predictions, view_tasks.layer_predictions_cost, "The logit lens")


def picture(scene: Scene, _: NoControls) -> Drawn:
    """What each layer would answer; NotDrawn (NO_LENS) for a model without a classifier head."""
    loaded = scene.loaded
    if loaded.model.config.num_classes < 1:
        raise NotDrawn(NO_LENS)
    probabilities = scene.run(TASK, loaded, scene.ex.input.tensor).numpy()
    names = loaded.meta.class_names
    alt = texts.logit_lens_alt(probabilities, names, scene.model)
    return Drawn(views.logit_lens_view(probabilities, names, scene.text_px), alt)


VIEW = register(
    MoreView(
        "logit_lens",
        "Logit lens",
        "logit lens",
        "**What each layer would answer** (logit lens)",
        "The classifier's reading after every layer",
        picture,
        api_name="logit_lens",
        task=TASK,
        hint=HINT,
    )
)
