// The pictures of one query that Explore and Live both draw, on canvases, as explorer/render.py draws
// its PNGs step for step: the model input with its patch grid (canvas.patch_grid_image) and the head
// maps of a layer (render.head_grid). Explore's controller (explore.js) and Live's (live.js) extend it
// with where their numbers come from and where a picture is shown (`show`, `inputFactor`, `headsRoom`).
import { BAR_WIDTH, GAP, captionLines, fittingColumns, mosaic } from "./layout.js";
import { Writer, colourBar, newCanvas, titled } from "./canvas.js";
import { gridLines, outline, paintTile } from "./pixels.js";
import { colourTables } from "./colour.js";
import { levelValues } from "./decode.js";

const POINTED_PX = 4; // the outline of the head pointed at: wider than the query patch's (3)

export class DrawnMaps {
  constructor(config) {
    this.tables = colourTables(config.colour_tables);
    this.data = null; this.query = null; this.layer = 1; this.wrapped = null;
    this.pointed = null; // the head pointed at, 1-based (pointing.js: a tile's caption clicked), or none
    this.style = { cmap: "inferno", opacity: 0.6, smooth: false, raw: false, scale: "layer" };
    this.parts = {}; this.cells = [];
  }

  share() { return null; } // the query as the exports read it: Explore's alone
  headsRoom() { return Infinity; } // the width the head maps must not pass, in CSS px

  defaultToken() { return this.data.text.picks.indexOf(this.data.has_cls ? "cls" : "mean"); }

  label() { // how the text names the query
    const q = this.query, w = this.data.text;
    if (q === null) return w.labels[this.defaultToken()];
    if (q.token !== undefined) return w.labels[q.token];
    return w.patch_label.replace("{row}", q.row + 1).replace("{column}", q.col + 1);
  }

  headsAlt() {
    const w = this.data.text, said = w.heads_alt.replace("{layer}", this.layer).replace("{query}", this.label());
    return said + (this.pointing() ? w.pointed_alt.replace("{head}", this.pointed) : "");
  }
  pointing() { return this.pointed !== null && this.pointed <= this.data.heads; } // a head of this model

  drawInput() { // canvas.patch_grid_image, at this.inputFactor()
    const d = this.data, { image } = d.input, [gh, gw] = d.grid, f = (this.inputScale = this.inputFactor());
    const width = Math.round(image.width * f), height = Math.round(image.height * f);
    const edge = (k) => Math.round(k * d.patch * f); // where patch k starts, in drawn pixels
    const canvas = newCanvas(width, height), ctx = canvas.getContext("2d");
    ctx.imageSmoothingEnabled = !Number.isInteger(f); // whole blocks stay exact; a fitted photo is resampled
    ctx.imageSmoothingQuality = "high";
    ctx.drawImage(image.canvas, 0, 0, width, height);
    const out = ctx.getImageData(0, 0, width, height), q = this.query, patch = q && q.row !== undefined;
    gridLines(out.data, width, height, [gh, gw], edge);
    if (patch) {
      const [x, y] = [edge(q.col), edge(q.row)];
      outline(out.data, width, x, y, edge(q.col + 1) - x, edge(q.row + 1) - y, 3);
    }
    ctx.putImageData(out, 0, 0);
    const alt = patch ? d.text.input_alt_patch : d.text.input_alt;
    this.show("input", canvas, alt.replace("{query}", this.label()));
  }

  drawHeads(rows) { // render.head_grid, from one query's rows (decode.queryRows)
    const d = this.data, scale = this.style.scale, layout = d.layouts[scale === "head" ? "head" : "layer"];
    const writer = new Writer(d.text_px);
    const topOf = (h) => (scale === "head" ? rows.headTops[h] : scale === "fixed" ? 1 : rows.top);
    const tops = Array.from({ length: d.heads }, (_, h) => topOf(h));
    const tiles = tops.map((top, h) => this.headTile(rows, h, top, layout.base, writer));
    // the colour bar: the layer's own on the layer scale, 0 to 1 on the others (text and ticks the server's)
    const bar = scale === "layer" ? { text: rows.bar, high: rows.top } : { text: d.text.unit_bar, high: 1 };
    this.compose(tiles, bar, writer, layout);
  }

  headTile(rows, h, top, base, writer) { // one head's map and its caption
    const d = this.data, style = this.style, [gh, gw] = d.grid, n = gh * gw;
    const cells = (plane) => plane.subarray(h * n, (h + 1) * n);
    // nearest: the shown scale's colour index, sent exactly (explorer/page_maps.part_plane); smooth:
    // the values of the 16-bit levels of the head's own scale, resampled and coloured here
    const shown = style.smooth ? null : cells(rows.parts[style.scale]);
    const map = {
      gh, gw, top,
      indexAt: (r, c) => shown[r * gw + c],
      values: () => levelValues(cells(rows.parts.head), cells(rows.parts.fine), rows.headTops[h]),
    };
    const q = this.query, mark = q && q.row !== undefined ? q : null;
    const pixels = new Uint8ClampedArray(base.width * base.height * 4);
    paintTile(pixels, base, map, style, this.tables[style.cmap], mark);
    const pointed = this.pointing() && this.pointed === h + 1; // outlined, and its caption says so
    if (pointed) outline(pixels, base.width, 0, 0, base.width, base.height, POINTED_PX);
    const lines = captionLines(d.text.caption_parts[style.scale], { // 1-based, as the server names it
      name: [d.text[pointed ? "pointed_name" : "head_name"].replace("{head}", h + 1)],
      top: rows.topLines ? [rows.topLines[h]] : [], prefix: rows.prefixLines[h],
    });
    const width = Math.max(base.width, Math.ceil(Math.max(...lines.map((l) => writer.width(l)))) + 1);
    return { pixels, lines, width, height: base.height + lines.length * writer.line };
  }

  compose(tiles, bar, writer, layout) { // canvas.mosaic, canvas.colour_bar, canvas.titled
    const d = this.data, style = this.style, base = layout.base, room = (this.drawnRoom = this.headsRoom());
    const cols = fittingColumns(tiles, layout.cols, room);
    this.wrapped = cols < layout.cols ? cols : null;
    this.share();
    const grid = mosaic(tiles, cols);
    // canvas.BAR_WIDTH at least, as render.head_grid draws it; as wide as the tiles where they were wrapped
    const barWidth = Math.max(grid.width, this.wrapped ? 0 : BAR_WIDTH), width = Math.max(grid.width, barWidth);
    // the scale's label, the layer's top written where the server left its place (canvas.TOP)
    const label = d.text.scale_labels[style.scale].replace("{top}", bar.text.ends[1]);
    const text = {
      title: writer.wrap(d.text.title.replace("{layer}", this.layer).replace("{query}", this.label()), width - GAP),
      label: writer.wrap(label, barWidth - GAP),
      note: writer.wrap(d.text.note, width - GAP),
    };
    // for the browser tests: the text written, and where each head's map is
    this.painted = { lines: tiles.map((t) => t.lines), label, bar: bar.text };
    this.cells = [];
    const picture = (ctx, y) => grid.places.forEach(({ tile, head, x, y: down }) => {
      ctx.putImageData(new ImageData(tile.pixels, base.width, base.height), x, y + down);
      tile.lines.forEach((line, i) => writer.put(ctx, x, y + down + base.height + i * writer.line + 1, line));
      this.cells.push({ head, x, y: y + down, width: base.width, height: base.height, tall: tile.height });
    });
    const colours = { width: barWidth, bar: bar.text, position: (t) => t / bar.high, table: this.tables[style.cmap] };
    const paintBar = (ctx, y) => colourBar(ctx, writer, y, colours); // ticks placed as Normalize(0, high) places them
    this.show("heads", titled(writer, width, grid.height, text, { picture, bar: paintBar }), this.headsAlt());
  }
}
