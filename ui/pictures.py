"""Pictures on the page with nothing drawn over them: the caption outside the picture, no
toolbar and no label badge (Gradio puts both in the picture's top corners, over its title
and, in the input view, over the first row of patches a click must reach)."""

from __future__ import annotations

from typing import Any

import gradio as gr
from PIL import Image

from .outputs import saved


def picture(caption: str, alt: str, **kwargs: Any) -> gr.Image:
    """A read-only picture with its caption (Markdown) above it and `alt` saying what it shows.
    The label (the caption in plain text) still names it in the API."""
    gr.Markdown(caption)
    return gr.Image(label=caption.replace("*", ""), show_label=False, buttons=[], alt_text=alt, **kwargs)


def with_alt(image: Image.Image, alt: str, name: str = "view.webp") -> gr.Image:
    """A rendered view as its component's new value: the file (ui.outputs.saved: WebP, or PNG
    for a name ending .png) and an alt text saying what it shows, for screen readers and when
    the picture does not load."""
    return gr.Image(value=saved(image, name), alt_text=alt)
