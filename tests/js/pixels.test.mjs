// ui/js/pixels.js: a map's tile pixel by pixel as explorer/canvas.py draws it with PIL.
import assert from "node:assert/strict";
import { test } from "node:test";

import { bilinear, gridLines, outline, paintTile, pilCoefficients } from "../../ui/js/pixels.js";

const table = Uint8Array.from({ length: 256 * 3 }, (_, i) => Math.floor(i / 3)); // colour k is (k, k, k)
const grey = (width, height, value) => (
  { width, height, pixels: new Uint8ClampedArray(width * height * 4).fill(value) });

test("PIL's bilinear weights of each output pixel sum to 1", () => {
  for (const { k } of pilCoefficients(4, 32)) assert.ok(Math.abs(k.reduce((a, b) => a + b, 0) - 1) < 1e-12);
});

test("resampling keeps a constant map constant and a step's ends at its values", () => {
  assert.ok(bilinear(Float32Array.from([0.3, 0.3, 0.3, 0.3]), 2, 2, 8, 8).every((v) => Math.abs(v - 0.3) < 1e-6));
  const step = bilinear(Float32Array.from([0, 1]), 1, 2, 1, 8);
  assert.equal(step[0], 0);
  assert.equal(step[7], 1);
  assert.ok(step.every((v, i) => i === 0 || v >= step[i - 1])); // rising from one to the other
});

test("a raw tile takes each patch's colour from the table; an overlay blends it over the photo", () => {
  const base = grey(4, 4, 100), map = { gh: 2, gw: 2, top: 1, indexAt: (r, c) => 10 * (2 * r + c + 1) };
  const raw = new Uint8ClampedArray(4 * 4 * 4);
  paintTile(raw, base, map, { opacity: 0.6, smooth: false, raw: true }, table, null);
  assert.deepEqual([raw[0], raw[(0 * 4 + 3) * 4], raw[(3 * 4 + 0) * 4], raw[(3 * 4 + 3) * 4]], [10, 20, 30, 40]);
  const over = new Uint8ClampedArray(4 * 4 * 4);
  paintTile(over, base, map, { opacity: 1, smooth: false, raw: false }, table, null);
  assert.equal(over[0], 10); // at full opacity, the colour alone
  assert.equal(over[3], 255);
});

test("the query patch is outlined in the mark's colour, its inside left as it was", () => {
  const pixels = new Uint8ClampedArray(6 * 6 * 4);
  outline(pixels, 6, 0, 0, 6, 6, 2);
  assert.deepEqual([...pixels.subarray(0, 3)], [0, 200, 255]);
  assert.deepEqual([...pixels.subarray((2 * 6 + 2) * 4, (2 * 6 + 2) * 4 + 3)], [0, 0, 0]);
});

test("the patch grid's lines are white where each patch starts, the first excepted", () => {
  const pixels = new Uint8ClampedArray(4 * 4 * 4);
  gridLines(pixels, 4, 4, [2, 2], (k) => 2 * k);
  const at = (x, y) => pixels[(y * 4 + x) * 4];
  assert.deepEqual([at(2, 0), at(0, 2), at(1, 1), at(0, 0)], [255, 255, 0, 0]);
});
