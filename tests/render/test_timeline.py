"""What the report's timeline embeds (render.timeline): nesting-depth rows that never overlap, budgets that bound the file, and pyramid levels that keep every gap wider than their resolution."""

from __future__ import annotations

import random
from itertools import accumulate
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import write_trace, x
from ntrace import analyze
from ntrace.render import timeline as tl


def _nested(rng: random.Random, start: int, end: int, level: int, out: list[tuple[int, int, int]]) -> None:
    """Random properly nested intervals inside [start, end), each recorded with its nesting level."""
    t = start
    while level < 5 and t < end - 4:
        a = rng.randrange(t, end - 3)
        b = rng.randrange(a + 1, min(end, a + 1 + (end - start) // 2) + 1)
        out.append((a, b, level))
        _nested(rng, a, b, level + 1, out)
        t = b + rng.randrange(0, 3)


@pytest.mark.parametrize("seed", range(20))
def test_depth_rows_follow_nesting_and_never_overlap(seed: int) -> None:
    rng = random.Random(seed)
    nested: list[tuple[int, int, int]] = []
    _nested(rng, 0, 10_000, 0, nested)
    overlapping = [(a, a + rng.randrange(1, 300)) for a in (rng.randrange(0, 10_000) for _ in range(200))]  # partly overlapping, on another track
    frame = pl.DataFrame(
        {
            "lane": ["framework"] * (len(nested) + len(overlapping)),
            "track": ["t1"] * len(nested) + ["t2"] * len(overlapping),
            "ts": [a for a, _, _ in nested] + [a for a, _ in overlapping],
            "end": [b for _, b, _ in nested] + [b for _, b in overlapping],
            "level": [lv for _, _, lv in nested] + [-1] * len(overlapping),
        }
    )
    out = tl.depths(frame)
    t1 = out.filter(pl.col("track") == "t1")
    assert (t1["depth"] == t1["level"]).all()  # properly nested: depth is the nesting level
    for (_, _, _), part in out.sort("ts").group_by("lane", "track", "depth", maintain_order=True):
        starts, ends = part["ts"].to_list(), part["end"].to_list()
        assert all(s >= e for s, e in zip(starts[1:], ends))  # one depth's events never overlap


def _stack_depths(rows: list[tuple[str, str, int, int]]) -> list[int]:
    """The oracle: per row (lane, track, ts, end), in input order, the size of its track's stack at its start, walking each track by start (longer first, then input order) and popping while the top has ended."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i][0], rows[i][1], rows[i][2], -rows[i][3], i))
    depth = [0] * len(rows)
    stacks: dict[tuple[str, str], list[int]] = {}
    for i in order:
        lane, track, ts, end = rows[i]
        stack = stacks.setdefault((lane, track), [])
        while stack and stack[-1] <= ts:
            stack.pop()
        depth[i] = len(stack)
        stack.append(end)
    return depth


@given(st.lists(st.tuples(st.sampled_from(["framework", "hardware"]), st.sampled_from(["a", "b"]), st.integers(0, 60), st.integers(0, 30)), max_size=80))
@settings(max_examples=300, deadline=None)
def test_depths_equal_a_stack_walk(spans: list[tuple[str, str, int, int]]) -> None:
    rows = [(lane, track, ts, ts + dur) for lane, track, ts, dur in spans]
    frame = pl.DataFrame({"lane": [r[0] for r in rows], "track": [r[1] for r in rows], "ts": [r[2] for r in rows], "end": [r[3] for r in rows], "i": list(range(len(rows)))},
                         schema={"lane": pl.String, "track": pl.String, "ts": pl.Int64, "end": pl.Int64, "i": pl.Int64})  # fmt: skip
    got = tl.depths(frame).sort("i")["depth"].to_list()
    assert got == _stack_depths(rows)


def _kernel_trace(tmp_path: Path, n: int, seed: int = 7) -> tuple[Path, list[tuple[int, int]]]:
    """`n` kernels on one device separated by gaps of 1 µs to 5 ms, and the gaps (ns from the first kernel)."""
    rng = random.Random(seed)
    gaps_us = [rng.choice([1, 2, 3, 10, 50, 400, 5000]) for _ in range(n - 1)]
    durs_us = [rng.randrange(1, 40) for _ in range(n)]
    starts = [0, *accumulate(d + g for d, g in zip(durs_us, gaps_us))]
    events = [x(f"k{i % 13}", "kernel", s, d, pid=0, tid=7) for i, (s, d) in enumerate(zip(starts, durs_us))]
    path = write_trace(tmp_path / "t.json", [*events, *(x("aten::op", "cpu_op", s, 1) for s in starts[:300])])
    gaps = [((s + d) * 1000, nxt * 1000) for s, d, nxt in zip(starts, durs_us, starts[1:])]
    return path, gaps


def test_budgets_bound_the_embedded_data_and_each_level_keeps_the_gaps_wider_than_its_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tl, "EXACT_BUDGET", 1000)
    monkeypatch.setattr(tl, "SMALL_ROW", 100)
    monkeypatch.setattr(tl, "GAP_BUDGET", 50)
    path, gaps = _kernel_trace(tmp_path, 4000)
    (summary,) = analyze(path, timeline=True).summaries
    assert summary.timeline is not None
    data = tl.timeline_data(summary, summary.timeline, summary.window_ns)
    assert data["events"] == 4300 and data["exact"] <= 1000
    assert data["exact"] == sum(len(r["ex"]["t"]) for r in data["rows"] if r["ex"])
    (hw_i,) = [i for i, r in enumerate(data["rows"]) if r["lane"] == "hardware"]
    hw = data["rows"][hw_i]
    assert hw["n"] == 4000 and hw["ex"] is None and len(hw["lv"]) >= 3  # over the budget: drawn from its levels only
    assert sum(len(lv["t"]) for r in data["rows"] for lv in r["lv"]) <= tl.BLOCK_BUDGET
    # the window starts at the first kernel (the cpu ops start with them), so gap times are from it
    assert summary.window[0] == summary.timeline.events["ts"].min()
    resolutions = [lv["r"] for lv in hw["lv"]]
    assert resolutions == sorted(resolutions, reverse=True) and len(set(resolutions)) == len(resolutions)
    for lv in hw["lv"]:
        starts = list(accumulate(lv["t"]))
        ends = [s + e for s, e in zip(starts, lv["e"])]
        assert sum(lv["c"]) == 4000  # every event in exactly one block
        between = list(zip(ends, starts[1:]))
        assert between == [g for g in gaps if g[1] - g[0] >= lv["r"]]  # exactly the gaps at least r wide
    marked = data["gaps"][str(hw_i)]
    assert len(marked["t"]) == 50 == data["gaps_drawn"] and data["gaps_total"] == 3999
    assert sorted(marked["d"]) == sorted(g[1] - g[0] for g in gaps)[-50:]  # the longest
