// Live: each webcam frame's pictures, drawn from its numbers. explorer/live.py (frame_numbers) says
// what a frame sends: the model input as raw RGB, one layer's row of the query in every head, and the
// rollout. The input and the head maps are drawn as Explore draws them (drawn.js), at the server's
// layout and size; the rollout as render.relative_picture draws it. Each canvas is shown as drawn,
// with no PNG to encode, as a frame is replaced many times a second. The input comes as raw RGB, as
// Explore's does: a JPEG's decoding, which the browser does apart, put 100 ms between a frame's
// arrival and its pictures (bench.live: camera to picture 200 ms, against 100 ms when the server drew them).
import { bytesOf, decodeRows, floats, queryRows, rgba, rowShape } from "./decode.js";
import { colourIndex64, twoSlope } from "./colour.js";
import { BAR_WIDTH, GAP } from "./layout.js";
import { Writer, colourBar, newCanvas, onCanvas, titled } from "./canvas.js";
import { DrawnMaps } from "./drawn.js";
import { paintTile } from "./pixels.js";

// canvas.fit_to_grid: the input at whole pixels a patch, `side` at least, nearest upwards, smoothed downwards.
function fitted(input, [gh, gw], side) {
  const cell = Math.max(1, Math.ceil(side / Math.max(gh, gw))), width = gw * cell, height = gh * cell;
  const ctx = newCanvas(width, height).getContext("2d");
  ctx.imageSmoothingEnabled = width < input.width; ctx.imageSmoothingQuality = "high";
  ctx.drawImage(input.canvas, 0, 0, width, height);
  return { width, height, pixels: ctx.getImageData(0, 0, width, height).data };
}

export class LiveMaps extends DrawnMaps {
  attach(element) { // ui/live.py's js_on_load: the three places the pictures go
    for (const name of ["heads", "input", "rollout"]) {
      this.parts[name] = { element: element.querySelector(`[data-part="${name}"]`) };
    }
    // a phone turned while the stream is stopped: the last frame's maps wrap to the new width
    new ResizeObserver(() => { if (this.rows && this.headsRoom() !== this.drawnRoom) this.drawHeads(this.rows); })
      .observe(element.querySelector(".live-frame"));
  }

  frame(payload) {
    if (!payload || !payload.rows) return;
    const input = onCanvas(rgba(bytesOf(payload.input.rgb), payload.input));
    const layouts = Object.fromEntries(Object.entries(payload.layouts)
      .map(([k, l]) => [k, { ...l, base: fitted(input, payload.grid, l.tile) }]));
    const shape = rowShape(payload), sent = payload.rows; // one query's rows, not deflated
    this.rows = queryRows(decodeRows(bytesOf(sent.bytes), shape, sent.parts), 0, shape);
    const ro = payload.rollout;
    this.rollout = { ...ro, values: floats(ro.values), base: fitted(input, payload.grid, ro.side) };
    this.data = { ...payload, input: { ...payload.input, image: input }, layouts };
    this.query = payload.query; this.layer = payload.layer; this.style = { ...payload.style };
    this.drawInput(); this.drawHeads(this.rows); this.drawRollout();
  }

  // The frame's width, to which the maps wrap their tiles as Explore's do (layout.fittingColumns): a
  // phone had scrolled the server's layout sideways, 3.5 of 6 columns and the colour bar to 0.1 of 0.196 shown.
  headsRoom() {
    const frame = this.parts.heads && this.parts.heads.element.parentElement;
    return frame && frame.clientWidth > 0 ? frame.clientWidth : Infinity;
  }
  inputFactor() { return this.data.input.scale; }
  show(name, canvas, alt) { // the canvas itself, named for screen readers
    Object.assign(canvas, { id: `live-${name}` });
    canvas.setAttribute("role", "img"); canvas.setAttribute("aria-label", alt);
    this.parts[name].element.replaceChildren(canvas);
  }

  // render.relative_picture: multiples of uniform (the server's values, its top and bar), in a diverging
  // map whose middle colour is uniform (`centre`), coloured and its ticks placed as TwoSlopeNorm does
  drawRollout() {
    const d = this.data, ro = this.rollout, [gh, gw] = d.grid, base = ro.base, writer = new Writer(d.text_px);
    const ratio = ro.values, top = ro.top, table = this.tables[ro.cmap];
    const position = (x) => twoSlope(x, ro.centre, top), index = (x) => colourIndex64(position(x));
    const indexAt = (row, col) => index(ratio[row * gw + col]);
    const map = { gh, gw, top, indexAt, values: () => ratio, valueIndex: index };
    const pixels = new Uint8ClampedArray(base.width * base.height * 4);
    paintTile(pixels, base, map, this.style, table, null);
    const width = Math.max(base.width, BAR_WIDTH); // canvas.titled over the map and its colour bar
    const text = { title: ro.title, label: ro.label, note: ro.note };
    for (const key of Object.keys(text)) text[key] = writer.wrap(text[key], width - GAP);
    const picture = (ctx, y) => {
      this.rolloutCell = { x: 0, y, width: base.width, height: base.height }; // where the map is, for the browser test
      ctx.putImageData(new ImageData(pixels, base.width, base.height), 0, y);
    };
    const bar = (ctx, y) => colourBar(ctx, writer, y, { width, bar: ro.bar, position, table });
    this.show("rollout", titled(writer, width, base.height, text, { picture, bar }), ro.alt);
  }
}
