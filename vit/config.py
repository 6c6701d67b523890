"""One rule for every config dataclass read from a file or a checkpoint: `config_from_dict`.

A config that arrives as JSON is untrusted: it may name fields this version does not know,
carry a string where a number belongs, or hold values the dataclass refuses. Each of those
ends in one `ValueError` that names the config, the field, the value and what is allowed,
never in a TypeError or an AssertionError (which `python -O` would remove).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")


def _allowed(hint: Any) -> str:
    """A short human description of a type hint: 'int', 'float or None', "'cls' or 'gap'"."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        return " or ".join(repr(a) for a in typing.get_args(hint))
    if origin in (Union, types.UnionType):
        return " or ".join(_allowed(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "None"
    if origin is tuple:
        return "a list of numbers"
    if origin is list:
        return f"a list of {_allowed(typing.get_args(hint)[0])}"
    if hint is dict:
        return "a JSON object"
    return getattr(hint, "__name__", str(hint))


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a field's type hint (ints are accepted for floats; bools are not numbers)."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, a) for a in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is tuple:
        return isinstance(value, list | tuple) and all(_fits(v, float) for v in value)
    if origin is list:
        return isinstance(value, list) and all(_fits(v, typing.get_args(hint)[0]) for v in value)
    if hint is dict:
        return isinstance(value, dict)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if dataclasses.is_dataclass(hint):
        return isinstance(value, dict | hint)
    return True  # a type this rule does not check: the dataclass's own __post_init__ does


def _dataclass_in(hint: Any) -> type | None:
    """The dataclass a field holds: `Inner` for `Inner` and for `Inner | None`, else None."""
    if dataclasses.is_dataclass(hint):
        return hint
    if typing.get_origin(hint) in (Union, types.UnionType):
        return next((a for a in typing.get_args(hint) if dataclasses.is_dataclass(a)), None)
    return None


def config_from_dict(cls: type[T], data: Any, what: str) -> T:
    """Build the dataclass `cls` from JSON-like `data`, or raise ValueError naming `what`
    (e.g. "ViT config"), the field, the value and what is allowed. Nested dataclass fields
    are built with the same rule; lists become tuples for tuple fields."""
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be a JSON object, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown {what} field(s) {unknown}; known fields: {sorted(known)}")
    values = {}
    for name, value in data.items():
        hint = hints[name]
        if not _fits(value, hint):
            raise ValueError(f"{what} field {name!r} = {value!r} is not allowed: expected {_allowed(hint)}")
        nested = _dataclass_in(hint)
        if nested is not None and isinstance(value, dict):
            value = config_from_dict(nested, value, f"{what} {name}")
        elif typing.get_origin(hint) is tuple or (isinstance(value, list) and _fits(tuple(value), hint)):
            value = tuple(value)
        values[name] = value
    try:
        return cls(**values)
    except (TypeError, ValueError) as e:
        raise ValueError(f"invalid {what}: {e}") from e


def require(ok: bool, what: str, name: str, value: Any, allowed: str) -> None:
    """Raise the rule's ValueError unless `ok`: "{what} field {name!r} = {value!r} is not allowed:
    {allowed}". The dataclasses' __post_init__ checks use it, so a bad value reads the same
    whether it came from a file or from Python."""
    if not ok:
        raise ValueError(f"{what} field {name!r} = {value!r} is not allowed: {allowed}")
