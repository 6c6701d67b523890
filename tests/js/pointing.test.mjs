// ui/js/pointing.js: which head's caption a click on the head maps' picture is on, where each caption's button
// goes for the keyboard, and what a press does.
import assert from "node:assert/strict";
import { test } from "node:test";

import { captionAt, captionPlaces, point } from "../../ui/js/pointing.js";

// two heads side by side: maps 40 px square at y 10, captions 16 px under them
const cells = [
  { head: 1, x: 0, y: 10, width: 40, height: 40, tall: 56 },
  { head: 2, x: 44, y: 10, width: 40, height: 40, tall: 56 },
];

test("a click on a tile's caption names its head, 1-based", () => {
  assert.equal(captionAt(cells, 5, 50), 1);
  assert.equal(captionAt(cells, 83, 65), 2);
});

test("a click on a map, between tiles or past the captions names none", () => {
  assert.equal(captionAt(cells, 5, 49), null); // the map: the query is the input's, as before
  assert.equal(captionAt(cells, 42, 55), null); // the gap between the tiles
  assert.equal(captionAt(cells, 5, 66), null); // under the caption
  assert.equal(captionAt([], 5, 50), null);
});

test("each caption's button covers its caption, in percent of the drawing", () => {
  assert.deepEqual(captionPlaces(cells, 100, 80), [
    { head: 1, left: "0%", top: "62.5%", width: "40%", height: "20%" },
    { head: 2, left: "44%", top: "62.5%", width: "40%", height: "20%" },
  ]);
  assert.deepEqual(captionPlaces([], 100, 80), []);
});

test("a press points at its head, a second press at none, and the maps are drawn each time", () => {
  let drawn = 0;
  const maps = { pointed: null, draw: () => { drawn += 1; } };
  point(maps, 2);
  assert.equal(maps.pointed, 2);
  point(maps, 1); // another head: pointed at in its place
  assert.equal(maps.pointed, 1);
  point(maps, 1);
  assert.equal(maps.pointed, null);
  assert.equal(drawn, 3);
});
