// The bytes the server sends the page, read in one place (explorer/page_maps.py writes them): base64
// text, zlib's deflate, a picture's raw RGB, and a layer's rows, which Explore's first reply, Explore's
// questions for a band (`layer_rows`) and each Live frame all send in the one layout read here.

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

// What the row layout depends on: heads, patches (cells) and prefix tokens of the model's analysis.
export function rowShape(data) {
  return { heads: data.heads, cells: data.grid[0] * data.grid[1], prefix: data.prefix.length };
}

// A layer's rows as explorer/page_maps.rows_bytes lays them out, each a view of `bytes` (no copy): per
// query and head its top and prefix shares (float32), then one byte a cell of each of `parts` in turn.
export function decodeRows(bytes, { heads, cells, prefix }, parts) {
  const queries = bytes.byteLength / (heads * (4 + 4 * prefix + parts.length * cells));
  let at = bytes.byteOffset;
  const take = (Kind, count) => {
    const view = new Kind(bytes.buffer, at, count);
    at += count * Kind.BYTES_PER_ELEMENT;
    return view;
  };
  const headTops = take(Float32Array, queries * heads), shares = take(Float32Array, queries * heads * prefix);
  const planes = Object.fromEntries(parts.map((part) => [part, take(Uint8Array, queries * heads * cells)]));
  return { headTops, shares, parts: planes, size: bytes.byteLength };
}

// Rows of the same band with more parts: the parts of both (the tops and shares are the same numbers).
export function merged(old, fresh) {
  return old ? { ...old, parts: { ...old.parts, ...fresh.parts }, size: old.size + fresh.size } : fresh;
}

// Query `q`'s rows of a band (its row in the band): each part's cells, each head's top, the layer's top
// (the largest head's), the prefix shares; views of the band's arrays.
export function queryRows(rows, q, { heads, cells, prefix }) {
  const span = (plane, width) => plane.subarray(q * heads * width, (q + 1) * heads * width);
  const headTops = span(rows.headTops, 1);
  return {
    parts: Object.fromEntries(Object.entries(rows.parts).map(([part, plane]) => [part, span(plane, cells)])),
    headTops, top: Math.max(...headTops), shares: span(rows.shares, prefix),
  };
}

// A head's smoothed values from its 16-bit levels (coarse: the high byte, fine: the low), each the
// middle of its level's interval of the head's own scale, 0 to `top`.
export function levelValues(coarse, fine, top) {
  return Float32Array.from(coarse, (c, i) => ((c * 256 + fine[i] + 0.5) / LEVELS) * top);
}

// A picture's RGB bytes (explorer/page_maps.py, rgb and deflated_rgb) as RGBA pixels, opaque.
export function rgba(from, { width, height }) {
  const pixels = new Uint8ClampedArray(width * height * 4);
  for (let i = 0, o = 0; i < from.length; i += 3, o += 4) {
    pixels[o] = from[i]; pixels[o + 1] = from[i + 1]; pixels[o + 2] = from[i + 2]; pixels[o + 3] = 255;
  }
  return { width, height, pixels };
}
