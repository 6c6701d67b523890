"""Position-embedding similarity (the ViT paper's Fig. 7, centre): of the model alone, not of an image."""

from __future__ import annotations

from vit import VisionTransformer

from .. import render
from ..views import DISPLAY_WIDTH
from .base import Drawn, MoreView, NoControls, Scene, register


def similarity_step(grid: tuple[int, int], text_px: int) -> int:
    """A position-similarity tile for every how many slots along each side, so that the tiles
    fit the picture's DISPLAY_WIDTH (render.similarity_step)."""
    return render.similarity_step(grid, text_px, DISPLAY_WIDTH["more"])


def positions_compared(model: VisionTransformer) -> str:
    """What the position-similarity picture compares for `model`: its learned position
    embeddings, or, for a rotary model (DINOv3), the rotation angles of each slot, which are
    computed, not learned (docs/analysis.md)."""
    if model.config.pos_embed == "rope":
        return "rotary position angles (computed, not learned)"
    return "position embeddings"


def similarity_alt(grid: tuple[int, int], model: str, compared: str = "position embeddings", step: int = 1) -> str:
    """The position-embedding similarity tiles (they do not depend on the image), one for every
    `step`-th slot along each side."""
    gh, gw = grid
    tiles = f"{gh} × {gw} tiles (rows × columns)"
    if step > 1:
        shown = f"{len(range(0, gh, step))} × {len(range(0, gw, step))}"
        tiles = f"{shown} tiles of the {gh} × {gw} slots, one every {step} slots"
    return (
        f"Cosine similarity of the {compared}: {tiles}, tile (i, j) comparing slot (i, j) with every slot, "
        f"from −1 to 1; model: {model}."
    )


def picture(scene: Scene, _: NoControls) -> Drawn:
    loaded = scene.loaded
    compared, grid = positions_compared(loaded.model), loaded.model.config.grid
    step = similarity_step(grid, scene.text_px)  # DINOv2's 37 x 37 slots: a tile every 3 slots
    alt = similarity_alt(grid, scene.model, compared, step)
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
