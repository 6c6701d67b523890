// ui/js/layout.js: where the head maps' parts go and what their words say (explorer/canvas.py's mosaic,
// render.head_grid's captions and labels).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  GAP, SHRUNK_AT_MOST, barMarks, columnWidths, fittingColumns, mosaic, scaleLabel, tileLines,
} from "../../ui/js/layout.js";

const tiles = (...widths) => widths.map((width) => ({ width, height: 50 }));

test("each column is as wide as its widest tile", () => {
  assert.deepEqual(columnWidths(tiles(10, 30, 20, 40, 5), 2), [20, 40]);
  assert.deepEqual(columnWidths(tiles(10, 30), 5), [10, 30]);
});

test("the server's tiles a row are kept where the frame shows them at 9/10 of their width or more", () => {
  const six = tiles(100, 100, 100, 100, 100, 100), width = 3 * (100 + GAP);
  assert.equal(fittingColumns(six, 3, width), 3);
  assert.equal(fittingColumns(six, 3, Math.ceil(width * SHRUNK_AT_MOST)), 3);
});

test("a narrower frame gets as many tiles a row as fit it, one at least", () => {
  const six = tiles(100, 100, 100, 100, 100, 100);
  assert.equal(fittingColumns(six, 3, 2 * (100 + GAP)), 2);
  assert.equal(fittingColumns(six, 3, 150), 1);
  assert.equal(fittingColumns(six, 3, 10), 1);
});

test("a mosaic places its tiles column by column, row by row, a GAP after each", () => {
  const made = mosaic([{ width: 10, height: 5 }, { width: 20, height: 8 }, { width: 15, height: 6 }], 2);
  assert.deepEqual(made.places.map(({ head, x, y }) => [head, x, y]), [[1, 0, 0], [2, 15 + GAP, 0], [3, 0, 8 + GAP]]);
  assert.equal(made.width, 15 + GAP + 20 + GAP);
  assert.equal(made.height, 8 + GAP + 6 + GAP);
});

test("a tile's caption names its head, its top on the per-head scale, and each prefix token's share", () => {
  assert.deepEqual(tileLines(0, 0.5, [0.125, 0.5], ["CLS", "reg1"], "layer"), ["head 1", "CLS 0.12", "reg1 0.50"]);
  assert.deepEqual(tileLines(2, 0.0123, [], [], "head"), ["head 3", "max 0.012"]);
});

test("the colour bar's label says which scale colours the maps", () => {
  assert.match(scaleLabel("layer", 0.57), /from 0 to 0\.57, the largest in this layer/);
  assert.match(scaleLabel("head", 1), /each head's own maximum/);
  assert.match(scaleLabel("fixed", 1), /fixed scale from 0 to 1/);
});

test("each tick sits at its value's place along the bar, with its number", () => {
  assert.deepEqual(barMarks(1, null, 101), [0, 0.25, 0.5, 0.75, 1].map((t) => ({ at: 100 * t, text: String(t) })));
  const diverging = barMarks(3, 1, 101); // the centre, 1, in the middle
  assert.deepEqual(diverging.find((m) => m.text === "1"), { at: 50, text: "1" });
  assert.deepEqual(diverging.at(-1), { at: 100, text: "3" });
});
