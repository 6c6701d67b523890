// The Explore tab's first screen drawn in the page (issue 41): the model input with its patch
// grid and the head maps of any layer for any query, redrawn on every click, key, slider step
// and style change from the numbers one analysis sent (explorer/page_maps.py says what they are),
// with no request to the server. Plain JS and a canvas: no build step, nothing fetched.
//
// Every picture is drawn as explorer/render.py draws its PNG, step for step: tiles laid out as
// canvas.mosaic lays them, coloured as canvas.heatmap and canvas.overlay colour them (float32
// arithmetic, matplotlib's own 256 colours), the colour bar's ticks as matplotlib's MaxNLocator
// places them. ui/app.py puts this file in the page's <head> with COLOUR_TABLES filled in.
(() => {
  "use strict";
  const COLOUR_TABLES = "__COLOUR_TABLES__";
  const PLAY_STEP_MS = "__PLAY_STEP_MS__"; // ui/explore.py's PLAY_STEP_S
  const FOLLOW_STYLE = "__FOLLOW_STYLE__"; // ui/explore.py: the pictures the server draws that follow the style
  const GAP = 4, BAR_PX = 12, BAR_WIDTH = 320, LEVELS = 65536; // canvas.GAP, BAR_PX, BAR_WIDTH
  const SHRUNK_AT_MOST = 0.9; // the head maps' layout is kept while shown at 9/10 of its width or more (tests/test_ui_pictures_shown.py)
  const BACKGROUND = "#ffffff", TEXT = "rgb(30,30,30)", GRID = [255, 255, 255], MARK = [0, 200, 255];
  const ASCENT = 0.928; // DejaVu Sans's ascender in em: PIL writes a line from its top
  const FONT = '"DejaVu Sans", Verdana, sans-serif';
  const PER_LINE = 1; // prefix shares per caption line (render.PREFIX_PER_LINE, which says why)
  // Play and the layer slider ask for the next layers' band of a patch query before they show it,
  // up to this many layers ahead, one such request at a time: on a model with registers (its patch
  // rows not all sent) Play had stalled ~1 s a layer on "Fetching this layer's numbers…" (issue 61).
  const AHEAD = 2;
  const TOKENS = "tokens"; // the band of a layer's token queries' rows (explorer/page_maps.py, TOKENS)
  const ROWS_ROUTE = "__ROWS_ROUTE__"; // ui/server_functions.ROUTE, where the page asks for rows (ui/rows_route.py)
  const PARTS_HEADER = "X-Rows-Parts"; // ui/rows_route.PARTS_HEADER
  const FETCHING = "Fetching this layer's numbers from the server…";
  const f32 = Math.fround;

  // ---- bytes and numbers ------------------------------------------------------------------
  function bytesOf(b64) {
    const text = atob(b64), out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }
  const floats = (b64) => { const b = bytesOf(b64); return new Float32Array(b.buffer, 0, b.length / 4); };
  async function inflated(b64) { // zlib's deflate (explorer/page_maps.py, encode_rows), by the browser's own inflater
    const stream = new Blob([bytesOf(b64)]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  // A question for rows on the rows route (ui/rows_route.py): the reply's body is the rows deflated,
  // inflated as it streams in, with the parts it holds in a header; a question the server refuses
  // (a dropped analysis, no place for it now) comes back as its sentence, {error}.
  async function fetchRows(question) {
    const root = (window.gradio_config && window.gradio_config.root) || window.location.href; // as Gradio's own requests
    const reply = await fetch(new URL(ROWS_ROUTE.slice(1), root.replace(/\/?$/, "/")), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(question),
    });
    if (!reply.ok) {
      const words = reply.status < 500 && (reply.headers.get("Content-Type") || "").startsWith("text/plain");
      if (words) return { error: await reply.text() };
      throw new Error(`HTTP ${reply.status}`);
    }
    const stream = reply.body.pipeThrough(new DecompressionStream("deflate"));
    return { parts: reply.headers.get(PARTS_HEADER).split(","), bytes: new Uint8Array(await new Response(stream).arrayBuffer()) };
  }
  // A layer's rows as explorer/page_maps.rows_bytes lays them out, each a view of `bytes`: per query
  // and head its top and prefix shares (float32), then one byte a cell of each of `parts` (page_maps.PARTS).
  function planes(bytes, heads, n, p, parts) {
    const queries = bytes.byteLength / (heads * (4 + 4 * p + parts.length * n)), cells = queries * heads * n;
    let at = bytes.byteOffset;
    const take = (Kind, count) => { const view = new Kind(bytes.buffer, at, count); at += count * Kind.BYTES_PER_ELEMENT; return view; };
    const headTops = take(Float32Array, queries * heads), shares = take(Float32Array, queries * heads * p);
    return { headTops, shares, parts: Object.fromEntries(parts.map((part) => [part, take(Uint8Array, cells)])), size: bytes.byteLength };
  }
  // Rows of the same band with more parts: the parts of both (tops and shares are the same numbers).
  const merged = (old, fresh) => (old ? { ...old, parts: { ...old.parts, ...fresh.parts }, size: old.size + fresh.size } : fresh);
  const TABLES = Object.fromEntries(Object.entries(COLOUR_TABLES).map(([name, b64]) => [name, bytesOf(b64)]));

  function roundHalfEven(x) { // Python's round()
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
    return shift <= 0 ? { digits: mantissa << BigInt(-shift), scale: 0 } : { digits: mantissa * 5n ** BigInt(shift), scale: shift };
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
  const fixed2 = (x) => sign(x) + withPoint(rounded(x, 2), 2); // f"{x:.2f}"
  function pyG(x, digits) { // f"{x:.{digits}g}"
    if (x === 0) return "0";
    const { digits: d, scale } = exactDecimal(x);
    let e = d.toString().length - 1 - scale, n = rounded(x, digits - 1 - e);
    if (n.toString().length > digits) { e += 1; n = rounded(x, digits - 1 - e); }
    const strip = (t) => (t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t);
    if (e < -4 || e >= digits) {
      const m = strip(withPoint(n, digits - 1));
      return `${sign(x)}${m}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
    }
    return sign(x) + strip(withPoint(n, Math.max(0, digits - 1 - e)));
  }
  const number = (x) => pyG(x, 3).replaceAll("-", "\u2212"); // canvas.number

  // matplotlib's MaxNLocator(nbins, steps).tick_values(low, high), kept within [low, high] (canvas._ticks):
  // STEPS are its default steps' staircase, HALF_STEPS canvas.HALF_STEPS' (MaxNLocator._staircase)
  const STEPS = [0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 15];
  const staircase = (steps) => [...steps.slice(0, -1).map((s) => 0.1 * s), ...steps, 10 * steps[1]];
  const HALF_STEPS = staircase([1, 2, 5, 10]);
  function pyDivmod(x, y) { // Python's divmod of floats (Objects/floatobject.c), not floor(x / y)
    let mod = x % y, div = (x - mod) / y;
    if (mod) { if ((y < 0) !== (mod < 0)) { mod += y; div -= 1; } } else mod = 0;
    let floor = Math.floor(div);
    if (div) { if (div - floor > 0.5) floor += 1; } else floor = 0;
    return [floor, mod];
  }
  function ticks(low, high, nbins = 4, staircase = STEPS) {
    if (high - low < 1e-14 * Math.max(Math.abs(low), Math.abs(high), 1e-14)) { low -= 1e-13; high += 1e-13; }
    const dv = Math.abs(high - low), meanv = (high + low) / 2;
    const offset = Math.abs(meanv) / dv < 100 ? 0 : Math.sign(meanv) * 10 ** Math.floor(Math.log10(Math.abs(meanv)));
    const scale = 10 ** Math.floor(Math.log10(dv / nbins));
    const vmin = low - offset, vmax = high - offset, raw = (vmax - vmin) / nbins;
    const steps = staircase.map((s) => s * scale);
    let istep = steps.findIndex((s) => s >= raw);
    if (istep < 0) istep = steps.length - 1;
    let found = [];
    for (let i = istep; i >= 0; i--) {
      const step = steps[i], best = pyDivmod(vmin, step)[0] * step;
      const edge = (x, up) => { // matplotlib's _Edge_integer.le / .ge
        const [d, mod] = pyDivmod(x, step), m = mod / step;
        if (up) return Math.abs(m) < 1e-10 ? d : d + 1;
        return Math.abs(m - 1) < 1e-10 ? d + 1 : d;
      };
      const lo = edge(vmin - best, false), hi = edge(vmax - best, true);
      found = [];
      for (let n = lo; n <= hi; n++) found.push(n * step + best);
      if (found.filter((t) => t <= vmax && t >= vmin).length >= 2) break;
    }
    return found.map((t) => t + offset)
      .filter((t) => low - 1e-9 * Math.abs(low) <= t && t <= high + 1e-9 * Math.abs(high));
  }
  function barTicks(low, high, centre) { // canvas.bar_ticks: with a centre, each half steps evenly away from it
    if (centre === null) return ticks(low, high);
    const below = ticks(0, centre - low, 2, HALF_STEPS).map((t) => centre - t);
    const above = ticks(0, high - centre, 3, HALF_STEPS).map((t) => centre + t);
    return [...new Set([...below, ...above].map((t) => Number(t.toFixed(12))))].sort((a, b) => a - b);
  }
  // matplotlib's TwoSlopeNorm(centre, 0, top): np.interp(x, [0, centre, top], [0, 0.5, 1]) step for step
  function twoSlope(x, centre, top) {
    if (x < 0) return -Infinity;
    if (x >= top) return x === top ? 1 : Infinity;
    if (x < centre) return x === 0 ? 0 : (0.5 / centre) * x;
    return x === centre ? 0.5 : (0.5 / (top - centre)) * (x - centre) + 0.5;
  }

  // ---- words on the canvas (explorer/canvas.py's text helpers) ------------------------------
  class Writer {
    constructor(px) { this.px = px; this.line = px + GAP; this.ctx = document.createElement("canvas").getContext("2d"); this.ctx.font = `${px}px ${FONT}`; }
    width(text) { return this.ctx.measureText(text).width; }
    wrap(text, width) {
      const lines = [];
      for (const paragraph of text.split("\n")) {
        let line = "";
        for (const word of paragraph.split(" ")) {
          const candidate = line ? `${line} ${word}` : word;
          if (line && this.width(candidate) > width) { lines.push(line); line = word; } else line = candidate;
        }
        lines.push(line);
      }
      return lines;
    }
    put(ctx, x, y, text) {
      ctx.font = `${this.px}px ${FONT}`; ctx.fillStyle = TEXT; ctx.textBaseline = "alphabetic";
      ctx.fillText(text, roundHalfEven(x), roundHalfEven(y) + ASCENT * this.px);
    }
  }

  function rgba(from, { width, height }) { // a picture's RGB bytes (explorer/page_maps.py, rgb and deflated_rgb)
    const pixels = new Uint8ClampedArray(width * height * 4);
    for (let i = 0, o = 0; i < from.length; i += 3, o += 4) {
      pixels[o] = from[i]; pixels[o + 1] = from[i + 1]; pixels[o + 2] = from[i + 2]; pixels[o + 3] = 255;
    }
    return { width, height, pixels };
  }
  function onCanvas({ width, height, pixels }) { // the model input, drawn scaled from a canvas
    const c = Object.assign(document.createElement("canvas"), { width, height });
    c.getContext("2d").putImageData(new ImageData(pixels, width, height), 0, 0);
    return { width, height, canvas: c };
  }

  // ---- maps to colours (canvas.heatmap, canvas.overlay) ------------------------------------
  function pilCoefficients(inSize, outSize) { // PIL's bilinear resampling weights (upscaling)
    const scale = inSize / outSize, support = Math.max(scale, 1), ss = 1 / Math.max(scale, 1), out = [];
    for (let xx = 0; xx < outSize; xx++) {
      const centre = (xx + 0.5) * scale;
      const xmin = Math.max(Math.trunc(centre - support + 0.5), 0);
      const count = Math.min(Math.trunc(centre + support + 0.5), inSize) - xmin;
      const k = [];
      let total = 0;
      for (let x = 0; x < count; x++) { const w = Math.max(0, 1 - Math.abs((x + xmin - centre + 0.5) * ss)); k.push(w); total += w; }
      out.push({ xmin, k: k.map((w) => (total !== 0 ? w / total : w)) });
    }
    return out;
  }
  function bilinear(values, gh, gw, height, width) { // PIL's resize of a mode "F" image, (gh, gw) -> (height, width)
    const cx = pilCoefficients(gw, width), cy = pilCoefficients(gh, height);
    const across = new Float32Array(gh * width);
    for (let y = 0; y < gh; y++) for (let x = 0; x < width; x++) {
      let s = 0; const c = cx[x];
      for (let i = 0; i < c.k.length; i++) s += values[y * gw + c.xmin + i] * c.k[i];
      across[y * width + x] = s;
    }
    const plane = new Float32Array(height * width);
    for (let y = 0; y < height; y++) {
      const c = cy[y];
      for (let x = 0; x < width; x++) {
        let s = 0;
        for (let i = 0; i < c.k.length; i++) s += across[(c.xmin + i) * width + x] * c.k[i];
        plane[y * width + x] = s;
      }
    }
    return plane;
  }
  function columnWidths(tiles, n) { // the widest tile of each column, `n` tiles a row (canvas.mosaic)
    return Array.from({ length: Math.min(n, tiles.length) }, (_, c) => Math.max(...tiles.filter((_, i) => i % n === c).map((t) => t.width)));
  }
  function colourIndex(position) { // matplotlib: int(clip(x, 0, 1) * 256), 1 itself the last colour (float32 x)
    const x = f32(Math.min(Math.max(position, 0), 1) * 256);
    return x >= 256 ? 255 : Math.floor(x);
  }
  function colourIndex64(position) { // the same of a float64 position (a TwoSlopeNorm's)
    const x = Math.min(Math.max(position, 0), 1) * 256;
    return x >= 256 ? 255 : Math.floor(x);
  }
  // One map's tile: `indexAt(row, col)` gives its colour index per patch, `values()` its values
  // (smoothed, coloured by `valueIndex`, by default from 0 to `top`).
  function paintTile(image, base, map, style, mark) {
    const { width, height, pixels } = base, table = TABLES[style.cmap];
    const cell = height / map.gh, a = f32(Math.min(Math.max(style.opacity, 0), 1)), keep = f32(1 - a);
    const plane = style.smooth ? bilinear(map.values(), map.gh, map.gw, height, width) : null;
    const top = f32(map.top > 0 ? map.top : 1), valueIndex = map.valueIndex || ((v) => colourIndex(f32(v / top)));
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) {
      let index;
      if (plane) index = valueIndex(plane[y * width + x]);
      else index = map.indexAt(Math.floor(y / cell), Math.floor(x / cell));
      const o = (y * width + x) * 4;
      for (let ch = 0; ch < 3; ch++) {
        const heat = table[index * 3 + ch];
        image[o + ch] = style.raw ? heat : Math.trunc(f32(f32(f32(pixels[o + ch] * keep) + f32(heat * a)) + 0.5));
      }
      image[o + 3] = 255;
    }
    if (mark) outline(image, width, mark.col * cell, mark.row * cell, cell, cell, 2);
  }
  function outline(image, width, x0, y0, w, h, thickness) { // PIL's rectangle(outline=MARK, width=thickness)
    for (let y = y0; y < y0 + h; y++) for (let x = x0; x < x0 + w; x++) {
      const inside = x >= x0 + thickness && x < x0 + w - thickness && y >= y0 + thickness && y < y0 + h - thickness;
      if (inside) continue;
      const o = (y * width + x) * 4;
      image[o] = MARK[0]; image[o + 1] = MARK[1]; image[o + 2] = MARK[2];
    }
  }

  // ---- the controller ----------------------------------------------------------------------
  class AttentionMaps {
    constructor() {
      this.data = null; this.query = null; this.layer = 1; this.timer = null; this.wrapped = null;
      this.style = { cmap: "inferno", opacity: 0.6, smooth: false, raw: false, scale: "layer" };
      this.patchRows = new Map(); this.tokenRows = new Map(); this.keptBytes = 0; this.asked = new Set(); this.ahead = 0;
      this.parts = {}; this.cells = []; this.echoes = [];
    }

    // The two gr.HTML components register themselves (ui/explore.py's js_on_load).
    attach(name, element, props, server, events) {
      this.parts[name] = { element, props, server, events, url: null };
      if (name === "input") {
        element.addEventListener("click", (event) => this.clicked(event));
        // A new window size or a phone turned: the input is drawn again at the size now shown.
        new ResizeObserver(() => { if (this.data && this.inputFactor() !== this.inputScale) this.drawInput(); })
          .observe(element.querySelector(".page-frame"));
      }
      if (name === "heads") { // the maps' tiles a row follow the frame's width (`fittingColumns`)
        new ResizeObserver(() => { if (this.data && this.headsRoom() !== this.drawnRoom) this.draw(); })
          .observe(element.querySelector(".page-frame"));
      }
      if (name === "heads" && props.value && props.value.handle) this.load(props.value);
    }

    async load(payload) { // the pictures (RGB) and the shown layer's rows come deflated
      this.stop();
      // a new Set: what the last image asked for is not waited on, and its late replies are dropped
      const asked = (this.asked = new Set()); this.ahead = 0;
      if (!payload || !payload.handle) { this.data = null; this.query = null; this.share(); this.clear(); return; }
      const scales = Object.entries(payload.layouts), pictures = [payload.input, ...scales.map(([, l]) => l.base)];
      const [first, ...pixels] = await Promise.all([payload.token_rows, ...pictures].map((sent) => inflated(sent.deflated)));
      if (asked !== this.asked) return; // a later analysis came while this one was inflated
      const input = onCanvas(rgba(pixels[0], payload.input));
      const layouts = Object.fromEntries(scales.map(([k, l], i) => [k, { ...l, base: rgba(pixels[i + 1], l.base) }]));
      this.patchRows = new Map(); this.keptBytes = 0; this.tokenRows = new Map();
      this.data = { ...payload, input: { ...payload.input, image: input }, layouts };
      this.tokenRows.set(payload.token_rows.layer, this.decoded(first, payload.token_rows.parts));
      this.query = null; this.layer = payload.layer;
      this.say(""); this.share(); this.draw();
    }
    decoded(bytes, parts) { const d = this.data; return planes(bytes, d.heads, d.grid[0] * d.grid[1], d.prefix.length, parts); }
    // The parts the style draws (explorer/page_maps.PARTS): the shown scale's colour index, or for smooth
    // upsampling the per-head index and the level's low byte; those of them `rows` lacks.
    wanted() { return this.style.smooth ? ["head", "fine"] : [this.style.scale]; }
    missing(rows) { return this.wanted().filter((part) => !rows || !rows.parts[part]); }
    share() { // the query on screen, as the exports read it (the input view's value; ui/explore.py)
      const q = this.query, w = this.data && this.data.words;
      const query = q === null || !w ? "default" : q.token !== undefined ? w.picks[q.token] : [q.row + 1, q.col + 1];
      // and the head maps' tiles a row where a narrow frame wrapped them, which the PNG export follows
      const state = this.wrapped ? { query, columns: this.wrapped } : { query };
      if (this.parts.input) this.parts.input.props.value = state;
      return state;
    }

    // A band of a layer's patch rows ("layer/band", 0-based), the least recently used dropped past the page's budget.
    keep(band, rows) {
      const size = rows.size, old = this.patchRows.get(band);
      if (old) this.keptBytes -= old.size; // the same band with more parts
      this.patchRows.delete(band); this.patchRows.set(band, { rows, size }); this.keptBytes += size;
      for (const [old, kept] of this.patchRows) {
        if (this.keptBytes <= this.data.memory_bytes || old === band) break;
        this.patchRows.delete(old); this.keptBytes -= kept.size;
      }
    }

    // The rows of the current query in layer `layer` (1-based): null while they are asked for.
    rowsOf(layer) {
      const d = this.data, heads = d.heads, [gh, gw] = d.grid, n = gh * gw, p = d.prefix.length;
      const { name, band, row: q } = this.needed(layer);
      const kept = band === TOKENS ? null : this.patchRows.get(name);
      if (kept) { this.patchRows.delete(name); this.patchRows.set(name, kept); } // most recently used
      const rows = this.stored(layer, band);
      if (this.missing(rows).length) { this.ask(layer - 1, band); return null; }
      const cells = (plane) => plane.subarray(q * heads * n, (q + 1) * heads * n), headTops = rows.headTops.subarray(q * heads, (q + 1) * heads);
      return {
        parts: Object.fromEntries(Object.entries(rows.parts).map(([part, plane]) => [part, cells(plane)])),
        headTops, top: Math.max(...headTops), shares: rows.shares.subarray(q * heads * p, (q + 1) * heads * p),
      };
    }

    // Where the current query's rows are in layer `layer` (1-based): a token query's in the layer's
    // token rows; a patch query's in a band of d.band patch queries (explorer/page_budget.py),
    // row-major over the grid. "layer/band" 0-based, and its row there.
    needed(layer) {
      const d = this.data, q = this.query;
      if (q === null || q.token !== undefined) {
        return { name: `${layer - 1}/${TOKENS}`, band: TOKENS, row: q === null ? this.defaultToken() : q.token };
      }
      const patch = q.row * d.grid[1] + q.col, band = Math.floor(patch / d.band);
      return { name: `${layer - 1}/${band}`, band, row: patch - band * d.band };
    }
    stored(layer, band) { // what the page holds of a band (1-based layer), whatever its parts
      if (band === TOKENS) return this.tokenRows.get(layer - 1);
      const kept = this.patchRows.get(`${layer - 1}/${band}`);
      return kept && kept.rows;
    }
    has(layer, band) { return this.missing(this.stored(layer, band)).length === 0; }
    // A question for the parts the style draws that a band lacks (0-based layer): "layer/band:parts"
    asking(layer, band) { return `${layer}/${band}:${this.missing(this.stored(layer + 1, band)).join("+")}`; }
    waitsFor(name) { return this.data !== null && this.needed(this.layer).name === name; } // the maps on screen wait for it

    // A band of a layer's rows as bytes (`fetchRows`: ui/explore_handlers.layer_rows). `ahead`: asked before
    // it is shown (prefetch), so nothing is said unless the maps come to wait for it.
    async ask(layer, band, ahead = false) {
      const name = `${layer}/${band}`, asked = this.asked, parts = this.missing(this.stored(layer + 1, band));
      if (!ahead) this.say(FETCHING); // also while it is on its way, asked ahead
      const question = this.asking(layer, band);
      if (!parts.length || asked.has(question)) return;
      asked.add(question);
      const handle = this.data.handle;
      try {
        const rows = await fetchRows({ handle, layer: layer + 1, band, parts });
        if (asked !== this.asked) return; // another image's analysis came meanwhile
        if (rows.error) { if (!ahead || this.waitsFor(name)) this.say(rows.error); return; }
        const decoded = this.decoded(rows.bytes, rows.parts);
        const all = merged(this.stored(layer + 1, band), decoded); // what came for an earlier style is kept
        if (band === TOKENS) this.tokenRows.set(layer, all); else this.keep(name, all);
        if (!ahead || this.waitsFor(name)) { this.say(""); this.draw(); } // a click that came first is answered now
      } catch (error) {
        if (asked === this.asked && (!ahead || this.waitsFor(name))) {
          this.say("This layer's numbers could not be fetched from the server: try the layer again.");
        }
      } finally {
        asked.delete(question);
        if (asked === this.asked) this.prefetch();
      }
    }
    // What the next action is likely to need, asked for before it is shown, the first missing one
    // of: the current query's rows in the next AHEAD layers the way the layers are going (this.ahead:
    // +1 for Play, else the slider's last step); the patch rows of the layer the analysis was shown
    // at (the server says whether, prefetch_bands: a wide input's come when shown); every layer's
    // token rows, nearest first.
    prefetch() {
      const d = this.data;
      if (!d) return;
      const wanted = [];
      for (let k = 1; this.ahead && k <= AHEAD; k++) {
        const layer = this.layer + k * this.ahead;
        if (layer >= 1 && layer <= d.depth) wanted.push({ layer, band: this.needed(layer).band });
      }
      for (let band = 0; band < d.prefetch_bands; band++) wanted.push({ layer: d.layer, band }); // the analysis's layer only: a slider step with CLS fetches nothing
      const nearest = Array.from({ length: d.depth }, (_, i) => i + 1).sort((a, b) => Math.abs(a - this.layer) - Math.abs(b - this.layer));
      for (const layer of nearest) wanted.push({ layer, band: TOKENS });
      const next = wanted.find(({ layer, band }) => !this.has(layer, band));
      if (!next || this.asked.has(this.asking(next.layer - 1, next.band))) return; // on its way: the next is asked for when it comes
      this.ask(next.layer - 1, next.band, true);
    }

    // Whether all the page asks for unasked after an analysis has come (the browser tests and
    // bench.page_bytes wait for it): every layer's token rows and the shown layer's prefetched bands.
    settled() {
      const d = this.data;
      if (!d || this.asked.size > 0) return false;
      const layers = Array.from({ length: d.depth }, (_, i) => i + 1);
      return layers.every((layer) => this.has(layer, TOKENS))
        && Array.from({ length: d.prefetch_bands }, (_, band) => band).every((band) => this.has(d.layer, band));
    }

    defaultToken() { return this.data.words.picks.indexOf(this.data.has_cls ? "cls" : "mean"); }

    // ---- what changes ----
    clicked(event) {
      const img = this.parts.input && this.parts.input.element.querySelector("img");
      if (!this.data || !img || event.target !== img) return;
      const rect = img.getBoundingClientRect(), [gh, gw] = this.data.grid;
      const x = (event.clientX - rect.left) * img.naturalWidth / rect.width;
      const y = (event.clientY - rect.top) * img.naturalHeight / rect.height;
      const step = this.data.patch * this.inputScale;
      this.setQuery({ row: Math.min(Math.max(Math.floor(y / step), 0), gh - 1), col: Math.min(Math.max(Math.floor(x / step), 0), gw - 1) });
      this.parts.input.events.query();
    }
    setQuery(query) { this.stop(); this.say(""); this.ahead = 0; this.query = query; this.share(); this.draw(); return this.queryOutputs(); }
    move(dr, dc) { // explore_handlers.move_query: from a token, any arrow goes to row 1, column 1
      if (!this.data) return this.queryOutputs();
      const [gh, gw] = this.data.grid, q = this.query;
      const next = q === null || q.token !== undefined ? { row: 0, col: 0 }
        : { row: Math.min(Math.max(q.row + dr, 0), gh - 1), col: Math.min(Math.max(q.col + dc, 0), gw - 1) };
      return this.setQuery(next);
    }
    reset() { return this.setQuery(null); }
    pick(token) { // the query picker: a token, or "patch" (the patch shown, else the centre one)
      if (!this.data) return this.queryOutputs();
      const index = this.data.words.picks.indexOf(token);
      if (index >= 0) return this.setQuery(index === this.defaultToken() ? null : { token: index });
      if (this.query && this.query.row !== undefined) return this.queryOutputs();
      const [gh, gw] = this.data.grid;
      return this.setQuery({ row: Math.floor(gh / 2), col: Math.floor(gw / 2) });
    }
    setLayer(value) { // the slider and its box: a layer past the model's comes back
      const now = performance.now();
      this.echoes = this.echoes.filter((echo) => now - echo.at < 1000);
      const echo = this.echoes.findIndex((e) => e.layer === Number(value));
      if (echo >= 0) { this.echoes.splice(echo, 1); return value; } // the play's own step, arriving late
      this.stop();
      if (!this.data) return value;
      const depth = this.data.depth, typed = Number(value);
      const nearest = Number.isFinite(typed) ? Math.min(Math.max(Math.round(typed), 1), depth) : depth;
      if (!(Number.isInteger(typed) && typed >= 1 && typed <= depth)) {
        this.say(`There is no layer ${Number.isFinite(typed) ? typed : value}: this model has layers 1 to ${depth}. Showing layer ${nearest}.`);
      } else this.say("");
      if (nearest !== this.layer) this.ahead = Math.sign(nearest - this.layer); // ask ahead the way it steps
      this.layer = nearest; this.draw();
      return nearest;
    }
    setStyle(cmap, opacity, upsampling, display, scale) { // as ui.common.map_style parses them into a MapStyle
      this.stop();
      this.style = { cmap: TABLES[cmap] ? cmap : "inferno", opacity: Number(opacity), smooth: upsampling === "smooth", raw: display === "raw", scale };
      this.draw();
      // Pictures the server draws (More views, relevance, a CLIP model's words) follow the style too.
      if (document.querySelector(FOLLOW_STYLE)) this.parts.input.events.restyle();
    }
    play() {
      if (!this.data) return;
      this.stop();
      let next = this.layer < this.data.depth ? this.layer + 1 : 1;
      const step = () => {
        this.layer = next; this.draw(); this.showSlider(next);
        if (next >= this.data.depth) { this.stop(); return; }
        next += 1;
      };
      this.ahead = 1; this.buttons(true); step();
      if (this.data && this.layer < this.data.depth) this.timer = setInterval(step, PLAY_STEP_MS);
    }
    stop() { if (this.timer !== null) clearInterval(this.timer); this.timer = null; this.buttons(false); }
    buttons(playing) { document.body.classList.toggle("playing-layers", playing); } // Pause in Play's place
    showSlider(layer) { // the layer slider follows the play; Gradio's input event comes back as an echo
      for (const input of document.querySelectorAll("#layer input")) {
        this.echoes.push({ layer, at: performance.now() });
        input.value = String(layer); input.dispatchEvent(new Event("input", { bubbles: true }));
      }
    }

    // What the page's Markdown caption, query picker and export read (ui/explore.py's events).
    queryOutputs() {
      const d = this.data;
      if (!d) return [null, null, null];
      const q = this.query, w = d.words, state = this.share();
      if (q === null) return [w.captions[this.defaultToken()], w.picks[this.defaultToken()], state];
      if (q.token !== undefined) return [w.captions[q.token], w.picks[q.token], state];
      return [w.patch_caption.replace("{row}", q.row + 1).replace("{column}", q.col + 1), "patch", state];
    }
    label() {
      const q = this.query, w = this.data.words;
      if (q === null) return w.labels[this.defaultToken()];
      if (q.token !== undefined) return w.labels[q.token];
      return w.patch_label.replace("{row}", q.row + 1).replace("{column}", q.col + 1);
    }
    say(text) { const s = this.parts.heads && this.parts.heads.element.querySelector(".maps-status"); if (s) s.textContent = text; }

    // ---- drawing ----
    clear() { // no picture, sentence or description of an image that is gone
      for (const part of Object.values(this.parts)) {
        const img = part.element.querySelector("img");
        if (img) { img.removeAttribute("src"); img.alt = ""; img.hidden = true; }
        for (const words of part.element.querySelectorAll(".maps-status, .maps-live")) words.textContent = "";
      }
    }
    draw() {
      if (!this.data) return;
      this.drawInput();
      const rows = this.rowsOf(this.layer);
      if (rows) this.drawHeads(rows);
      this.prefetch();
      const live = this.parts.heads && this.parts.heads.element.querySelector(".maps-live");
      if (live && rows) live.textContent = this.headsAlt();
    }
    headsAlt() { return this.data.words.heads_alt.replace("{layer}", this.layer).replace("{query}", this.label()); }
    show(name, canvas, alt) {
      const part = this.parts[name];
      if (!part) return;
      const img = part.element.querySelector("img"), drawn = (part.drawn = (part.drawn || 0) + 1);
      canvas.toBlob((blob) => { // encoded apart: an earlier picture may be ready after a later one
        if (drawn !== part.drawn) return;
        const url = URL.createObjectURL(blob), old = part.url;
        part.url = url; img.src = url; img.alt = alt; img.hidden = false;
        if (old) setTimeout(() => URL.revokeObjectURL(old), 1000);
      }, "image/png");
      part.canvas = canvas;
    }
    // The model input is drawn at the size its frame shows it (issue 42: a 448 px drawing shown at
    // 330 px blurred its 1 px grid): whole blocks while pixels are enlarged twice or more (crisp, every
    // patch as wide as the next), fitted exactly below that. Before the frame is laid out (a hidden
    // tab), the server's enlargement (views.input_scale).
    inputFactor() {
      const { image, scale } = this.data.input, frame = this.parts.input && this.parts.input.element.querySelector(".page-frame");
      const room = frame ? Math.min(frame.clientWidth / image.width, frame.clientHeight / image.height) : 0;
      if (!(room > 0)) return scale;
      return room >= 2 ? Math.floor(room) : room;
    }
    drawInput() { // canvas.patch_grid_image, at this.inputFactor()
      const d = this.data, { image } = d.input, [gh, gw] = d.grid, f = (this.inputScale = this.inputFactor());
      const width = Math.round(image.width * f), height = Math.round(image.height * f);
      const edge = (k) => Math.round(k * d.patch * f); // where patch k starts, in drawn pixels
      const canvas = Object.assign(document.createElement("canvas"), { width, height }), ctx = canvas.getContext("2d");
      ctx.imageSmoothingEnabled = !Number.isInteger(f); // whole blocks stay exact; a fitted photo is resampled
      ctx.imageSmoothingQuality = "high";
      ctx.drawImage(image.canvas, 0, 0, width, height);
      const out = ctx.getImageData(0, 0, width, height), px = out.data;
      const paint = (o) => { px[o] = GRID[0]; px[o + 1] = GRID[1]; px[o + 2] = GRID[2]; px[o + 3] = 255; };
      for (let k = 1; k < gw; k++) for (let y = 0, x = edge(k); y < height; y++) paint((y * width + x) * 4);
      for (let k = 1; k < gh; k++) for (let x = 0, y = edge(k); x < width; x++) paint((y * width + x) * 4);
      const q = this.query;
      if (q && q.row !== undefined) {
        outline(px, width, edge(q.col), edge(q.row), edge(q.col + 1) - edge(q.col), edge(q.row + 1) - edge(q.row), 3);
      }
      ctx.putImageData(out, 0, 0);
      const alt = q && q.row !== undefined ? d.words.input_alt_patch : d.words.input_alt;
      this.show("input", canvas, alt.replace("{query}", this.label()));
    }
    drawHeads(rows) { // render.head_grid
      const d = this.data, style = this.style, [gh, gw] = d.grid, n = gh * gw, p = d.prefix.length;
      const layout = d.layouts[style.scale === "head" ? "head" : "layer"], base = layout.base;
      const writer = new Writer(d.text_px);
      const tops = Array.from({ length: d.heads }, (_, h) => (style.scale === "head" ? rows.headTops[h] : style.scale === "fixed" ? 1 : rows.top));
      const q = this.query, mark = q && q.row !== undefined ? q : null;
      const tiles = tops.map((top, h) => {
        const cells = (plane) => plane.subarray(h * n, (h + 1) * n), headTop = rows.headTops[h];
        // the shown scale's colour index, sent exactly (explorer/page_maps.part_plane); smoothed, the
        // value of the 16-bit level of the head's own scale, its high byte the per-head index
        const shown = style.smooth ? null : cells(rows.parts[style.scale]);
        const map = {
          gh, gw, top,
          indexAt: (r, c) => shown[r * gw + c],
          values: () => {
            const coarse = cells(rows.parts.head), fine = cells(rows.parts.fine);
            return Float32Array.from(coarse, (c, i) => ((c * 256 + fine[i] + 0.5) / LEVELS) * headTop);
          },
        };
        const pixels = new Uint8ClampedArray(base.width * base.height * 4);
        paintTile(pixels, base, map, style, mark);
        const lines = [`head ${h + 1}`, ...(style.scale === "head" ? [`max ${pyG(top, 2)}`] : [])];
        const parts = d.words.short_names.map((name, j) => `${name} ${fixed2(rows.shares[h * p + j])}`);
        for (let i = 0; i < parts.length; i += PER_LINE) lines.push(parts.slice(i, i + PER_LINE).join(" \u00b7 "));
        const width = Math.max(base.width, Math.ceil(Math.max(...lines.map((l) => writer.width(l)))) + 1);
        return { pixels, lines, width, height: base.height + lines.length * writer.line };
      });
      this.compose(tiles, tops, writer, layout, base);
    }
    // The frame's width in CSS px, which the maps must not pass: Infinity before it is laid out,
    // and for a frame of fixed height (ui/app.py's CSS sets --maps-shrink), where they are shrunk.
    headsRoom() {
      const frame = this.parts.heads && this.parts.heads.element.querySelector(".page-frame");
      if (!frame || frame.clientWidth === 0) return Infinity;
      return getComputedStyle(frame).getPropertyValue("--maps-shrink").trim() === "1" ? Infinity : frame.clientWidth;
    }
    // The tiles a row: the server's layout (explorer.views.head_layout, what the PNG export draws)
    // where the frame shows it at SHRUNK_AT_MOST of its width or more, else as many as fit, each tile
    // at its drawn size. A phone had shown 3 of 5 columns and the colour bar up to 0.08 of 0.57, as
    // if that were its top (a teacher's walk); a projector's frame a few pixels narrower keeps the
    // layout, as fewer a row would make the maps taller than its screen.
    fittingColumns(tiles, cols, room) {
      const width = (n) => columnWidths(tiles, n).reduce((a, b) => a + b + GAP, 0);
      if (width(cols) * SHRUNK_AT_MOST <= room) return cols;
      while (cols > 1 && width(cols) > room) cols--;
      return cols;
    }
    compose(tiles, tops, writer, layout, base) { // canvas.mosaic, canvas.colour_bar, canvas.titled
      const d = this.data, style = this.style, room = (this.drawnRoom = this.headsRoom()), rows = [];
      const cols = this.fittingColumns(tiles, layout.cols, room);
      this.wrapped = cols < layout.cols ? cols : null;
      this.share();
      for (let i = 0; i < tiles.length; i += cols) rows.push(tiles.slice(i, i + cols));
      const widths = columnWidths(tiles, cols);
      const heights = rows.map((r) => Math.max(...r.map((t) => t.height)));
      const xs = widths.map((_, c) => widths.slice(0, c).reduce((a, b) => a + b, 0) + c * GAP);
      const gridWidth = xs[xs.length - 1] + widths[widths.length - 1] + GAP;
      const gridHeight = heights.reduce((a, b) => a + b, 0) + rows.length * GAP;
      // canvas.BAR_WIDTH at least, as render.head_grid draws it; as wide as the tiles where they were wrapped
      const barWidth = Math.max(gridWidth, this.wrapped ? 0 : BAR_WIDTH), width = Math.max(gridWidth, barWidth);
      const title = writer.wrap(d.words.title.replace("{layer}", this.layer).replace("{query}", this.label()), width - GAP);
      const note = writer.wrap(d.words.note, width - GAP);
      const high = style.scale === "layer" ? Math.max(...tops) : 1;
      const label = style.scale === "head" ? "colour: attention weight as a share of each head's own maximum (per-head stretch, printed under each tile)"
        : style.scale === "fixed" ? "colour: attention weight, fixed scale from 0 to 1"
          : `colour: attention weight from 0 to ${number(high)}, the largest in this layer (one scale for all its maps)`;
      const labelLines = writer.wrap(label, barWidth - GAP);
      const block = (lines) => lines.length * writer.line + GAP / 2;
      const barHeight = BAR_PX + 4 + writer.line;
      const height = block(title) + GAP + gridHeight + GAP + barHeight + GAP + block(labelLines) + GAP + block(note);
      const canvas = Object.assign(document.createElement("canvas"), { width, height });
      const ctx = canvas.getContext("2d");
      ctx.fillStyle = BACKGROUND; ctx.fillRect(0, 0, width, height);
      let y = 0;
      title.forEach((line, i) => writer.put(ctx, GAP / 2, y + i * writer.line + 1, line));
      y += block(title) + GAP;
      this.cells = [];
      rows.forEach((row, r) => {
        row.forEach((tile, c) => {
          ctx.putImageData(new ImageData(tile.pixels, base.width, base.height), xs[c], y);
          tile.lines.forEach((line, i) => writer.put(ctx, xs[c], y + base.height + i * writer.line + 1, line));
          this.cells.push({ head: r * cols + c + 1, x: xs[c], y, width: base.width, height: base.height });
        });
        y += heights[r] + GAP;
      });
      y += GAP; // the mosaic ends with a gap of its own, then the picture's parts are stacked GAP apart
      this.colourBar(ctx, writer, y, barWidth, high);
      y += barHeight + GAP;
      labelLines.forEach((line, i) => writer.put(ctx, GAP / 2, y + i * writer.line + 1, line));
      y += block(labelLines) + GAP;
      note.forEach((line, i) => writer.put(ctx, GAP / 2, y + i * writer.line + 1, line));
      this.show("heads", canvas, this.headsAlt());
    }
    colourBar(ctx, writer, y0, width, high, cmap = this.style.cmap, centre = null) { // canvas.colour_bar from 0 to `high`
      const table = TABLES[cmap], position = centre === null ? (t) => t / high : (t) => twoSlope(t, centre, high);
      const pad = GAP + Math.trunc(Math.trunc(writer.width(number(0))) / 2);
      const length = Math.max(width - pad - Math.trunc(Math.trunc(writer.width(number(high))) / 2) - GAP, 2);
      const bar = ctx.createImageData(length, BAR_PX);
      for (let x = 0; x < length; x++) {
        const index = Math.min(Math.floor((length > 1 ? x * (1 / (length - 1)) : 0) * 256), 255); // np.linspace, in float64
        for (let yy = 0; yy < BAR_PX; yy++) {
          const o = (yy * length + x) * 4;
          bar.data[o] = table[index * 3]; bar.data[o + 1] = table[index * 3 + 1]; bar.data[o + 2] = table[index * 3 + 2]; bar.data[o + 3] = 255;
        }
      }
      ctx.putImageData(bar, pad, y0);
      ctx.fillStyle = TEXT;
      for (const t of barTicks(0, high, centre)) {
        const x = pad + roundHalfEven(Math.min(Math.max(position(t), 0), 1) * (length - 1));
        ctx.fillRect(x, y0 + BAR_PX, 1, 4);
        const text = number(t);
        writer.put(ctx, x - writer.width(text) / 2, y0 + BAR_PX + 4, text);
      }
    }
  }

  // ---- Live: each webcam frame's pictures, drawn from its numbers -----------------------------
  // explorer/live.py (frame_numbers) says what a frame sends: the model input as a JPEG, one
  // layer's row of the query in every head, and the rollout. The input and the head maps are
  // drawn as Explore draws them, at the server's layout and size; the rollout as
  // render.relative_picture draws it. Each canvas is shown as drawn, with no PNG to encode, as a
  // frame is replaced many times a second. The input comes as raw RGB, as Explore's does: a JPEG's
  // decoding, which the browser does apart, put 100 ms between a frame's arrival and its pictures
  // (bench.live: camera to picture 200 ms, against 100 ms when the server drew them).
  class LiveMaps extends AttentionMaps {
    attach(element) { // ui/live.py's js_on_load: the three places the pictures go
      for (const name of ["heads", "input", "rollout"]) this.parts[name] = { element: element.querySelector(`[data-part="${name}"]`) };
      // a phone turned while the stream is stopped: the last frame's maps wrap to the new width
      new ResizeObserver(() => { if (this.rows && this.headsRoom() !== this.drawnRoom) this.drawHeads(this.rows); })
        .observe(element.querySelector(".live-frame"));
    }
    frame(payload) {
      if (!payload || !payload.rows) return;
      const [gh, gw] = payload.grid, input = onCanvas(rgba(bytesOf(payload.input.rgb), payload.input));
      const resized = (side) => { // canvas.fit_to_grid: whole pixels a patch, nearest upwards, smoothed downwards
        const cell = Math.max(1, Math.ceil(side / Math.max(gh, gw))), width = gw * cell, height = gh * cell;
        const ctx = Object.assign(document.createElement("canvas"), { width, height }).getContext("2d");
        ctx.imageSmoothingEnabled = width < input.width; ctx.imageSmoothingQuality = "high";
        ctx.drawImage(input.canvas, 0, 0, width, height);
        return { width, height, pixels: ctx.getImageData(0, 0, width, height).data };
      };
      const layouts = Object.fromEntries(Object.entries(payload.layouts).map(([k, l]) => [k, { ...l, base: resized(l.tile) }]));
      const r = payload.rows;
      const rows = planes(bytesOf(r.bytes), payload.heads, gh * gw, payload.prefix.length, r.parts); // one query's, not deflated
      this.rows = { ...rows, top: Math.max(...rows.headTops) };
      this.rollout = { ...payload.rollout, values: floats(payload.rollout.values), base: resized(payload.rollout.side) };
      this.data = { ...payload, input: { ...payload.input, image: input }, layouts };
      this.query = payload.query; this.layer = payload.layer; this.style = { ...payload.style };
      this.drawInput(); this.drawHeads(this.rows); this.drawRollout();
    }
    rowsOf() { return this.rows; }
    share() { return null; } // no export reads Live's query
    // The frame's width, to which the maps wrap their tiles as Explore's do (`fittingColumns`): a
    // phone had scrolled the server's layout sideways, 3.5 of 6 columns and the colour bar to 0.1 of 0.196 shown.
    headsRoom() {
      const frame = this.parts.heads && this.parts.heads.element.parentElement;
      return frame && frame.clientWidth > 0 ? frame.clientWidth : Infinity;
    }
    inputFactor() { return this.data.input.scale; }
    show(name, canvas, alt) {
      Object.assign(canvas, { id: `live-${name}` });
      canvas.setAttribute("role", "img"); canvas.setAttribute("aria-label", alt);
      this.parts[name].element.replaceChildren(canvas);
    }
    drawRollout() { // render.relative_picture: multiples of uniform, a diverging map whose middle colour is 1
      const d = this.data, ro = this.rollout, [gh, gw] = d.grid, base = ro.base, writer = new Writer(d.text_px);
      const uniform = f32(ro.uniform); // numpy divides the float32 map by uniform as a float32
      const ratio = ro.values.map((v) => (ro.uniform > 0 ? f32(v / uniform) : 0));
      const top = ratio.reduce((a, b) => Math.max(a, b), ro.top);
      const index = (x) => colourIndex64(twoSlope(x, 1, top));
      const map = { gh, gw, top, indexAt: (row, col) => index(ratio[row * gw + col]), values: () => ratio, valueIndex: index };
      const pixels = new Uint8ClampedArray(base.width * base.height * 4);
      paintTile(pixels, base, map, { ...this.style, cmap: ro.cmap }, null);
      const width = Math.max(base.width, BAR_WIDTH); // canvas.titled over the map and its colour bar
      const title = writer.wrap(ro.title, width - GAP), label = writer.wrap(ro.label, width - GAP), note = writer.wrap(ro.note, width - GAP);
      const block = (lines) => lines.length * writer.line + GAP / 2, barHeight = BAR_PX + 4 + writer.line;
      const height = block(title) + GAP + base.height + GAP + barHeight + GAP + block(label) + GAP + block(note);
      const canvas = Object.assign(document.createElement("canvas"), { width, height }), ctx = canvas.getContext("2d");
      ctx.fillStyle = BACKGROUND; ctx.fillRect(0, 0, width, height);
      const lines = (words, y) => words.forEach((line, i) => writer.put(ctx, GAP / 2, y + i * writer.line + 1, line));
      let y = 0;
      lines(title, y); y += block(title) + GAP;
      this.rolloutCell = { x: 0, y, width: base.width, height: base.height }; // where the map is, for the browser test
      ctx.putImageData(new ImageData(pixels, base.width, base.height), 0, y); y += base.height + GAP;
      this.colourBar(ctx, writer, y, width, top, ro.cmap, 1); y += barHeight + GAP;
      lines(label, y); y += block(label) + GAP;
      lines(note, y);
      this.show("rollout", canvas, ro.alt);
    }
  }

  window.attentionMaps = new AttentionMaps();
  window.liveMaps = new LiveMaps();
  window.attentionMaps.ticks = ticks; // for the browser test's comparison with matplotlib
  window.attentionMaps.formats = { fixed2, pyG, number };
})();
