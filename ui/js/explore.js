// The Explore tab's first screen, drawn in the page (issue 41): the model input with its patch grid and the head
// maps of any layer for any query, redrawn on every click, key, slider step, Play step and style change from the
// rows the page holds (rows.js), with no request to the server except for rows it lacks. ui/explore.py's two
// gr.HTML components attach themselves (`attach`); its events with no function call the methods below.
import { inflated, rgba } from "./decode.js";
import { onCanvas } from "./canvas.js";
import { AskingMaps } from "./rows.js";
import { pointable } from "./pointing.js";

export class ExploreMaps extends AskingMaps {
  constructor(config) {
    super(config); this.timer = null; this.echoes = [];
    this.playStepMs = config.play_step_ms; // ui/explore.py's PLAY_STEP_S
    this.followStyle = config.follow_style; // the pictures the server draws that follow the style
  }

  // The two gr.HTML components register themselves (ui/explore.py's js_on_load).
  attach(name, element, props, events) {
    this.parts[name] = { element, props, events, url: null };
    const frame = element.querySelector(".page-frame");
    if (name === "input") {
      element.addEventListener("click", (event) => this.clicked(event));
      // A new window size or a phone turned: the input is drawn again at the size now shown.
      new ResizeObserver(() => { if (this.data && this.inputFactor() !== this.inputScale) this.drawInput(); })
        .observe(frame);
    }
    if (name === "heads") { // a caption clicked points at its head; tiles a row follow the width (fittingColumns)
      pointable(this, element);
      new ResizeObserver(() => { if (this.data && this.headsRoom() !== this.drawnRoom) this.draw(); }).observe(frame);
      if (props.value && props.value.handle) this.load(props.value);
    }
  }

  async load(payload) { // an analysis: the pictures (RGB) and the shown layer's token rows come deflated
    this.stop();
    // a new Set: what the last image asked for is not waited on, and its late replies are dropped
    const asked = (this.asked = new Set()); this.ahead = 0;
    if (!payload || !payload.handle) { this.data = null; this.query = null; this.share(); this.clear(); return; }
    const scales = Object.entries(payload.layouts), pictures = [payload.input, ...scales.map(([, l]) => l.base)];
    const sent = [payload.token_rows, ...pictures];
    const [first, ...pixels] = await Promise.all(sent.map((part) => inflated(part.deflated)));
    if (asked !== this.asked) return; // a later analysis came while this one was inflated
    const input = onCanvas(rgba(pixels[0], payload.input));
    const layouts = Object.fromEntries(scales.map(([k, l], i) => [k, { ...l, base: rgba(pixels[i + 1], l.base) }]));
    this.patchRows = new Map(); this.keptBytes = 0; this.tokenRows = new Map();
    this.data = { ...payload, input: { ...payload.input, image: input }, layouts };
    this.tokenRows.set(payload.token_rows.layer, this.decoded(first, payload.token_rows.parts));
    this.query = null; this.layer = payload.layer;
    this.say(""); this.share(); this.draw();
  }

  share() { // the query on screen, as the exports read it (the input view's value; ui/explore.py)
    const q = this.query, w = this.data && this.data.text;
    const query = q === null || !w ? "default" : q.token !== undefined ? w.picks[q.token] : [q.row + 1, q.col + 1];
    // and the head maps' tiles a row where a narrow frame wrapped them, which the PNG export follows
    const state = this.wrapped ? { query, columns: this.wrapped } : { query };
    if (this.parts.input) this.parts.input.props.value = state;
    return state;
  }

  // ---- what changes ----
  clicked(event) {
    const img = this.parts.input && this.parts.input.element.querySelector("img");
    if (!this.data || !img || event.target !== img) return;
    const rect = img.getBoundingClientRect(), [gh, gw] = this.data.grid, step = this.data.patch * this.inputScale;
    const x = (event.clientX - rect.left) * img.naturalWidth / rect.width;
    const y = (event.clientY - rect.top) * img.naturalHeight / rect.height;
    const within = (k, count) => Math.min(Math.max(Math.floor(k / step), 0), count - 1);
    this.setQuery({ row: within(y, gh), col: within(x, gw) });
    this.parts.input.events.query();
  }
  setQuery(query) {
    this.stop(); this.say(""); this.ahead = 0; this.query = query; this.share(); this.draw();
    return this.queryOutputs();
  }
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
    const index = this.data.text.picks.indexOf(token);
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
      const shown = Number.isFinite(typed) ? typed : value;
      this.say(`There is no layer ${shown}: this model has layers 1 to ${depth}. Showing layer ${nearest}.`);
    } else this.say("");
    if (nearest !== this.layer) this.ahead = Math.sign(nearest - this.layer); // ask ahead the way it steps
    this.layer = nearest; this.draw();
    return nearest;
  }
  setStyle(cmap, opacity, upsampling, display, scale) { // as ui.common.map_style parses them into a MapStyle
    this.stop();
    const known = this.tables[cmap] ? cmap : "inferno", smooth = upsampling === "smooth", raw = display === "raw";
    this.style = { cmap: known, opacity: Number(opacity), smooth, raw, scale };
    this.draw();
    // Pictures the server draws (More views, relevance, a CLIP model's words) follow the style too.
    if (document.querySelector(this.followStyle)) this.parts.input.events.restyle();
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
    if (this.data && this.layer < this.data.depth) this.timer = setInterval(step, this.playStepMs);
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
    const q = this.query, w = d.text, state = this.share();
    if (q === null) return [w.captions[this.defaultToken()], w.picks[this.defaultToken()], state];
    if (q.token !== undefined) return [w.captions[q.token], w.picks[q.token], state];
    return [w.patch_caption.replace("{row}", q.row + 1).replace("{column}", q.col + 1), "patch", state];
  }
  say(text) {
    const status = this.parts.heads && this.parts.heads.element.querySelector(".maps-status");
    if (status) status.textContent = text;
  }

  // ---- drawing ----
  clear() { // no picture, sentence or description of an image that is gone
    for (const part of Object.values(this.parts)) {
      const img = part.element.querySelector("img");
      if (img) { img.removeAttribute("src"); img.alt = ""; img.hidden = true; }
      for (const line of part.element.querySelectorAll(".maps-status, .maps-live")) line.textContent = "";
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
    if (this.onDrawn) this.onDrawn(); // class mode (classroom.js): the teacher's view is sent, a student's compared
  }
  show(name, canvas, alt) { // as an <img> (a PNG of the canvas), which Gradio's frame sizes as its pictures
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
    const { image, scale } = this.data.input;
    const frame = this.parts.input && this.parts.input.element.querySelector(".page-frame");
    const room = frame ? Math.min(frame.clientWidth / image.width, frame.clientHeight / image.height) : 0;
    if (!(room > 0)) return scale;
    return room >= 2 ? Math.floor(room) : room;
  }
  // The frame's width in CSS px, which the maps must not pass: Infinity before it is laid out,
  // and for a frame of fixed height (ui/app.py's CSS sets --maps-shrink), where they are shrunk.
  headsRoom() {
    const frame = this.parts.heads && this.parts.heads.element.querySelector(".page-frame");
    if (!frame || frame.clientWidth === 0) return Infinity;
    return getComputedStyle(frame).getPropertyValue("--maps-shrink").trim() === "1" ? Infinity : frame.clientWidth;
  }
}
