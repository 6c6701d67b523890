"""What the page's numbers (explorer/page_maps.py) cost in bytes, known from a model's shape and
its input's size before anything is built (issue 56; docs/security.md, "What a reply may send").

The budget, whatever the checkpoint and the input (a whole-image panorama included), in one place
(docs/security.md, "what an analysis sends the page", points here). With H heads, N patches, P
prefix tokens, Q token queries (P, or 1 for a model without CLS), L layers, an input of h × w px
and B pixels of tiles' images (one a colour scale's layout), a query's row is

    row = H · (4 · N + 4) + (H · (1 + P) + 1) · INDEX_BYTES + H · WORD_BYTES + BAR_BYTES bytes

(`PageShape.row_bytes`; explorer.page_maps.rows_bytes: every part a question may ask for at once,
page_maps.PARTS' four bytes a cell, of which the page asks for one, or two for smooth upsampling;
each head's top; the indices of the words the row writes, explorer/page_text.py; each head's
"max" line and the query's colour bar as if no other row shared them; the bar's allowance also
covers the reply's table's keys and length), and a reply of R rows adds its prefix lines, each
written once, so that it takes at most

    raw(R) = R · row + min(R · H, SHARES) · P · WORD_BYTES bytes    (`PageShape.raw_bytes`)

and rows take at most deflate_bound(raw) bytes (zlib's bound), so that no weights can make a
reply pass its budget; in the analysis's reply, Gradio's JSON, at most
sent(raw) = 4 · ceil(deflate_bound(raw) / 3) characters (then base64):

- REPLY_BYTES ≥ first screen = JSON_SLACK + sent(3 · h · w) + sent(3 · B) + tokens, the
  analysis's reply (the model input and the tiles' image as deflated RGB, and the shown layer's
  token rows), with
  tokens = JSON_SLACK + sent(raw(Q)), one layer's token queries' rows;
- BAND_BYTES ≥ tokens, and ≥ deflate_bound(raw(band)): one reply of rows the page asks for
  (`ui.explore_handlers.layer_rows`, on the rows route: the deflated bytes are its body), a layer's
  token rows or a band of `band` consecutive patch queries' rows, as many as fit and at most
  BAND_CELLS cells, so that a clicked patch's band comes quickly (ViT-B/16 at 224 px: a layer in 12
  bands; a 48 × 48 grid of 12 heads in 2,304). A layer's token rows are bounded as JSON (`tokens`),
  which bounds their route's reply too;
- TOKENS_BYTES ≥ L · tokens: every layer's token rows, which the page asks for unasked after the
  first screen and keeps (Play and the slider never wait for the default query).

The shown layer's patch rows are asked for unasked too when they take at most PREFETCH_BYTES
(`PageShape.prefetch_bands`). Other patch rows come only when shown, or the next layers' while
Play or the slider moves (one band at a time), and the page
keeps at most explorer.page_maps.PAGE_MEMORY_BYTES of them, so a wide input costs what a centre
crop costs until a student looks at its patches, layer by layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

REPLY_BYTES = 8_000_000  # an analysis's reply to the page, as JSON (ViT-L/14 with registers at 224 px: 4.6 MB)
BAND_BYTES = 2_000_000  # one reply of rows at most (ViT-B/16 at 224 px: a layer's patch rows 1.9 MB raw)
TOKENS_BYTES = 8_000_000  # every layer's token rows, as JSON, at most
PREFETCH_BYTES = 4_000_000  # the shown layer's patch rows, asked for unasked up to this (ViT-B/16 at 224 px: 1.9 MB)
JSON_SLACK = 4_096  # a JSON reply's keys, brackets and numbers beside its base64 arrays
# A row's words (explorer/page_text.py), at most: an index into its reply's table (one byte, two past
# 256 words), a caption line in the table ("reg16 0.42", "max 1.2e-05": ASCII, quoted, in JSON; at most
# 16 prefix tokens, explorer.catalog), a colour bar's numbers and ticks (canvas.bar_text: at most 6
# ticks on a bar from 0, about 100 bytes). A prefix token's share is written with 2 decimals on a line
# of its own (render.PREFIX_PER_LINE), one of SHARES lines ("CLS 0.00" to "CLS 1.00").
INDEX_BYTES = 2
WORD_BYTES = 16
BAR_BYTES = 512
SHARES = 101
# A band's cells, one byte each (the page asks for the shown scale's byte), at most: a patch clicked
# before its layer's rows came asks for its band, which comes in about a third of a second on a
# school Wi-Fi share (1.5 Mbit/s; random weights' cells hardly deflate), under a second beside a
# band asked ahead (bench.page_bytes, B/16: 0.63 s; 1.04 s at 64,000). ViT-B/16 at 224 px: 12 bands a layer;
# half a layer a band had taken 2.4 s (issue 58).
BAND_CELLS = 40_000


def base64_bytes(raw: int) -> int:
    """Characters base64 writes for `raw` bytes."""
    return 4 * math.ceil(raw / 3)


def deflate_bound(raw: int) -> int:
    """Bytes zlib.compress may write for `raw` bytes at most (zlib's compressBound)."""
    return raw + (raw >> 12) + (raw >> 14) + (raw >> 25) + 13


def sent_bytes(raw: int) -> int:
    """Characters a reply carries for `raw` bytes of rows at most: deflated, then base64."""
    return base64_bytes(deflate_bound(raw))


def token_queries(prefix_names: tuple[str, ...]) -> int:
    """The token queries whose rows every layer sends (explorer.page_maps.query_tokens): each
    prefix token, and the mean patch query of a model without CLS."""
    return len(prefix_names) + ("cls" not in prefix_names)


@dataclass(frozen=True)
class PageShape:
    """The shape of what the page is sent for one input: (rows, columns) of patches, heads, layers,
    prefix tokens, token queries (the prefix tokens, or the mean patch query of a model without
    CLS) and the model input's (H, W) in pixels."""

    grid: tuple[int, int]
    heads: int
    depth: int
    prefix: int
    queries: int
    input_hw: tuple[int, int]

    @property
    def patches(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def row_bytes(self) -> int:
        """Raw bytes of one query's row: 4 a patch and head, each head's top, the row's words but
        its prefix lines (`raw_bytes` counts those once a reply)."""
        indices = (self.heads * (1 + self.prefix) + 1) * INDEX_BYTES
        return self.heads * (4 * self.patches + 4) + indices + self.heads * WORD_BYTES + BAR_BYTES

    def raw_bytes(self, rows: int) -> int:
        """Raw bytes of a reply of `rows` query rows, at most: theirs, and their prefix lines, each
        distinct one once (a share has SHARES lines a prefix token)."""
        return rows * self.row_bytes + min(rows * self.heads, SHARES) * self.prefix * WORD_BYTES

    @property
    def band(self) -> int:
        """Patch queries a reply of patch rows holds (the last band of a layer may hold fewer):
        BAND_CELLS' worth, fewer where every part at once would pass BAND_BYTES."""
        fit = min(BAND_BYTES // self.row_bytes, BAND_CELLS // (self.heads * self.patches))
        while fit > 1 and deflate_bound(self.raw_bytes(fit)) > BAND_BYTES:
            fit -= 1  # a few rows less for zlib's slack
        return max(1, min(self.patches, fit))

    @property
    def bands(self) -> int:
        """Bands a layer's patch rows are sent in."""
        return math.ceil(self.patches / self.band)

    @property
    def layer_bytes(self) -> int:
        """Bytes of one layer's patch rows, all its bands' bodies, at most."""
        full, last = divmod(self.patches, self.band)
        sizes = [self.band] * full + ([last] if last else [])
        return sum(deflate_bound(self.raw_bytes(n)) for n in sizes)

    @property
    def prefetch_bands(self) -> int:
        """Bands of the shown layer's patch rows the page asks for unasked: all, or none when
        they would pass PREFETCH_BYTES (a wide input's, which come when a patch query is shown)."""
        return self.bands if self.layer_bytes <= PREFETCH_BYTES else 0

    @property
    def token_bytes(self) -> int:
        """JSON bytes of one layer's token query rows, at most (as the analysis's reply carries
        them; the rows route sends them in fewer, `deflate_bound`)."""
        return JSON_SLACK + sent_bytes(self.raw_bytes(self.queries))

    def first_screen_bytes(self, base_pixels: int = 0) -> int:
        """JSON bytes of an analysis's reply, at most: the model input as raw RGB, the tiles'
        image (`base_pixels` pixels in all, RGB) and the shown layer's token query rows."""
        h, w = self.input_hw
        return JSON_SLACK + sent_bytes(3 * h * w) + sent_bytes(3 * base_pixels) + self.token_bytes

    def refusal(self, base_pixels: int = 0) -> str | None:
        """Why the page cannot be sent this analysis within the budgets, in words, or None."""
        if self.token_bytes > BAND_BYTES:
            mb = self.token_bytes / 1e6
            return f"a layer's token queries' attention would take {mb:,.1f} MB, more than a reply may send"
        if (tokens := self.depth * self.token_bytes) > TOKENS_BYTES:
            return (
                f"its layers' token queries' attention would send {tokens / 1e6:,.1f} MB to the page, more than "
                f"this server's {TOKENS_BYTES / 1e6:,.0f} MB"
            )
        first = self.first_screen_bytes(base_pixels)
        if first > REPLY_BYTES:
            return (
                f"its first screen would send {first / 1e6:,.1f} MB to the page, more than this server's "
                f"{REPLY_BYTES / 1e6:,.0f} MB per reply"
            )
        return None
