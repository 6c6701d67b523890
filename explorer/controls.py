"""The values of the controls that pick what a view shows, as the pictures take them: how a single
map is drawn (`Showing`), how rollout fuses the heads (`Fusion`), both with a style (`Drawing`),
and the query token a "Query token" picker names. No pictures, no Gradio.

A query is `vit.analysis.Query`: None (the CLS token) or a (row, col) patch position, 0-based as
tensors are; people see 1-based numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from vit.analysis import Query
from vit.messages import quoted

from .canvas import MapStyle

PATCH, MEAN = "patch", "mean"  # query tokens that are not prefix tokens: a patch, the mean of all patches


# How rollout and relevance are drawn: weights from 0 with uniform marked on the colour bar,
# relative to uniform (a diverging map centred on it), or only the patches holding the top
# `keep` of the map's mass (DINO's threshold). KEEP: the default kept fraction.
SHOWS = ("weights", "relative", "top mass")


KEEP = 0.6


class Showing(NamedTuple):
    """How a single map (rollout, relevance, a word's) is drawn: `show` (the API's `show`), one of
    SHOWS, and for "top mass" the share `keep` of the map's mass kept, 0 to 1."""

    show: str = "weights"
    keep: float = KEEP


class Fusion(NamedTuple):
    """How rollout fuses a layer's heads (`head_fusion`, the API's `fusion`: mean, max or min) and
    the share of its weakest entries it discards (Abnar & Zuidema 2020, with Gildenblat's fusion
    and discard)."""

    head_fusion: str = "mean"
    discard: float = 0.0


class Drawing(NamedTuple):
    """How an image's maps are drawn: rollout's fusion, the maps' style, how single maps show."""

    fusion: Fusion = Fusion()
    style: MapStyle = MapStyle()
    showing: Showing = Showing()


class QueryError(ValueError):
    """A query token the model does not have; its message names the allowed ones."""


def parse_query(token: object, prefix_names: Sequence[str], patch: Callable[[], tuple[int, int]]) -> Query:
    """The query a "Query token" choice names (Explore's picker, Live's, their API parameter):
    a prefix token of the model ('cls', 'dist', 'reg1', ...), None for CLS or the mean of the
    patches, or for PATCH the 0-based (row, column) `patch()` gives (asked only then: it checks
    its own values)."""
    tokens = [value for _, value in query_choices(prefix_names)]
    if token not in tokens:
        raise QueryError(f"unknown query token {quoted(token)}; choose one of {', '.join(map(repr, tokens))}")
    if token == PATCH:
        return patch()
    return None if token in ("cls", MEAN) else str(token)


def token_label(name: str) -> str:
    """A prefix token ('cls', 'dist', 'reg1', ...) as people read it; registers count from 1."""
    if name == "cls":
        return "CLS token"
    if name == "dist":
        return "distillation token"
    if name.startswith("reg") and name[3:].isdigit():
        return f"register {name[3:]}"
    return name


def query_choices(prefix_names: Sequence[str]) -> list[tuple[str, str]]:
    """(label, token) pairs of the "Query token" picker: every prefix token, the mean of the
    patches for a model without CLS (its default query), and a patch."""
    choices = [(token_label(name), name) for name in prefix_names]
    if "cls" not in prefix_names:
        choices.insert(0, ("mean of all patches (no CLS token)", MEAN))
    return [*choices, ("a patch (click the grid)", PATCH)]


def query_token(query: Query, prefix_names: Sequence[str]) -> str:
    """The picker's token for a query: a prefix name, PATCH, or the default (CLS, or MEAN)."""
    if isinstance(query, tuple):
        return PATCH
    if query is None:
        return "cls" if "cls" in prefix_names else MEAN
    return str(query)
