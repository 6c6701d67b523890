// ui/js/decode.js: the one reading of the server's bytes (explorer/page_maps.py writes them).
import assert from "node:assert/strict";
import { test } from "node:test";
import { deflateSync } from "node:zlib";

import {
  LEVELS, bytesOf, decodeRows, floats, inflated, levelValues, merged, queryRows, rgba, rowShape, unfiltered,
  unfilteredPlane,
} from "../../ui/js/decode.js";

const b64 = (bytes) => Buffer.from(bytes).toString("base64");

// Rows as explorer/page_maps.rows_bytes writes them: the text's table (its length, then JSON padded to
// 4 bytes), per query and head its top (float32), the indices of its lines (each head's prefix lines, each
// query's bar, each head's "max" line where `table.top_lines`), then one byte a cell of each part in turn.
// With `table.filter` "up-sub" the planes are sent filtered (`upSub`, keys' grid rows of `width` cells).
function rowsBytes(table, heads, cells, parts, { prefix, bars, top = [], width = cells }) {
  const queries = bars.length, Index = table.wide ? Uint16Array : Uint8Array;
  let json = new TextEncoder().encode(JSON.stringify(table));
  json = Uint8Array.from([...json, ...new Array((4 - (json.length % 4)) % 4).fill(32)]);
  const tops = Float32Array.from({ length: queries * heads }, (_, i) => i + 1);
  const plane = (k) => Uint8Array.from({ length: queries * heads * cells }, (_, i) => (10 * k + i * i) % 256);
  const planes = parts.map((_, k) => plane(k));
  const sent = table.filter === "up-sub" ? planes.map((p) => upSub(p, heads * cells, width)) : planes;
  const arrays = [tops, Index.from(prefix), Index.from(bars), ...(table.top_lines ? [Index.from(top)] : []), ...sent];
  const size = 4 + json.length + arrays.reduce((a, p) => a + p.byteLength, 0), bytes = new Uint8Array(size);
  new DataView(bytes.buffer).setUint32(0, json.length, true);
  bytes.set(json, 4);
  let at = 4 + json.length;
  for (const array of arrays) { bytes.set(new Uint8Array(array.buffer), at); at += array.byteLength; }
  return { bytes, tops, planes };
}

const BAR = { ends: ["0", "0.57"], ticks: [[0, "0"], [0.15000000000000002, "0.15"]] };
const OTHER = { ends: ["0", "0.3"], ticks: [[0, "0"], [0.1, "0.1"]] };
// Two queries of two heads, one prefix line each, and each head's "max" line: what the server decided.
const TABLE = { lines: 1, top_lines: true, texts: ["CLS 0.12", "CLS 0.50", "max 0.2", "max 0.57"], bars: [BAR, OTHER] };
const INDICES = { prefix: [0, 1, 1, 0], bars: [1, 0], top: [2, 2, 3, 2] };

test("base64 text reads back as its bytes and as little-endian float32", () => {
  assert.deepEqual(bytesOf(b64([0, 1, 254, 255])), Uint8Array.from([0, 1, 254, 255]));
  const values = Float32Array.from([0.5, -2, 1e-3]);
  assert.deepEqual(floats(b64(new Uint8Array(values.buffer))), values);
});

test("deflated bytes inflate to what zlib compressed", async () => {
  const original = Uint8Array.from({ length: 1000 }, (_, i) => i % 7);
  assert.deepEqual(await inflated(b64(deflateSync(original))), original);
});

test("a layer's rows are read in the server's layout: its text looked up, tops, then each part's plane", () => {
  const shape = { heads: 2, cells: 3 };
  const sent = rowsBytes(TABLE, 2, 3, ["layer", "fine"], INDICES);
  const rows = decodeRows(sent.bytes, shape, ["layer", "fine"]);
  assert.deepEqual(rows.headTops, sent.tops);
  assert.deepEqual(rows.text.prefix, ["CLS 0.12", "CLS 0.50", "CLS 0.50", "CLS 0.12"]);
  assert.deepEqual(rows.text.bars, [OTHER, BAR]);
  assert.deepEqual(rows.text.top, ["max 0.2", "max 0.2", "max 0.57", "max 0.2"]);
  assert.deepEqual(rows.parts.layer, sent.planes[0]);
  assert.deepEqual(rows.parts.fine, sent.planes[1]);
  assert.equal(rows.size, sent.bytes.byteLength);
});

test("rows without the per-head scale's lines, and a table past 256 lines (two bytes an index)", () => {
  const table = { lines: 1, wide: true, texts: Array.from({ length: 300 }, (_, i) => `CLS ${i}`), bars: [BAR, OTHER] };
  const sent = rowsBytes(table, 2, 3, ["layer"], { prefix: [299, 0, 256, 1], bars: [0, 1] });
  const rows = decodeRows(sent.bytes, { heads: 2, cells: 3 }, ["layer"]);
  assert.deepEqual(rows.text.prefix, ["CLS 299", "CLS 0", "CLS 256", "CLS 1"]);
  assert.equal(rows.text.top, undefined);
  assert.deepEqual(rows.parts.layer, sent.planes[0]);
});

test("a query's rows are its own slice of every array and its text, the layer's top its largest head's", () => {
  const shape = { heads: 2, cells: 3 };
  const sent = rowsBytes(TABLE, 2, 3, ["layer"], INDICES);
  const second = queryRows(decodeRows(sent.bytes, shape, ["layer"]), 1, shape);
  assert.deepEqual([...second.headTops], [3, 4]);
  assert.equal(second.top, 4);
  assert.deepEqual(second.parts.layer, sent.planes[0].subarray(6, 12));
  assert.deepEqual(second.prefixLines, [["CLS 0.50"], ["CLS 0.12"]]);
  assert.deepEqual(second.topLines, ["max 0.57", "max 0.2"]);
  assert.deepEqual(second.bar, BAR);
});

test("the shape of the rows is read from an analysis's numbers", () => {
  const analysis = { heads: 12, grid: [14, 16], prefix: ["cls", "reg1"] };
  assert.deepEqual(rowShape(analysis), { heads: 12, cells: 224, width: 16 });
});

test("rows of a band that came with more parts keep the parts and text of both", () => {
  const text = { lines: 1, prefix: ["CLS 0.12"], bars: [BAR] };
  const old = { headTops: [1], text, parts: { layer: "L" }, size: 10 };
  const fresh = { headTops: [1], text: { ...text, top: ["max 0.2"] }, parts: { head: "H", fine: "F" }, size: 5 };
  assert.deepEqual(merged(old, fresh).parts, { layer: "L", head: "H", fine: "F" });
  assert.deepEqual(merged(old, fresh).text.top, ["max 0.2"]);
  assert.deepEqual(merged(fresh, old).text.top, ["max 0.2"]); // a later reply without them keeps them
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

// PNG's Sub then Up as explorer/page_maps.sub_up computes it, written apart from the page's undoing of it.
function subUp(rgb, width) {
  const row = 3 * width, at = (i, dy, dx) => {
    const y = Math.floor(i / row) - dy, x = (i % row) - 3 * dx;
    return y < 0 || x < 0 ? 0 : rgb[y * row + x];
  };
  return Uint8Array.from(rgb, (v, i) => v - at(i, 0, 1) - at(i, 1, 0) + at(i, 1, 1)); // wraps mod 256
}

// A 2x2 picture filtered by hand, the very bytes tests/test_explorer_page_maps.py checks the server writes.
const PICTURE = [10, 20, 30, 15, 20, 25, 12, 22, 32, 0, 0, 0];
const SUB_UP = [10, 20, 30, 5, 0, 251, 2, 2, 2, 239, 234, 229];

test("a picture filtered with Sub then Up reads back as the server's bytes", () => {
  assert.deepEqual([...subUp(PICTURE, 2)], SUB_UP);
  assert.deepEqual([...unfiltered(Uint8Array.from(SUB_UP), { width: 2, filter: "sub-up" })], PICTURE);
  const picture = rgba(Uint8Array.from(SUB_UP), { width: 2, height: 2, filter: "sub-up" });
  assert.deepEqual([...picture.pixels.subarray(0, 8)], [10, 20, 30, 255, 15, 20, 25, 255]);
});

test("random pictures of every narrow shape survive Sub then Up and its undoing, the sent bytes untouched", () => {
  for (const [width, height] of [[1, 1], [1, 9], [9, 1], [2, 2], [7, 5], [64, 3]]) {
    const rgb = Uint8Array.from({ length: 3 * width * height }, () => Math.floor(Math.random() * 256));
    const sent = subUp(rgb, width), copy = Uint8Array.from(sent);
    assert.deepEqual(unfiltered(sent, { width, filter: "sub-up" }), rgb, `${width}x${height}`);
    assert.deepEqual(sent, copy);
  }
});

test("raw RGB is read as it came, and a filter the page does not know is refused, never misread", () => {
  const raw = Uint8Array.from(PICTURE);
  assert.equal(unfiltered(raw, { width: 2, filter: "none" }), raw);
  assert.equal(unfiltered(raw, { width: 2 }), raw); // Live's frames: raw RGB, no filter named
  assert.throws(() => unfiltered(raw, { width: 2, filter: "paeth" }), /filter "paeth"/);
});

// Rows' planes filtered as explorer/page_maps.filtered_planes filters them, written apart from the page's undoing:
// each cell less its left neighbour in its keys' grid row (`width` cells), less the same two cells of the query
// before it (a query's `row` bytes), mod 256.
function upSub(plane, row, width) {
  const at = (i, dq, dx) => (i - dq * row < 0 || (i % width) - dx < 0 ? 0 : plane[i - dq * row - dx]);
  return Uint8Array.from(plane, (v, i) => v - at(i, 0, 1) - at(i, 1, 0) + at(i, 1, 1)); // wraps mod 256
}

// Two queries of one head on a 1x3 grid, filtered by hand: the very bytes tests/test_explorer_page_maps.py
// checks the server writes.
const PLANE = [10, 20, 15, 12, 25, 5];
const UP_SUB = [10, 10, 251, 2, 3, 241];

test("a plane of rows filtered with Up across queries and Sub along keys reads back as the server's cells", () => {
  assert.deepEqual([...upSub(PLANE, 3, 3)], UP_SUB);
  assert.deepEqual([...unfilteredPlane(Uint8Array.from(UP_SUB), "up-sub", 3, 3)], PLANE);
  for (const [queries, heads, gh, gw] of [[1, 1, 1, 1], [3, 2, 2, 3], [17, 3, 4, 5], [2, 1, 7, 1]]) {
    const row = heads * gh * gw, plane = Uint8Array.from({ length: queries * row }, () => Math.random() * 256);
    const sent = upSub(plane, row, gw), copy = Uint8Array.from(sent);
    assert.deepEqual(unfilteredPlane(sent, "up-sub", row, gw), plane, `${queries}x${heads}x${gh}x${gw}`);
    assert.deepEqual(sent, copy);
  }
});

test("a layer's rows sent filtered are read as the cells themselves, every part of them", () => {
  const shape = { heads: 2, cells: 6, width: 3 }; // a 2x3 grid
  const sent = rowsBytes({ ...TABLE, filter: "up-sub" }, 2, 6, ["layer", "head"], { ...INDICES, width: 3 });
  const rows = decodeRows(sent.bytes, shape, ["layer", "head"]);
  assert.deepEqual(rows.parts.layer, sent.planes[0]);
  assert.deepEqual(rows.parts.head, sent.planes[1]);
  assert.notDeepEqual(rows.parts.layer, upSub(sent.planes[0], 12, 3)); // what came was not the cells
  assert.deepEqual(queryRows(rows, 1, shape).parts.layer, sent.planes[0].subarray(12, 24));
});

test("rows with no filter named are read as they came, and a filter the page does not know is refused", () => {
  const plane = Uint8Array.from(PLANE);
  assert.equal(unfilteredPlane(plane, "none", 3, 3), plane);
  assert.equal(unfilteredPlane(plane, undefined, 3, 3), plane); // Live's rows: no filter named
  assert.throws(() => unfilteredPlane(plane, "paeth", 3, 3), /filter "paeth"/);
});
