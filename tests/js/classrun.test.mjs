// ui/js/classrun.js: the teacher's Train run on a student's page (issue 59): a picture is asked for again only
// when the numbers it draws changed, the run's words are the server's, as text, and the teacher's page shows none.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ClassRun, percent, stale } from "../../ui/js/classrun.js";

const run = (over = {}) => ({
  version: 1, state: "running", said: "The teacher's run is training: epoch 1 of 3, step 2 of 10.",
  done: 2, total: 30, pictures: { curves: 3, probe: 1 }, alt: { curves: "Training loss", probe: "CLS" }, ...over,
});

test("a page asks again only for the pictures whose numbers changed, and none before there are any", () => {
  assert.deepEqual(stale({}, run()), ["curves", "probe"]);
  assert.deepEqual(stale({ curves: 3, probe: 1 }, run()), []);
  assert.deepEqual(stale({ curves: 3, probe: 1 }, run({ pictures: { curves: 4, probe: 1 } })), ["curves"]);
  assert.deepEqual(stale({}, run({ pictures: { curves: 0, probe: 0 } })), []);
  assert.deepEqual(stale({}, null), []);
});

test("the progress is the share of the run's steps done, never past the whole", () => {
  assert.equal(percent(run()), (100 * 2) / 30);
  assert.equal(percent(run({ done: 40 })), 100);
  assert.equal(percent(run({ total: 0 })), 0);
  assert.equal(percent(null), 0);
});

// A stand-in of the page: the panel's parts (ui/train.py's CLASS_RUN_PANEL), the body, and the class's stream.
function page() {
  const part = (extra = {}) => ({ hidden: true, textContent: "", style: {}, src: "", alt: "", ...extra });
  const parts = { ".class-run": part(), ".class-run-said": part(), ".class-run-bar > div": part(),
    ".class-run-curves": part(), ".class-run-probe": part() };
  const panel = { isConnected: true, querySelector: (s) => (s === ".class-run" ? root : parts[s]) };
  const root = { ...parts[".class-run"], querySelector: (s) => parts[s] };
  parts[".class-run"] = root;
  const classes = new Set();
  globalThis.document = { body: { classList: { toggle: (c, on) => (on ? classes.add(c) : classes.delete(c)),
    remove: (c) => classes.delete(c) } } };
  const notices = [], asked = [];
  const classroom = { route: "/class", notice: (t) => notices.push(t), address: (p) => `http://x${p}`,
    credentials: () => ({ code: "ACDEFG", token: "t" }) };
  globalThis.fetch = async (url, init) => {
    asked.push([url, JSON.parse(init.body)]);
    return { ok: true, blob: async () => new Blob(["png"], { type: "image/png" }) };
  };
  const listeners = {};
  const stream = { addEventListener: (name, fn) => { listeners[name] = fn; } };
  const push = (name, data) => listeners[name]({ data: JSON.stringify(data) });
  return { root, parts, panel, classes, notices, asked, classroom, stream, push };
}

test("a student's page shows the teacher's run in the server's words and its pictures, asked for once", async () => {
  const p = page(), classRun = new ClassRun(p.classroom);
  p.classroom.onStream(p.stream); classRun.attach(p.panel);
  assert.equal(p.root.hidden, true);
  p.push("state", { role: "student", run: null });
  assert.equal(p.root.hidden, true);
  p.push("run", run());
  assert.equal(p.root.hidden, false);
  assert.equal(p.parts[".class-run-said"].textContent, run().said);
  assert.equal(p.parts[".class-run-bar > div"].style.width, "6.7%");
  assert.deepEqual(p.notices, ["The teacher shares a training run with the class: open the Train tab to watch it."]);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(p.asked.map(([url, body]) => [url, body.picture, body.token]),
    [["http://x/class/run", "curves", "t"], ["http://x/class/run", "probe", "t"]]);
  assert.ok(p.parts[".class-run-curves"].src.startsWith("blob:") && !p.parts[".class-run-curves"].hidden);
  assert.equal(p.parts[".class-run-probe"].alt, "CLS");
  p.push("run", run({ version: 2, done: 3, said: "step 3" })); // the same numbers drawn: no picture asked
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(p.asked.length, 2);
  assert.equal(p.notices.length, 1);
  p.push("end", {});
  assert.equal(p.root.hidden, true);
});

test("the teacher's page shows its own Train tab, and the share button while it leads", () => {
  const p = page(), classRun = new ClassRun(p.classroom);
  p.classroom.onStream(p.stream); classRun.attach(p.panel);
  p.push("state", { role: "teacher", run: run() });
  assert.ok(p.classes.has("class-lead"));
  assert.equal(p.root.hidden, true);
  assert.equal(p.asked.length, 0);
  p.push("end", {});
  assert.ok(!p.classes.has("class-lead"));
});
