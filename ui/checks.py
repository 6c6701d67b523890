"""Checks of the values people and API clients send: a `gr.Error` that names the parameter,
the value and what is allowed, never a traceback.

The Explore and Train events run with `preprocess=False` (their inputs are plain numbers and
strings), so these are the checks that count: Gradio's own say "Value 0 is less than minimum
value 1" without naming the parameter, compare against the bounds the page started with
(not the loaded model's depth), and let NaN through.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import gradio as gr

from vit.messages import quoted

from .settings import for_visitors

# How long an error's toast stays: long enough to read two lines aloud to a class, then it goes
# (toasts that stayed until closed stacked up over the Train tab's form; issue 27).
ERROR_TOAST_S = 15


def visitor_error(message: str, **kwargs: object) -> gr.Error:
    """The one way ui/ builds an error for a visitor: server paths cut to their last part, HTML
    escaped and length-capped (`ui.settings.for_visitors`). Values a visitor sent are quoted
    with `quoted`, which keeps a few dozen characters of them. A refusal is the visitor's, not
    the server's: no traceback in the log (each one wrote 2.4 KB of it). Its toast fades
    after ERROR_TOAST_S."""
    return gr.Error(for_visitors(message), **({"print_exception": False, "duration": ERROR_TOAST_S} | kwargs))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def whole_number(name: str, value: object, low: int, high: int | None = None) -> int:
    """`value` as an int in [low, high] (no upper bound when `high` is None)."""
    allowed = f"from {low} to {high}" if high is not None else f"of at least {low}"
    if not _is_number(value) or value != int(value) or value < low or (high is not None and value > high):
        raise visitor_error(f"{name} must be a whole number {allowed}, got {quoted(value)}")
    return int(value)


def number(name: str, value: object, low: float, high: float | None = None) -> float:
    """`value` as a finite float in [low, high] (no upper bound when `high` is None)."""
    allowed = f"from {low} to {high}" if high is not None else f"of at least {low}"
    if not _is_number(value) or value < low or (high is not None and value > high):
        raise visitor_error(f"{name} must be a number {allowed}, got {quoted(value)}")
    return float(value)


def one_of(name: str, value: object, allowed: Sequence[str]) -> str:
    """`value`, if it is one of `allowed`."""
    if value not in allowed:
        raise visitor_error(f"unknown {name} {quoted(value)}; choose one of {', '.join(map(repr, allowed))}")
    return str(value)


def yes_no(name: str, value: object) -> bool:
    """`value`, if it is a checkbox's true or false."""
    if not isinstance(value, bool):
        raise visitor_error(f"{name} must be true or false, got {quoted(value)}")
    return value
