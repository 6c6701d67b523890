// What a class shares of a page (issue 59, classroom.js): the view its maps show, as the teacher's page sends
// it and a student's compares it, the class's QR code painted from the modules the server computed, the teacher's
// count, and what a student's page says while it shows the teacher's image (the server's texts).

// What a page's maps show, as the teacher sends it (ui.classroom.checked_view; the layer and head 1-based), with the
// "More views" view open (`more`, classmore.moreShown) and the lesson (`lesson`, classlessons.lessonShown).
export function viewOf(maps, model = "", more = null, lesson = null) {
  const s = maps.style, head = maps.pointed === undefined ? null : maps.pointed;
  const style = { cmap: s.cmap, opacity: s.opacity, upsampling: s.smooth ? "smooth" : "nearest",
    display: s.raw ? "raw" : "overlay", scale: s.scale };
  const handle = maps.data ? maps.data.handle : null;
  return { handle, model, layer: maps.layer, query: maps.query, style, head, more, lesson };
}
// Whether a page's maps show `view` (the model aside: the handle names it; the More view is the class panel's).
export function shows(maps, view) {
  const mine = viewOf(maps), keys = ["handle", "layer", "query", "style", "head"];
  return keys.every((k) => JSON.stringify(mine[k]) === JSON.stringify(view[k] === undefined ? null : view[k]));
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

// The class's panel (ui/explore.py, CLASS_PANEL), its words as text, never HTML: the teacher's code, QR code and join
// address; the teacher's count and Freeze; a student's banner and the way back to the teacher's view.
export function paintCode(panel, member) {
  const part = panel.querySelector(".class-teacher"), link = part.querySelector(".class-join");
  part.hidden = false; part.querySelector("#class-code").textContent = member.code;
  link.textContent = link.href = member.join;
  part.querySelector(".class-reach").textContent = member.reach || ""; // why the room's devices cannot open it
  paintQr(part.querySelector("#class-qr"), member.qr);
}
export function paintTeacher(panel, state) {
  panel.querySelector(".class-count").textContent = counted(state);
  panel.querySelector("#class-freeze").textContent = state.frozen ? "Release" : "Freeze";
}
export function paintStudent(panel, member, state, away) {
  const part = panel.querySelector(".class-student"), s = state || {}; part.hidden = false;
  const frozen = s.frozen ? " The teacher has frozen the screens for now." : "";
  part.querySelector(".class-banner").textContent = away
    ? "You are exploring on your own: the teacher's screen has moved on without you."
    : `You follow the teacher's screen in class ${s.code || ""} as ${member.name}.${frozen}`;
  part.querySelector("#class-follow").hidden = !away;
}
