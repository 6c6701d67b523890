// The head the page points at (issue 59: a teacher shows "look at head 5 in layer 9" on every following page).
// A click on a head tile's caption (its words under the map) points at that head: the tile is outlined and its
// caption says "pointed at" (drawn.js); a click on the same caption points at none again. A click on the map
// itself does nothing, as before: the query is the input's patch, clicked on the model input (explore.js).

// The head (1-based) whose caption holds the point (x, y) of the drawn picture, or null: `cells` are the maps'
// places as drawn.js records them ({head, x, y, width, height: the map's, tall: the map's and its caption's}).
export function captionAt(cells, x, y) {
  const cell = cells.find((c) => x >= c.x && x < c.x + c.width && y >= c.y + c.height && y < c.y + c.tall);
  return cell ? cell.head : null;
}

// Clicks on the head maps' picture (`element`, ui/explore.py's heads) point `maps` at a head, or at none.
export function pointable(maps, element) {
  element.addEventListener("click", (event) => {
    const img = element.querySelector("img");
    if (!maps.data || !img || event.target !== img) return;
    const rect = img.getBoundingClientRect();
    const x = (event.clientX - rect.left) * img.naturalWidth / rect.width;
    const y = (event.clientY - rect.top) * img.naturalHeight / rect.height;
    const head = captionAt(maps.cells, x, y);
    if (head === null) return;
    maps.pointed = maps.pointed === head ? null : head;
    maps.draw();
  });
}
