// Where the head maps' parts go and what their words say, as explorer/canvas.py and explorer/render.py
// place them: the tiles a row, the mosaic, a tile's caption, the colour bar's label and ticks.
import { barTicks, fixed2, number, pyG, roundHalfEven } from "./numbers.js";
import { twoSlope } from "./colour.js";

export const GAP = 4, BAR_PX = 12, BAR_WIDTH = 320; // canvas.GAP, BAR_PX, BAR_WIDTH
// The head maps' layout is kept while shown at 9/10 of its width or more (tests/test_ui_pictures_shown.py).
export const SHRUNK_AT_MOST = 0.9;
const PER_LINE = 1; // prefix shares per caption line (render.PREFIX_PER_LINE, which says why)

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

// A head tile's caption (render.head_grid): its number, its own top on the per-head scale, and its
// attention to each prefix token the maps leave out (`shares`, named by `names`).
export function tileLines(head, top, shares, names, scale) {
  const lines = [`head ${head + 1}`, ...(scale === "head" ? [`max ${pyG(top, 2)}`] : [])];
  const parts = names.map((name, j) => `${name} ${fixed2(shares[j])}`);
  for (let i = 0; i < parts.length; i += PER_LINE) lines.push(parts.slice(i, i + PER_LINE).join(" \u00b7 "));
  return lines;
}

// The words under the head maps' colour bar, for each scale (render.head_grid's).
export function scaleLabel(scale, high) {
  if (scale === "head") {
    return "colour: attention weight as a share of each head's own maximum (per-head stretch, printed under each tile)";
  }
  if (scale === "fixed") return "colour: attention weight, fixed scale from 0 to 1";
  return `colour: attention weight from 0 to ${number(high)}, the largest in this layer (one scale for all its maps)`;
}

// A colour bar's ticks from 0 to `high`, `length` pixels long (a diverging one about `centre`): each
// tick's pixel along the bar and its words (canvas.colour_bar).
export function barMarks(high, centre, length) {
  const position = centre === null ? (t) => t / high : (t) => twoSlope(t, centre, high);
  return barTicks(0, high, centre).map((t) => ({
    at: roundHalfEven(Math.min(Math.max(position(t), 0), 1) * (length - 1)), text: number(t),
  }));
}
