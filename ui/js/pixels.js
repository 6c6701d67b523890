// A map's tile, pixel by pixel, as explorer/canvas.py draws it with PIL: resampled with PIL's bilinear
// weights where smooth, coloured (colour.js), laid over the photo, and the query patch outlined.
import { colourIndex, f32, overlaid } from "./colour.js";

const MARK = [0, 200, 255]; // canvas's outline of the query patch

// PIL's bilinear resampling weights, one output pixel's (upscaling): its first input and weights.
export function pilCoefficients(inSize, outSize) {
  const scale = inSize / outSize, support = Math.max(scale, 1), ss = 1 / Math.max(scale, 1), out = [];
  for (let xx = 0; xx < outSize; xx++) {
    const centre = (xx + 0.5) * scale;
    const xmin = Math.max(Math.trunc(centre - support + 0.5), 0);
    const count = Math.min(Math.trunc(centre + support + 0.5), inSize) - xmin;
    const k = [];
    let total = 0;
    for (let x = 0; x < count; x++) {
      const w = Math.max(0, 1 - Math.abs((x + xmin - centre + 0.5) * ss));
      k.push(w);
      total += w;
    }
    out.push({ xmin, k: k.map((w) => (total !== 0 ? w / total : w)) });
  }
  return out;
}

// PIL's resize of a mode "F" image, (gh, gw) -> (height, width): across the rows, then down the columns.
export function bilinear(values, gh, gw, height, width) {
  const cx = pilCoefficients(gw, width), cy = pilCoefficients(gh, height);
  const across = new Float32Array(gh * width);
  for (let y = 0; y < gh; y++) {
    for (let x = 0; x < width; x++) {
      let s = 0;
      const c = cx[x];
      for (let i = 0; i < c.k.length; i++) s += values[y * gw + c.xmin + i] * c.k[i];
      across[y * width + x] = s;
    }
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

// One map's tile into `image` (RGBA, the size of `base`, the photo under it). `map.indexAt(row, col)`
// gives its colour index per patch, `map.values()` its values, which smooth upsampling resamples and
// colours by `map.valueIndex` (by default from 0 to `map.top`); `table` is the colour map's.
export function paintTile(image, base, map, style, table, mark) {
  const { width, height, pixels } = base;
  const cell = height / map.gh, a = f32(Math.min(Math.max(style.opacity, 0), 1)), keep = f32(1 - a);
  const plane = style.smooth ? bilinear(map.values(), map.gh, map.gw, height, width) : null;
  const top = f32(map.top > 0 ? map.top : 1), valueIndex = map.valueIndex || ((v) => colourIndex(f32(v / top)));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const index = plane ? valueIndex(plane[y * width + x]) : map.indexAt(Math.floor(y / cell), Math.floor(x / cell));
      const o = (y * width + x) * 4;
      for (let ch = 0; ch < 3; ch++) {
        const heat = table[index * 3 + ch];
        image[o + ch] = style.raw ? heat : overlaid(pixels[o + ch], heat, a, keep);
      }
      image[o + 3] = 255;
    }
  }
  if (mark) outline(image, width, mark.col * cell, mark.row * cell, cell, cell, 2);
}

// PIL's rectangle(outline=MARK, width=thickness) into RGBA pixels `width` wide.
export function outline(image, width, x0, y0, w, h, thickness) {
  for (let y = y0; y < y0 + h; y++) {
    for (let x = x0; x < x0 + w; x++) {
      const inside = x >= x0 + thickness && x < x0 + w - thickness && y >= y0 + thickness && y < y0 + h - thickness;
      if (inside) continue;
      const o = (y * width + x) * 4;
      image[o] = MARK[0]; image[o + 1] = MARK[1]; image[o + 2] = MARK[2];
    }
  }
}

// The patch grid's lines over the model input (canvas.patch_grid_image): white, one pixel wide, at
// `edge(k)`, where patch k starts in drawn pixels, of a `grid` of [rows, columns].
export function gridLines(pixels, width, height, [gh, gw], edge) {
  const paint = (o) => { pixels.set([255, 255, 255, 255], o); };
  for (let k = 1; k < gw; k++) for (let y = 0, x = edge(k); y < height; y++) paint((y * width + x) * 4);
  for (let k = 1; k < gh; k++) for (let x = 0, y = edge(k); x < width; x++) paint((y * width + x) * 4);
}
