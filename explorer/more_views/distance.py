"""Mean attention distance per head, for this image (the ViT paper's Fig. 7, right)."""

from __future__ import annotations

from PIL import Image

from .. import canvas, charts
from ..explain import Explanation
from ..texts import on_grid
from .base import Drawn, MoreView, NoControls, Scene, register


def distance_chart(ex: Explanation, text_px: int = canvas.TEXT_PX) -> Image.Image:
    return charts.attention_distance_chart(ex.attention_distance(), ex.input.pixels.shape[:2], text_px)


def distance_alt(ex: Explanation, model: str) -> str:
    """The mean attention distance chart."""
    return (
        f"Chart of the mean attention distance in pixels (y) of each of the {ex.heads} heads in each of the "
        f"{ex.depth} layers (x) for this image, one dot per head, side by side; {on_grid(ex, model)}."
    )


def picture(scene: Scene, _: NoControls) -> Drawn:
    ex = scene.ex
    return Drawn(distance_chart(ex, scene.text_px), distance_alt(ex, scene.model))


VIEW = register(
    MoreView(
        "distance",
        "Mean attention distance",
        "distance",
        "**How far each head looks, in this image** (the ViT paper's Fig. 7, right, averages over many images)",
        "Mean attention distance per head, for this image",
        picture,
        api_name="distance",
        chart=True,
    )
)
