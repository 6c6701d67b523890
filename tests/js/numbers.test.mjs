// ui/js/numbers.js: Python's round() and float formats, and matplotlib's tick positions, as the
// server's PNG writes and places them (tests/test_ui_page_maps.py compares them with Python's in a browser).
import assert from "node:assert/strict";
import { test } from "node:test";

import { barTicks, fixed2, number, pyDivmod, pyG, roundHalfEven, ticks } from "../../ui/js/numbers.js";

const close = (got, expected) => {
  assert.equal(got.length, expected.length, `${got} against ${expected}`);
  got.forEach((t, i) => assert.ok(Math.abs(t - expected[i]) < 1e-12, `${got} against ${expected}`));
};

test("round() takes exact halves to the even neighbour", () => {
  assert.deepEqual([0.5, 1.5, 2.5, -2.5, 2.4, 2.6].map(roundHalfEven), [0, 2, 2, -2, 2, 3]);
});

test("f'{x:.2f}' rounds the exact decimal value half to even, as Python does", () => {
  // 0.125 is exact: a tie, to even; 0.375 likewise; 1.005 is just under, so down (toFixed says 1.00 too)
  assert.deepEqual([0.125, 0.375, 1.005, 2, -0.001].map(fixed2), ["0.12", "0.38", "1.00", "2.00", "-0.00"]);
});

test("f'{x:.Ng}' switches to an exponent where Python does, and strips trailing zeros", () => {
  assert.equal(pyG(0, 3), "0");
  assert.equal(pyG(0.5, 2), "0.5");
  assert.equal(pyG(0.000123456, 2), "0.00012");
  assert.equal(pyG(0.0000123, 3), "1.23e-05");
  assert.equal(pyG(1234.5, 3), "1.23e+03");
  assert.equal(pyG(999.6, 3), "1e+03");
  assert.equal(pyG(0.57, 3), "0.57");
});

test("a tick's number is canvas.number's: three digits, a true minus sign", () => {
  assert.equal(number(-0.25), "\u22120.25");
  assert.equal(number(0.123456), "0.123");
});

test("divmod of floats is Python's, whose remainder has the divisor's sign", () => {
  assert.deepEqual(pyDivmod(7, 2), [3, 1]);
  assert.deepEqual(pyDivmod(-7, 2), [-4, 1]);
  assert.deepEqual(pyDivmod(0.57, 0.15).map((x) => Number(x.toFixed(12))), [3, 0.12]);
});

test("the colour bar's ticks are MaxNLocator's, kept within the bar", () => {
  close(ticks(0, 1), [0, 0.25, 0.5, 0.75, 1]);
  close(ticks(0, 0.57), [0, 0.15, 0.3, 0.45]); // 0.6 would be past the top
  close(ticks(0, 0.08), [0, 0.02, 0.04, 0.06, 0.08]);
});

test("a diverging bar's ticks step evenly away from its centre on each side", () => {
  close(barTicks(0, 3, 1), [0, 0.5, 1, 2, 3]);
  close(barTicks(0, 1, null), ticks(0, 1));
});
