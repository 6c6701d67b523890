// ui/js/classresult.js: what a teacher's page says of a lesson in words, cut to the bounds the server keeps
// (ui.classroom.checked_lesson), so a lesson's long note or long table never has its view refused.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BOUNDS, bounded } from "../../ui/js/classresult.js";

test("a lesson's words keep their pairs and rows, their spaces made one", () => {
  const said = [["Model (with classes)", " CIFAR-10 nano\n (bundled) "], ["", "Heads off: 1.1."]];
  const tables = [{ caption: "Top-5", rows: [["cat", "91%"], ["dog", "4%"]] }];
  assert.deepEqual(bounded(said, tables), {
    said: [["Model (with classes)", "CIFAR-10 nano (bundled)"], ["", "Heads off: 1.1."]], tables,
  });
});

test("a choice without words and a result without rows are left out: a lesson not run yet says its choices", () => {
  const shown = bounded([["Heads off", "  "], ["Model", "nano"]], [{ caption: "Ranking", rows: [] }]);
  assert.deepEqual(shown, { said: [["Model", "nano"]], tables: [] });
});

test("everything is cut to the server's bounds: counts, rows, cells and characters", () => {
  const said = Array.from({ length: 20 }, (_, i) => [`n${i}`.repeat(300), "w".repeat(5000)]);
  const words = bounded(said, []);
  assert.ok(words.said.every(([n, w]) => n.length === BOUNDS.text && w.length === BOUNDS.words));
  assert.ok(words.said.length === 6 && JSON.stringify(words).length <= BOUNDS.bytes); // 8 kept, 2 too many bytes
  const rows = Array.from({ length: 40 }, () => Array(9).fill("c"));
  const shown = bounded([], Array(5).fill({ caption: "t".repeat(900), rows }));
  assert.equal(shown.tables.length, BOUNDS.tables);
  for (const table of shown.tables) {
    assert.equal(table.caption.length, BOUNDS.text);
    assert.equal(table.rows.length, BOUNDS.rows);
    assert.ok(table.rows.every((row) => row.length === BOUNDS.cells));
  }
});

test("a whole too long for a view loses its last rows first, then its last words", () => {
  const rows = Array.from({ length: 12 }, () => Array(4).fill("c".repeat(200)));
  const shown = bounded([["Model", "nano"]], [{ caption: "Ranking", rows }]);
  const kept = shown.tables[0].rows.length, more = { ...shown.tables[0], rows: rows.slice(0, kept + 1) };
  assert.ok(kept > 0 && kept < rows.length && JSON.stringify(shown).length <= BOUNDS.bytes);
  assert.ok(JSON.stringify({ ...shown, tables: [more] }).length > BOUNDS.bytes); // the most rows that fit
  assert.deepEqual(shown.tables[0].rows, rows.slice(0, kept));
  assert.deepEqual(shown.said, [["Model", "nano"]]);
});

test("lesson 4's word maps come with its words, at most 8, each alt text cut to the server's bound", () => {
  const map = (i) => ({ alt: `Relevance of each patch for the words 'cat ${i}'`, picture: `/vit-explorer/${i}.webp` });
  const maps = Array.from({ length: 10 }, (_, i) => map(i));
  const shown = bounded([["Model (CLIP)", "ViT-B/16"]], [], maps);
  assert.deepEqual(shown.maps, maps.slice(0, BOUNDS.maps));
  const long = bounded([], [], [{ alt: "a".repeat(5000), picture: "/vit-explorer/0.webp" }]);
  assert.equal(long.maps[0].alt.length, BOUNDS.words);
  assert.equal("maps" in bounded([], []), false); // a lesson without maps sends none
});

test("a whole too long keeps the word maps longest: the fit's rows go, then the words, then the last maps", () => {
  const maps = Array.from({ length: 8 }, (_, i) => ({ alt: "m".repeat(600), picture: `/vit-explorer/${i}.webp` }));
  const rows = Array.from({ length: 8 }, () => ["a cat", "40%"]);
  const shown = bounded([["Words", "w".repeat(600)]], [{ caption: "How well each word fits", rows }], maps);
  assert.ok(JSON.stringify(shown).length <= BOUNDS.bytes);
  assert.deepEqual([shown.tables, shown.said], [[], []]);
  assert.ok(shown.maps.length >= 7 && shown.maps.length < 8, shown.maps.length);
  assert.deepEqual(shown.maps, maps.slice(0, shown.maps.length));
});
