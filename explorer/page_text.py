"""The text the page writes on its first screen (ui/js/), decided here once (issue 57: the page
paints, the server decides): the captions under the head tiles and the colour bars' numbers, ticks
and labels, written by the very functions that write the server's PNG (render.head_name,
top_line, prefix_lines, caption_parts; canvas.bar_text, scale_text), so that the page and the
export say the same. The page formats no number and picks no tick: it looks the text up.

What depends on a query row's numbers (each head's maximum, its prefix shares, the layer's top)
travels with the rows (explorer/page_maps.rows_bytes): a reply's distinct lines once each, and per
row indices into them (`row_text`); ViT-B/16's shares as float32 had taken four bytes each where
an index takes one. What does not (the heads' names, the captions' order, each scale's label, the
bar of the per-head and fixed scales) comes once with the analysis (`fixed_text`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from . import canvas, render

UNIT = "attention weight"  # what the head maps' colours are (render.head_grid's colour bar)
POINTED_NAME = render.HEAD_NAME + ", pointed at"  # the caption's name line of the head pointed at (ui/js/pointing.js)
POINTED_ALT = " The page points at head {head}, outlined."  # added to the maps' description


def fixed_text() -> dict[str, Any]:
    """The text of the head maps that no row's numbers change: a head's name, the lines of a
    tile's caption on each scale (render.caption_parts), each scale's label with canvas.TOP where
    the layer's top goes, and the colour bar from 0 to 1 of the per-head and fixed scales."""
    scope, shared = render.ScaleTop.scope, render.ScaleTop.shared  # render.head_grid's, for one layer
    return {
        "head_name": render.HEAD_NAME,  # "{head}": the head's number, 1-based, as the page writes a layer's
        # the head a teacher points at (the page's alone: the server's PNG points at none), its tile and the maps'
        "pointed_name": POINTED_NAME,
        "pointed_alt": POINTED_ALT,
        "caption_parts": {scale: list(render.caption_parts(scale)) for scale in canvas.SCALES},
        "scale_labels": {scale: canvas.scale_text(scale, UNIT, scope, shared) for scale in canvas.SCALES},
        "unit_bar": canvas.bar_text(0.0, 1.0),
    }


class _Table:
    """Distinct values, each once, in the order they first came: a value's index is its place.
    Values are told apart by `key` (a word by itself; a colour bar by its JSON)."""

    def __init__(self, key: Callable[[Any], Hashable] = str) -> None:
        self.key = key
        self.places: dict[Hashable, int] = {}
        self.values: list[Any] = []

    def place(self, value: Any) -> int:
        key = self.key(value)
        if key not in self.places:
            self.places[key] = len(self.values)
            self.values.append(value)
        return self.places[key]


def row_text(
    head_tops: np.ndarray, shares: np.ndarray, names: Sequence[str], tops: bool
) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The text of Q query rows of H heads, from each head's maximum `head_tops` (Q, H) and its
    attention `shares` (Q, H, P) to the prefix tokens `names`: the reply's table {"lines": prefix
    lines a caption, "texts": the distinct lines, "bars": the distinct colour bars (canvas.bar_text),
    "top_lines": true where `tops`, "wide": true where an index takes two bytes} and, in the order
    page_maps.rows_bytes sends them, the indices:

    - (Q, H, lines) into "texts": each head's prefix lines (render.prefix_lines, "CLS 0.42");
    - (Q,) into "bars": each query's bar on the layer scale, from 0 to its heads' largest maximum;
    - with `tops`, (Q, H) into "texts": each head's own maximum (render.top_line, "max 0.42"),
      which the per-head scale writes (the page asks for them with that scale's colour index).

    An index is one byte, or two where a table holds more than 256. Keys that would say nothing
    (false, one byte) are left out: a layer's token rows are a few hundred bytes."""
    texts, bars = _Table(), _Table(json.dumps)
    queries, heads = head_tops.shape
    shares = shares.astype(np.float64)  # the float32 values exactly, written as Python floats: a third of the time
    prefix = [
        [texts.place(line) for line in render.prefix_lines(render.Prefix(shares[q, h], names))]
        for q in range(queries)
        for h in range(heads)
    ]
    lines = len(prefix[0]) if prefix else 0
    indices = [np.array(prefix, np.int64).reshape(queries, heads, lines)]
    indices.append(np.array([bars.place(canvas.bar_text(0.0, float(top))) for top in head_tops.max(axis=-1)]))
    if tops:
        indices.append(np.array([[texts.place(render.top_line(float(t))) for t in row] for row in head_tops]))
    wide = max(len(texts.values), len(bars.values)) > 256
    table = {"lines": lines, "texts": texts.values, "bars": bars.values}
    table.update({"top_lines": True} if tops else {}, **({"wide": True} if wide else {}))
    return table, [i.astype("<u2" if wide else "u1") for i in indices]


def text_block(table: dict[str, Any]) -> bytes:
    """`table` as the rows send it: its length (4 bytes, little-endian), then its JSON in UTF-8,
    padded with spaces to a multiple of 4 bytes so that the float32 tops after it are aligned."""
    text = json.dumps(table, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 4)
    return len(text).to_bytes(4, "little") + text
