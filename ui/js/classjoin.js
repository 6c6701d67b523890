// Joining a class by its code typed on the page (issue 59), for a student who opened the app without ?class=:
// the field beside Start a class (ui/explore.py, CLASS_PANEL's .class-typed). A wrong code is told in the server's
// sentence (the join's rate limit per network stands); a joined page's address names its class, so that a reload
// rejoins as the same student.
export function joinByCode(panel, join) {
  const form = panel.querySelector(".class-typed");
  if (!form || form.dataset.wired) return; // drawn again by Gradio: listened to once
  form.dataset.wired = "1";
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const code = form.querySelector("#class-typed-code").value.trim();
    if (code) join(code);
  });
}

// The page's address once it joined `code`: ?class=CODE, so that a reload rejoins (classroom.attach).
export function joinedAddress(href, code) {
  const url = new URL(href); url.searchParams.set("class", code); return url.href;
}
