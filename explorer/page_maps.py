"""The numbers the page draws the first screen from: the model input with its patch grid and
the head maps of any layer for any query, redrawn in the browser on every click, key, slider
step and style change without asking the server (ui/js/ draws them; issue 41).

What is sent. A query row of one layer is each head's attention from one query token to every
patch, sent as `rows_bytes` says: one byte a cell of each part the page's style draws (PARTS: the
shown scale's colour index exactly, canvas.heatmap's; with smooth upsampling the per-head index and
the low byte of a 16-bit level of the head's own scale), each head's maximum as float32 (to paint
with), and the text the rows write, decided here (explorer/page_text.py: "CLS 0.42" and
"max 0.42" under a tile, the colour bar's numbers and ticks), which the page looks up and never
formats. The page asks for
another part when the visitor picks another scale or upsampling, once per band. On every scale,
with nearest upsampling, every tile is drawn in the very colours of the server's PNG
(tests/test_explorer_page_maps.py checks the indices against matplotlib,
tests/test_ui_page_maps.py the page's pixels). Rows are deflated (zlib), their planes filtered
first where that deflates them smaller (`encode_rows`): the page inflates them with the browser's
DecompressionStream and undoes the filter. The analysis's reply, a Gradio event's JSON, carries its
rows as base64 (`in_json`); every other reply of rows is the deflated bytes themselves, the body
of the app's own route (ui/rows_route.py), as base64 had added a third to every band.

Which rows, and when (issue 58: what is shown first is sent first). The analysis's reply holds
what the first screen draws: the model input, the tiles' image and the shown layer's token
queries' rows (CLS, registers, the mean patch query of a model without CLS). The page then asks
(`layer_rows`), one question at a time, for what the next action is likely to need: the shown
layer's patch rows (when they fit page_budget.PREFETCH_BYTES), every layer's token rows, and the
next layers' rows of the query shown while Play or the slider moves; any other band when it is
shown. It keeps
patch rows within its own memory budget (PAGE_MEMORY_BYTES) and drops what an earlier image
asked for. Every reply is sized from the model's shape before it is built
(explorer/page_budget.py): an analysis whose replies would not fit is refused in words
(PageTooLarge), never built.
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import canvas, controls, page_text, render, texts, views
from .canvas import COLORMAPS, MapStyle
from .explain import Explanation, ExplanationTooLarge
from .page_budget import PageShape, token_queries

LEVELS = 65536  # 16-bit levels of each head's scale: floor(level / 256) is its colour index exactly
DEFLATE_LEVEL = 1  # the pictures': zlib's fastest (their bytes and times in docs/benchmarks-app.md are level 1's)
# The rows': level 4 was never more than 0.4 % larger than level 1 and takes ~0.2 ms more a band, and it
# deflates peaked attention smaller: a trained model's layer scale by 2-4 % (the bundled model at 32 and
# 56 px), peaked random weights' by up to 9 %, the fixed scale by 5-20 %; random weights' near-uniform
# rows hardly shrink at any level (docs/benchmarks-app.md, "Other codes for the rows"; bench.row_codes).
ROWS_DEFLATE_LEVEL = 4
# The filters a reply of rows is laid out with (`filtered_planes`), the smallest deflated sent: so chosen,
# Up across queries after Sub along keys took near-uniform attention's layers (random weights) 15 %
# smaller, a trained model's at 196 patches 8 %, and no reply grows; always applied, it had made peaked
# attention's up to 20 % larger (docs/benchmarks-app.md, "Other codes for the rows").
ROWS_FILTERS = ("none", "up-sub")
PAGE_MEMORY_BYTES = 40 * 2**20  # the page keeps at most this much of layers' rows (the budget: 50 MB)
SMALL_PICTURE_PIXELS = 128 * 128  # pictures also deflated unfiltered (`deflated_rgb`): up to ~1 ms more
TOKENS = "tokens"  # the band that names a layer's token queries' rows (`layer_rows`)
SCALES = ("layer", "head")  # the head tiles' layouts: the per-head scale adds a caption line
# One byte a cell each (`part_plane`): the layer, per-head and fixed scales' colour indices, and the
# level's low byte, which smooth upsampling needs beside the per-head index. The page asks for those
# its style draws (ui/js/rows.js, `wanted`); an analysis's first reply holds the page's first style's.
PARTS = ("layer", "head", "fixed", "fine")
DEFAULT_PARTS = ("layer",)


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


def deflated_rgb(pixels: np.ndarray) -> dict[str, Any]:
    """`rgb`, filtered as PNG does before deflating (`sub_up`) and deflated (zlib, as the rows), with
    the filter named ("filter": "sub-up", or "none" where the raw bytes deflate smaller) so the page
    undoes the one that was applied; the page inflates with DecompressionStream, still no image
    codec. Sub then Up took a 224 photo's 120,570 deflated bytes to 92,632, and cut deflate's time
    (a fifth at 224 px, half at 518), as the filtered bytes are mostly small. Only a small picture,
    such as the tiles' image of the bundled model's 32x32 input enlarged in whole blocks, can
    deflate smaller raw (by up to 16 %, where deflate matches its repeated pixels): those are
    deflated both ways, under 1 ms more."""
    raw = np.ascontiguousarray(pixels, np.uint8)
    sent = {"filter": "sub-up", "bytes": zlib.compress(sub_up(raw).tobytes(), DEFLATE_LEVEL)}
    if raw.shape[0] * raw.shape[1] <= SMALL_PICTURE_PIXELS:
        unfiltered = zlib.compress(raw.tobytes(), DEFLATE_LEVEL)
        if len(unfiltered) < len(sent["bytes"]):
            sent = {"filter": "none", "bytes": unfiltered}
    deflated = base64.b64encode(sent["bytes"]).decode()
    return {"deflated": deflated, "filter": sent["filter"], "width": pixels.shape[1], "height": pixels.shape[0]}


def sub_up(pixels: np.ndarray) -> np.ndarray:
    """(H, W, C) uint8 (a picture's RGB: C = 3) filtered with PNG's Sub then Up, mod 256: each byte
    less the same channel's byte to its left (Sub), then each result less the one above it (Up), 0
    beyond the edges. A photo's neighbours are alike, so most results are near 0 and deflate well;
    a numpy difference here, a running sum in the page (ui/js/decode.js, unfiltered)."""
    sub = pixels.copy()
    sub[:, 1:] -= pixels[:, :-1]  # uint8 wraps: mod 256
    filtered = sub.copy()
    filtered[1:] -= sub[:-1]
    return filtered


def query_tokens(ex: Explanation) -> list[str | None]:
    """The token queries, in the order their rows are sent: the prefix tokens (CLS as None, the
    default query, as the server names it), then for a model without CLS None, the mean patch
    query; the patch rows follow them."""
    return [None if name == "cls" else name for name in ex.prefix_names] + ([] if ex.has_cls else [None])


def colour_indices(maps: np.ndarray, tops: np.ndarray) -> np.ndarray:
    """The colour-map entry (0 to 255) canvas.heatmap picks for each value of `maps` drawn from 0
    to `tops` (broadcast; a top of 0 draws as 1), with nearest upsampling: the float32 position
    v / top, clipped to [0, 1], times 256, the last entry for 1 itself (matplotlib's Colormap)."""
    return np.minimum(scaled(maps, tops, 256), 255).astype(np.int16)


def scaled(maps: np.ndarray, tops: np.ndarray, steps: int) -> np.ndarray:
    """floor(steps · v / top) as canvas.heatmap computes the position (float32 v / top, clipped to
    [0, 1]); `steps` a power of two, so the multiplication is exact and floor(scaled(.., 65536) /
    256) = scaled(.., 256)."""
    tops = np.asarray(tops, np.float32)
    safe = np.where(tops > 0, tops, np.float32(1.0)).astype(np.float32)
    position = np.clip(np.asarray(maps, np.float32) / safe, np.float32(0), np.float32(1))
    return np.floor(position * np.float32(steps)).astype(np.int64)


def part_plane(part: str, maps: np.ndarray, head_tops: np.ndarray) -> np.ndarray:
    """One byte per cell of `maps` (Q, H, N) for `part` of PARTS: a scale's colour index, exactly
    canvas.heatmap's, or the low byte of the level floor(65536 · v / head top), which with the
    per-head colour index (its high byte) gives smooth upsampling the value it interpolates."""
    if part == "layer":
        return colour_indices(maps, head_tops.max(axis=-1, keepdims=True)[..., None])
    if part == "fixed":
        return colour_indices(maps, np.float32(1))
    if part == "head":
        return colour_indices(maps, head_tops[..., None])
    return np.minimum(scaled(maps, head_tops[..., None], LEVELS), LEVELS - 1) & 255


def rows_bytes(rows: np.ndarray, names: Sequence[str], parts: Sequence[str] = PARTS) -> bytes:
    """Rows of one layer, (queries Q, heads H, tokens) float32 with the prefix tokens first (P of
    them, named `names`; N patches follow), as the page reads them, little-endian, in this order:

    - the rows' text (explorer/page_text.py, `text_block`): a table of the distinct caption
      lines and colour bars these rows write, decided here, with its shape (lines a caption, the
      index's bytes; Q follows from the bytes that come after it) and the planes' filter
      ("filter": "none" here; `encode_rows` may send them "up-sub", `filtered_planes`);
    - `head_tops` (Q, H) float32: each head's largest weight, the per-head scale's top; the layer
      scale's top is their largest. The page needs the floats to paint, not to write: smooth
      upsampling turns a head's 16-bit levels back into values, and a tick's place along the bar
      is its value over the top;
    - the indices into that table (`page_text.row_text`): each head's prefix lines, each query's colour
      bar on the layer scale, and with the part "head" each head's "max" line;
    - one (Q, H, N) uint8 plane per part of `parts`, in their order (`part_plane`).

    Each scale's colour index is sent as itself, not derived from another's: the page draws the
    scale shown from one byte a cell, exactly, and asks for another scale's byte, or the low byte
    smooth upsampling needs, only when the visitor picks it (issue 58: four bytes a cell had
    made ViT-B/16's first reply 1.5 MB)."""
    return laid_out(rows_numbers(rows, names, parts), (0, 0), "none")


def rows_numbers(rows: np.ndarray, names: Sequence[str], parts: Sequence[str]) -> tuple[dict, list, list]:
    """What `rows_bytes` lays out: the text's table, the tops and the indices into it, and the planes."""
    prefix = len(names)
    maps, shares = rows[..., prefix:].astype(np.float32), rows[..., :prefix].astype(np.float32)
    head_tops = maps.max(axis=-1)  # (Q, H)
    table, indices = page_text.row_text(head_tops, shares, names, "head" in parts)
    planes = [part_plane(part, maps, head_tops).astype(np.uint8) for part in parts]
    return table, [head_tops.astype("<f4"), *indices], planes


def laid_out(numbers: tuple[dict, list, list], grid: tuple[int, int], how: str) -> bytes:
    """`rows_numbers` as `rows_bytes` lays them out, the planes filtered `how` (ROWS_FILTERS)."""
    table, arrays, planes = numbers
    planes = filtered_planes(planes, grid) if how == "up-sub" else planes
    return page_text.text_block({**table, "filter": how}) + b"".join(
        np.ascontiguousarray(a).tobytes() for a in (*arrays, *planes)
    )


def filtered_planes(planes: list[np.ndarray], grid: tuple[int, int]) -> list[np.ndarray]:
    """Each (Q, H, N) plane filtered as a picture is (`sub_up`), its keys' grid rows as the picture's
    rows' pixels and its queries as the picture's rows: each cell less its left neighbour in the
    keys' grid (Sub), then less the result of the query before it (Up), mod 256. A query's map is
    much like the one before it in the band (neighbouring patches), and a cell like its left
    neighbour; the page undoes it with running sums (ui/js/decode.js, `unfilteredPlane`)."""
    filtered = []
    for plane in planes:
        queries, heads, cells = plane.shape
        columns = plane.reshape(queries, heads * grid[0], grid[1]).transpose(0, 2, 1)  # (Q, gw, H·gh)
        filtered.append(sub_up(columns).transpose(0, 2, 1).reshape(queries, heads, cells))
    return filtered


def known_parts(asked: object) -> tuple[str, ...] | None:
    """The parts a question names (a list of PARTS' names, each once), in PARTS' order, or None
    for anything else: the cache of encoded bands is keyed by it."""
    if not isinstance(asked, list) or not asked or len(set(map(str, asked))) != len(asked):
        return None
    if not all(isinstance(part, str) and part in PARTS for part in asked):
        return None
    return tuple(part for part in PARTS if part in asked)


def encode_rows(rows: np.ndarray, names: Sequence[str], parts: Sequence[str], grid: tuple[int, int]) -> dict[str, Any]:
    """`rows_bytes`, deflated (zlib; the page inflates them with DecompressionStream), with the
    parts they hold: {"parts": [...], "deflated": bytes}. Laid out with each filter of
    ROWS_FILTERS, the one that deflates smallest is sent (its bytes name it)."""
    numbers = rows_numbers(rows, names, parts)
    sent = [zlib.compress(laid_out(numbers, grid, how), ROWS_DEFLATE_LEVEL) for how in ROWS_FILTERS]
    return {"parts": list(parts), "deflated": min(sent, key=len)}


def in_json(rows: dict[str, Any]) -> dict[str, Any]:
    """`rows` (`layer_rows`) as a Gradio reply carries them in its JSON: the deflated bytes as base64."""
    return {**rows, "deflated": base64.b64encode(rows["deflated"]).decode()}


def body_bytes(rows: dict[str, Any]) -> int:
    """Bytes of `rows` (`layer_rows`) as the rows route sends them: its reply's body."""
    return len(rows["deflated"])


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


def layer_rows(
    ex: Explanation, layer: int, band: int | str = 0, parts: Sequence[str] = DEFAULT_PARTS
) -> dict[str, Any]:
    """What the page asks for of one layer (0-based `layer`): band `band` of its patch rows,
    `page_shape(ex).band` patch queries from `first` on (the whole layer when one band holds it),
    or with band TOKENS its token queries' rows (`query_tokens`), with the `parts` asked for:
    {"layer", "band", "first" (patch rows only), "parts", "deflated": the bytes (`encode_rows`)}."""
    names = ex.prefix_names
    if band == TOKENS:
        return {"layer": layer, "band": band, **encode_rows(token_rows(ex)[layer], names, parts, ex.grid)}
    assert isinstance(band, int), band
    size = page_shape(ex).band
    first = band * size
    count = min(size, ex.grid[0] * ex.grid[1] - first)
    rows = patch_rows(ex, layer, first, count)
    return {"layer": layer, "band": band, "first": first, **encode_rows(rows, names, parts, ex.grid)}


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
    size) as deflated RGB (`deflated_rgb`)."""
    result: dict[str, dict[str, Any]] = {}
    bases: dict[int, dict[str, Any]] = {}
    for scale, layout in tiles.items():
        tile = layout["tile"]
        if tile not in bases:
            bases[tile] = deflated_rgb(canvas.fit_to_grid(ex.input.pixels, ex.grid, tile))  # (H, W, 3) uint8
        result[scale] = {**layout, "base": bases[tile]}
    return result


def text(ex: Explanation, model: str) -> dict[str, Any]:
    """The text the pictures and captions need, written by explorer.texts with placeholders
    the page fills in ("{layer}", "{query}", "{row}", "{column}"), and those of the head maps that
    no row's numbers change (page_text.fixed_text)."""
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
        **page_text.fixed_text(),
    }


def page_maps(ex: Explanation, model: str, layer: int, text_px: int, handle: str) -> dict[str, Any]:
    """What the page draws the first screen from, for an analysis shown at `layer` (0-based; the
    page's slider counts from 1): the model input, the tiles' image and that layer's token
    queries' rows; `handle` names the analysis when the page asks for the rest (`layer_rows`).
    Raises PageTooLarge, before building anything, when a reply would not fit its budget
    (explorer/page_budget.py)."""
    shape, tiles = page_shape(ex), tile_layouts(ex, text_px)
    if why := shape.refusal(base_pixels(ex, tiles)):
        raise PageTooLarge(f"this image cannot be drawn in the page: {why}; use the centre-crop mode")
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
        "input": {**deflated_rgb(ex.input.pixels), "scale": views.input_scale(ex)},
        "layouts": layouts(ex, tiles),
        "text": text(ex, model),
        "token_rows": in_json(layer_rows(ex, layer, TOKENS)),
        "band": shape.band,
        "prefetch_bands": shape.prefetch_bands,
        "layer": layer + 1,
        "memory_bytes": PAGE_MEMORY_BYTES,
    }


def reply_bytes(payload: dict[str, Any] | Sequence[Any]) -> int:
    """Bytes of the reply as JSON (what Gradio sends), for the budgets and the benchmark."""
    return len(json.dumps(payload, separators=(",", ":")))
