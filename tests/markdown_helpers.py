"""Markdown read as the page shows it: for the tests that feed a checkpoint's, a file's or a
visitor's hostile names through the app's texts (vit.messages.markdown_text)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from markdown_it import MarkdownIt

import vit
from vit.preprocessing import CIFAR10

# Names a checkpoint's author, a file's uploader or a visitor may write: a tag with a script, a
# picture and a link to a third host (Chromium fetched the picture), emphasis, a backslash, code.
HOSTILE_NAMES = (
    "<img src=x onerror=alert(1)>",
    "![x](http://203.0.113.9/p.png)",
    "[click me](http://203.0.113.9/)",
    "**bold**",
    "back\\slash\\",
    "`tick`",
)


def rendered(markdown: str) -> str:
    """The HTML of `markdown` by a CommonMark renderer with GFM's strikethrough, as gr.Markdown's
    marked reads it (both escape the same ASCII punctuation)."""
    return MarkdownIt("commonmark").enable("strikethrough").render(markdown)


def tags(page: str) -> list[str]:
    return re.findall(r"</?[A-Za-z][^>]*>", page)


def read(page: str) -> str:
    """What a person reads on the rendered page: its text, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", page))


def planted(markdown: str) -> list[str]:
    """The elements a name could plant in `markdown` as the page renders it: pictures, links,
    tags, emphasis and code (the texts' own `**` emphasis is theirs: `strong` is not counted)."""
    return [t for t in tags(rendered(markdown)) if re.match(r"</?(img|a|em|code|script)\b", t)]


def shows_as_written(markdown: str, *names: str) -> bool:
    """Whether the page shows each of `names` in `markdown` character for character, and no
    name planted an element."""
    text = read(rendered(markdown))
    return not planted(markdown) and all(name in text for name in names)


def unescaped(markdown: str) -> str:
    """`markdown` with markdown_text's backslash escapes taken out: the app's own Markdown (its
    `**`, its lists) kept, every name as written."""
    return re.sub(r"\\(.)", r"\1", markdown)


def hostile_checkpoint(path: Path) -> Path:
    """A vit_cifar_nano whose classes are HOSTILE_NAMES, as a visitor may upload one."""
    model = vit.create_model("vit_cifar_nano", num_classes=len(HOSTILE_NAMES))
    vit.save_checkpoint(model, path, class_names=list(HOSTILE_NAMES), preprocessing=CIFAR10)
    return path
