"""bench.heap_faults: one analysis's page faults under each heap setting, each in its own interpreter."""

from __future__ import annotations

import re

import pytest

from bench.heap_faults import main
from ui.heap import heap_use


def test_each_setting_is_measured_in_its_own_interpreter_and_printed_as_a_row(capsys) -> None:
    if heap_use() is None:
        pytest.skip("not glibc: there is no heap setting to compare")
    main(["--model", "bundled", "--trim-mib", "0.125", "32", "--repeats", "2"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line]
    assert [row.split(" | ")[0] for row in rows] == [
        "| heap",
        "| glibc's defaults",
        "| app's bound, trim threshold 0.125 MiB",
        "| app's bound, trim threshold 32 MiB",
    ]
    for row in rows[1:]:
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\| ([\d,.]+)", row)]
        assert len(numbers) == 4 and all(x >= 0 for x in numbers) and numbers[3] > 0, row
