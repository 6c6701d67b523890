"""Layers x heads: the default query's attention (CLS) in every head of every layer."""

from __future__ import annotations

from .. import texts, views
from ..canvas import MapStyle
from .base import Drawn, MoreView, Scene, register


def picture(scene: Scene, style: MapStyle) -> Drawn:
    ex = scene.ex
    return Drawn(views.overview(ex, style, scene.text_px), texts.overview_alt(ex, scene.model))


VIEW = register(
    MoreView(
        "overview",
        "Layers x heads",
        "layers x heads",
        "**Attention of the default query (CLS)** in every head of every layer",
        "Attention of the default query in every head of every layer",
        picture,
        record=MapStyle,
        parse=None,
        api_name="overview",
        style=True,
    )
)
