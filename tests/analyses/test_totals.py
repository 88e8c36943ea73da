"""totals.py: the track each event is drawn on, checked against a plain-Python statement of the rule for every combination."""

from __future__ import annotations

import itertools

import polars as pl
import pytest

from ntrace.lanes import LANES
from ntrace.analyses.totals import spans, thread_key, track


def _expected(lane: str | None, side: str | None, pid: str | None, tid: str | None, stream: int | None) -> str:
    pid, tid = pid if pid is not None else "?", tid if tid is not None else "?"
    if lane == "hardware":
        return f"device {pid}"
    if side == "device":
        return f"device {pid} stream {tid}"
    if lane == "device" and stream is not None:
        return f"stream {stream}"
    return f"pid {pid} tid {tid}"


@pytest.mark.parametrize("lane_type", [pl.Enum(LANES), pl.String], ids=["enum", "text"])
def test_track_follows_the_rule_for_every_combination(lane_type: pl.DataType) -> None:
    rows = list(itertools.product([*LANES, None], ["host", "device", None], ["1", None], ["7", None], [3, -1, None]))
    frame = pl.DataFrame(rows, schema={"lane": lane_type, "side": pl.String, "pid": pl.String, "tid": pl.String, "stream": pl.Int64}, orient="row")
    assert frame.select(track())["track"].to_list() == [_expected(*row) for row in rows]


def test_thread_key_is_one_integer_per_pid_tid_pair() -> None:
    frame = pl.DataFrame({"pid": ["1", "1", "2", "1", None], "tid": ["7", "8", "7", "7", "7"]})
    keys = frame.select(thread_key(pl.col("pid"), pl.col("tid")))["thread"].to_list()
    assert keys[0] == keys[3] and len({keys[0], keys[1], keys[2]}) == 3 and keys[4] is None


def test_spans_codes_name_every_event_and_sort_like_the_names() -> None:
    # every combination, twice, some events not kept, and pids that could collide with other kinds' names once formatted
    rows = list(itertools.product([*LANES, None], ["host", "device", None], ["1", "1 stream 7", None], ["7", None], [3, None])) * 2
    frame = pl.DataFrame(rows, schema={"lane": pl.Enum(LANES), "side": pl.String, "pid": pl.String, "tid": pl.String, "stream": pl.Int64}, orient="row")
    frame = frame.with_columns(ts=pl.int_range(pl.len()), end=pl.int_range(pl.len()) + 5)
    keep = pl.Series([i % 3 != 1 for i in range(frame.height)])
    out, names = spans(frame, keep)
    kept = frame.filter(keep)
    assert names.to_list() == sorted(set(kept.select(track())["track"].to_list()))
    assert names.gather(out["track"]).to_list() == kept.select(track())["track"].to_list()
    assert out.select("lane", "ts", "end").equals(kept.select("lane", "ts", "end"))
