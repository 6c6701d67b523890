"""Pictures on the page with nothing drawn over them: the caption outside the picture, no
toolbar and no label badge (Gradio puts both in the picture's top corners, over its title
and, in the input view, over the first row of patches a click must reach)."""

from __future__ import annotations

import html
from typing import Any

import gradio as gr
from PIL import Image

from .outputs import saved

SWIPE_CUE = "← Swipe the picture sideways to see all of it →"


def picture(caption: str, alt: str, **kwargs: Any) -> gr.Image:
    """A read-only picture with its caption (Markdown) above it and `alt` saying what it shows.
    The label (the caption in plain text) still names it in the API. Every picture keeps its
    drawn size on a phone, where its text would shrink to a few pixels (the logit lens's 590 px
    to 302, the PCA of 7 images' 1200 px to 302), and scrolls sideways under a cue saying so
    (ui/app.py's CSS shows the cue, and lets the picture scroll, only on a narrow screen)."""
    gr.Markdown(caption)
    gr.Markdown(SWIPE_CUE, elem_classes="swipe-cue")
    return gr.Image(
        label=caption.replace("*", ""),
        show_label=False,
        buttons=[],
        alt_text=alt,
        elem_classes="wide-picture",
        **kwargs,
    )


def word_maps(caption: str, **kwargs: Any) -> gr.Gallery:
    """CLIP's maps, one a word, each shown at its drawn size (ui/app.py's CSS, class "word-maps"),
    side by side as many as fit and the rest on the next line (one a line on a phone; one wider
    than the column scrolls sideways under the cue): Gradio's gallery fitted each into a square box
    (x 0.42 in `--present`), its label over the first map's title and each map's alt text, as a
    caption, over its bottom. The caption is above the maps; the alt texts stay the pictures' (a
    screen reader's) text."""
    gr.Markdown(caption)
    gr.Markdown(SWIPE_CUE, elem_classes="swipe-cue")
    return gr.Gallery(
        label=caption.replace("*", ""),
        show_label=False,
        columns=3,
        height="auto",
        buttons=[],
        elem_classes="word-maps",
        **kwargs,
    )


def page_picture(caption: str, alt: str, js_on_load: str, **kwargs: Any) -> gr.HTML:
    """A picture the page draws itself (ui/js/), with its caption above it: an image
    the page fills in and names (`alt` until it does), a line for what it says about it, and a
    region that reads each new picture's description to a screen reader. The page draws it to fit
    its frame (the head maps wrap their tiles), so it needs no swipe cue on a phone."""
    gr.Markdown(caption)
    template = (
        f'<div class="image-frame page-frame"><img alt="{html.escape(alt)}" hidden></div>'
        '<p class="maps-status" role="status"></p><p class="maps-live sr-only" aria-live="polite"></p>'
    )
    return gr.HTML(None, html_template=template, js_on_load=js_on_load, label=caption.replace("*", ""), **kwargs)


def with_alt(image: Image.Image, alt: str, name: str = "view.webp") -> gr.Image:
    """A rendered view as its component's new value: the file (ui.outputs.saved: WebP, or PNG
    for a name ending .png) and an alt text saying what it shows, for screen readers and when
    the picture does not load."""
    return gr.Image(value=saved(image, name), alt_text=alt)
