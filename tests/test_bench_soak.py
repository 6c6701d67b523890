"""A short class period (bench/soak.py): a small class, Live, two Train runs and the attacker
replaying bench.attacks, on a public server for two minutes; the class sees no error and the
server's folders stay within their budgets (the 50-minute run is the benchmark, docs/security.md)."""

import csv

from bench import soak
from bench.soak import GROUPS, RUNS_MB, UPLOADS_MB, Sample, judge


def sample(minute: int, rss: float, p95: float = 1.0) -> Sample:
    return Sample(minute, rss, 30, 20, 10.0, 1.0, 1.0, dict.fromkeys(GROUPS, p95), 10, 0)


def test_the_judge_finds_growing_memory_and_slower_actions():
    flat = [sample(m, 1000 + (m % 2) * 5) for m in range(1, 11)]
    assert all(" met " in line for line in judge(flat, 0, 5))
    growing = [sample(m, 1000 + 30 * m) for m in range(1, 11)]  # +150 MiB over minutes 5..10: more than 10%
    assert "memory flat after minute 5: MISSED" in "\n".join(judge(growing, 0, 5))
    slower = [sample(1, 1000, 1.0), sample(2, 1000, 1.3)]
    assert "analyze p95, last minute against the first: MISSED" in "\n".join(judge(slower, 0, 1))
    assert "no error for the class: MISSED (2 errors)" in "\n".join(judge(flat, 2, 5))


def test_a_short_class_period_has_no_error_and_stays_within_its_budgets(tmp_path):
    out = soak.main(
        ["--minutes", "2", "--visitors", "4", "--csv", str(tmp_path / "s.csv"), "--plot", str(tmp_path / "s.png")]
    )
    assert "no error for the class: met" in out, out
    assert "folders within budgets: met" in out, out
    with (tmp_path / "s.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["minute"] for r in rows] == ["1", "2"]
    assert all(
        0 < float(r["rss_mib"]) and float(r["uploads_mb"]) <= UPLOADS_MB and float(r["runs_mb"]) <= RUNS_MB
        for r in rows
    )
    assert sum(int(r["actions"]) for r in rows) > 20  # the class did act
    assert float(rows[-1]["runs_mb"]) > 0  # the first Train run wrote its checkpoint
    assert "attacks replayed" in out and (tmp_path / "s.png").stat().st_size > 10_000
