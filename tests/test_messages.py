"""vit/messages.py: a visitor's value quoted short, and any name the app did not write shown in
Markdown as written."""

from markdown_helpers import HOSTILE_NAMES, planted, read, rendered, tags

from vit.messages import QUOTED_CHARS, markdown_text, quoted


def test_a_value_is_quoted_and_cut_short():
    assert quoted("cat") == "'cat'"
    long = quoted("k" * 10**6)
    assert len(long) == QUOTED_CHARS and long.endswith("…")


def test_markdown_text_shows_every_character_as_typed_and_makes_no_element():
    typed = "".join(map(chr, range(33, 127))) + " é 猫 🦜 ＜b＞"  # every ASCII punctuation character among them
    page = rendered(markdown_text(typed))
    assert read(page).strip() == typed and tags(page) == ["<p>", "</p>"]
    for link in ("http://evil.example", "www.evil.example", "a@evil.example"):  # marked's GFM links them bare
        assert link not in markdown_text(link)
    assert "$$" not in markdown_text("$$x$$")  # gr.Markdown's LaTeX delimiter
    assert markdown_text("a\n\n# not a heading\n    not code") == "a \\# not a heading not code"


def test_a_hostile_name_inside_the_apps_own_markdown_stays_text():
    """A name between the texts' own `**` (the heads-off note's "says **name**") neither ends
    their emphasis nor starts a picture, a link, a tag or code."""
    for name in HOSTILE_NAMES:
        note = f"With every head on the model says **{markdown_text(name)}**; its probability: 0.5."
        assert not planted(note) and f"says {name}; its" in read(rendered(note)), name
        assert tags(rendered(note)) == ["<p>", "<strong>", "</strong>", "</p>"], name
