// A teacher's "More views" view on every following page (issue 59). The teacher's page names the view open and
// where its picture came from (the file the server drew for the teacher, ui.outputs.saved); the class route reads
// that file once and every follower gets the same bytes (POST /class/more, ui/class_route.py), shown in the class
// panel: a follower's own More views tab would run the model again (the rule: one pass a teacher action).

// The More view a page shows, {view: its tab's words, alt, picture: its address}, or null (the accordion closed):
// `views` are ui/explore.py's config `more_views`, each view's tab and its picture's element id, in the tabs' order.
export function moreShown(views) {
  for (const { tab, id } of views || []) {
    const img = document.querySelector(`#${id} img`);
    if (img && img.getAttribute("src") && img.offsetParent !== null) {
      return { view: tab, alt: img.alt || "", picture: decodeURIComponent(new URL(img.src).pathname) };
    }
  }
  return null;
}

// Calls `changed` whenever something in the More views accordion changes (a tab picked, a picture drawn, closed).
export function watchMore(changed) {
  const more = document.getElementById("more");
  if (more) new MutationObserver(changed).observe(more, { subtree: true, childList: true, attributes: true });
}

// A student's page: the teacher's More view in the class panel (CLASS_PANEL's .class-more), its words as text.
export class LentMore {
  constructor(classroom) { this.classroom = classroom; this.shown = null; this.url = null; }

  async show(more) { // the teacher's view's More view, or null: none
    const room = this.classroom, part = room.panel && room.panel.querySelector(".class-more");
    if (!part || (more ? more.picture : null) === this.shown) return;
    this.shown = more ? more.picture : null;
    if (!more || !room.member || room.member.key) { part.hidden = true; this.free(); return; }
    let blob;
    try { blob = await room.post("more", room.credentials(), (reply) => reply.blob()); } catch (error) {
      this.shown = null; room.notice(error.message); return;
    }
    if (this.shown !== more.picture) return; // the teacher opened another meanwhile
    this.free(); this.url = URL.createObjectURL(blob);
    const img = part.querySelector("img");
    img.src = this.url; img.alt = more.alt;
    part.querySelector(".class-more-view").textContent = `The teacher's More view: ${more.view}.`;
    part.hidden = false;
  }
  free() { if (this.url) URL.revokeObjectURL(this.url); this.url = null; }
}
