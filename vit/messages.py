"""Text for messages people read, for every layer: what a visitor sent, quoted and cut short,
and any name the app did not write itself (a checkpoint's class names, a file's name, a
visitor's words) as Markdown that shows it as written."""

import re

QUOTED_CHARS = 40  # at most this much of a value a visitor sent is echoed back in a message

# Every ASCII punctuation character: CommonMark lets each be backslash-escaped, and marked (the
# renderer of gr.Markdown) escapes the same set.
_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def quoted(value: object) -> str:
    """`value` quoted for a message, cut to QUOTED_CHARS: a visitor's 1 MB key or 1,000-digit
    number is not echoed back whole."""
    text = repr(value)
    return text if len(text) <= QUOTED_CHARS else f"{text[: QUOTED_CHARS - 1]}…"


def markdown_text(text: str) -> str:
    """`text` (a visitor's words, a checkpoint's class name, a file's name) as Markdown that shows
    it as written: every ASCII punctuation character backslash-escaped, so none of it becomes a
    picture (a `![x](url)` was fetched), a link, an HTML tag, an entity, emphasis, code or a $$
    formula (`\\<` shows "<", so no html.escape on top, whose "&lt;" would then show), and each run
    of whitespace one space, as the page shows it anyway, so no heading, list or code block starts
    inside it. The one escaping helper of every Markdown the app writes (docs/security.md)."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", re.sub(r"\s+", " ", text))
