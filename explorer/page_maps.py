"""The numbers the page draws the first screen from: the model input with its patch grid and
the head maps of any layer for any query, redrawn in the browser on every click, key, slider
step and style change without asking the server (ui/page_maps.js draws them; issue 41).

What is sent. A query row of one layer is each head's attention from one query token to every
patch. It is sent as 16-bit levels of the colour scale the screen starts on, one scale per
layer and query (canvas.MapStyle's "layer"): level = floor(65536 · v / top), `top` the largest
weight of that layer's heads for that query, sent as float32. The colour map has 256 levels,
and floor(level / 256) = floor(256 · v / top) exactly: on that scale, with nearest upsampling,
every tile is drawn in the very colours of the server's PNG (tests/test_ui_page_maps.py
compares them in a browser). Each head's own maximum (the per-head scale) and the attention to
the prefix tokens the maps leave out ("CLS 0.42" under a tile) are sent as float32.

Which rows. The prefix tokens' rows (CLS, registers, the mean patch query of a model without
CLS) of every layer, always: "Play through layers" and the layer slider never wait for the
default query. The patch queries' rows of every layer when all of them fit UP_FRONT_BYTES (the
bundled model's 9 layers take 0.94 MB), else of the layer on screen when they fit the reply's
budget; otherwise the page asks for a band of them, as bytes, when it first shows a patch query
there (`layer_rows`), and keeps them within its own memory budget (PAGE_MEMORY_BYTES). Every reply
is sized from the model's shape before it is built (explorer/page_budget.py): an analysis whose
first screen would not fit is refused in words (PageTooLarge), never built.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import canvas, controls, render, texts, views
from .canvas import COLORMAPS, MapStyle
from .explain import Explanation, ExplanationTooLarge
from .page_budget import REPLY_BYTES, PageShape, token_queries

LEVELS = 65536  # 16-bit levels per layer-and-query scale: floor(level / 256) is the colour index exactly
UP_FRONT_BYTES = 1_900_000  # JSON bytes of every layer's patch rows, sent with an analysis when they fit
PAGE_MEMORY_BYTES = 40 * 2**20  # the page keeps at most this much of layers' rows (the budget: 50 MB)
SCALES = ("layer", "head")  # the head tiles' layouts: the per-head scale adds a caption line


def colour_tables() -> dict[str, str]:
    """Each colour map's 256 entries, from matplotlib (canvas.map_gradient: RGB bytes, base64):
    the page colours with the very table the server's PNG uses. With the picker's maps, the
    diverging map of a map drawn relative to uniform (Live's rollout)."""
    return {name: b64(canvas.map_gradient(name, 256)) for name in (*COLORMAPS, render.RELATIVE_CMAP)}


def b64(array: np.ndarray) -> str:
    """`array`'s bytes, little-endian, as base64 text (what the page's typed arrays read)."""
    return base64.b64encode(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()).decode()


def rgb(pixels: np.ndarray) -> dict[str, Any]:
    """(H, W, 3) uint8 as the page reads a picture: raw RGB bytes (base64) and the size. Lossless
    with no encoding or decoding on either side: as a PNG, the model input alone took 16 % of the
    server's CPU for an analysis beside its forward pass (py-spy, ViT-S/16)."""
    return {"rgb": b64(pixels), "width": pixels.shape[1], "height": pixels.shape[0]}


def query_tokens(ex: Explanation) -> list[str | None]:
    """The token queries, in the order their rows are sent: the prefix tokens (CLS as None, the
    default query, as the server names it), then for a model without CLS None, the mean patch
    query; the patch rows follow them."""
    return [None if name == "cls" else name for name in ex.prefix_names] + ([] if ex.has_cls else [None])


def encode_rows(rows: np.ndarray, prefix: int) -> dict[str, str]:
    """Rows of one layer, (queries, heads, tokens) float32 with the prefix tokens first, as the
    page reads them: `levels` (queries, heads, patches) uint16, `tops` (queries,) the layer
    scale's top, `head_tops` (queries, heads), `shares` (queries, heads, prefix)."""
    maps, shares = rows[..., prefix:], rows[..., :prefix]  # (Q, H, N), (Q, H, P)
    head_tops = maps.max(axis=-1)  # (Q, H)
    tops = head_tops.max(axis=-1)  # (Q,): canvas.scale_tops(..., "layer") of each query
    safe = np.where(tops > 0, tops, np.float32(1.0)).astype(np.float32)
    position = maps / safe[:, None, None]  # float32, as canvas.heatmap divides
    levels = np.minimum(np.floor(position * np.float32(LEVELS)), LEVELS - 1).astype(np.uint16)
    return {"levels": b64(levels), "tops": b64(tops), "head_tops": b64(head_tops), "shares": b64(shares)}


def token_rows(ex: Explanation) -> np.ndarray:
    """(layers, token queries, heads, tokens) float32: the rows of `query_tokens` in every layer."""
    rows = []
    for query in query_tokens(ex):
        maps, shares = ex.query_maps(query), ex.prefix_attention(query)  # (L, H, gh, gw), (L, H, P)
        rows.append(np.concatenate([shares, maps.reshape(*maps.shape[:2], -1)], axis=-1))  # (L, H, T)
    return np.stack(rows, axis=1).astype(np.float32)


def patch_rows(ex: Explanation, layer: int, first: int, count: int) -> np.ndarray:
    """(count, heads, tokens) float32: the rows of patch queries `first` to `first + count - 1`
    (row-major over the grid) in `layer` (0-based)."""
    start = ex.attention.prefix_tokens + first
    attention = ex.attention[layer][0]  # (H, T, T), batch of one
    return attention[:, start : start + count, :].permute(1, 0, 2).numpy().astype(np.float32)


def layer_rows(ex: Explanation, layer: int, band: int = 0) -> dict[str, Any]:
    """Band `band` of one layer's patch rows (0-based `layer`), as the page asks for them:
    `page_shape(ex).band` patch queries from `first` on (the whole layer when one band holds it)."""
    size = page_shape(ex).band
    first = band * size
    count = min(size, ex.grid[0] * ex.grid[1] - first)
    rows = patch_rows(ex, layer, first, count)
    return {"layer": layer, "band": band, "first": first, **encode_rows(rows, ex.attention.prefix_tokens)}


class PageTooLarge(ExplanationTooLarge):
    """The page's numbers for an analysis would be more than a reply may send (page_budget)."""


def page_shape(ex: Explanation) -> PageShape:
    """The shape of what the page is sent for `ex` (explorer/page_budget.py sizes it)."""
    h, w = ex.input.pixels.shape[:2]
    queries = token_queries(ex.prefix_names)
    return PageShape(ex.grid, ex.heads, ex.depth, ex.attention.prefix_tokens, queries, (h, w))


def tile_layouts(ex: Explanation, text_px: int) -> dict[str, dict[str, int]]:
    """The head tiles' layout on each scale ("head" adds a caption line, which may take a
    column), as `views.heads` lays them out: tiles a row and a tile's side."""
    layouts = {}
    for scale in SCALES:
        cols, tile = views.head_layout(ex, None, MapStyle(scale=scale), text_px)
        layouts[scale] = {"cols": cols, "tile": tile}
    return layouts


def base_pixels(ex: Explanation, tiles: dict[str, dict[str, int]]) -> int:
    """Pixels of the images under the tiles `layouts` sends: one a scale (drawn once per tile
    size, but the reply's JSON writes a shared one in each scale's layout)."""
    return sum(math.prod(canvas.fitted_size(ex.grid, layout["tile"])) for layout in tiles.values())


def layouts(ex: Explanation, tiles: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
    """`tile_layouts` with the image under the tiles (`canvas.fit_to_grid`, drawn once per tile
    size) as raw RGB: the page needs no decoding, the server no encoding."""
    result: dict[str, dict[str, Any]] = {}
    bases: dict[int, dict[str, Any]] = {}
    for scale, layout in tiles.items():
        tile = layout["tile"]
        if tile not in bases:
            bases[tile] = rgb(canvas.fit_to_grid(ex.input.pixels, ex.grid, tile))  # (H, W, 3) uint8
        result[scale] = {**layout, "base": bases[tile]}
    return result


def words(ex: Explanation, model: str) -> dict[str, Any]:
    """The words the pictures and captions need, written by explorer.texts with placeholders
    the page fills in ("{layer}", "{query}", "{row}", "{column}")."""
    patch = texts.describe_query((0, 0), ex.has_cls)
    return {
        "title": texts.heads_title(ex, "{query}", "{layer}"),
        "note": texts.left_out(ex),
        "heads_alt": texts.heads_alt(ex, "{query}", 0, model).replace("layer 0 of", "layer {layer} of"),
        "input_alt": texts.input_alt(ex, "{query}", model),
        "input_alt_patch": texts.input_alt(ex, (0, 0), model).replace("patch (1, 1)", "{query}"),
        "patch_caption": patch.replace("row 1", "row {row}").replace("column 1", "column {column}"),
        "patch_label": "patch ({row}, {column})",
        "labels": [texts.query_label(ex, query) for query in query_tokens(ex)],
        "captions": [texts.describe_query(query, ex.has_cls) for query in query_tokens(ex)],
        "picks": [controls.query_token(query, ex.prefix_names) for query in query_tokens(ex)],
        "short_names": [render.short_token_name(name) for name in ex.prefix_names],
    }


def page_maps(ex: Explanation, model: str, layer: int, text_px: int, handle: str) -> dict[str, Any]:
    """Everything the page draws the first screen from, for an analysis shown at `layer`
    (0-based; the page's slider counts from 1); `handle` names it when the page asks for
    another layer's patch rows. Raises PageTooLarge, before building anything, when the reply
    would not fit REPLY_BYTES (explorer/page_budget.py)."""
    shape, tiles = page_shape(ex), tile_layouts(ex, text_px)
    pixels = base_pixels(ex, tiles)
    if why := shape.refusal(pixels):
        raise PageTooLarge(f"this image cannot be drawn in the page: {why}; use the centre-crop mode")
    up_front = layers_up_front(shape, layer, shape.first_screen_bytes(pixels))
    gh, gw = ex.grid
    return {
        "handle": handle,
        "grid": [gh, gw],
        "patch": ex.patch_size,
        "depth": ex.depth,
        "heads": ex.heads,
        "prefix": list(ex.prefix_names),
        "has_cls": ex.has_cls,
        "text_px": text_px,
        "input": {**rgb(ex.input.pixels), "scale": views.input_scale(ex)},
        "layouts": layouts(ex, tiles),
        "words": words(ex, model),
        "token_rows": [encode_rows(rows, ex.attention.prefix_tokens) for rows in token_rows(ex)],
        "band": shape.band,
        "patch_rows": [layer_rows(ex, i) for i in up_front],
        "layer": layer + 1,
        "memory_bytes": PAGE_MEMORY_BYTES,
    }


def layers_up_front(shape: PageShape, layer: int, first_screen: int) -> range:
    """The layers whose patch rows come with the analysis: every layer's when they fit
    UP_FRONT_BYTES, else the shown `layer`'s when they are one band and fit the reply's budget
    beside the `first_screen`'s bytes, else none (the page asks for bands)."""
    if (
        shape.depth * shape.layer_bytes <= UP_FRONT_BYTES
        and first_screen + shape.depth * shape.layer_bytes <= REPLY_BYTES
    ):
        return range(shape.depth)
    if shape.bands == 1 and first_screen + shape.layer_bytes <= REPLY_BYTES:
        return range(layer, layer + 1)
    return range(0)


def reply_bytes(payload: dict[str, Any] | Sequence[Any]) -> int:
    """Bytes of the reply as JSON (what Gradio sends), for the budgets and the benchmark."""
    return len(json.dumps(payload, separators=(",", ":")))
