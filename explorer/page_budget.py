"""What the page's numbers (explorer/page_maps.py) cost in bytes, known from a model's shape and
its input's size before anything is built (issue 56; docs/security.md, "What a reply may send").

Two budgets, whatever the checkpoint:

- REPLY_BYTES: an analysis's reply to the page (the first screen: the model input, the tiles'
  image, the token queries' rows of every layer, and the patch rows that fit besides).
- BAND_BYTES: one reply of patch rows (`ui.explore_handlers.layer_rows`). A layer's patch rows
  are sent in bands of consecutive patch queries, as many a band as fit it: ViT-B/16 at 224 px
  sends a layer in one band, a 48 × 48 grid of 12 heads in 43 (its layer whole was 170 MB).

A patch query's row as sent: heads × patches 16-bit levels, the row's top (float32), each
head's top and its shares of the prefix tokens (heads × (1 + prefix) float32). Base64 sends 4
characters for every 3 bytes; JSON_SLACK covers a reply's keys and numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

REPLY_BYTES = 8_000_000  # an analysis's reply to the page, as JSON (ViT-L/14 with registers at 224 px: 4.6 MB)
BAND_BYTES = 2_000_000  # one reply of patch rows, as JSON (ViT-B/16 at 224 px: a layer is 1.25 MB)
JSON_SLACK = 4_096  # a reply's keys, brackets and numbers beside its base64 arrays


def base64_bytes(raw: int) -> int:
    """Characters base64 writes for `raw` bytes."""
    return 4 * math.ceil(raw / 3)


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
        """Raw bytes of one query's row: levels, the row's top, each head's top and shares."""
        return self.heads * (2 * self.patches + 4 * (1 + self.prefix)) + 4

    @property
    def band(self) -> int:
        """Patch queries a reply of patch rows holds (the last band of a layer may hold fewer)."""
        fit = (BAND_BYTES - JSON_SLACK) * 3 // 4 // self.row_bytes
        return max(1, min(self.patches, fit))

    @property
    def bands(self) -> int:
        """Bands a layer's patch rows are sent in."""
        return math.ceil(self.patches / self.band)

    @property
    def layer_bytes(self) -> int:
        """JSON bytes of one layer's patch rows, all its bands."""
        return self.bands * JSON_SLACK + base64_bytes(self.patches * self.row_bytes)

    def first_screen_bytes(self, base_pixels: int = 0) -> int:
        """JSON bytes of an analysis's reply without patch rows: the model input as raw RGB, the
        tiles' image (`base_pixels` pixels in all, RGB) and every layer's token query rows."""
        h, w = self.input_hw
        token_rows = self.depth * (JSON_SLACK + base64_bytes(self.queries * self.row_bytes))
        return JSON_SLACK + base64_bytes(3 * h * w) + base64_bytes(3 * base_pixels) + token_rows

    def refusal(self, base_pixels: int = 0) -> str | None:
        """Why the page cannot be sent this analysis within the budgets, in words, or None."""
        if base64_bytes(self.row_bytes) + JSON_SLACK > BAND_BYTES:
            return f"one patch's attention would take {self.row_bytes / 1e6:,.1f} MB, more than a reply may send"
        first = self.first_screen_bytes(base_pixels)
        if first > REPLY_BYTES:
            return (
                f"its first screen would send {first / 1e6:,.1f} MB to the page, more than this server's "
                f"{REPLY_BYTES / 1e6:,.0f} MB per reply"
            )
        return None
