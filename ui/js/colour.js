// Values to colours as explorer/canvas.py colours them (heatmap, overlay, colour_bar), in matplotlib's
// own 256 colours of each map, which the server sends (explorer/page_maps.colour_tables): the page's
// pixels are the PNG's, float32 arithmetic and all.
import { bytesOf } from "./decode.js";

export const f32 = Math.fround;

// Each colour map's table, RGB bytes, 3 a colour, from the base64 text the server sends.
export function colourTables(sent) {
  return Object.fromEntries(Object.entries(sent).map(([name, b64]) => [name, bytesOf(b64)]));
}

// matplotlib: int(clip(x, 0, 1) * 256) of a float32 x, 1 itself the last colour.
export function colourIndex(position) {
  const x = f32(Math.min(Math.max(position, 0), 1) * 256);
  return x >= 256 ? 255 : Math.floor(x);
}

// The same of a float64 position (a TwoSlopeNorm's, which numpy computes in float64).
export function colourIndex64(position) {
  const x = Math.min(Math.max(position, 0), 1) * 256;
  return x >= 256 ? 255 : Math.floor(x);
}

// matplotlib's TwoSlopeNorm(centre, 0, top): np.interp(x, [0, centre, top], [0, 0.5, 1]) step for step.
export function twoSlope(x, centre, top) {
  if (x < 0) return -Infinity;
  if (x >= top) return x === top ? 1 : Infinity;
  if (x < centre) return x === 0 ? 0 : (0.5 / centre) * x;
  return x === centre ? 0.5 : (0.5 / (top - centre)) * (x - centre) + 0.5;
}

// One channel of a colour laid over a photo at opacity `a` (keep = 1 - a), as canvas.overlay blends
// in float32 and rounds.
export function overlaid(photo, heat, a, keep) {
  return Math.trunc(f32(f32(f32(photo * keep) + f32(heat * a)) + 0.5));
}

// The colour index of pixel `x` of a colour bar `length` pixels long: np.linspace(0, 1, length) in
// float64, coloured as canvas.colour_bar colours it.
export function barIndex(x, length) {
  return Math.min(Math.floor((length > 1 ? x * (1 / (length - 1)) : 0) * 256), 255);
}
