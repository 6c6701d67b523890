// A teacher's "More views" view, and the picture of a teacher's lesson, on every following page (issue 59). The
// teacher's page names the view open and where its picture came from (the file the server drew for the teacher,
// ui.outputs.saved); the class route reads that file once and every follower gets the same bytes (POST /class/more
// or /class/lesson, ui/class_route.py), shown in the class's panel: a follower's own More views tab, or lesson
// button, would run the model again (the rule: one pass a teacher action, whatever the class's size).

// Where a picture came from, as the teacher's page sends it (the server finds its file by its name's parts).
export const pictureAddress = (img) => decodeURIComponent(new URL(img.src).pathname);
// A picture's alt text as the view carries it: ui.classroom.ALT_CHARS at most (a class's request is 8 KiB at most).
export const altOf = (img) => (img ? img.alt || "" : "").slice(0, 600);

// The first of the pictures by element id `ids` that a page shows (its <img> drawn and in sight), or null.
export function shownPicture(ids) {
  return ids.map((id) => document.querySelector(`#${id} img`))
    .find((img) => img && img.getAttribute("src") && img.offsetParent !== null) || null;
}

// The More view a page shows, {view: its tab's words, alt, picture: its address}, or null (the accordion closed):
// `views` are ui/explore.py's config `more_views`, each view's tab and its picture's element id, in the tabs' order.
export function moreShown(views) {
  for (const { tab, id } of views || []) {
    const img = shownPicture([id]);
    if (img) return { view: tab, alt: altOf(img), picture: pictureAddress(img) };
  }
  return null;
}

// Calls `changed` whenever the page changes (a tab picked, a picture drawn, the accordion closed): the teacher's
// page sends its view again if it changed (classroom.js, `send`, at most every 100 ms).
export function watchPage(changed) {
  const page = document.querySelector(".gradio-container") || document.body;
  new MutationObserver(changed).observe(page, { subtree: true, childList: true, attributes: true,
    attributeFilter: ["src", "aria-selected", "class", "style", "hidden"] });
}

// A student's page: a picture of the teacher's (its words as text, in the part's figcaption where it has one) in the
// part `find()` gives, read by `action` (its request's credentials and `asked`: which of the lesson's word maps).
export class LentPicture {
  constructor(classroom, action, find, said, asked = {}) {
    this.classroom = classroom; this.action = action; this.find = find; this.said = said; this.asked = asked;
    this.shown = null; this.url = null;
  }

  async show(shown) { // {view, alt, picture: its id, or "" for none} of the teacher's view, or null: none
    const room = this.classroom, part = this.find(), key = shown ? JSON.stringify(shown) : null;
    if (!part || key === this.shown) return;
    this.shown = key;
    if (!shown || !room.member || room.member.key) { part.hidden = true; this.free(); return; }
    const caption = part.querySelector("figcaption"), img = part.querySelector("img");
    if (caption) caption.textContent = this.said.replace("{view}", shown.view);
    if (!shown.picture) { img.hidden = true; part.hidden = false; return; }
    let blob;
    const asked = { ...room.credentials(), ...this.asked };
    try { blob = await room.post(this.action, asked, (reply) => reply.blob()); } catch (error) {
      this.shown = null; room.notice(error.message); return;
    }
    if (this.shown !== key) return; // the teacher showed another meanwhile
    this.free(); this.url = URL.createObjectURL(blob);
    img.src = this.url; img.alt = shown.alt; img.hidden = false; part.hidden = false;
  }
  free() { if (this.url) URL.revokeObjectURL(this.url); this.url = null; }
}
