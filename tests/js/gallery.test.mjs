// ui/js/gallery.js: what the class's gallery says to the teacher and to a student, and the head asked for.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Gallery, answered, headAsked, sentText, waiting } from "../../ui/js/gallery.js";

const gallery = (over = {}) => ({
  question: "Find the background", open: true, drawn: 0, answered: 3,
  pictures: [{ id: "a", approved: true, hidden: false }, { id: "b", approved: false, hidden: false },
    { id: "c", approved: false, hidden: true }], ...over,
});

test("the teacher's counter says how many answered of the class and how many wait for approval", () => {
  assert.equal(answered(gallery(), 30), "3 of 30 students answered: 1 waiting for your approval.");
  const none = gallery({ answered: 0, pictures: [] });
  assert.equal(answered(none, 1), "0 of 1 student answered: 0 waiting for your approval.");
});

test("only pictures neither approved nor hidden wait, in the order they came", () => {
  assert.deepEqual(waiting(gallery()).map((p) => p.id), ["b"]);
  assert.deepEqual(waiting({ answered: 1 }), []); // a student's state names no pictures
});

test("the head is a whole number from 1, anything else the mean of the heads", () => {
  assert.equal(headAsked("3"), 3);
  for (const typed of ["", "0", "-2", "mean", undefined]) assert.equal(headAsked(typed), null, String(typed));
});

test("a student's page says whether its picture is sent and whether the gallery is open", () => {
  assert.match(sentText({ sent: true, open: true }), /^Your picture is sent/);
  assert.equal(sentText({ sent: false, open: true }), "Send a picture that answers the teacher's question.");
  assert.equal(sentText({ sent: false, open: false }), "The teacher has closed the gallery.");
});

test("Show and Spotlight carry the headers a Space's frame lends (the teacher's quota), others none", async () => {
  const posted = [], lent = { "x-ip-token": "the-teachers" };
  const classroom = {
    credentials: () => ({ code: "ABCDEF", key: "k" }), state: null, notice: (said) => assert.fail(said),
    post: async (action, body, read, headers) => { posted.push([body.do, headers]); return { version: 1 }; },
  };
  const gallery = new Gallery(classroom);
  const parent = { postMessage: (message, origin, [port]) => port.postMessage(lent) }; // Gradio shook hands
  const hostname = "teacher.hf.space";
  globalThis.window = { location: { hostname }, parent, MessageChannel, supports_zerogpu_headers: true };
  try {
    await gallery.charged("show", { head: null });
    await gallery.spotlight("p1");
    await gallery.act("approve", { id: "p1" });
  } finally { delete globalThis.window; }
  assert.deepEqual(posted, [["show", lent], ["spotlight", lent], ["approve", {}]]);
});
