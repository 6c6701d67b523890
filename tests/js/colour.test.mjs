// ui/js/colour.js: values to colours as explorer/canvas.py's matplotlib colours them.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  barIndex, colourIndex, colourIndex64, colourTables, f32, overlaid, twoSlope,
} from "../../ui/js/colour.js";

test("a colour map's table is read from base64 as 3 bytes a colour", () => {
  const table = Uint8Array.from({ length: 256 * 3 }, (_, i) => i % 256);
  const tables = colourTables({ grey: Buffer.from(table).toString("base64") });
  assert.deepEqual(tables.grey, table);
});

test("a position picks one of 256 colours as matplotlib does, 1 itself the last, clipped outside [0, 1]", () => {
  assert.deepEqual([0, 0.5, 1, -1, 2, 255 / 256, 1 / 256 - 1e-9].map(colourIndex), [0, 128, 255, 0, 255, 255, 0]);
  assert.deepEqual([0, 0.5, 1, 2, -Infinity, Infinity].map(colourIndex64), [0, 128, 255, 255, 0, 255]);
});

test("the float32 position and the float64 one part where float32 rounds up to the next colour", () => {
  const x = 0.5 - 2 ** -30; // just under the middle: x * 256 is 128 - 2^-22, which float32 rounds to 128
  assert.equal(colourIndex64(x), 127);
  assert.equal(colourIndex(x), 128);
});

test("TwoSlopeNorm puts the centre in the middle and stretches each side to its end", () => {
  assert.deepEqual([0, 0.5, 1, 2, 3].map((x) => twoSlope(x, 1, 3)), [0, 0.25, 0.5, 0.75, 1]);
  assert.equal(twoSlope(-1, 1, 3), -Infinity);
  assert.equal(twoSlope(4, 1, 3), Infinity);
});

test("a colour over the photo is blended in float32 and rounded, as canvas.overlay", () => {
  const a = f32(0.6), keep = f32(1 - a);
  assert.equal(overlaid(100, 200, a, keep), 160);
  assert.equal(overlaid(0, 255, f32(1), f32(0)), 255);
  assert.equal(overlaid(255, 0, f32(0), f32(1)), 255);
});

test("a colour bar runs from the first colour to the last along its length", () => {
  assert.deepEqual([0, 4, 9].map((x) => barIndex(x, 10)), [0, 113, 255]);
  assert.equal(barIndex(0, 1), 0);
});
