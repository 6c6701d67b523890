// Numbers as the server writes and places them, so that the page's words and ticks are the PNG's:
// Python's round() and float formats, and matplotlib's MaxNLocator (explorer/canvas.py, `_ticks`).

export function roundHalfEven(x) { // Python's round()
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// Python's float formats, exactly: a double's exact decimal value (BigInt digits), rounded half
// to even at the digit a format keeps (JS's toFixed rounds exact ties, 0.125, away from zero).
function exactDecimal(x) { // |x| = digits / 10^scale, exactly
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, Math.abs(x));
  const bits = view.getBigUint64(0), biased = Number((bits >> 52n) & 0x7ffn);
  const mantissa = (bits & ((1n << 52n) - 1n)) | (biased ? 1n << 52n : 0n);
  const shift = 1075 - Math.max(biased, 1); // |x| = mantissa / 2^shift
  if (shift <= 0) return { digits: mantissa << BigInt(-shift), scale: 0 };
  return { digits: mantissa * 5n ** BigInt(shift), scale: shift };
}

function rounded(x, decimals) { // round(|x| * 10^decimals), half to even, as a BigInt
  const { digits, scale } = exactDecimal(x);
  if (decimals >= scale) return digits * 10n ** BigInt(decimals - scale);
  const unit = 10n ** BigInt(scale - decimals), q = digits / unit, r = digits % unit, half = unit / 2n;
  return r > half || (r === half && q % 2n === 1n) ? q + 1n : q;
}

function withPoint(n, decimals) { // the BigInt n / 10^decimals, written with `decimals` decimals
  const text = n.toString().padStart(decimals + 1, "0");
  return decimals > 0 ? `${text.slice(0, -decimals)}.${text.slice(-decimals)}` : text;
}

const sign = (x) => (x < 0 || Object.is(x, -0) ? "-" : "");
const stripped = (t) => (t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t);

export const fixed2 = (x) => sign(x) + withPoint(rounded(x, 2), 2); // f"{x:.2f}"

export function pyG(x, digits) { // f"{x:.{digits}g}"
  if (x === 0) return "0";
  const { digits: d, scale } = exactDecimal(x);
  let e = d.toString().length - 1 - scale, n = rounded(x, digits - 1 - e);
  if (n.toString().length > digits) { e += 1; n = rounded(x, digits - 1 - e); }
  if (e < -4 || e >= digits) {
    const exponent = `${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
    return `${sign(x)}${stripped(withPoint(n, digits - 1))}e${exponent}`;
  }
  return sign(x) + stripped(withPoint(n, Math.max(0, digits - 1 - e)));
}

export const number = (x) => pyG(x, 3).replaceAll("-", "\u2212"); // canvas.number

// matplotlib's MaxNLocator(nbins, steps).tick_values(low, high), kept within [low, high] (canvas._ticks):
// STEPS are its default steps' staircase, HALF_STEPS canvas.HALF_STEPS' (MaxNLocator._staircase).
const STEPS = [0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 15];
const staircase = (steps) => [...steps.slice(0, -1).map((s) => 0.1 * s), ...steps, 10 * steps[1]];
const HALF_STEPS = staircase([1, 2, 5, 10]);

export function pyDivmod(x, y) { // Python's divmod of floats (Objects/floatobject.c), not floor(x / y)
  let mod = x % y, div = (x - mod) / y;
  if (mod) {
    if ((y < 0) !== (mod < 0)) { mod += y; div -= 1; }
  } else mod = 0;
  let floor = Math.floor(div);
  if (div) {
    if (div - floor > 0.5) floor += 1;
  } else floor = 0;
  return [floor, mod];
}

// The multiples of `step` (offset by `best`) that cover [vmin, vmax]: matplotlib's _Edge_integer.le / .ge.
function covering(vmin, vmax, step, best) {
  const edge = (x, up) => {
    const [d, mod] = pyDivmod(x, step), m = mod / step;
    if (up) return Math.abs(m) < 1e-10 ? d : d + 1;
    return Math.abs(m - 1) < 1e-10 ? d + 1 : d;
  };
  const found = [], last = edge(vmax - best, true);
  for (let n = edge(vmin - best, false); n <= last; n++) found.push(n * step + best);
  return found;
}

export function ticks(low, high, nbins = 4, steps = STEPS) {
  if (high - low < 1e-14 * Math.max(Math.abs(low), Math.abs(high), 1e-14)) { low -= 1e-13; high += 1e-13; }
  const dv = Math.abs(high - low), meanv = (high + low) / 2;
  const offset = Math.abs(meanv) / dv < 100 ? 0 : Math.sign(meanv) * 10 ** Math.floor(Math.log10(Math.abs(meanv)));
  const scale = 10 ** Math.floor(Math.log10(dv / nbins));
  const vmin = low - offset, vmax = high - offset, raw = (vmax - vmin) / nbins;
  const scaled = steps.map((s) => s * scale);
  let istep = scaled.findIndex((s) => s >= raw);
  if (istep < 0) istep = scaled.length - 1;
  let found = [];
  for (let i = istep; i >= 0; i--) {
    const step = scaled[i];
    found = covering(vmin, vmax, step, pyDivmod(vmin, step)[0] * step);
    if (found.filter((t) => t <= vmax && t >= vmin).length >= 2) break;
  }
  return found.map((t) => t + offset)
    .filter((t) => low - 1e-9 * Math.abs(low) <= t && t <= high + 1e-9 * Math.abs(high));
}

// canvas.bar_ticks: with a centre (a diverging bar), each half steps evenly away from it.
export function barTicks(low, high, centre) {
  if (centre === null) return ticks(low, high);
  const below = ticks(0, centre - low, 2, HALF_STEPS).map((t) => centre - t);
  const above = ticks(0, high - centre, 3, HALF_STEPS).map((t) => centre + t);
  return [...new Set([...below, ...above].map((t) => Number(t.toFixed(12))))].sort((a, b) => a - b);
}
