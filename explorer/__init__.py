"""The Gradio-free layer between the ViT core (`vit`) and the app (`ui`): what the app computes
with a model, what each tab shows of it, and how the pictures are drawn. Of the project's
packages it imports only vit; never gradio (docs/architecture.md). Its modules, by idea:

Computing: models and their arithmetic, no pictures.
- loaded: `LoadedModel`, a model the app has loaded (import it from here, its one home).
- catalog: the models the app can explain, by key, loaded once and shared by all sessions.
- compute: where a model's arithmetic runs (a *task*: the GPU if there is one, else the CPU).
- priority: which thread runs it: the forward passes in a pool below the clicks' CPU priority.
- explain: one forward pass per image (an `Explanation`) and the store of analyses.
- prompts: CLIP's words: zero-shot probabilities and a relevance map per prompt.
- images: untrusted image files decoded into RGB, or one `ImageError` a person can act on.

What each tab shows: the passes a view needs, and its pictures and text.
- views: the Explore tab's views of an `Explanation`.
- page_maps: the numbers the page draws its first screen from itself (ui/js/); page_text: the words
  it writes, decided by the functions that write the PNG's; page_budget: their bytes, from a model's
  shape, before any is built (the catalogue checks them too).
- lessons: the Lessons tab's four lessons.
- live: one webcam frame in, the Live tab's views out; video: a clip in, an attention video out.
- run_views: the Train tab's training curves and probe strip, with their alt text.
- gallery: class mode's gallery: the class's pictures in one batched pass, its tiles and handout.

Drawing: numpy arrays in, PIL images out (matplotlib's colours and charts).
- canvas: text at the size each helper is given, `MapStyle`, maps over images, colour bars, mosaics.
- render: pictures of attention; charts: matplotlib charts; probe_strip: the Train tab's strip.

The server's policies (which files a visitor may open, the live streams' slots) are ui/'s:
ui/uploads.py and ui/streams.py. priority stays here: explain, below ui/, runs its forward passes
in priority's pool."""
