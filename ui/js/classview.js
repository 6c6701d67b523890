// What a class shares of a page (issue 59, classroom.js): the view its maps show, as the teacher's page sends
// it and a student's compares it, and the class's QR code painted from the modules the server computed.

// What a page's maps show, as the teacher sends it (ui.classroom.checked_view; the layer 1-based).
export function viewOf(maps, model = "") {
  const s = maps.style;
  const style = { cmap: s.cmap, opacity: s.opacity, upsampling: s.smooth ? "smooth" : "nearest",
    display: s.raw ? "raw" : "overlay", scale: s.scale };
  return { handle: maps.data ? maps.data.handle : null, model, layer: maps.layer, query: maps.query, style };
}
// Whether a page shows `view` (the model aside: the handle names it).
export function shows(maps, view) {
  const mine = viewOf(maps);
  return ["handle", "layer", "query", "style"].every((k) => JSON.stringify(mine[k]) === JSON.stringify(view[k]));
}

// A QR code's modules (ui/class_route.qr_rows: rows of "1" dark and "0") on a canvas, with its quiet zone of 4.
export function paintQr(canvas, rows) {
  if (!rows) { canvas.hidden = true; return; }
  const n = rows.length + 8, cell = Math.max(4, Math.floor(320 / n)), g = canvas.getContext("2d");
  canvas.width = canvas.height = n * cell; canvas.hidden = false;
  g.fillStyle = "#fff"; g.fillRect(0, 0, n * cell, n * cell); g.fillStyle = "#000";
  rows.forEach((row, y) => [...row].forEach((dark, x) => {
    if (dark === "1") g.fillRect((x + 4) * cell, (y + 4) * cell, cell, cell);
  }));
}
