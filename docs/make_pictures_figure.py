"""Draw docs/pictures-before.png and docs/pictures-after.png: the head maps of one image and
the bundled model, under the old colour rule and under the rule of docs/pictures.md.

    python docs/make_pictures_figure.py

"Before" reproduces the rule used until then: each head min-max stretched on its own, no
colour bar, nothing said about CLS. "After" is the app's own heads view.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gradio.media import get_image
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# After the path: the script runs from anywhere.
from explorer import render, views  # noqa: E402
from explorer.catalog import BUNDLED, ModelCatalog  # noqa: E402
from explorer.explain import Explanation, explain  # noqa: E402
from explorer.render import MapStyle  # noqa: E402

IMAGE = "lion.jpg"  # one of the app's example photos


def before(ex: Explanation, layer: int, style: MapStyle) -> Image.Image:
    """The old picture: every head stretched from its own minimum to its own maximum."""
    base = render.fit_to_grid(ex.input.pixels, ex.grid, views.HEAD_PX)
    maps = ex.query_maps(None)[layer - 1]
    tiles = [render.overlay(base, m - m.min(), style, float(m.max() - m.min())) for m in maps]
    grid = render.mosaic([tiles], col_labels=[f"head {j + 1}" for j in range(len(tiles))])
    return render.stack([render.text_block(f"layer {layer} of {ex.depth}, query: CLS", grid.width), grid])


def main() -> None:
    loaded = ModelCatalog().get(BUNDLED)
    image = Image.open(get_image(IMAGE)).convert("RGB")
    ex = explain(loaded.model, loaded.meta.class_names, loaded.preprocessing, image)
    style = MapStyle()
    for name, picture in (("before", before(ex, ex.depth, style)), ("after", views.heads(ex, None, ex.depth, style))):
        path = ROOT / "docs" / f"pictures-{name}.png"
        picture.save(path, optimize=True)
        print(f"{path.relative_to(ROOT)}: {picture.width} x {picture.height} px, {path.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
