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


def test_flows_are_not_read_once_correlation_links_every_activity_and_are_when_one_is_left(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every kernel linked by correlation: the flows (which could only link the unlinked) are not even selected, and the links
    are the correlation ones. One kernel left without a correlation: its flow links it, as before."""
    import ntrace.analyses.links as links_module

    rows = [
        (0, "X", "cuda_runtime", "B", "1", 10, 3, None, "runtime_api", "host"),
        (1, "X", "kernel", "B", "s", 20, 3, None, "hardware", "device"),
        (2, "s", "ac2g", "B", "1", 10, None, 5, "other", "host"),
        (3, "f", "ac2g", "B", "s", 20, None, 5, "other", "host"),
        (4, "X", "cuda_runtime", "B", "1", 30, 4, None, "runtime_api", "host"),
        (5, "X", "kernel", "B", "s", 40, 4, None, "hardware", "device"),
    ]
    events = pl.DataFrame(rows, schema=_SCHEMA, orient="row")
    real = links_module.lower_is
    read: list[str] = []
    monkeypatch.setattr(links_module, "lower_is", lambda column, text: read.append(text) or real(column, text))
    assert launch_links(events, events.filter(pl.col("ph") == "X")).rows() == [(0, 1, "correlation"), (4, 5, "correlation")]
    assert "ac2g" not in read
    unlinked = events.with_columns(correlation=pl.when(pl.col("idx") == 5).then(None).otherwise(pl.col("correlation")))
    flow = pl.DataFrame([(6, "s", "ac2g", "B", "1", 30, None, 7, "other", "host"), (7, "f", "ac2g", "B", "s", 40, None, 7, "other", "host")],
                        schema=_SCHEMA, orient="row")
    both = pl.concat([unlinked, flow])
    assert launch_links(both, both.filter(pl.col("ph") == "X")).rows() == [(0, 1, "correlation"), (4, 5, "flow")]
    assert "ac2g" in read
