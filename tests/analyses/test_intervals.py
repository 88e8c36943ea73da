"""intervals.py: merged busy time and gaps, checked against a brute-force union (hypothesis)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import brute_union
import ntrace.analyses.intervals as intervals_module
import ntrace.exprs as exprs_module
from ntrace.analyses.intervals import gaps, group_busy, reaching

#: Track names as the integer group codes the interval functions take (codes sort like the names).
CODES = {"a": 0, "b": 1, "c": 2, "far": 3}
NAMES = pl.Series(list(CODES))

intervals = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 10_000), st.integers(0, 500)),
    min_size=1,
    max_size=60,
)


def _frame(rows: list[tuple[str, int, int]]) -> pl.DataFrame:
    return pl.DataFrame({"g": [CODES[r[0]] for r in rows], "ts": [r[1] for r in rows], "end": [r[1] + r[2] for r in rows]})


def busy(frame: pl.DataFrame) -> pl.DataFrame:
    """Per track (named `t`): group_busy over the reaching frame."""
    return group_busy(reaching(frame, "g"), "g").select(t=pl.lit(NAMES).gather(pl.col("g")), *(c for c in ("events", "total", "first", "last", "idle", "gaps", "span", "busy")))


def track_gaps(frame: pl.DataFrame) -> pl.DataFrame:
    """Every gap per track (named `t`)."""
    return gaps(reaching(frame, "g"), "g").select(t=pl.lit(NAMES).gather(pl.col("g")), gap_start="gap_start", gap_end="gap_end", gap="gap")


@given(intervals)
@settings(max_examples=150, deadline=None)
def test_busy_matches_brute_force_and_invariants(rows: list[tuple[str, int, int]]) -> None:
    out = busy(_frame(rows))
    for r in out.iter_rows(named=True):
        mine = [(s, s + d) for t, s, d in rows if t == r["t"]]
        assert r["busy"] == brute_union(mine)
        assert r["busy"] <= r["total"] == sum(d for _, _, d in [x for x in rows if x[0] == r["t"]])
        assert r["busy"] + r["idle"] == r["span"]
        assert r["idle"] >= 0 and r["gaps"] >= 0


@given(intervals, st.randoms(use_true_random=False))
@settings(max_examples=100, deadline=None)
def test_order_invariance(rows: list[tuple[str, int, int]], rnd) -> None:
    shuffled = rows[:]
    rnd.shuffle(shuffled)
    assert busy(_frame(rows)).equals(busy(_frame(shuffled)))
    a = track_gaps(_frame(rows)).sort(["t", "gap_start"])
    b = track_gaps(_frame(shuffled)).sort(["t", "gap_start"])
    assert a.equals(b) and (a["gap"] > 0).all()


def test_gaps_merge_overlap_and_nesting() -> None:
    f = pl.DataFrame({"g": [0] * 4, "ts": [0, 2, 5, 20], "end": [10, 4, 12, 25]})
    g = track_gaps(f)
    assert g.select("gap_start", "gap_end", "gap").rows() == [(12, 20, 8)]


#: Intervals of a fourth track that stop (track, start) from packing with times counted from the frame's first instant:
#: far from the rest but short (times counted from each track's own first instant), or spanning 2**62 ns itself (no packing).
FAR = {"offsets per group": [("far", 2**61, 1)], "no packing": [("far", 0, 1), ("far", 2**62, 1)]}


@pytest.mark.parametrize("far", list(FAR.values()), ids=list(FAR))
@given(rows=intervals)
@settings(max_examples=50, deadline=None)
def test_times_too_far_apart_to_pack_give_the_same_answer(far: list[tuple[str, int, int]], rows: list[tuple[str, int, int]]) -> None:
    """The other ways to sort agree with the packed one on the other tracks, and the far track's busy time is its union."""
    packed, other = busy(_frame(rows)), busy(_frame(rows + far))
    assert packed.equals(other.filter(pl.col("t") != "far"))
    assert other.filter(pl.col("t") == "far")["busy"].to_list() == [brute_union([(s, s + d) for _, s, d in far])]
    assert track_gaps(_frame(rows)).sort(["t", "gap_start"]).equals(track_gaps(_frame(rows + far)).filter(pl.col("t") != "far").sort(["t", "gap_start"]))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2_000), st.integers(0, 50), st.integers(0, 30)), min_size=1, max_size=60))
def test_many_groups_far_apart_match_brute_force(rows: list[tuple[int, int, int]]) -> None:
    """Groups (as steps × lanes) each 2**50 ns after the last: every group's busy time and gaps are those of its own intervals."""
    frame = pl.DataFrame({"g": [g for g, _, _ in rows], "ts": [g * 2**50 + s for g, s, _ in rows], "end": [g * 2**50 + s + d for g, s, d in rows]})
    out = group_busy(reaching(frame, "g"), "g")
    for r in out.iter_rows(named=True):
        mine = [(r["g"] * 2**50 + s, r["g"] * 2**50 + s + d) for g, s, d in rows if g == r["g"]]
        assert r["busy"] == brute_union(mine) and r["events"] == len(mine)
        assert r["first"] == min(a for a, _ in mine) and r["last"] == max(b for _, b in mine)


def _oracle_per_group(rows: list[tuple[int, int, int]]) -> dict[int, dict[str, int]]:
    """Every group_busy column of each group, from its (start, end) pairs by plain integer arithmetic."""
    out: dict[int, dict[str, int]] = {}
    for g in sorted({g for g, _, _ in rows}):
        mine = sorted((s, e) for h, s, e in rows if h == g)
        first, last = mine[0][0], max(e for _, e in mine)
        reach, gaps_ = mine[0][1], 0
        for s, e in mine[1:]:
            gaps_ += s > reach
            reach = max(reach, e)
        busy_ = brute_union(mine)
        out[g] = {"events": len(mine), "total": sum(e - s for s, e in mine), "first": first, "last": last, "span": last - first, "busy": busy_, "idle": last - first - busy_, "gaps": gaps_}
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-50, 400), st.integers(0, 60)), min_size=1, max_size=80))
def test_every_column_is_the_oracles_whichever_way_the_groups_are_summed(rows: list[tuple[int, int, int]]) -> None:
    """Each group's events, total, first, last, span, busy, idle and gaps equal plain Python's: summed over the sorted runs (no nulls) and grouped
    (a row with a null group sends the frame there), in group order."""
    triples = [(g, s, s + d) for g, s, d in rows]
    expected = _oracle_per_group(triples)
    frame = pl.DataFrame({"g": [g for g, _, _ in triples], "ts": [s for _, s, _ in triples], "end": [e for _, _, e in triples]})
    with_null = pl.concat([frame, pl.DataFrame({"g": [None], "ts": [0], "end": [1]}, schema=frame.schema)])
    for f in (frame, with_null):
        for out in busy_each_way(f):
            out = out.filter(pl.col("g").is_not_null())
            assert out["g"].to_list() == sorted(expected)
            assert out["events"].dtype == pl.UInt32
            assert {r.pop("g"): r for r in out.to_dicts()} == expected


#: (RUN_MIN, STREAM_MIN) sending group_busy's frames without nulls each way: running sums over the runs, a hashing group-by, the same on the streaming engine.
SUMMING_WAYS = ((2**62, 0), (0, 2**62), (0, 0))


def busy_each_way(frame: pl.DataFrame) -> list[pl.DataFrame]:
    """group_busy over the reaching frame of `frame` (grouped on `g`), once per SUMMING_WAYS."""
    out = []
    for run_min, stream_min in SUMMING_WAYS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(intervals_module, "RUN_MIN", run_min)
            patch.setattr(exprs_module, "STREAM_MIN", stream_min)
            out.append(group_busy(reaching(frame, "g"), "g"))
    return out


def test_sums_past_int64_wrap_alike_whichever_way_the_groups_are_summed() -> None:
    """Durations whose sum passes int64 give every way the same total: the integer sum taken modulo 2**64, as plain Python computes it."""
    big = 2**62 + 12_345
    frame = pl.DataFrame({"g": [0, 0, 0, 1], "ts": [0, 1, 2, 5], "end": [big, big + 1, big + 2, 9]})
    wrapped = (3 * big + 2**63) % 2**64 - 2**63  # three durations of `big`, in two's complement
    assert [out["total"].to_list() for out in busy_each_way(frame)] == [[wrapped, 4]] * len(SUMMING_WAYS)
