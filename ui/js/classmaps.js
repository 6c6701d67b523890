// Lesson 4's word maps on a class's pages (issue 59): a CLIP model's relevance of each word, one picture a word in a
// Gradio gallery. The teacher's page names each map it shows (its alt text and the file the server drew for it), the
// class route reads each once for the class (POST /class/lesson with "map": its index), and a student's page shows
// the same bytes in the lesson's panel, one <img> a map with the teacher's alt text: no student's page runs CLIP.
import { LentPicture, altOf, pictureAddress } from "./classmore.js";

// The word maps the gallery `id` shows, [{alt, picture}] in its order, or none while it is out of sight: its grid's
// pictures (Gradio's .thumbnail-lg), not the strip of small copies under a map enlarged (the grid stays in the page).
export function mapsShown(id) {
  const gallery = id ? document.getElementById(id) : null;
  if (!gallery || gallery.offsetParent === null) return [];
  return [...gallery.querySelectorAll(".thumbnail-lg img")].filter((img) => img.getAttribute("src"))
    .map((img) => ({ alt: altOf(img), picture: pictureAddress(img) }));
}

// A student's page: the teacher's word maps in the part `find()` gives, a figure a map, each read once as it changes.
export class LentMaps {
  constructor(classroom, find) { this.classroom = classroom; this.find = find; this.lent = []; }

  show(maps) { // the teacher's lesson's maps ([{alt, picture: its id}]), or none
    const part = this.find();
    if (!part) return;
    for (let index = this.lent.length; index < (maps || []).length; index += 1) {
      const figure = part.appendChild(document.createElement("figure"));
      figure.hidden = true; figure.append(document.createElement("img"));
      this.lent.push(new LentPicture(this.classroom, "lesson", () => figure, "", { map: index }));
    }
    // each map as LentPicture shows a picture ({view, alt, picture}); a map the teacher no longer shows, hidden
    this.lent.forEach((picture, index) => picture.show(maps && maps[index] ? { view: "", ...maps[index] } : null));
  }
}
