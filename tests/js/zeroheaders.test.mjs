// ui/js/zeroheaders.js: the teacher's page asks huggingface.co, which frames a Space's page, for the ZeroGPU headers
// (the X-IP-Token) as Gradio's page does, so the class's GPU calls are charged to the teacher; elsewhere no headers,
// and a parent that says nothing costs a click at most WAIT_MS.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ASK, SUPPORTS, WAIT_MS, headersOf, parentOrigin, zeroHeaders } from "../../ui/js/zeroheaders.js";

const TOKEN = { "x-ip-token": "header.payload.signature" };

// A Space's page in huggingface.co's frame: `answers` the handshake, `lends` these headers on each port asked.
function framed({ hostname = "teacher-space.hf.space", answers = true, lends = TOKEN, from = null } = {}) {
  const listeners = [], posted = [];
  const win = { location: { hostname }, MessageChannel, addEventListener: (type, run) => listeners.push(run) };
  win.parent = {
    postMessage(message, origin, ports = []) {
      posted.push({ message, origin, ports: ports.length });
      const source = from ? from.source : win.parent, said = from ? from.origin : origin;
      const answer = { data: SUPPORTS, source, origin: said };
      if (message === SUPPORTS && answers) setTimeout(() => listeners.forEach((run) => run(answer)));
      if (message === ASK && lends) ports[0].postMessage(lends);
    },
  };
  return { win, posted };
}

const timed = async (asking) => { const began = Date.now(); return [await asking, Date.now() - began]; };

test("the parent's origin is huggingface.co's for a Space's page, its dev host's for a dev Space, else none", () => {
  assert.equal(parentOrigin("teacher-space.hf.space"), "https://huggingface.co");
  assert.equal(parentOrigin("abc.dev.hf.space"), "https://moon-dev.dev.spaces.huggingface.tech");
  for (const host of ["localhost", "127.0.0.1", "192.168.1.20", "example.com", "hf.space.example.com"]) {
    assert.equal(parentOrigin(host), null, host);
  }
});

test("in huggingface.co's frame the page shakes hands once, then asks each request's headers on a port", async () => {
  const { win, posted } = framed();
  assert.deepEqual(await zeroHeaders(win), TOKEN);
  assert.deepEqual(await zeroHeaders(win), TOKEN);
  const origin = "https://huggingface.co";
  assert.deepEqual(posted, [
    { message: SUPPORTS, origin, ports: 0 }, { message: ASK, origin, ports: 1 }, { message: ASK, origin, ports: 1 },
  ]);
  assert.equal(win.supports_zerogpu_headers, true);
});

test("a window Gradio's client marked as lent headers is asked at once, with no handshake of its own", async () => {
  const { win, posted } = framed();
  win.supports_zerogpu_headers = true;
  assert.deepEqual(await zeroHeaders(win), TOKEN);
  assert.deepEqual(posted.map((p) => p.message), [ASK]);
});

test("outside a Space's frame there are no headers and nothing is posted", async () => {
  for (const hostname of ["localhost", "teacher-space.hf.space"]) {
    const { win, posted } = framed({ hostname });
    if (hostname !== "localhost") win.parent = win; // a Space's page opened on its own, not in a frame
    assert.deepEqual(await zeroHeaders(win), {}, hostname);
    assert.deepEqual(posted, [], hostname);
  }
  assert.deepEqual(await zeroHeaders(undefined), {}); // Node: no window at all
});

test("a parent that never answers the handshake costs the first click WAIT_MS, the next nothing", async () => {
  const { win, posted } = framed({ answers: false });
  const [first, waited] = await timed(zeroHeaders(win));
  assert.deepEqual(first, {});
  assert.ok(waited >= WAIT_MS - 20 && waited < WAIT_MS + 500, `${waited} ms`);
  const [second, again] = await timed(zeroHeaders(win));
  assert.deepEqual(second, {});
  assert.ok(again < 100, `${again} ms`);
  assert.deepEqual(posted.map((p) => p.message), [SUPPORTS]);
});

test("a parent that shook hands but lends nothing leaves the request without headers after WAIT_MS", async () => {
  const { win } = framed({ lends: null });
  const [headers, waited] = await timed(zeroHeaders(win));
  assert.deepEqual(headers, {});
  assert.ok(waited >= WAIT_MS - 20 && waited < WAIT_MS + 500, `${waited} ms`);
});

test("only the parent, from huggingface.co, can say it lends headers", async () => {
  const others = [{ source: {}, origin: "https://huggingface.co" }, { source: null, origin: "https://evil.example" }];
  for (const from of others) {
    const { win, posted } = framed({ from });
    if (from.source === null) from.source = win.parent; // the parent's window, from another origin
    assert.deepEqual(await zeroHeaders(win), {});
    assert.deepEqual(posted.map((p) => p.message), [SUPPORTS]);
  }
});

test("the parent's answer becomes headers: string values under names fetch accepts, nothing else", () => {
  const answer = { "x-ip-token": "t", "x-n": 5, "bad name": "v", "x-ok": "" };
  assert.deepEqual(headersOf(answer), { "x-ip-token": "t", "x-ok": "" });
  for (const answer of [null, undefined, "x-ip-token", ["x-ip-token", "t"], 7]) assert.deepEqual(headersOf(answer), {});
});
