// What a class shares of a page (issue 59, classroom.js): the view its maps show, as the teacher's page sends
// it and a student's compares it, the class's QR code painted from the modules the server computed, the teacher's
// count, and what a student's page says while it shows the teacher's image (the server's texts).

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

// The controls' words of a view's style, in ExploreMaps.setStyle's order.
export function styleArgs(s) { return [s.cmap, s.opacity, s.upsampling, s.display, s.scale]; }

// A student's page while it shows the teacher's image (`texts`: the server's sentences of the teacher's model and
// predictions, ui.class_route.teacher_texts), else none: ui/app.py's CSS hides the student's own controls.
export function paintLent(panel, texts) {
  document.body.classList.toggle("on-teachers-image", Boolean(texts));
  const part = panel && panel.querySelector(".class-lent");
  if (!part) return;
  part.hidden = !texts;
  part.querySelector(".class-model").textContent = texts ? texts.model : "";
  part.querySelector(".class-predictions").textContent = texts ? texts.predictions : "";
}

// The teacher's count of the class (a pushed state), names as the server kept them.
export function counted(state) {
  const names = state.names.join(", "), count = state.students === 1 ? "1 student" : `${state.students} students`;
  return `${count} in class ${state.code}${names ? `: ${names}` : ""}.`;
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
