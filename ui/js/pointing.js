// The head the page points at (issue 59: a teacher shows "look at head 5 in layer 9" on every following page).
// A click on a head tile's caption (its words under the map) points at that head: the tile is outlined and its
// caption says "pointed at" (drawn.js); a click on the same caption points at none again. A click on the map
// itself does nothing, as before: the query is the input's patch, clicked on the model input (explore.js).
// From the keyboard: a button over each caption ("Point at head 5", pressed or not), reached with Tab and pressed
// with Enter or Space as the page's other buttons are; the mouse passes through it to the picture (its CSS,
// ui/app.py's `.head-points`), so a caption is pointed at one way, and nothing covers the maps.

// The head (1-based) whose caption holds the point (x, y) of the drawn picture, or null: `cells` are the maps'
// places as drawn.js records them ({head, x, y, width, height: the map's, tall: the map's and its caption's}).
export function captionAt(cells, x, y) {
  const cell = cells.find((c) => x >= c.x && x < c.x + c.width && y >= c.y + c.height && y < c.y + c.tall);
  return cell ? cell.head : null;
}

// `head` pointed at, or none where it was already (a second press on the same caption).
export function point(maps, head) {
  maps.pointed = maps.pointed === head ? null : head;
  maps.draw();
}

// Where each caption's button goes over a drawing `width` x `height` px: {head, left, top, width, height}, in
// percent of the drawing, so that the buttons stay on their captions however large the picture is shown.
export function captionPlaces(cells, width, height) {
  const percent = (px, of) => `${(100 * px) / of}%`;
  return cells.map((c) => ({
    head: c.head, left: percent(c.x, width), top: percent(c.y + c.height, height),
    width: percent(c.width, width), height: percent(c.tall - c.height, height),
  }));
}

// Clicks on the head maps' picture (`element`, ui/explore.py's heads) point `maps` at a head, or at none; the
// captions' buttons do the same from the keyboard.
export function pointable(maps, element) {
  element.addEventListener("click", (event) => {
    const img = element.querySelector("img");
    if (!maps.data || !img || event.target !== img) return;
    const rect = img.getBoundingClientRect();
    const x = (event.clientX - rect.left) * img.naturalWidth / rect.width;
    const y = (event.clientY - rect.top) * img.naturalHeight / rect.height;
    const head = captionAt(maps.cells, x, y);
    if (head !== null) point(maps, head);
  });
  const img = element.querySelector(".page-frame img"), layer = document.createElement("div");
  layer.className = "head-points"; layer.hidden = true;
  img.after(layer);
  const place = () => placeButtons(maps, img, layer);
  img.addEventListener("load", place); // a new drawing: its cells, and the head pointed at now
  new ResizeObserver(place).observe(img.parentElement); // the picture shown larger, smaller or elsewhere
  new ResizeObserver(place).observe(img);
}

// The captions' buttons over the picture `img` as it is shown, kept (not made again) from one drawing to the
// next, so that the one pressed keeps the keyboard's focus as the picture is drawn again.
function placeButtons(maps, img, layer) {
  const shown = Boolean(maps.data && !img.hidden && img.naturalWidth && img.offsetWidth);
  layer.hidden = !shown;
  if (!shown) return;
  const box = { left: img.offsetLeft, top: img.offsetTop, width: img.offsetWidth, height: img.offsetHeight };
  for (const [side, px] of Object.entries(box)) layer.style[side] = `${px}px`;
  const buttons = [...layer.children];
  captionPlaces(maps.cells, img.naturalWidth, img.naturalHeight).forEach(({ head, ...place }, i) => {
    const button = buttons[i] || layer.appendChild(captionButton(maps));
    button.dataset.head = String(head);
    button.setAttribute("aria-label", `Point at head ${head}`);
    button.setAttribute("aria-pressed", String(maps.pointed === head));
    Object.assign(button.style, place);
  });
  buttons.slice(maps.cells.length).forEach((button) => button.remove());
}

function captionButton(maps) {
  const button = document.createElement("button");
  button.type = "button";
  button.addEventListener("click", () => point(maps, Number(button.dataset.head)));
  return button;
}
