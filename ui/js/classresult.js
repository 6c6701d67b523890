// A lesson's choices and results in words, for a class (issue 59). Lessons 3 and 4 show no one picture (a top-5, a
// ranking table, the words' fit), and every lesson's pickers are the teacher's choices: the teacher's page reads what
// it shows as text (the components of the classes ui/lessons.py names SAID and TABLE), the view carries it (bounded as
// ui.classroom.checked_lesson keeps it) and a student's page writes it beside the teacher's picture. Words, not the
// student's own components set: a lesson's picker or box changed on a student's page would run its lesson there (a
// model loaded, a pass), and the words say plainly whose choices they are.

// ui.classroom's bounds: SAID_ITEMS, TABLES, TABLE_ROWS, TABLE_CELLS, TEXT_CHARS, ALT_CHARS, LESSON_MAPS; and the
// words' JSON, with lesson 4's maps' (their alt texts and addresses), at most `bytes` (UTF-16 units: a view is a
// request of at most 8 KiB, ui.limits.MAX_EVENT_BYTES, with its style).
export const BOUNDS = { said: 8, tables: 2, rows: 12, cells: 4, text: 200, words: 600, maps: 8, bytes: 5000 };

const cut = (text, most) => String(text).replace(/\s+/g, " ").trim().slice(0, most);

// `said` ([name, words] pairs), `tables` ({caption, rows}) and `maps` ({alt, picture}: lesson 4's word maps,
// classlessons.js) cut to the bounds the server keeps; a pair without words and a table without rows left out (a
// lesson whose button was not pressed yet says its choices alone).
export function bounded(said, tables, maps = []) {
  const b = BOUNDS, shown = {
    said: said.filter(([, words]) => cut(words, b.words)).slice(0, b.said)
      .map(([name, words]) => [cut(name, b.text), cut(words, b.words)]),
    tables: tables.filter((t) => t.rows.length).slice(0, b.tables).map((t) => ({
      caption: cut(t.caption, b.text),
      rows: t.rows.slice(0, b.rows).map((row) => row.slice(0, b.cells).map((cell) => cut(cell, b.text))),
    })),
    maps: maps.slice(0, b.maps).map(({ alt, picture }) => ({ alt: alt.slice(0, b.words), picture })),
  };
  // Too long a whole (the rare lesson of long words): the last rows (lesson 4's fit is in its maps' alt texts
  // too), then the last words, then the last maps are the ones left out.
  while (JSON.stringify(shown).length > b.bytes) {
    const table = shown.tables.at(-1);
    if (table) { table.rows.pop(); if (!table.rows.length) shown.tables.pop(); } else if (shown.said.length) {
      shown.said.pop();
    } else shown.maps.pop();
  }
  if (!shown.maps.length) delete shown.maps; // a lesson without word maps sends none
  return shown;
}

const text = (element) => (element ? element.textContent : "");
// A component's label: a picker's or a box's (block-info), a Label's (block-label), a table's (its grid's name).
function nameOf(element) {
  const label = element.querySelector('[data-testid="block-info"], [data-testid="block-label"]');
  if (label) return text(label);
  const grid = element.querySelector('[role="grid"]');
  const by = grid && grid.getAttribute("aria-labelledby");
  return (grid && grid.getAttribute("aria-label")) || text(by && document.getElementById(by));
}
// A table cell's words, without its buttons' (a column's menu, "⋮").
function cellText(cell) {
  const copy = cell.cloneNode(true);
  copy.querySelectorAll("button").forEach((button) => button.remove());
  return copy.textContent;
}

// What a component shows as its value: a multiselect's chosen tokens, a slider's number, a box's or a picker's
// text, or a note's words (a Markdown component: its text).
function wordsOf(element) {
  const tokens = [...element.querySelectorAll(".token")].map((token) => text(token).replace(/×/g, ""));
  if (tokens.length) return tokens.map((token) => token.trim()).join(", ");
  const field = element.querySelector('input[type="number"], textarea, input:not([type="range"])');
  return field ? field.value : text(element.querySelector(".prose") || element);
}

// A result's rows as text: a Label's (a name and its share, `dl`), or a table's (its header first), none for a table
// with its header alone.
function rowsOf(element) {
  const pairs = [...element.querySelectorAll("dl")]
    .map((dl) => [text(dl.querySelector("dt")), text(dl.querySelector("dd"))]);
  if (pairs.length) return pairs;
  const rows = [...element.querySelectorAll('[role="row"]')].map((row) => [...row.children].map(cellText))
    .filter((row) => row.some((cell) => cell.trim()));
  return rows.length > 1 ? rows : []; // its header alone: no result yet
}

// What the lesson open in `within` says in words, {said, tables, maps}: the components of classes `words.said` and
// `words.table` (ui/explore.py's config `lesson_words`) shown there, and its word `maps` (classlessons.js).
export function lessonWords(within, words, maps) {
  // Gradio names a component's block and, for some, its inner part by its classes: the outer one counts.
  const shown = (name) => [...within.querySelectorAll(`.${name}`)]
    .filter((element) => element.offsetParent !== null && !element.parentElement.closest(`.${name}`));
  const said = shown(words.said).map((element) => [nameOf(element), wordsOf(element)]);
  const tables = shown(words.table).map((element) => ({ caption: nameOf(element), rows: rowsOf(element) }));
  return bounded(said, tables, maps);
}

// A student's page: the teacher's lesson's words in `figure` (ui/lessons.py's CLASS_PANEL), written as text.
export function paintWords(figure, lesson) {
  const said = figure.querySelector(".class-lesson-said"), tables = figure.querySelector(".class-lesson-tables");
  said.replaceChildren(...((lesson && lesson.said) || []).flatMap(([name, words]) => {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = name; dd.textContent = words;
    return name ? [dt, dd] : [dd];
  }));
  tables.replaceChildren(...((lesson && lesson.tables) || []).map(({ caption, rows }) => {
    const table = document.createElement("table"), head = table.createCaption();
    head.textContent = caption;
    for (const row of rows) {
      const tr = table.insertRow();
      for (const cell of row) tr.insertCell().textContent = cell;
    }
    return table;
  }));
}
