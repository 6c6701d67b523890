"""Attention rollout (Abnar & Zuidema 2020) through all layers, drawn as the map display says."""

from __future__ import annotations

from .. import texts, views
from ..controls import Drawing
from .base import Drawn, MoreView, Scene, register


def picture(scene: Scene, drawing: Drawing) -> Drawn:
    ex = scene.ex
    alt = texts.rollout_alt(ex, drawing.fusion, drawing.showing, scene.model)
    return Drawn(views.rollout(ex, drawing.fusion, drawing.style, drawing.showing, scene.text_px), alt)


VIEW = register(
    MoreView(
        "rollout",
        "Rollout",
        "rollout",
        "**Attention rollout** (Abnar & Zuidema, 2020)",
        "Attention rollout through all layers",
        picture,
        record=Drawing,
        parse=None,
        api_name="rollout",
        style=True,
    )
)
