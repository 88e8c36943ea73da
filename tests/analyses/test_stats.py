"""Statistics of gaps and delays: nearest-rank percentiles as README and the JSON promise, and the per-device idle share."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from helpers import write_trace, x
from ntrace import load
from ntrace.analyses.stats import nearest_rank, nearest_rank_of, stats


def test_the_issue_example() -> None:
    """Gaps 1, 2, 3, 100 µs: the nearest-rank median is the 2nd smallest (⌈0.5·4⌉ = 2), not Polars' "nearest" index round(0.5·3) = 2 → 3."""
    gaps = pl.Series([3_000, 100_000, 1_000, 2_000])
    assert nearest_rank(gaps, 50) == 2_000
    assert stats(gaps) == {"count": 4, "total": 106_000, "p50": 2_000, "p90": 100_000, "max": 100_000}
    assert stats(pl.Series([], dtype=pl.Int64)) == {"count": 0, "total": 0, "p50": 0, "p90": 0, "max": 0}


@given(st.lists(st.integers(-(10**15), 10**15), min_size=1, max_size=60), st.integers(1, 100))
def test_nearest_rank_is_the_ceil_rank_smallest(values: list[int], p: int) -> None:
    ordered = sorted(values)
    rank = -(-p * len(values) // 100)  # ⌈p·n/100⌉, at least 1 since p ≥ 1
    assert nearest_rank(pl.Series(values, dtype=pl.Int64), p) == ordered[rank - 1]
    assert sum(1 for v in values if v <= ordered[rank - 1]) * 100 >= p * len(values)  # the definition: the smallest value with at least p % at or below it


def test_idle_share_is_per_device_over_its_span(tmp_path: Path) -> None:
    """Two devices, each busy half its own span: the hardware idle share is 0.5 (Σ idle / Σ span), never Σ idle over the whole window (was 1.8 with two devices)."""
    events = [x("k", "kernel", 0, 10, pid=0, tid=0), x("k", "kernel", 20, 10, pid=0, tid=0)]  # device 0: span 30, idle 10
    events += [x("k", "kernel", 1000, 30, pid=1, tid=0), x("k", "kernel", 1060, 30, pid=1, tid=0)]  # device 1: span 90, idle 30
    profile = load(write_trace(tmp_path / "t.json", events))
    tracks = {r["track"]: r for r in profile.hardware_tracks.iter_rows(named=True)}
    assert (tracks["device 0"]["idle_share"], tracks["device 1"]["idle_share"]) == (10 / 30, 30 / 90)
    idle = profile.gaps.filter(pl.col("kind") == "hardware_idle").row(0, named=True)
    assert idle["share"] == 40 / 120 and idle["total"] == 40_000
    for share in profile.lanes["share"].to_list():
        assert 0 <= share <= 1


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-(2**62), 2**62)), max_size=40), st.sampled_from([1, 50, 90, 100]))
def test_nearest_rank_of_groups_is_the_plain_rank_of_each(rows: list[tuple[int, int]], p: int) -> None:
    frame = pl.DataFrame(rows, schema={"g": pl.Int64, "v": pl.Int64}, orient="row")
    got = dict(frame.group_by("g").agg(nearest_rank_of(pl.col("v"), p)).iter_rows())
    for g in {g for g, _ in rows}:
        values = sorted(v for h, v in rows if h == g)
        assert got[g] == values[max((p * len(values) + 99) // 100, 1) - 1]  # ⌈p·n/100⌉-th smallest, in plain integers
