"""Draw the figures of docs/pictures.md from the bundled model:

- pictures-before.png, pictures-after.png: the head maps of one photo under the old colour
  rule (each head min-max stretched on its own, no colour bar, nothing said about CLS) and
  the app's own heads view;
- rollout-before.png and rollout-{weights,relative,top-mass}.png: the rollout of the CIFAR-10
  cat example coloured from 0 with nothing marking uniform (as drawn until then), and the
  three ways the app draws it now (controls.SHOWS).

    python docs/make_pictures_figure.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from gradio.media import get_image
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# After the path: the script runs from anywhere.
from explorer import canvas, controls, render, texts, views  # noqa: E402
from explorer.catalog import BUNDLED, ModelCatalog  # noqa: E402
from explorer.explain import Explanation, explain  # noqa: E402
from explorer.render import MapStyle  # noqa: E402

IMAGE = "lion.jpg"  # one of the app's example photos
CAT = ROOT / "examples" / "cifar10" / "cat.jpg"  # its rollout spans 0.0093 to 0.0223 around uniform 0.0152


def before(ex: Explanation, layer: int, style: MapStyle) -> Image.Image:
    """The old picture: every head stretched from its own minimum to its own maximum."""
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, views.HEAD_PX)
    maps = ex.query_maps(None)[layer - 1]
    tiles = [canvas.overlay(base, m - m.min(), style, float(m.max() - m.min())) for m in maps]
    grid = canvas.mosaic([tiles], canvas.TEXT_PX, col_labels=[f"head {j + 1}" for j in range(len(tiles))])
    return canvas.stack(
        [canvas.text_block(f"layer {layer} of {ex.depth}, query: CLS", grid.width, canvas.TEXT_PX), grid]
    )


def rollout_before(ex: Explanation, style: MapStyle) -> Image.Image:
    """The old rollout picture: coloured from 0 to its maximum, nothing marking uniform."""
    base = canvas.fit_to_grid(ex.input.pixels, ex.grid, views.ROLLOUT_PX)
    note = texts.describe_rollout(ex, "mean", 0.0)
    return render.map_picture(
        base, ex.rollout("mean", 0.0), style, "attention rollout, query: CLS", "rollout weight", note
    )


def main() -> None:
    loaded = ModelCatalog().get(BUNDLED)
    image = Image.open(get_image(IMAGE)).convert("RGB")
    ex = explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, image)
    cat = explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, Image.open(CAT).convert("RGB"))
    style = MapStyle()
    pictures = {
        "pictures-before": before(ex, ex.depth, style),
        "pictures-after": views.heads(ex, None, ex.depth - 1, style),
        "rollout-before": rollout_before(cat, style),
        **{
            f"rollout-{show.replace(' ', '-')}": views.rollout(cat, controls.Fusion(), style, controls.Showing(show))
            for show in controls.SHOWS
        },
    }
    for name, picture in pictures.items():
        path = ROOT / "docs" / f"{name}.png"
        picture.save(path, optimize=True)
        print(f"{path.relative_to(ROOT)}: {picture.width} x {picture.height} px, {path.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
