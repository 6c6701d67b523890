"""Text for messages people read: what a visitor sent, quoted and cut short, for every layer."""

QUOTED_CHARS = 40  # at most this much of a value a visitor sent is echoed back in a message


def quoted(value: object) -> str:
    """`value` quoted for a message, cut to QUOTED_CHARS: a visitor's 1 MB key or 1,000-digit
    number is not echoed back whole."""
    text = repr(value)
    return text if len(text) <= QUOTED_CHARS else f"{text[: QUOTED_CHARS - 1]}…"
