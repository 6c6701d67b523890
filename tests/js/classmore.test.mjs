// ui/js/classmore.js: what a teacher's page says of a picture it shows (a More view's, a lesson's): where the
// server drew it, and its words, cut as the registry keeps them (ui.classroom.ALT_CHARS).
import assert from "node:assert/strict";
import { test } from "node:test";

import { altOf, pictureAddress } from "../../ui/js/classmore.js";

test("a picture's address is the server's path of its file, decoded, without the host", () => {
  const src = "http://192.168.1.20:7860/gradio_api/file=/tmp/gradio/vit-explorer/0a1b/lesson%20norms.png";
  assert.equal(pictureAddress({ src }), "/gradio_api/file=/tmp/gradio/vit-explorer/0a1b/lesson norms.png");
});

test("a picture's words are its alt text, at most 600 characters, and none without a picture", () => {
  assert.equal(altOf({ alt: "Attention rollout" }), "Attention rollout");
  assert.equal(altOf({ alt: "x".repeat(5000) }).length, 600);
  assert.equal(altOf({}), "");
  assert.equal(altOf(null), "");
});
