// ui/js/classview.js: the view a class shares (what the teacher's page sends, ui.classroom.checked_view,
// and how a student's page tells that it broke away), and the QR code painted from the server's modules.
import assert from "node:assert/strict";
import { test } from "node:test";

import { counted, paintQr, shows, styleArgs, viewOf } from "../../ui/js/classview.js";

const maps = (over = {}) => ({
  data: { handle: "h1" }, layer: 3, query: null, pointed: null,
  style: { cmap: "inferno", opacity: 0.6, smooth: false, raw: false, scale: "layer" }, ...over,
});

test("the view is sent in the controls' own words, as ui.common.map_style reads them", () => {
  const style = { cmap: "viridis", opacity: 0.4, smooth: true, raw: true, scale: "head" };
  const more = { view: "Attention rollout", alt: "Rollout", picture: "/gradio_api/file=/tmp/vit-explorer/a/view.webp" };
  const lesson = { view: "Which heads matter", alt: "", picture: "" };
  assert.deepEqual(viewOf(maps({ style, query: { row: 1, col: 2 }, pointed: 5 }), "bundled", more, lesson), {
    handle: "h1", model: "bundled", layer: 3, query: { row: 1, col: 2 },
    style: { cmap: "viridis", opacity: 0.4, upsampling: "smooth", display: "raw", scale: "head" },
    head: 5, more, lesson,
  });
  assert.equal(viewOf(maps({ data: null })).handle, null);
});

test("a page shows the teacher's view until its image, layer, query, style or head is its own", () => {
  const teacher = viewOf(maps(), "a model the student's picker does not name", { view: "the teacher's More view" });
  assert.ok(shows(maps(), teacher)); // the More view is the class panel's, not the maps'
  const { head, ...before } = teacher; // a server of before sent no head: none pointed at
  assert.ok(shows(maps(), before) && head === null);
  assert.ok(shows(maps({ pointed: 2 }), { ...teacher, head: 2 }));
  for (const own of [{ layer: 4 }, { query: { row: 0, col: 0 } }, { data: { handle: "mine" } },
    { style: { ...maps().style, cmap: "gray" } }, { pointed: 3 }]) {
    assert.ok(!shows(maps(own), teacher), JSON.stringify(own));
  }
});

test("the QR code is painted module by module inside a quiet zone of four", () => {
  const squares = [], context = { fillRect: (x, y, w, h) => squares.push([x, y, w, h]), fillStyle: "" };
  const canvas = { getContext: () => context, hidden: true };
  paintQr(canvas, ["10", "01"]);
  const cell = Math.floor(320 / 10);
  assert.equal(canvas.width, 10 * cell);
  assert.equal(canvas.hidden, false);
  assert.deepEqual(squares, [[0, 0, 10 * cell, 10 * cell], [4 * cell, 4 * cell, cell, cell],
    [5 * cell, 5 * cell, cell, cell]]);
  paintQr(canvas, null);
  assert.equal(canvas.hidden, true);
});

test("a view's style goes back to ExploreMaps.setStyle in its own order", () => {
  assert.deepEqual(styleArgs(viewOf(maps()).style), ["inferno", 0.6, "nearest", "overlay", "layer"]);
});

test("the teacher's count says one student, several, and their names as the server kept them", () => {
  assert.equal(counted({ students: 1, code: "ABC123", names: ["Ada b"] }), "1 student in class ABC123: Ada b.");
  assert.equal(counted({ students: 0, code: "ABC123", names: [] }), "0 students in class ABC123.");
});
