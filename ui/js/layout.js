// Where the head maps' parts go, as explorer/canvas.py and explorer/render.py place them: the tiles a
// row, the mosaic, a tile's caption lines in the server's order, a colour bar's ticks along it. What
// they say (captions, numbers, ticks, labels) is the server's (explorer/page_text.py): nothing here
// formats a number or picks a tick.

export const GAP = 4, BAR_PX = 12, BAR_WIDTH = 320; // canvas.GAP, BAR_PX, BAR_WIDTH
// The head maps' layout is kept while shown at 9/10 of its width or more (tests/test_ui_pictures_shown.py).
export const SHRUNK_AT_MOST = 0.9;

// Where PIL puts a thing placed at a fractional pixel: Python's round(), half to even. The one
// rounding the page keeps, a painter's: a word or a tick lands on the pixel the server's PNG puts it.
export function roundHalfEven(x) {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// The widest tile of each column, `n` tiles a row (canvas.mosaic).
export function columnWidths(tiles, n) {
  const column = (c) => tiles.filter((_, i) => i % n === c).map((t) => t.width);
  return Array.from({ length: Math.min(n, tiles.length) }, (_, c) => Math.max(...column(c)));
}

// The tiles a row: the server's layout (`cols`, explorer.views.head_layout, what the PNG export draws)
// where a frame `room` CSS px wide shows it at SHRUNK_AT_MOST of its width or more, else as many as fit,
// each tile at its drawn size. A phone had shown 3 of 5 columns and the colour bar up to 0.08 of 0.57,
// as if that were its top (a teacher's walk); a projector's frame a few pixels narrower keeps the
// layout, as fewer a row would make the maps taller than its screen.
export function fittingColumns(tiles, cols, room) {
  const width = (n) => columnWidths(tiles, n).reduce((a, b) => a + b + GAP, 0);
  if (width(cols) * SHRUNK_AT_MOST <= room) return cols;
  while (cols > 1 && width(cols) > room) cols--;
  return cols;
}

// canvas.mosaic of `tiles` ({width, height}), `cols` a row: its size (a GAP after each column and
// row) and each tile's place from its top left, with its head (1-based).
export function mosaic(tiles, cols) {
  const rows = [];
  for (let i = 0; i < tiles.length; i += cols) rows.push(tiles.slice(i, i + cols));
  const widths = columnWidths(tiles, cols), heights = rows.map((r) => Math.max(...r.map((t) => t.height)));
  const xs = widths.map((_, c) => widths.slice(0, c).reduce((a, b) => a + b, 0) + c * GAP);
  const places = [];
  let y = 0;
  rows.forEach((row, r) => {
    row.forEach((tile, c) => places.push({ tile, head: r * cols + c + 1, x: xs[c], y }));
    y += heights[r] + GAP;
  });
  return { width: xs[xs.length - 1] + widths[widths.length - 1] + GAP, height: y, places };
}

// A head tile's caption: the server's lines (`lines`: {name: [...], top: [...], prefix: [...]}) in the
// order it decided for the scale shown (`order`, render.caption_parts).
export function captionLines(order, lines) {
  return order.flatMap((part) => lines[part] || []);
}

// A colour bar's ticks, `length` pixels long: each of the server's ticks ([value, its words],
// canvas.bar_text) at its value's place in the bar's colours (`position`: 0 to 1), on a whole pixel. With
// `widthOf` (a text's width), a tick whose words would come within GAP of the last kept one's is left out, as
// canvas.colour_bar does: a bar narrowed to its tiles (a phone, in --present) never prints "0.080.16".
export function barMarks(ticks, position, length, widthOf = null) {
  const marks = ticks.map(([value, text]) => ({
    at: roundHalfEven(Math.min(Math.max(position(value), 0), 1) * (length - 1)), text,
  }));
  if (!widthOf) return marks;
  let right = -Infinity;
  return marks.filter(({ at, text }) => {
    const half = widthOf(text) / 2;
    if (at - half < right + GAP) return false;
    right = at + half; return true;
  });
}
