"""vit.config.config_from_dict: the one rule for configs read from files."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from vit.config import config_from_dict


@dataclass
class Inner:
    rate: float = 0.5


@dataclass
class Outer:
    depth: int = 2
    pool: Literal["cls", "gap"] = "cls"
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    size: int | None = None
    flag: bool = False
    inner: Inner = field(default_factory=Inner)
    maybe: Inner | None = None
    names: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError(f"depth must be at least 1, got {self.depth}")


def test_builds_nested_configs_and_turns_lists_into_tuples() -> None:
    c = config_from_dict(Outer, {"depth": 3, "mean": [0.1, 0.2, 0.3], "size": 4, "inner": {"rate": 1}}, "test config")
    assert c == Outer(depth=3, mean=(0.1, 0.2, 0.3), size=4, inner=Inner(rate=1))


def test_optional_nested_configs_lists_of_strings_and_objects() -> None:
    c = config_from_dict(Outer, {"maybe": {"rate": 2}, "names": ["a", "b"], "info": {"k": [1]}}, "test config")
    assert c.maybe == Inner(rate=2) and c.names == ["a", "b"] and c.info == {"k": [1]}
    assert config_from_dict(Outer, {"maybe": None}, "test config").maybe is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "test config must be a JSON object, got list"),
        ({"depht": 3}, r"unknown test config field\(s\) \['depht'\]"),
        ({"depth": "3"}, "field 'depth' = '3' is not allowed: expected int"),
        ({"depth": True}, "field 'depth' = True is not allowed: expected int"),
        ({"pool": "mean"}, "field 'pool' = 'mean' is not allowed: expected 'cls' or 'gap'"),
        ({"size": 2.5}, "field 'size' = 2.5 is not allowed: expected int or None"),
        ({"inner": {"rate": "x"}}, "test config inner field 'rate'"),
        ({"depth": 0}, "invalid test config: depth must be at least 1, got 0"),
        ({"names": ["a", 2]}, r"field 'names' = \['a', 2\] is not allowed: expected a list of str"),
        ({"info": [1]}, r"field 'info' = \[1\] is not allowed: expected a JSON object"),
        ({"maybe": 3}, "field 'maybe' = 3 is not allowed: expected Inner or None"),
    ],
)
def test_refuses_with_the_field_the_value_and_what_is_allowed(data, message) -> None:
    with pytest.raises(ValueError, match=message):
        config_from_dict(Outer, data, "test config")
