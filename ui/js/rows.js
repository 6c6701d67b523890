// The rows of every layer that Explore's page holds, and its questions to the server for those it
// lacks (explorer/page_maps.py says what is sent when, issue 58): a layer's token rows, and its patch
// rows in bands of d.band patch queries (explorer/page_budget.py), each with the parts its style
// draws, kept within the page's memory budget and asked for one question at a time.
import { decodeRows, merged, queryRows, rowShape } from "./decode.js";
import { DrawnMaps } from "./drawn.js";

// Play and the layer slider ask for the next layers' band of a patch query before they show it,
// up to this many layers ahead, one such request at a time: on a model with registers (its patch
// rows not all sent) Play had stalled ~1 s a layer on "Fetching this layer's numbers…" (issue 61).
const AHEAD = 2;
export const TOKENS = "tokens"; // the band of a layer's token queries' rows (explorer/page_maps.py, TOKENS)
const FETCHING = "Fetching this layer's numbers from the server…";
const PARTS_HEADER = "X-Rows-Parts"; // ui/rows_route.PARTS_HEADER

// A question for rows on the rows route (`route`, ui/rows_route.py): the reply's body is the rows
// deflated, inflated as it streams in, with the parts it holds in a header; a question the server
// refuses (a dropped analysis, no place for it now) comes back as its sentence, {error}.
async function fetchRows(route, question) {
  const root = (window.gradio_config && window.gradio_config.root) || window.location.href; // as Gradio's own requests
  const reply = await fetch(new URL(route.slice(1), root.replace(/\/?$/, "/")), {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(question),
  });
  if (!reply.ok) {
    const words = reply.status < 500 && (reply.headers.get("Content-Type") || "").startsWith("text/plain");
    if (words) return { error: await reply.text() };
    throw new Error(`HTTP ${reply.status}`);
  }
  const stream = reply.body.pipeThrough(new DecompressionStream("deflate"));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  return { parts: reply.headers.get(PARTS_HEADER).split(","), bytes };
}

export class AskingMaps extends DrawnMaps {
  constructor(config) {
    super(config);
    this.patchRows = new Map(); this.tokenRows = new Map(); this.keptBytes = 0; this.asked = new Set(); this.ahead = 0;
    this.rowsRoute = config.rows_route; // ui/gate.ROUTE
  }

  decoded(bytes, parts) { return decodeRows(bytes, rowShape(this.data), parts); }
  // The parts the style draws (explorer/page_maps.PARTS): the shown scale's colour index, or for smooth
  // upsampling the per-head index and the level's low byte; those of them `rows` lacks.
  wanted() { return this.style.smooth ? ["head", "fine"] : [this.style.scale]; }
  missing(rows) { return this.wanted().filter((part) => !rows || !rows.parts[part]); }

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
    const { name, band, row } = this.needed(layer);
    const kept = band === TOKENS ? null : this.patchRows.get(name);
    if (kept) { this.patchRows.delete(name); this.patchRows.set(name, kept); } // most recently used
    const rows = this.stored(layer, band);
    if (this.missing(rows).length) { this.ask(layer - 1, band); return null; }
    return queryRows(rows, row, rowShape(this.data));
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
  // Whether the maps on screen wait for band `name`.
  waitsFor(name) { return this.data !== null && this.needed(this.layer).name === name; }

  // A band of a layer's patch rows as bytes (`fetchRows`: ui/explore_handlers.layer_rows). `ahead`: asked before
  // it is shown (prefetch), so nothing is said unless the maps come to wait for it.
  async ask(layer, band, ahead = false) {
    const name = `${layer}/${band}`, asked = this.asked, parts = this.missing(this.stored(layer + 1, band));
    if (!ahead) this.say(FETCHING); // also while it is on its way, asked ahead
    const question = this.asking(layer, band);
    if (!parts.length || asked.has(question)) return;
    asked.add(question);
    const handle = this.data.handle;
    try {
      const rows = await fetchRows(this.rowsRoute, { handle, layer: layer + 1, band, parts });
      if (asked !== this.asked) return; // another image's analysis came meanwhile
      if (rows.error) { if (!ahead || this.waitsFor(name)) this.say(rows.error); return; }
      const decoded = this.decoded(rows.bytes, rows.parts);
      const all = merged(this.stored(layer + 1, band), decoded); // what came for an earlier style is kept
      if (band === TOKENS) this.tokenRows.set(layer, all); else this.keep(name, all);
      if (!ahead || this.waitsFor(name)) { this.say(""); this.draw(); } // a click that came first is answered now
    } catch {
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
    // the analysis's layer only: a slider step with CLS fetches nothing
    for (let band = 0; band < d.prefetch_bands; band++) wanted.push({ layer: d.layer, band });
    const nearest = this.layers().sort((a, b) => Math.abs(a - this.layer) - Math.abs(b - this.layer));
    for (const layer of nearest) wanted.push({ layer, band: TOKENS });
    const next = wanted.find(({ layer, band }) => !this.has(layer, band));
    // on its way: the next is asked for when it comes
    if (!next || this.asked.has(this.asking(next.layer - 1, next.band))) return;
    this.ask(next.layer - 1, next.band, true);
  }

  layers() { return Array.from({ length: this.data.depth }, (_, i) => i + 1); } // 1-based

  // Whether all the page asks for unasked after an analysis has come (the browser tests and
  // bench.page_bytes wait for it): every layer's token rows and the shown layer's prefetched bands.
  settled() {
    const d = this.data;
    if (!d || this.asked.size > 0) return false;
    return this.layers().every((layer) => this.has(layer, TOKENS))
      && Array.from({ length: d.prefetch_bands }, (_, band) => band).every((band) => this.has(d.layer, band));
  }
}
