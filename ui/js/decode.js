// The bytes the server sends the page, read in one place (explorer/page_maps.py writes them): base64
// text, zlib's deflate, a picture's raw RGB, and a layer's rows with the text they write, which
// Explore's first reply, Explore's questions for a band (`layer_rows`) and each Live frame all send in
// the one layout read here.

// A smoothed value's 16-bit level of its head's own scale (explorer/page_maps.LEVELS): the high byte
// is the per-head colour index ("head"), the low byte is sent apart ("fine").
export const LEVELS = 65536;

export function bytesOf(b64) {
  const text = atob(b64), out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

export function floats(b64) {
  const bytes = bytesOf(b64);
  return new Float32Array(bytes.buffer, 0, bytes.length / 4);
}

// zlib's deflate (explorer/page_maps.py, encode_rows and deflated_rgb), by the browser's own inflater.
export async function inflated(b64) {
  const stream = new Blob([bytesOf(b64)]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// What the row layout depends on: heads and patches (cells) of the model's analysis, and the patches' grid
// width (a filtered plane's rows of keys).
export function rowShape(data) {
  return { heads: data.heads, cells: data.grid[0] * data.grid[1], width: data.grid[1] };
}

// The text a reply's rows write (explorer/page_text.py): its table, JSON after its length (4 bytes),
// with the reply's shape: prefix lines a caption, whether "max" lines came, whether an index takes 2 bytes.
export function textTable(bytes) {
  const length = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true);
  return { table: JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length))), end: 4 + length };
}

// A layer's rows as explorer/page_maps.rows_bytes lays them out, the numbers as views of `bytes` (no
// copy, but for a filtered plane): the text's table; per query and head its top (float32); the indices of
// its lines, looked up here (each head's prefix lines, each query's colour bar, each head's "max" line where
// they came);
// then one byte a cell of each of `parts` in turn, filtered as the table names (`unfilteredPlane`).
export function decodeRows(bytes, { heads, cells, width }, parts) {
  const { table, end } = textTable(bytes), { lines, texts, bars } = table;
  const Index = table.wide ? Uint16Array : Uint8Array, indices = heads * lines + 1 + (table.top_lines ? heads : 0);
  const perQuery = 4 * heads + Index.BYTES_PER_ELEMENT * indices + parts.length * heads * cells; // tops, text, cells
  const queries = (bytes.byteLength - end) / perQuery;
  let at = bytes.byteOffset + end;
  const take = (Kind, count) => {
    const view = new Kind(bytes.buffer, at, count);
    at += count * Kind.BYTES_PER_ELEMENT;
    return view;
  };
  const look = (from) => (i) => from[i];
  const headTops = take(Float32Array, queries * heads);
  const text = {
    lines, prefix: Array.from(take(Index, queries * heads * lines), look(texts)),
    bars: Array.from(take(Index, queries), look(bars)),
  };
  if (table.top_lines) text.top = Array.from(take(Index, queries * heads), look(texts));
  const plane = () => unfilteredPlane(take(Uint8Array, queries * heads * cells), table.filter, heads * cells, width);
  const planes = Object.fromEntries(parts.map((part) => [part, plane()]));
  return { headTops, text, parts: planes, size: bytes.byteLength };
}

// Rows of the same band with more parts: the parts and text of both (the tops are the same numbers).
export function merged(old, fresh) {
  if (!old) return fresh;
  return { ...old, parts: { ...old.parts, ...fresh.parts }, text: { ...old.text, ...fresh.text },
    size: old.size + fresh.size };
}

// Query `q`'s rows of a band (its row in the band): each part's cells, each head's top, the layer's top
// (the largest head's: the layer scale's, to paint with), and the text the server decided for it: each
// head's prefix lines and "max" line (where they came), its colour bar on the layer scale.
export function queryRows(rows, q, { heads, cells }) {
  const span = (plane, width) => plane.subarray(q * heads * width, (q + 1) * heads * width);
  const headTops = span(rows.headTops, 1), w = rows.text, first = q * heads * w.lines;
  const lines = (h) => w.prefix.slice(first + h * w.lines, first + (h + 1) * w.lines);
  return {
    parts: Object.fromEntries(Object.entries(rows.parts).map(([part, plane]) => [part, span(plane, cells)])),
    headTops, top: Math.max(...headTops), bar: w.bars[q],
    prefixLines: Array.from({ length: heads }, (_, h) => lines(h)),
    topLines: w.top ? w.top.slice(q * heads, (q + 1) * heads) : null,
  };
}

// A head's smoothed values from its 16-bit levels (coarse: the high byte, fine: the low), each the
// middle of its level's interval of the head's own scale, 0 to `top`.
export function levelValues(coarse, fine, top) {
  return Float32Array.from(coarse, (c, i) => ((c * 256 + fine[i] + 0.5) / LEVELS) * top);
}

// A picture's RGB bytes as the server sent them (explorer/page_maps.py, rgb and deflated_rgb) as RGBA
// pixels, opaque; `picture` names their size and the filter they were sent with (`unfiltered`).
export function rgba(from, picture) {
  const { width, height } = picture, rgb = unfiltered(from, picture);
  const pixels = new Uint8ClampedArray(width * height * 4);
  for (let i = 0, o = 0; i < rgb.length; i += 3, o += 4) {
    pixels[o] = rgb[i]; pixels[o + 1] = rgb[i + 1]; pixels[o + 2] = rgb[i + 2]; pixels[o + 3] = 255;
  }
  return { width, height, pixels };
}

// A picture's RGB bytes with the server's filter undone (explorer/page_maps.sub_up): "sub-up" is PNG's Sub
// then Up, each byte less the same channel's byte to its left, then less the result above it, mod 256. "none"
// (or no filter: Live's raw RGB) is the bytes.
export function unfiltered(bytes, { width, filter = "none" }) {
  if (filter === "none") return bytes;
  if (filter !== "sub-up") throw new Error(`A picture came with the filter "${filter}", which this page cannot undo.`);
  return summed(bytes, 3 * width, 3 * width, 3);
}

// A plane of rows (queries x heads x cells, a query's `row` bytes) with the server's filter undone
// (explorer/page_maps.filtered_planes): "up-sub" is Sub along each row of the keys' grid (`width` cells),
// then Up from each query to the next; "none" (or none named: Live's rows) is the bytes.
export function unfilteredPlane(bytes, filter, row, width) {
  if (!filter || filter === "none") return bytes;
  if (filter !== "up-sub") throw new Error(`Rows came with the filter "${filter}", which this page cannot undo.`);
  return summed(bytes, row, width, 1);
}

// Both filters are differences, one across `up` bytes (a picture's rows, a plane's queries), one along each
// run of `run` bytes `stride` apart (a row's pixels, a channel each; a grid row's cells), so running sums
// undo them in either order; a Uint8Array's sums wrap mod 256 as the server's differences did.
function summed(bytes, up, run, stride) {
  const out = Uint8Array.from(bytes);
  for (let i = up; i < out.length; i++) out[i] += out[i - up];
  for (let start = 0; start < out.length; start += run) {
    for (let i = start + stride; i < start + run; i++) out[i] += out[i - stride];
  }
  return out;
}
