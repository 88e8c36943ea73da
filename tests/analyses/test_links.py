"""links.py: launch links by correlation and by ac2g flow, joined across frames on the slices' own (pid, tid, ts)."""

from __future__ import annotations

import polars as pl

from ntrace.analyses.links import launch_links

_SCHEMA = {"idx": pl.Int64, "ph": pl.String, "cat": pl.String, "pid": pl.String, "tid": pl.String, "ts": pl.Int64,
           "correlation": pl.Int64, "flow_id": pl.Int64, "lane": pl.String, "side": pl.String}


def test_flow_binds_the_slice_at_its_end_whatever_order_the_threads_first_appear_in() -> None:
    """Flow ends name pid "A" first, the slices "B" first; the flow binds the kernel at its end, not the one on the other pid."""
    events = pl.DataFrame(
        [
            (0, "X", "cuda_runtime", "B", "1", 10, None, None, "runtime_api", "host"),
            (1, "X", "kernel", "A", "s", 20, None, None, "hardware", "device"),
            (2, "X", "kernel", "B", "s", 20, None, None, "hardware", "device"),
            (3, "s", "ac2g", "A", "1", 99, None, 6, "other", "host"),
            (4, "s", "ac2g", "B", "1", 10, None, 5, "other", "host"),
            (5, "f", "ac2g", "B", "s", 20, None, 5, "other", "host"),
            (6, "X", "cuda_runtime", "A", "1", 30, 7, None, "runtime_api", "host"),
            (7, "X", "kernel", "A", "s", 40, 7, None, "hardware", "device"),
        ],
        schema=_SCHEMA,
        orient="row",
    )
    links = launch_links(events, events.filter(pl.col("ph") == "X"))
    assert links.rows() == [(0, 2, "flow"), (6, 7, "correlation")]


def test_flow_binds_the_first_slice_at_its_point_and_never_a_later_one() -> None:
    """Two kernels and two calls share a point: the flow binds the first of each. When the first kernel already has its call
    by correlation, the flow is not moved on to the second kernel."""
    events = pl.DataFrame(
        [
            (0, "X", "cuda_runtime", "B", "1", 10, None, None, "runtime_api", "host"),
            (1, "X", "cuda_runtime", "B", "1", 10, None, None, "runtime_api", "host"),
            (2, "X", "kernel", "B", "s", 20, None, None, "hardware", "device"),
            (3, "X", "kernel", "B", "s", 20, None, None, "hardware", "device"),
            (4, "s", "ac2g", "B", "1", 10, None, 5, "other", "host"),
            (5, "f", "ac2g", "B", "s", 20, None, 5, "other", "host"),
            (6, "X", "cuda_runtime", "B", "1", 50, 9, None, "runtime_api", "host"),
            (7, "X", "kernel", "B", "s", 60, 9, None, "hardware", "device"),
            (8, "X", "kernel", "B", "s", 60, None, None, "hardware", "device"),
            (9, "s", "ac2g", "B", "1", 50, None, 8, "other", "host"),
            (10, "f", "ac2g", "B", "s", 60, None, 8, "other", "host"),
        ],
        schema=_SCHEMA,
        orient="row",
    )
    links = launch_links(events, events.filter(pl.col("ph") == "X"))
    assert links.rows() == [(0, 2, "flow"), (6, 7, "correlation")]
