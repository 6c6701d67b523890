// ui/js/classmaps.js: a student's page shows the teacher's word maps (lesson 4), a picture a map, each read from the
// class once as it changes, by its index; a map the teacher no longer shows is hidden, and a teacher's page reads none.
import assert from "node:assert/strict";
import { test } from "node:test";

import { LentMaps } from "../../ui/js/classmaps.js";

// Just enough of the page for LentMaps: elements with children, `hidden`, and the <img> of a figure.
function element(tag) {
  return {
    tag, hidden: false, children: [], src: "", alt: "",
    appendChild(child) { this.children.push(child); return child; },
    append(child) { this.children.push(child); },
    querySelector(selector) { return this.children.find((child) => child.tag === selector) || null; },
  };
}
globalThis.document = { createElement: element };

function room(member) { // a class's page: what it asked the class route for
  const asked = [];
  return {
    asked, member, notice: (message) => assert.fail(message),
    credentials: () => ({ code: member.code, token: member.token }),
    post: async (action, body) => { asked.push([action, body]); return new Blob([String(body.map)]); },
  };
}
const settled = () => new Promise((done) => setImmediate(done));
const map = (alt, picture) => ({ alt, picture });

test("each map is read once by its index, again only when it changes, and hidden when no longer shown", async () => {
  const student = room({ code: "ABCDEF", token: "t" }), part = element("div"), maps = new LentMaps(student, () => part);
  maps.show([map("a cat", "id0"), map("a dog", "id1")]);
  await settled();
  assert.deepEqual(student.asked, [
    ["lesson", { code: "ABCDEF", token: "t", map: 0 }], ["lesson", { code: "ABCDEF", token: "t", map: 1 }],
  ]);
  const [first, second] = part.children.map((figure) => figure.querySelector("img"));
  assert.deepEqual([first.alt, second.alt], ["a cat", "a dog"]);
  assert.ok(first.src.startsWith("blob:") && !part.children.some((figure) => figure.hidden));
  maps.show([map("a cat", "id0"), map("a dog", "id1")]); // pushed again, unchanged: nothing read
  maps.show([map("a cat", "id0")]); // fewer words: the second map hidden, the first not read again
  await settled();
  assert.equal(student.asked.length, 2);
  assert.deepEqual(part.children.map((figure) => figure.hidden), [false, true]);
  maps.show([map("a teapot", "id7")]);
  await settled();
  assert.deepEqual(student.asked.at(-1), ["lesson", { code: "ABCDEF", token: "t", map: 0 }]);
  assert.equal(first.alt, "a teapot");
  maps.show(null); // the teacher left lesson 4
  assert.ok(part.children.every((figure) => figure.hidden));
});

test("a teacher's page reads none of its own maps back", async () => {
  const teacher = room({ code: "ABCDEF", key: "k" }), part = element("div");
  new LentMaps(teacher, () => part).show([map("a cat", "id0")]);
  await settled();
  assert.deepEqual(teacher.asked, []);
  assert.ok(part.children.every((figure) => figure.hidden));
});
