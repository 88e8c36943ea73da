"""Launch links: which runtime-API call started which device activity, by correlation id or by ac2g flow."""

from __future__ import annotations

import polars as pl

_LINK_SCHEMA = {"call_idx": pl.Int64, "exec_idx": pl.Int64, "via": pl.String}


def launch_links(events: pl.DataFrame) -> pl.DataFrame:
    """One row per device-side activity linked to the runtime call that launched it: (call_idx, exec_idx, via).

    Correlation ids are the primary key (Kineto writes them on both sides); ac2g flows fill in
    activities whose correlation is missing. Each activity gets at most one call.
    """
    complete = events.filter(pl.col("ph") == "X")
    calls = complete.filter(pl.col("lane") == "runtime_api")
    execs = complete.filter(pl.col("side") == "device")
    by_corr = (
        calls.filter(pl.col("correlation").is_not_null())
        .unique("correlation", keep="first")
        .select("correlation", call_idx="idx")
        .join(execs.filter(pl.col("correlation").is_not_null()).select("correlation", exec_idx="idx"), on="correlation")
        .select("call_idx", "exec_idx", via=pl.lit("correlation"))
    )
    by_flow = _flow_links(events, calls, execs)
    links = pl.concat([by_corr, by_flow], how="vertical").unique("exec_idx", keep="first", maintain_order=True)
    return links.cast(_LINK_SCHEMA).sort("exec_idx")


def _flow_links(events: pl.DataFrame, calls: pl.DataFrame, execs: pl.DataFrame) -> pl.DataFrame:
    """Links from ac2g flow pairs: each flow end binds to the slice on its track that starts at the flow's ts."""
    flows = events.filter(pl.col("ph").is_in(["s", "f"]) & (pl.col("cat") == "ac2g") & pl.col("flow_id").is_not_null())
    if flows.is_empty():
        return pl.DataFrame(schema=_LINK_SCHEMA)
    ends = flows.select("flow_id", "pid", "tid", "ts")

    def bound(slices: pl.DataFrame, name: str) -> pl.DataFrame:
        keyed = slices.select("pid", "tid", "ts", "idx").unique(["pid", "tid", "ts"], keep="first")
        return ends.join(keyed, on=["pid", "tid", "ts"]).select("flow_id", pl.col("idx").alias(name)).unique("flow_id")

    return (
        bound(calls, "call_idx")
        .join(bound(execs, "exec_idx"), on="flow_id")
        .select("call_idx", "exec_idx", via=pl.lit("flow"))
    )
