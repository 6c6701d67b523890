// ZeroGPU's visitor headers (issue 59: a class's GPU call is charged to the teacher, none to the students). On a
// ZeroGPU Space the platform charges a GPU call to the visitor whose X-IP-Token the request carries; a page learns
// it only from huggingface.co, the page that frames the Space's. Gradio's own page asks for it before each queue
// join (its client: "supports-zerogpu-headers", then "zerogpu-headers" with a MessageChannel port); the class's
// routes are the app's own, outside Gradio's queue, so the teacher's page asks the same way for the requests that
// run the model on the teacher's behalf (gallery.js: Show the gallery, Spotlight). Anywhere else: no headers.

export const SUPPORTS = "supports-zerogpu-headers"; // the parent answers the same words when it lends headers
export const ASK = "zerogpu-headers";
export const WAIT_MS = 1000; // a parent that does not answer costs the teacher's click this much, once
const NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/; // a header's name as fetch accepts it

// The origin of the page that frames a Space's page on `hostname` (as Gradio's client names it), or null.
export function parentOrigin(hostname) {
  if (hostname.includes(".dev.")) return `https://moon-${hostname.split(".")[1]}.dev.spaces.huggingface.tech`;
  return hostname.endsWith(".hf.space") ? "https://huggingface.co" : null;
}

// The parent's answer as headers: its string values under names fetch accepts, nothing else.
export function headersOf(answer) {
  if (!answer || typeof answer !== "object" || Array.isArray(answer)) return {};
  const lent = ([name, value]) => NAME.test(name) && typeof value === "string";
  return Object.fromEntries(Object.entries(answer).filter(lent));
}

const handshakes = new WeakMap(); // window: the promise of whether its parent lends headers

// Whether the parent at `origin` lends headers: Gradio's client asked at the page's start and marked the window
// when it answered; else asked here once, answered within WAIT_MS or taken as no (a later answer still counts).
function supported(win, origin) {
  if (win.supports_zerogpu_headers) return Promise.resolve(true);
  if (!handshakes.has(win)) {
    handshakes.set(win, new Promise((resolve) => {
      win.addEventListener("message", (event) => {
        if (event.data !== SUPPORTS || event.source !== win.parent || event.origin !== origin) return;
        win.supports_zerogpu_headers = true; resolve(true);
      });
      setTimeout(() => resolve(false), WAIT_MS);
      win.parent.postMessage(SUPPORTS, origin);
    }));
  }
  return handshakes.get(win).then((yes) => yes || Boolean(win.supports_zerogpu_headers));
}

// The headers the parent lends for one request, through a port of its own; {} if it says nothing within WAIT_MS.
function asked(win, origin) {
  return new Promise((resolve) => {
    const channel = new win.MessageChannel();
    const done = (answer) => { clearTimeout(timer); channel.port1.close(); resolve(headersOf(answer)); };
    const timer = setTimeout(() => done(null), WAIT_MS);
    channel.port1.onmessage = (event) => done(event.data);
    win.parent.postMessage(ASK, origin, [channel.port2]);
  });
}

// The headers to add to a request made on the visitor's behalf: the platform's, on a Space's page framed by
// huggingface.co that lends them; {} anywhere else (a laptop, a CPU Space opened directly, a test).
export async function zeroHeaders(win = globalThis.window) {
  const origin = win && win.location ? parentOrigin(win.location.hostname) : null;
  if (!origin || win.parent === win || !win.parent) return {};
  return (await supported(win, origin)) ? asked(win, origin) : {};
}
