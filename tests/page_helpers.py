"""Reading what the page drew itself (ui/js/) in the browser tests, and the rows the server sends it."""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from PIL import Image

# The page's last drawn head maps: their pixels, where each head's tile is, the grid and heads.
CANVAS = """() => { const m = window.attentionMaps, c = m.parts.heads.canvas;
  const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
  return {width: c.width, height: c.height, pixels: Array.from(d), cells: m.cells, grid: m.data.grid,
          heads: m.data.heads}; }"""
# A picture's bytes, whatever its address: the page's own (blob:) or the server's.
PICTURE_BYTES = """async (img) => { const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
  let text = ""; for (const b of bytes) text += String.fromCharCode(b); return btoa(text); }"""


def shown_picture(locator) -> Image.Image:
    """The picture an <img> shows (its first match), as its file holds it."""
    return Image.open(io.BytesIO(base64.b64decode(locator.first.evaluate(PICTURE_BYTES))))


def drawn_heads(page) -> tuple[np.ndarray, dict]:
    """The page's head maps as (H, W, 3) pixels, and where its tiles are."""
    got = page.evaluate(CANVAS)
    return np.array(got["pixels"], np.uint8).reshape(got["height"], got["width"], 4)[..., :3], got


def cell_centres(got: dict) -> Iterator[tuple[int, int, int, int, int]]:
    """(head, row, column, y, x) of the centre of every cell of every head's tile, as the page laid them out
    (heads in order; head, row and column 1-based)."""
    gh, gw = got["grid"]
    assert len(got["cells"]) == got["heads"]
    for cell in sorted(got["cells"], key=lambda cell: cell["head"]):
        for r in range(gh):
            for c in range(gw):
                y = int(cell["y"] + (r + 0.5) * cell["height"] / gh)
                x = int(cell["x"] + (c + 0.5) * cell["width"] / gw)
                yield cell["head"], r + 1, c + 1, y, x


def assert_same_at_every_cell(drawn: np.ndarray, png: np.ndarray, got: dict) -> None:
    """The page's head maps = the server's PNG at the centre of every cell of every head, each
    channel within 1/255 (issue 41), in the same layout."""
    assert drawn.shape == png.shape
    for head, row, col, y, x in cell_centres(got):
        difference = np.abs(drawn[y, x].astype(int) - png[y, x].astype(int)).max()
        assert difference <= 1, (head, row, col, drawn[y, x], png[y, x])


def assert_pages_same_at_every_cell(page, leader) -> None:
    """`page`'s head maps show `leader`'s at every cell of every head, each channel within 1/255, whatever
    each page's layout (a phone wraps the tiles the projector draws in one row): the same grid, heads and colours."""
    (drawn, got), (theirs, their) = drawn_heads(page), drawn_heads(leader)
    assert (got["grid"], got["heads"]) == (their["grid"], their["heads"])
    for mine, led in zip(cell_centres(got), cell_centres(their), strict=True):
        difference = np.abs(drawn[mine[3], mine[4]].astype(int) - theirs[led[3], led[4]].astype(int)).max()
        assert difference <= 1, (mine[:3], drawn[mine[3], mine[4]], theirs[led[3], led[4]])


def wait_rows_arrived(page) -> None:
    """Until the rows the page asks for unasked after an analysis have come (ui/js/rows.js,
    `settled`: every layer's token rows, the shown layer's patch rows where they are prefetched)."""
    page.wait_for_function("() => window.attentionMaps.settled()")


def unfiltered_plane(plane: np.ndarray, how: str, width: int) -> np.ndarray:
    """A (Q, H, N) plane as sent, filtered `how` (explorer/page_maps.filtered_planes), undone: running
    sums across the queries, then along each row of `width` keys, mod 256."""
    if how == "none":
        return plane
    assert how == "up-sub" and width, (how, width)
    sums = np.cumsum(plane.astype(np.int64), axis=0).reshape(len(plane), -1, width).cumsum(axis=2)
    return (sums.reshape(plane.shape) & 255).astype(np.uint8)


def read_rows(raw: bytes, heads: int, cells: int, parts: Sequence[str], width: int = 0) -> dict[str, Any]:
    """Rows as ui/js/decode.js reads them (explorer/page_maps.rows_bytes' layout): the table of the
    words they write, each head's top, each part's plane (the filter the table names undone: rows of
    keys `width` patches wide), and the words looked up: "prefix_lines" [query][head] (lines), "bars"
    [query], "top_lines" [query][head] (None where they did not come)."""
    length = int.from_bytes(raw[:4], "little")
    table = json.loads(raw[4 : 4 + length].decode())
    lines, index, tops = table["lines"], "<u2" if table.get("wide") else "u1", table.get("top_lines", False)
    at = 4 + length
    per_query = 4 * heads + np.dtype(index).itemsize * (heads * lines + 1 + tops * heads) + len(parts) * heads * cells
    queries = (len(raw) - at) // per_query

    def take(kind: str, shape: tuple[int, ...]) -> np.ndarray:
        nonlocal at
        count = math.prod(shape)
        array = np.frombuffer(raw, kind, count, at).reshape(shape)
        at += count * np.dtype(kind).itemsize
        return array

    head_tops = take("<f4", (queries, heads))
    prefix, bars = take(index, (queries, heads, lines)), take(index, (queries,))
    top = take(index, (queries, heads)) if tops else None
    planes = {part: unfiltered_plane(take("u1", (queries, heads, cells)), table["filter"], width) for part in parts}
    assert at == len(raw) and length % 4 == 0  # every byte read; the float32 tops aligned
    texts = table["texts"]
    return {
        "table": table,
        "head_tops": head_tops,
        **planes,
        "prefix_lines": [[[texts[i] for i in head] for head in query] for query in prefix],
        "bars": [table["bars"][i] for i in bars],
        "top_lines": None if top is None else [[texts[i] for i in query] for query in top],
    }
