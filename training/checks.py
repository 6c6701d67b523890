"""The value rules every training entry point shares (TrainConfig, AugmentConfig, the Train
tab's TrainLimits): one rule per kind of value, one message, ValueError."""

from __future__ import annotations

import math

from vit.messages import quoted


def is_real(value: object) -> bool:
    """A finite int or float; a bool is not a number here (True would train for 1 epoch)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_whole(name: str, value: object, low: int) -> int:
    """`value` if it is an int (not a bool) of at least `low`, else ValueError."""
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
        raise ValueError(f"{name} must be a whole number of at least {low}, got {quoted(value)}")
    return value


def check_lr(value: object, high: float = math.inf, name: str = "lr") -> float:
    """The one learning-rate rule, for configs, the CLI and the Train tab: a finite number above
    0, and at most `high` where a server caps it (TrainLimits.max_lr)."""
    if not (is_real(value) and 0 < value <= high):
        cap = f" and at most {high:g}" if math.isfinite(high) else ""
        raise ValueError(f"{name} must be a number above 0{cap}, got {quoted(value)}")
    return float(value)
