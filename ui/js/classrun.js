// Train together (issue 59): the run the teacher shares from the Train tab (ui/class_run.py), watched by every
// student's page of the class on its Train tab: the run's state in a sentence, its progress, and the Train tab's
// own pictures (loss and accuracy, the probe image's attention), drawn once on the server for the whole class.
// The run's progress comes on the class's event stream (ui/js/classroom.js's, a "run" event when only the run
// moved on); a page asks for a picture again only when the numbers it draws changed. The teacher's page shows
// its own Train tab and, while it leads a class, the "Share this run with the class" button (ui/app.py's CSS).
export const RUN_PICTURES = ["curves", "probe"];

// The pictures a page asks for again (pure): those the run draws from more numbers than the page's picture.
export function stale(shown, run) {
  if (!run) return [];
  return RUN_PICTURES.filter((p) => run.pictures[p] > 0 && run.pictures[p] !== shown[p]);
}

// How far the run is, in percent of its steps (pure).
export function percent(run) {
  return run && run.total > 0 ? (100 * Math.min(run.done, run.total)) / run.total : 0;
}

export class ClassRun {
  constructor(classroom) {
    this.classroom = classroom; this.run = null; this.teacher = false; this.panel = null;
    this.shown = {}; this.urls = {}; this.asking = {}; // per picture: its count drawn, its object URL, a request out
    classroom.onStream = (stream) => this.listen(stream);
  }

  attach(element) { this.panel = element; this.paint(); } // ui/train.py's CLASS_RUN_PANEL, drawn when the tab opens

  listen(stream) {
    stream.addEventListener("state", (event) => this.pushed(JSON.parse(event.data)));
    stream.addEventListener("run", (event) => this.moved(JSON.parse(event.data)));
    stream.addEventListener("end", () => this.ended());
  }
  pushed(state) {
    this.teacher = state.role === "teacher";
    document.body.classList.toggle("class-lead", this.teacher);
    this.moved(state.run);
  }
  moved(run) {
    if (this.teacher) return; // the teacher's own Train tab shows the run
    if (run && !this.run) {
      this.classroom.notice("The teacher shares a training run with the class: open the Train tab to watch it.");
    }
    this.run = run; this.paint(); this.ask();
  }
  ended() {
    document.body.classList.remove("class-lead"); this.teacher = false; this.run = null;
    for (const url of Object.values(this.urls)) URL.revokeObjectURL(url);
    this.shown = {}; this.urls = {}; this.paint();
  }

  ask() { for (const which of stale(this.shown, this.run)) if (!this.asking[which]) this.picture(which); }
  async picture(which) { // drawn once for the class by the server; asked again at the next change if it failed
    const count = this.run.pictures[which], classroom = this.classroom;
    this.asking[which] = true;
    try {
      const reply = await fetch(classroom.address(`${classroom.route}/run`), {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ ...classroom.credentials(), picture: which }),
      });
      if (reply.ok && this.run) {
        if (this.urls[which]) URL.revokeObjectURL(this.urls[which]);
        this.urls[which] = URL.createObjectURL(await reply.blob()); this.shown[which] = count;
      }
    } catch { /* asked again at the run's next change */ } finally { this.asking[which] = false; }
    this.paint(); if (this.run && this.run.pictures[which] !== count) this.ask(); // it moved on meanwhile
  }

  paint() { // words as text only; the pictures' alt texts are the server's, as the Train tab's
    const panel = this.panel, run = this.run;
    if (!panel || !panel.isConnected) return;
    const part = panel.querySelector(".class-run"); part.hidden = !run;
    if (!run) return;
    part.querySelector(".class-run-said").textContent = run.said;
    part.querySelector(".class-run-bar > div").style.width = `${percent(run).toFixed(1)}%`;
    for (const which of RUN_PICTURES) {
      const img = part.querySelector(`.class-run-${which}`);
      img.hidden = !this.urls[which];
      if (this.urls[which] && img.src !== this.urls[which]) img.src = this.urls[which];
      img.alt = run.alt[which] || "";
    }
  }
}
