"""Mean attention distance per head, for this image (the ViT paper's Fig. 7, right)."""

from __future__ import annotations

from .. import texts, views
from .base import Drawn, MoreView, NoControls, Scene, register


def picture(scene: Scene, _: NoControls) -> Drawn:
    ex = scene.ex
    return Drawn(views.distance_chart(ex, scene.text_px), texts.distance_alt(ex, scene.model))


VIEW = register(
    MoreView(
        "distance",
        "Mean attention distance",
        "distance",
        "**How far each head looks, in this image** (the ViT paper's Fig. 7, right, averages over many images)",
        "Mean attention distance per head, for this image",
        picture,
        api_name="distance",
    )
)
