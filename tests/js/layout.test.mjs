// ui/js/layout.js: where the head maps' parts go (explorer/canvas.py's mosaic, render.head_grid's
// captions in the server's order, a colour bar's ticks at their places).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  GAP, SHRUNK_AT_MOST, barMarks, captionLines, columnWidths, fittingColumns, mosaic, roundHalfEven,
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

test("a tile's caption is the server's lines in the order it decided for the scale shown", () => {
  const lines = { name: ["head 3"], top: ["max 0.012"], prefix: ["CLS 0.12", "reg1 0.50"] };
  assert.deepEqual(captionLines(["name", "prefix"], lines), ["head 3", "CLS 0.12", "reg1 0.50"]);
  assert.deepEqual(captionLines(["name", "top", "prefix"], lines), ["head 3", "max 0.012", "CLS 0.12", "reg1 0.50"]);
  assert.deepEqual(captionLines(["name", "top"], { name: ["head 1"], prefix: [] }), ["head 1"]); // none came
});

test("a place half a pixel between two is rounded to the even one, as Python's round() puts it", () => {
  assert.deepEqual([0.5, 1.5, 2.5, -2.5, 2.4, 2.6].map(roundHalfEven), [0, 2, 2, -2, 2, 3]);
});

test("each of the server's ticks sits at its value's place along the bar, with the server's words", () => {
  const ticks = [[0, "0"], [0.25, "0.25"], [0.5, "0.5"], [0.75, "0.75"], [1, "1"]];
  assert.deepEqual(barMarks(ticks, (t) => t, 101), ticks.map(([t, text]) => ({ at: 100 * t, text })));
  assert.deepEqual(barMarks([[0.5, "a half"]], (t) => t, 4), [{ at: 2, text: "a half" }]); // 1.5: to even
  const clipped = barMarks([[-1, "below"], [3, "past"]], (t) => t / 2, 11);
  assert.deepEqual(clipped.map((m) => m.at), [0, 10]); // a place outside the bar is kept at its ends
});

test("on a bar too narrow for every tick's words, those that would touch the last kept one are left out", () => {
  const ticks = [[0, "0"], [0.08, "0.08"], [0.16, "0.16"], [0.24, "0.24"]], widthOf = (text) => 10 * text.length;
  const narrow = barMarks(ticks, (t) => t / 0.24, 121, widthOf); // 40 px apart, words 40 px wide: 0.16 touches
  assert.deepEqual(narrow.map((m) => m.text), ["0", "0.08", "0.24"]);
  const wide = barMarks(ticks, (t) => t / 0.24, 301, widthOf); // 100 px apart: every tick
  assert.deepEqual(wide, barMarks(ticks, (t) => t / 0.24, 301));
});
