// Class mode on the Lessons tab (issue 59): Start a class there too (the same class as Explore's: one a teacher),
// the teacher's page names the lesson it shows (the Lessons tab open, its lesson's tab, the lesson's picture once
// its button was pressed), and a student's page opens the same lesson and shows the teacher's picture of it, read
// once for the class (classmore.js; lesson 4's word maps, classmaps.js): a student's page runs no lesson.
import { LentPicture, altOf, pictureAddress, shownPicture } from "./classmore.js";
import { LentMaps, mapsShown } from "./classmaps.js";
import { lessonWords, paintWords } from "./classresult.js";

const LESSONS = "lessons", OPEN_TRIES = 20, OPEN_MS = 100; // ui/app.py's Lessons tab; a tab drawn after a click

// The lesson a page shows, {view: its tab's words, alt, picture: its address or "", said, tables: its words,
// classresult.js, maps: lesson 4's word maps}, or null (not on the Lessons tab): from the page's config, the lessons'
// pictures' element ids (`lesson_pictures`, ui/lessons.py's PICTURES), their words' classes (`lesson_words`) and the
// word maps' gallery's id (`lesson_maps`).
export function lessonShown(config) {
  const lessons = document.getElementById(LESSONS);
  const tab = lessons && lessons.offsetParent !== null && lessons.querySelector('[role="tab"][aria-selected="true"]');
  if (!tab) return null;
  const img = shownPicture(config.lesson_pictures || []);
  const shown = { view: tab.textContent.trim(), alt: altOf(img), picture: img ? pictureAddress(img) : "" };
  return { ...shown, ...lessonWords(lessons, config.lesson_words, mapsShown(config.lesson_maps)) };
}

// The page's tab named `words` among the tabs in `within`, picked unless it is already, tried again while Gradio
// has not drawn it yet; then `next`.
function pick(words, within, next = () => {}, tries = OPEN_TRIES) {
  const tab = [...(within() || document).querySelectorAll('[role="tab"]')].find((t) => t.textContent.trim() === words);
  if (!tab) { if (tries > 0) setTimeout(() => pick(words, within, next, tries - 1), OPEN_MS); return; }
  if (tab.getAttribute("aria-selected") !== "true") tab.click();
  next();
}

export class ClassLessons {
  constructor(classroom) {
    this.classroom = classroom; this.panel = null; this.open = null; this.lesson = null;
    const find = () => this.panel && this.panel.querySelector(".class-lesson");
    this.picture = new LentPicture(classroom, "lesson", find, "The teacher's lesson: {view}.");
    this.maps = new LentMaps(classroom, () => this.panel && this.panel.querySelector(".class-lesson-maps"));
  }
  attach(element) { // ui/lessons.py's CLASS_PANEL
    this.panel = element;
    const start = element.querySelector("#lesson-class-start");
    if (start) start.addEventListener("click", () => this.classroom.start());
    this.classroom.starts(!this.classroom.member); this.code(this.classroom.member);
    this.paint(); // Gradio draws the tab's panel when it first opens: after the lesson came
    // A teacher's typing changes no element (a box's value): each keystroke is a change of the view to send.
    const lessons = document.getElementById(LESSONS);
    for (const kind of ["input", "change"]) lessons.addEventListener(kind, () => this.classroom.send());
  }
  code(member) { // the teacher's class, said on the Lessons tab too (its QR code is the Explore tab's)
    const words = this.panel && this.panel.querySelector(".lesson-class-code");
    const said = member && member.key ? `You lead class ${member.code}: students join at ${member.join} .` : "";
    if (words) words.textContent = said;
  }
  show(lesson) { // a student's page: the teacher's lesson at its step, or Explore again once the teacher left it
    const was = this.open; this.open = lesson ? lesson.view : null; this.lesson = lesson;
    const lessons = () => document.getElementById(LESSONS), page = () => null;
    if (lesson && lesson.view !== was) pick("Lessons", page, () => pick(lesson.view, lessons));
    else if (!lesson && was) pick("Explore", page);
    this.paint();
  }
  paint() { // the teacher's picture of the lesson, and its words (classresult.js), on a student's page
    const figure = this.panel && this.panel.querySelector(".class-lesson");
    if (figure) paintWords(figure, this.lesson);
    this.picture.show(this.lesson);
    this.maps.show(this.lesson && this.lesson.maps);
  }
}
