// Joining a class by its code typed on the page (issue 59), for a student who opened the app without ?class=:
// the field beside Start a class (ui/explore.py, CLASS_PANEL's .class-typed). A wrong code is told in the server's
// sentence (the join's rate limit per network stands); a joined page's address names its class, so that a reload
// rejoins as the same student.
export function joinByCode(panel, join) {
  const part = panel.querySelector(".class-typed");
  if (!part || part.dataset.wired) return; // drawn again by Gradio: listened to once
  part.dataset.wired = "1";
  const field = part.querySelector("#class-typed-code"), typed = () => field.value.trim() && join(field.value.trim());
  part.querySelector("#class-join-code").addEventListener("click", typed);
  field.addEventListener("keydown", (event) => { if (event.key === "Enter") typed(); });
}

// The page's address once it joined `code`: ?class=CODE, so that a reload rejoins (classroom.attach).
export function joinedAddress(href, code) {
  const url = new URL(href); url.searchParams.set("class", code); return url.href;
}
