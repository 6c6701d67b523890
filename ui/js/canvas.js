// Drawing on a canvas as explorer/canvas.py draws with PIL: text (measured, wrapped, written from
// their top as PIL writes a line), a picture made of its parts (canvas.titled) and colour bars.
import { BAR_PX, GAP, barMarks, roundHalfEven } from "./layout.js";
import { barIndex } from "./colour.js";

const BACKGROUND = "#ffffff", TEXT = "rgb(30,30,30)";
const ASCENT = 0.928; // DejaVu Sans's ascender in em: PIL writes a line from its top
const FONT = '"DejaVu Sans", Verdana, sans-serif';

export function newCanvas(width, height) {
  return Object.assign(document.createElement("canvas"), { width, height });
}

// Pixels ({width, height, pixels}) on a canvas of their own, to be drawn scaled from it.
export function onCanvas({ width, height, pixels }) {
  const canvas = newCanvas(width, height);
  canvas.getContext("2d").putImageData(new ImageData(pixels, width, height), 0, 0);
  return { width, height, canvas };
}

// Words at `px` pixels a line's height (explorer/canvas.py's text helpers).
export class Writer {
  constructor(px) {
    this.px = px;
    this.line = px + GAP;
    this.ctx = newCanvas(1, 1).getContext("2d");
    this.ctx.font = `${px}px ${FONT}`;
  }

  width(text) { return this.ctx.measureText(text).width; }

  wrap(text, width) { // canvas.wrap: whole words a line, paragraphs kept
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

  lines(ctx, lines, y) { lines.forEach((line, i) => this.put(ctx, GAP / 2, y + i * this.line + 1, line)); }
}

// canvas.titled: a picture `body` px high (`paint.picture(ctx, y)` draws it) under its title, over its
// colour bar (`paint.bar(ctx, y)`), the bar's label and a note (`text`, wrapped lines), GAP apart.
export function titled(writer, width, body, text, paint) {
  const block = (lines) => lines.length * writer.line + GAP / 2, barHeight = BAR_PX + 4 + writer.line;
  const { title, label, note } = text;
  const height = block(title) + GAP + body + GAP + barHeight + GAP + block(label) + GAP + block(note);
  const canvas = newCanvas(width, height), ctx = canvas.getContext("2d");
  ctx.fillStyle = BACKGROUND; ctx.fillRect(0, 0, width, height);
  let y = 0;
  writer.lines(ctx, title, y); y += block(title) + GAP;
  paint.picture(ctx, y); y += body + GAP; // a mosaic's `body` ends with a GAP of its own, as canvas.mosaic's
  paint.bar(ctx, y); y += barHeight + GAP;
  writer.lines(ctx, label, y); y += block(label) + GAP;
  writer.lines(ctx, note, y);
  return canvas;
}

// canvas.colour_bar in `table`'s colours at height y0, `width` wide: the server's text for it (`bar`,
// canvas.bar_text: its ends' numbers, which set its margins, and its ticks), each tick at `position`
// (its value's place in the colours, 0 to 1: the colour map's norm the pixels are coloured by).
export function colourBar(ctx, writer, y0, { width, bar, position, table }) {
  const [low, high] = bar.ends;
  const pad = GAP + Math.trunc(Math.trunc(writer.width(low)) / 2);
  const length = Math.max(width - pad - Math.trunc(Math.trunc(writer.width(high)) / 2) - GAP, 2);
  const strip = ctx.createImageData(length, BAR_PX);
  for (let x = 0; x < length; x++) {
    const index = barIndex(x, length);
    for (let y = 0; y < BAR_PX; y++) {
      const o = (y * length + x) * 4;
      strip.data.set([table[index * 3], table[index * 3 + 1], table[index * 3 + 2], 255], o);
    }
  }
  ctx.putImageData(strip, pad, y0);
  ctx.fillStyle = TEXT;
  for (const { at, text } of barMarks(bar.ticks, position, length, (text) => writer.width(text))) {
    ctx.fillRect(pad + at, y0 + BAR_PX, 1, 4);
    writer.put(ctx, pad + at - writer.width(text) / 2, y0 + BAR_PX + 4, text);
  }
}
