// ui/js/decode.js: the one reading of the server's bytes (explorer/page_maps.py writes them).
import assert from "node:assert/strict";
import { test } from "node:test";
import { deflateSync } from "node:zlib";

import {
  LEVELS, bytesOf, decodeRows, floats, inflated, levelValues, merged, queryRows, rgba, rowShape,
} from "../../ui/js/decode.js";

const b64 = (bytes) => Buffer.from(bytes).toString("base64");

// Rows as explorer/page_maps.rows_bytes writes them: per query and head its top and prefix shares
// (float32), then one byte a cell of each part in turn.
function rowsBytes(queries, heads, cells, prefix, parts) {
  const tops = Float32Array.from({ length: queries * heads }, (_, i) => i + 1);
  const shares = Float32Array.from({ length: queries * heads * prefix }, (_, i) => (i + 1) / 100);
  const plane = (k) => Uint8Array.from({ length: queries * heads * cells }, (_, i) => (10 * k + i) % 256);
  const planes = parts.map((_, k) => plane(k));
  const bytes = new Uint8Array(tops.byteLength + shares.byteLength + planes.reduce((a, p) => a + p.length, 0));
  bytes.set(new Uint8Array(tops.buffer), 0);
  bytes.set(new Uint8Array(shares.buffer), tops.byteLength);
  let at = tops.byteLength + shares.byteLength;
  for (const plane of planes) { bytes.set(plane, at); at += plane.length; }
  return { bytes, tops, shares, planes };
}

test("base64 text reads back as its bytes and as little-endian float32", () => {
  assert.deepEqual(bytesOf(b64([0, 1, 254, 255])), Uint8Array.from([0, 1, 254, 255]));
  const values = Float32Array.from([0.5, -2, 1e-3]);
  assert.deepEqual(floats(b64(new Uint8Array(values.buffer))), values);
});

test("deflated bytes inflate to what zlib compressed", async () => {
  const original = Uint8Array.from({ length: 1000 }, (_, i) => i % 7);
  assert.deepEqual(await inflated(b64(deflateSync(original))), original);
});

test("a layer's rows are read in the server's layout: tops, shares, then each part's plane", () => {
  const shape = { heads: 2, cells: 3, prefix: 1 };
  const sent = rowsBytes(2, 2, 3, 1, ["layer", "fine"]);
  const rows = decodeRows(sent.bytes, shape, ["layer", "fine"]);
  assert.deepEqual(rows.headTops, sent.tops);
  assert.deepEqual(rows.shares, sent.shares);
  assert.deepEqual(rows.parts.layer, sent.planes[0]);
  assert.deepEqual(rows.parts.fine, sent.planes[1]);
  assert.equal(rows.size, sent.bytes.byteLength);
});

test("a query's rows are its own slice of every array, and the layer's top its largest head's", () => {
  const shape = { heads: 2, cells: 3, prefix: 1 };
  const sent = rowsBytes(2, 2, 3, 1, ["layer"]);
  const second = queryRows(decodeRows(sent.bytes, shape, ["layer"]), 1, shape);
  assert.deepEqual([...second.headTops], [3, 4]);
  assert.equal(second.top, 4);
  assert.deepEqual(second.shares, sent.shares.subarray(2, 4));
  assert.deepEqual(second.parts.layer, sent.planes[0].subarray(6, 12));
});

test("the shape of the rows is read from an analysis's numbers", () => {
  const analysis = { heads: 12, grid: [14, 16], prefix: ["cls", "reg1"] };
  assert.deepEqual(rowShape(analysis), { heads: 12, cells: 224, prefix: 2 });
});

test("rows of a band that came with more parts keep the parts of both", () => {
  const old = { headTops: [1], shares: [], parts: { layer: "L" }, size: 10 };
  const fresh = { headTops: [1], shares: [], parts: { head: "H", fine: "F" }, size: 5 };
  assert.deepEqual(merged(old, fresh).parts, { layer: "L", head: "H", fine: "F" });
  assert.equal(merged(old, fresh).size, 15);
  assert.equal(merged(undefined, fresh), fresh);
});

test("a 16-bit level is read as the middle of its interval of the head's scale", () => {
  const values = levelValues(Uint8Array.from([0, 255, 128]), Uint8Array.from([0, 255, 0]), 2);
  assert.deepEqual([...values], [0.5 / LEVELS * 2, (LEVELS - 0.5) / LEVELS * 2, (128 * 256 + 0.5) / LEVELS * 2]
    .map(Math.fround));
});

test("RGB bytes become opaque RGBA pixels", () => {
  const picture = rgba(Uint8Array.from([1, 2, 3, 4, 5, 6]), { width: 2, height: 1 });
  assert.deepEqual([...picture.pixels], [1, 2, 3, 255, 4, 5, 6, 255]);
  assert.equal(picture.width, 2);
});
