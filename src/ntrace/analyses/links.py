"""Launch links: which runtime-API call started which device activity, by correlation id or by ac2g flow."""

from __future__ import annotations

import polars as pl

_LINK_SCHEMA = pl.Schema({"call_idx": pl.Int64(), "exec_idx": pl.Int64(), "via": pl.String()})


def launch_links(events: pl.DataFrame, complete: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """One row per device-side activity linked to the runtime call that launched it: (call_idx, exec_idx, via).

    Correlation ids are the primary key (Kineto writes them on both sides); ac2g flows fill in
    activities whose correlation is missing. Each activity gets at most one call. `complete` is
    `events`' complete events (or those among them that can take part: runtime calls and device-side
    activities), eager or lazy: lazy, each query below copies only the columns it reads.
    """
    slices = complete.lazy().select("idx", "lane", "side", "correlation", "pid", "tid", "ts")
    calls = slices.filter(pl.col("lane") == "runtime_api")
    execs = slices.filter(pl.col("side") == "device")
    by_corr = (
        calls.filter(pl.col("correlation").is_not_null())
        .unique("correlation", keep="first")
        .select("correlation", call_idx="idx")
        .join(execs.filter(pl.col("correlation").is_not_null()).select("correlation", exec_idx="idx"), on="correlation")
        .select("call_idx", "exec_idx", via=pl.lit("correlation"))
        .collect()
    )
    by_flow = _flow_links(events, calls, execs, by_corr["exec_idx"])
    # correlation alone gives each activity one call (one call per correlation id); flows may bind an activity twice
    links = by_corr if by_flow.is_empty() else pl.concat([by_corr, by_flow], how="vertical").unique("exec_idx", keep="first", maintain_order=True)
    return links.cast(_LINK_SCHEMA).sort("exec_idx")


def _flow_links(events: pl.DataFrame, calls: pl.LazyFrame, execs: pl.LazyFrame, linked: pl.Series) -> pl.DataFrame:
    """Links from ac2g flow pairs: each flow end binds to the first slice on its track (pid, tid) that starts at the flow's ts.

    Only activities not `linked` by correlation can use a flow link, so only their flows are
    followed to the call side.
    """
    ends = (
        events.lazy()  # lazy: only the columns used are copied out of the events frame
        .filter(pl.col("flow_id").is_not_null() & pl.col("ph").is_in(["s", "f"]) & (pl.col("cat") == "ac2g"))
        .select("flow_id", "pid", "tid", "ts")
        .collect(engine="in-memory")  # the streaming engine is slower on this small query
    )
    if ends.is_empty():
        return pl.DataFrame(schema=_LINK_SCHEMA)

    def bound(ends: pl.DataFrame, keyed: pl.DataFrame, name: str) -> pl.DataFrame:
        return ends.join(keyed, on=["pid", "tid", "ts"]).select("flow_id", pl.col("idx").alias(name)).unique("flow_id")

    def first_at(slices: pl.LazyFrame, points: pl.DataFrame) -> pl.DataFrame:
        """The first of `slices` at each of `points` (pid, tid, ts); only slices at those points are looked at."""
        at = slices.select("pid", "tid", "ts", "idx").join(points.lazy().select("pid", "tid", "ts").unique(), on=["pid", "tid", "ts"], how="semi", maintain_order="left")
        return at.unique(["pid", "tid", "ts"], keep="first").collect()

    unlinked = execs.filter(~pl.col("idx").is_in(linked.implode())).select("idx", "pid", "tid", "ts").collect()
    to_execs = bound(ends, first_at(execs, unlinked).filter(pl.col("idx").is_in(unlinked["idx"].implode())), "exec_idx")
    to_flows = ends.filter(pl.col("flow_id").is_in(to_execs["flow_id"].implode()))
    to_calls = bound(to_flows, first_at(calls, to_flows), "call_idx")
    return to_calls.join(to_execs, on="flow_id").select("call_idx", "exec_idx", via=pl.lit("flow"))
