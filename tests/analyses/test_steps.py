"""Host busy time per step (ntrace.analyses.steps.host_busy) against plain Python over integers, the host events given eagerly or as the lazy query the profile hands it."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from helpers import brute_union
from ntrace.analyses.steps import HOST_LANES, WINDOW_SCHEMA, host_busy
from ntrace.lanes import LANES

TIMES = st.integers(-50, 400)


def oracle(windows: list[tuple[int, int]], events: list[tuple[str, int, int]]) -> list[dict[str, int]]:
    """Per window (start, end), sorted by start: each host lane's busy ns over the events that start in it (the last window starting at or before them), clipped to its end."""
    busy: list[dict[str, list[tuple[int, int]]]] = [{lane: [] for lane in HOST_LANES} for _ in windows]
    for lane, ts, end in events:
        placed = [i for i, (start, _) in enumerate(windows) if start <= ts]
        if not placed:
            continue
        w = placed[-1]
        if ts < windows[w][1]:
            busy[w][lane].append((ts, min(end, windows[w][1])))
    return [{lane: brute_union(spans) for lane, spans in per.items()} for per in busy]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(TIMES, st.integers(0, 200)), min_size=1, max_size=6, unique_by=lambda w: w[0]),
    st.lists(st.tuples(st.sampled_from(HOST_LANES), TIMES, st.integers(0, 150)), max_size=30),
)
def test_host_busy_matches_plain_python_eager_and_lazy(windows: list[tuple[int, int]], events: list[tuple[str, int, int]]) -> None:
    spans = sorted((start, start + dur) for start, dur in windows)
    frame = pl.DataFrame(
        {"step": list(range(len(spans))), "name": [f"ProfilerStep#{i}" for i in range(len(spans))], "start": [s for s, _ in spans], "end": [e for _, e in spans], "dur": [e - s for s, e in spans]},
        schema=WINDOW_SCHEMA,
    )
    host = pl.DataFrame(
        {"lane": [lane for lane, _, _ in events], "ts": [ts for _, ts, _ in events], "end": [ts + dur for _, ts, dur in events]},
        schema={"lane": pl.Enum(LANES), "ts": pl.Int64, "end": pl.Int64},
    )
    eager, lazy = host_busy(frame, host), host_busy(frame, host.lazy())
    assert_frame_equal(eager, lazy)  # values and column types, also when no event falls in a window
    want = oracle(spans, [(lane, ts, ts + dur) for lane, ts, dur in events])
    assert [{lane: row[f"{lane}_busy"] for lane in HOST_LANES} for row in lazy.iter_rows(named=True)] == want
