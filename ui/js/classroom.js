// Class mode (issue 59): the teacher's page sends what it shows (the analysis's handle, the layer, the query, the
// style, the head pointed at, the More view, the lesson) on each change; every student's page follows it, pushed
// on an event stream (ui/class_route.py), reading the teacher's analysis once per image: no model runs for it.
// A student's own click breaks away (a banner, and one click comes back); Freeze keeps them on the teacher's
// view, Eyes on me brings every page back. Names are shown as text only, never as HTML.
import { paintCode, paintLent, paintStudent, paintTeacher, shows, styleArgs, viewOf } from "./classview.js";
import { LentPicture, moreShown, watchPage } from "./classmore.js";
import { ClassLessons, lessonShown } from "./classlessons.js";
import { joinByCode, joinedAddress } from "./classjoin.js";

// The browser's storage: {code, key, join, qr} for the teacher, {code, token, name} for a student.
const KEPT = "vit-class";
const SEND_MS = 100, RETRY_MS = 2000, NOTICE_MS = 15000; // the teacher's view: at most every SEND_MS, the last always

export class Classroom {
  constructor(config, maps) {
    this.route = config.class_route; this.config = config; this.maps = maps; this.member = null; this.state = null;
    this.away = false; this.applying = false; this.sent = ""; this.timer = null; this.panel = null;
    this.lent = null; this.ownStyle = null; this.captioned = ""; // the teacher's analysis a student's page shows
    this.lessons = new ClassLessons(this); // the teacher's lesson (classlessons.js) and More view (classmore.js)
    const more = () => this.panel.querySelector(".class-more");
    this.more = new LentPicture(this, "more", more, "The teacher's More view: {view}.");
    maps.onDrawn = () => this.drawn();
  }

  attach(element) { // ui/explore.py's class panel; the page's address may name a class to join
    this.panel = element;
    const on = (id, run) => element.querySelector(`#${id}`).addEventListener("click", run);
    on("class-follow", () => this.follow());
    on("class-eyes", () => this.command("eyes")); on("class-end", () => this.command("end"));
    on("class-freeze", () => this.command(this.state && this.state.frozen ? "release" : "freeze"));
    joinByCode(element, (code) => this.join(code)); // a typed code
    if (this.attached) return; this.attached = true; // drawn again by Gradio: the page is in its class already
    watchPage(() => this.send()); // the teacher's More view and lesson, as the page changes
    const asked = new URLSearchParams(window.location.search).get("class");
    const kept = JSON.parse(window.localStorage.getItem(KEPT) || "null");
    const same = kept && asked && kept.code === asked.toUpperCase().replace(/[\s-]/g, "");
    if (kept && kept.key && (!asked || same)) { this.member = kept; this.starts(false); this.listen(); } // a reload
    else if (asked) this.join(asked, same ? kept.token : undefined);
  }
  address(path) { // as ui/js/rows.js asks the rows route: under Gradio's root
    const root = (window.gradio_config && window.gradio_config.root) || window.location.href;
    return new URL(path.slice(1), root.replace(/\/?$/, "/"));
  }
  async post(action, body, read = (reply) => reply.json(), headers = {}) { // headers: ZeroGPU's (zeroheaders.js)
    const reply = await fetch(this.address(`${this.route}/${action}`), {
      method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    if (!reply.ok) throw new Error(reply.status < 500 ? await reply.text() : `The server answered ${reply.status}.`);
    return read(reply);
  }
  credentials() { const { code, key, token } = this.member; return key ? { code, key } : { code, token }; }
  keep(member) { this.member = member; window.localStorage.setItem(KEPT, JSON.stringify(member)); this.starts(false); }
  starts(shown) { // Start a class (Explore's, the Lessons tab's) and the code typed: while the page is in no class
    const parts = document.querySelectorAll("#class-start, #lesson-class-start, .class-typed");
    for (const part of parts) part.hidden = !shown;
  }

  // ---- the teacher ----
  async start() {
    const here = new URL(window.location.href); here.search = ""; here.hash = "";
    try {
      const started = await this.post("start", { address: here.href });
      this.keep({ code: started.code, key: started.key, join: started.join, qr: started.qr, reach: started.reach });
      this.showCode(); this.listen(); this.send();
    } catch (error) { this.notice(error.message); }
  }
  send() { // the view now, unless it was sent already; at most every SEND_MS; none before an image or a lesson
    if (!this.member || !this.member.key || this.timer !== null) return;
    this.timer = setTimeout(async () => {
      this.timer = null;
      const model = document.querySelector("#model-picker input"), c = this.config;
      const view = viewOf(this.maps, model ? model.value : "", moreShown(c.more_views), lessonShown(c));
      const said = JSON.stringify(view);
      if (said === this.sent || (!view.handle && !view.lesson && !this.sent)) return; // a lesson left: sent
      this.sent = said;
      try { await this.post("lead", { ...this.credentials(), view }); } catch (error) {
        this.sent = ""; this.notice(error.message);
      }
    }, SEND_MS);
  }
  async command(command) {
    try { await this.post("command", { ...this.credentials(), command }); } catch (e) { this.notice(e.message); }
  }

  // ---- every page: the class's stream ----
  async join(code, token) {
    try {
      const joined = await this.post("join", { code, token });
      this.keep({ code: joined.code, token: joined.token, name: joined.name }); this.listen();
      window.history.replaceState(null, "", joinedAddress(window.location.href, joined.code)); // a reload rejoins
    } catch (error) { this.notice(error.message); }
  }
  async listen() {
    let ticket;
    try { ticket = (await this.post("ticket", this.credentials())).ticket; } catch (error) {
      return this.ended(error.message);
    }
    const stream = new EventSource(this.address(`${this.route}/events?ticket=${encodeURIComponent(ticket)}`));
    stream.addEventListener("state", (event) => this.pushed(JSON.parse(event.data)));
    stream.addEventListener("end", (event) => { stream.close(); this.ended(JSON.parse(event.data).message); });
    if (this.onStream) this.onStream(stream); // the teacher's Train run (ui/js/classrun.js) hears it too
    stream.onerror = () => { // a dropped connection, or the stream's time is up: another ticket, another stream
      stream.close();
      if (this.member) setTimeout(() => this.listen(), RETRY_MS);
    };
  }
  pushed(state) {
    const before = this.state; this.state = state; if (this.onPushed) this.onPushed(state); // ./gallery.js
    if (state.role === "teacher") { // a reloaded teacher's page shows the class's image again
      this.showTeacher(state);
      if (!this.maps.data && state.view && state.view.handle) this.follow(); else this.send();
      return;
    }
    const eyes = before !== null && state.eyes > before.eyes;
    if (eyes) this.notice("Eyes on the teacher's screen: your page shows the teacher's view again.");
    if (!this.away || eyes || state.frozen) this.follow(); else this.showStudent();
  }
  ended(message) {
    const lent = this.lent !== null;
    this.member = null; this.state = null; window.localStorage.removeItem(KEPT); this.starts(true);
    for (const p of this.panel.querySelectorAll(".class-teacher, .class-student, #class-gallery")) p.hidden = true;
    this.more.show(null); this.lessons.show(null); this.lessons.code(null);
    this.notice(message);
    if (lent) this.leave();
  }
  async leave() { // the class is over: the student's own analysis (the heads' own value, or none) and style
    const own = this.maps.parts.heads && this.maps.parts.heads.props.value;
    this.applying = true;
    try { await this.maps.load(own && own.handle ? own : null); } finally { this.applying = false; }
    this.lent = null; this.mark(); this.maps.showSlider(this.maps.layer); this.caption();
  }

  // ---- a student ----
  async follow() { // the teacher's view, its analysis read once per image
    this.away = false;
    const view = this.state && this.state.view;
    if (view) this.lessons.show(view.lesson); // the teacher's lesson, on the Lessons tab
    if (!view || !view.handle) { this.showStudent(); return; }
    if (!this.maps.data || this.maps.data.handle !== view.handle) {
      try {
        const analysis = await this.post("analysis", this.credentials());
        if ((this.state.view || {}).handle !== view.handle) return; // the teacher moved on meanwhile
        this.applying = true; const student = !this.member.key; // a reloaded teacher's page is the class's own
        if (student && this.ownStyle === null) this.ownStyle = viewOf(this.maps).style; // given back at the end
        await this.maps.load(analysis); if (student) this.lent = view.handle;
      } catch (error) { this.notice(error.message); return; } finally { this.applying = false; }
    }
    this.apply(this.state.view);
  }
  apply(view) {
    const maps = this.maps;
    if (!maps.data || maps.data.handle !== view.handle) return; this.applying = true;
    try {
      maps.stop();
      maps.query = view.query; maps.layer = Math.min(Math.max(view.layer, 1), maps.data.depth); maps.share();
      maps.pointed = view.head === undefined ? null : view.head; // a head past this model's points at none
      maps.setStyle(...styleArgs(view.style)); // draws
      maps.showSlider(maps.layer);
    } finally { this.applying = false; }
    this.showStudent(); this.mark(); this.caption(); this.more.show(view.more);
  }
  caption() { // the query's caption and picker (Gradio's) as the page's maps show it, once a change
    const input = this.maps.parts.input, d = this.maps.data, said = JSON.stringify([d && d.handle, this.maps.query]);
    if (input && said !== this.captioned) { this.captioned = said; input.events.query(); }
  }
  mark() { // a student's page on the teacher's image says the teacher's model and predictions, not its own
    const d = this.maps.data, lent = Boolean(this.member && !this.member.key && d && d.handle === this.lent);
    paintLent(this.panel, lent && d.teacher);
    if (lent || this.ownStyle === null) return;
    const own = this.ownStyle; this.ownStyle = null; this.applying = true;
    try { this.maps.setStyle(...styleArgs(own)); } finally { this.applying = false; }
  }
  drawn() { // every drawing of the maps: the teacher's is sent; a student's own breaks away (or, frozen, snaps back)
    if (this.applying || !this.member) return;
    if (this.member.key) { this.send(); return; }
    this.mark();
    const view = this.state && this.state.view;
    if (!view || !view.handle || this.away || shows(this.maps, view)) return;
    if (this.state.frozen) {
      this.notice("The teacher has frozen the class's screens: your page follows the teacher's view.");
      setTimeout(() => this.follow(), 0);
      return;
    }
    this.away = true; this.captioned = ""; this.showStudent(); // Gradio's caption is the student's click's
  }

  // ---- the panel (ui/explore.py, CLASS_PANEL): words as text, never HTML ----
  notice(text) { // for NOTICE_MS, over the page
    const notice = this.panel && this.panel.querySelector(".class-notice");
    if (!notice) return; notice.textContent = text; clearTimeout(this.noticeTimer);
    this.noticeTimer = setTimeout(() => { notice.textContent = ""; }, NOTICE_MS);
  }
  showCode() { paintCode(this.panel, this.member); this.lessons.code(this.member); }
  showTeacher(state) { // a reloaded teacher's page paints the code again
    if (!this.panel.querySelector("#class-code").textContent) this.showCode();
    paintTeacher(this.panel, state);
  }
  showStudent() { if (this.member && !this.member.key) paintStudent(this.panel, this.member, this.state, this.away); }
}
