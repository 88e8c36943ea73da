"""Launch links: which runtime-API call started which device activity, by correlation id or by ac2g flow."""

from __future__ import annotations

import polars as pl

from ntrace.totals import thread_key

_LINK_SCHEMA = {"call_idx": pl.Int64, "exec_idx": pl.Int64, "via": pl.String}


def launch_links(events: pl.DataFrame, complete: pl.DataFrame) -> pl.DataFrame:
    """One row per device-side activity linked to the runtime call that launched it: (call_idx, exec_idx, via).

    Correlation ids are the primary key (Kineto writes them on both sides); ac2g flows fill in
    activities whose correlation is missing. Each activity gets at most one call. `complete` is
    `events`' complete events (Profile.complete, made once). One lazy query: only the columns used
    are copied, and the flow side shares the work.
    """
    slices = complete.lazy().select("idx", "lane", "side", "correlation", thread_key(pl.col("pid"), pl.col("tid")), "ts")
    calls = slices.filter(pl.col("lane") == "runtime_api")
    execs = slices.filter(pl.col("side") == "device")
    by_corr = (
        calls.filter(pl.col("correlation").is_not_null())
        .unique("correlation", keep="first")
        .select("correlation", call_idx="idx")
        .join(execs.filter(pl.col("correlation").is_not_null()).select("correlation", exec_idx="idx"), on="correlation")
        .select("call_idx", "exec_idx", via=pl.lit("correlation"))
    )
    by_flow = _flow_links(events, calls, execs)
    links = pl.concat([by_corr, by_flow], how="vertical").unique("exec_idx", keep="first", maintain_order=True)
    return links.cast(_LINK_SCHEMA).sort("exec_idx").collect(engine="in-memory")  # the streaming engine is slower on these small joins


def _flow_links(events: pl.DataFrame, calls: pl.LazyFrame, execs: pl.LazyFrame) -> pl.LazyFrame:
    """Links from ac2g flow pairs: each flow end binds to the slice on its track (pid, tid) that starts at the flow's ts."""
    ends = (
        events.lazy()
        .filter(pl.col("flow_id").is_not_null() & pl.col("ph").is_in(["s", "f"]) & (pl.col("cat") == "ac2g"))
        .select("flow_id", thread_key(pl.col("pid"), pl.col("tid")), "ts")
    )

    def bound(slices: pl.LazyFrame, name: str) -> pl.LazyFrame:
        keyed = slices.select("thread", "ts", "idx").unique(["thread", "ts"], keep="first")
        return ends.join(keyed, on=["thread", "ts"]).select("flow_id", pl.col("idx").alias(name)).unique("flow_id")

    return (
        bound(calls, "call_idx")
        .join(bound(execs, "exec_idx"), on="flow_id")
        .select("call_idx", "exec_idx", via=pl.lit("flow"))
    )
