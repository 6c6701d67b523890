"""Position-embedding similarity (the ViT paper's Fig. 7, centre): of the model alone, not of an image."""

from __future__ import annotations

from .. import render, texts, views
from .base import Drawn, MoreView, NoControls, Scene, register


def picture(scene: Scene, _: NoControls) -> Drawn:
    loaded = scene.loaded
    compared, grid = texts.position_words(loaded.model), loaded.model.config.grid
    step = views.similarity_step(grid, scene.text_px)  # DINOv2's 37 x 37 slots: a tile every 3 slots
    alt = texts.similarity_alt(grid, scene.model, compared, step)
    similarity = loaded.position_similarity()
    return Drawn(render.position_similarity_tiles(similarity, compared=compared, text_px=scene.text_px, step=step), alt)


VIEW = register(
    MoreView(
        "similarity",
        "Position embeddings",
        "position embeddings",
        "**Position-embedding similarity** (ViT paper Fig. 7, centre)",
        "Position-embedding similarity of every patch slot",
        picture,
        api_name="similarity",
        image=False,
    )
)
