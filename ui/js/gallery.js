// Class mode's gallery (issue 59, "Show me yours"; ui/class_gallery.py): the teacher types a question and opens the
// gallery, each student sends a picture (an upload, through Gradio's upload route and its limits, or the picture
// their page shows), the teacher approves each, shows them all (one batched pass on the server, which draws the
// tiles), hides one, spotlights one (the class's view moves to it) and exports the handout. Every word is text.

import { zeroHeaders } from "./zeroheaders.js";

// The counter the teacher sees (pushed on the class's stream): how many answered of how many students.
export function answered(gallery, students) {
  const of = students === 1 ? "1 student" : `${students} students`;
  return `${gallery.answered} of ${of} answered: ${waiting(gallery).length} waiting for your approval.`;
}
// The pictures the teacher has not approved yet, in the order they came.
export function waiting(gallery) { return (gallery.pictures || []).filter((p) => !p.approved && !p.hidden); }
// The head the teacher typed, 1-based, or null for the mean of the heads (an empty or unusable field).
export function headAsked(typed) {
  const head = Number.parseInt(typed, 10);
  return Number.isInteger(head) && head >= 1 ? head : null;
}
// What a student's page says of its own answer.
export function sentText(gallery) {
  if (gallery.sent) return "Your picture is sent: the teacher shows it once approved. You may send another instead.";
  return gallery.open ? "Send a picture that answers the teacher's question." : "The teacher has closed the gallery.";
}

export class Gallery {
  constructor(classroom) {
    this.classroom = classroom; this.part = null; this.drawn = ""; // the tiles shown: the gallery's serial, version
    this.spotlit = null; // the class's version once a spotlight is led: the teacher's page follows it when pushed
    this.urls = new Map(); // a waiting picture's id: its object URL, fetched once (a new picture has a new id)
    classroom.onPushed = (state) => this.pushed(state);
  }
  attach(element) { // ui/explore.py's class panel: its #class-gallery part
    this.part = element.querySelector("#class-gallery");
    const on = (name, run) => this.part.querySelector(`.cg-${name}`).addEventListener("click", run);
    on("ask", () => this.act("ask", { question: this.field("question").value, names: this.field("names").checked }));
    on("close", () => this.act("close"));
    on("show", () => this.charged("show", { head: headAsked(this.field("head").value) }));
    on("export", () => this.exported());
    on("send-file", () => this.sendFile());
    on("send-view", () => this.sendView());
  }
  field(name) { return this.part.querySelector(`.cg-${name}`); }
  async act(action, body = {}, headers = {}) { // a gallery action; a refusal is the server's sentence
    const asked = { ...this.classroom.credentials(), do: action, ...body };
    try { return await this.classroom.post("gallery", asked, undefined, headers); }
    catch (error) { this.classroom.notice(error.message); return null; }
  }
  // An action that runs the model on the teacher's behalf: on ZeroGPU its GPU call is charged to the teacher's quota
  // by the headers huggingface.co lends the Space's page (zeroheaders.js), as Gradio's own events are.
  async charged(action, body) { return this.act(action, body, await zeroHeaders()); }
  async fetched(action, body) { // a picture or the handout: bytes, not JSON
    const c = this.classroom, reply = await fetch(c.address(`${c.route}/gallery`), {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ...c.credentials(), do: action, ...body }),
    });
    if (!reply.ok) throw new Error(await reply.text());
    return reply.blob();
  }

  pushed(state) { // every state of the class: the gallery's part as the teacher's or a student's
    if (!this.part) return;
    this.followSpotlit(state);
    const g = state.gallery, teacher = state.role === "teacher";
    this.part.hidden = !teacher && !g; // a student's page shows it once the teacher asks
    this.field("teacher").hidden = !teacher;
    this.field("student").hidden = teacher || !g;
    this.field("asked").textContent = g ? `The teacher asks: ${g.question}` : "";
    if (!g) { this.clear(); return; }
    if (teacher) this.showTeacher(g, state.students); else this.field("sent").textContent = sentText(g);
    if (`${g.serial}:${g.drawn}` !== this.drawn) this.tiles(g, teacher);
  }
  showTeacher(g, students) {
    this.field("count").textContent = answered(g, students);
    const list = this.field("waiting"), items = [];
    for (const picture of waiting(g)) {
      const item = document.createElement("li"), img = document.createElement("img");
      img.alt = "A student's picture, waiting for your approval"; this.load(img, picture.id);
      item.append(img);
      if (picture.name) item.append(` ${picture.name} `); // text, never HTML
      item.append(this.button("Approve", () => this.act("approve", { id: picture.id })));
      item.append(this.button("Hide", () => this.act("hide", { id: picture.id })));
      items.push(item);
    }
    list.replaceChildren(...items);
  }
  async load(img, id) {
    if (!this.urls.has(id)) this.urls.set(id, this.fetched("picture", { id }).then((b) => URL.createObjectURL(b)));
    try { img.src = await this.urls.get(id); } catch (error) {
      this.urls.delete(id); this.classroom.notice(error.message);
    }
  }
  button(words, run) {
    const b = document.createElement("button"); b.type = "button"; b.textContent = words;
    b.addEventListener("click", run); return b;
  }
  async tiles(g, teacher) { // the tiles the server drew for the last show, as every page sees them
    this.drawn = `${g.serial}:${g.drawn}`;
    if (g.drawn === 0) { this.clear(); return; }
    const drawn = await this.act("tiles");
    if (!drawn) return;
    this.field("title").textContent = `${drawn.question} — ${drawn.title}`;
    const bar = this.field("bar");
    bar.src = `data:image/png;base64,${drawn.bar}`; bar.hidden = false;
    this.field("tiles").replaceChildren(...drawn.tiles.map((tile) => this.tile(tile, teacher)));
  }
  clear() {
    this.field("tiles").replaceChildren(); this.field("title").textContent = ""; this.field("bar").hidden = true;
  }
  tile(tile, teacher) {
    const figure = document.createElement("figure"), img = document.createElement("img");
    img.src = `data:image/png;base64,${tile.png}`;
    img.alt = `A student's picture with where the model looks over it; the model's top prediction: ${tile.caption}`;
    figure.append(img);
    if (tile.name) {
      const name = document.createElement("figcaption"); name.textContent = tile.name; figure.append(name);
    }
    if (teacher) {
      figure.append(this.button("Hide", () => this.act("hide", { id: tile.id })));
      figure.append(this.button("Spotlight", () => this.spotlight(tile.id)));
    }
    return figure;
  }
  async spotlight(id) { // the class's view moves to this picture's analysis; the teacher's page shows it too
    const led = await this.charged("spotlight", { id });
    if (led) { this.spotlit = led.version; this.followSpotlit(this.classroom.state); }
  }
  followSpotlit(state) { // once the state that holds the spotlight is pushed (before or after the reply came)
    if (this.spotlit === null || !state || state.version < this.spotlit) return;
    this.spotlit = null; this.classroom.follow();
  }
  async exported() { // the handout, a PNG the server drew, as a download
    try {
      const url = URL.createObjectURL(await this.fetched("export", {})), a = document.createElement("a");
      a.href = url; a.download = "class-gallery.png"; a.click();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (error) { this.classroom.notice(error.message); }
  }

  // ---- a student ----
  async sendFile() { // through Gradio's upload route: its size limits and the upload folder's budget
    const file = this.field("file").files[0];
    if (!file) { this.classroom.notice("Choose a picture to send first."); return; }
    const form = new FormData(); form.append("files", file);
    try {
      const reply = await fetch(this.classroom.address("/gradio_api/upload"), { method: "POST", body: form });
      if (!reply.ok) throw new Error(await reply.text());
      const [path] = await reply.json();
      if (await this.act("send", { path })) this.field("file").value = "";
    } catch (error) { this.classroom.notice(error.message); }
  }
  async sendView() { // the image the page shows now (its own, or the teacher's), by its analysis's handle
    const data = this.classroom.maps.data;
    if (!data) { this.classroom.notice("Your page shows no picture yet: upload one or pick an example."); return; }
    await this.act("send", { handle: data.handle });
  }
}
