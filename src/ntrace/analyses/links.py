"""Launch links: which runtime-API call started which device activity, by correlation id or by ac2g flow (docs/definitions.md section 3)."""

from __future__ import annotations

import polars as pl

from ntrace.lanes import lower_is

_LINK_SCHEMA = pl.Schema({"call_idx": pl.Int64(), "exec_idx": pl.Int64(), "via": pl.String()})

#: The device activities: every device-side event but the annotation ranges drawn over kernels.
ACTIVITY = (pl.col("side") == "device") & (~lower_is("cat", "gpu_user_annotation")).fill_null(True)
#: The runtime calls that launch them.
CALL = pl.col("lane") == "runtime_api"


def launch_links(events: pl.DataFrame, complete: pl.DataFrame | pl.LazyFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """One row per device activity linked to the runtime call that launched it: (call_idx, exec_idx, via), sorted by exec_idx.

    Correlation ids come first (for each id, the first call in file order carrying it); ac2g
    flows link the activities still unlinked. `complete` holds the trace's complete events (or
    those that can take part: runtime calls and device activities) in file order, eager or lazy.
    Ids are matched only between events of the same `by` columns (traces stacked).
    """
    slices = complete.lazy().select(*by, "idx", "lane", "side", "cat", "correlation", "pid", "tid", "ts")
    correlation = [*by, "correlation"]
    calls = slices.filter(CALL)
    activities = slices.filter(ACTIVITY)
    by_corr = (
        calls.filter(pl.col("correlation").is_not_null())
        .unique(correlation, keep="first", maintain_order=True)
        .select(*correlation, call_idx="idx")
        .join(activities.filter(pl.col("correlation").is_not_null()).select(*correlation, exec_idx="idx"), on=correlation)
        .select("call_idx", "exec_idx", via=pl.lit("correlation"))
        .collect(engine="in-memory")
    )
    by_flow = _flow_links(events, calls, activities, by_corr["exec_idx"], by)
    return pl.concat([by_corr.cast(_LINK_SCHEMA), by_flow.cast(_LINK_SCHEMA)]).sort("exec_idx")


def _flow_links(events: pl.DataFrame, calls: pl.LazyFrame, activities: pl.LazyFrame, linked: pl.Series, by: tuple[str, ...]) -> pl.DataFrame:
    """Links made by ac2g flows for the activities not `linked` by correlation.

    A flow event binds to the first runtime call, or the first device activity, starting at its
    (pid, tid, ts); a flow id bound to a call and to an unlinked activity links them (the first of
    each, in file order, when it binds to several; an activity bound by two flow ids goes to the
    one that appears first).
    """
    if activities.select(pl.len()).collect(engine="in-memory").item() == linked.len():
        return pl.DataFrame(schema=_LINK_SCHEMA)  # every activity is linked by correlation (each once): no flow can add a link
    flows = (
        events.lazy()
        .filter(pl.col("flow_id").is_not_null() & pl.col("ph").is_in(["s", "f"]) & lower_is("cat", "ac2g"))
        .select(*by, "idx", "flow_id", "pid", "tid", "ts")
        .collect(engine="in-memory")
    )
    if flows.is_empty():
        return pl.DataFrame(schema=_LINK_SCHEMA)
    point, flow = [*by, "pid", "tid", "ts"], [*by, "flow_id"]
    order = flows.group_by(flow).agg(pl.col("idx").min().alias("_first"))

    def first_at(slices: pl.LazyFrame) -> pl.DataFrame:
        """The first of `slices` (file order) at each point where a flow event lies."""
        at = slices.select(*point, "idx").join(flows.lazy().select(point).unique(), on=point, how="semi")
        return at.sort("idx").unique(point, keep="first", maintain_order=True).collect(engine="in-memory")

    bound_calls = flows.join(first_at(calls), on=point).group_by(flow).agg(call_idx=pl.col("idx_right").min())
    unlinked = first_at(activities).filter(~pl.col("idx").is_in(linked.implode()))
    bound_execs = flows.join(unlinked, on=point).group_by(flow).agg(exec_idx=pl.col("idx_right").min())
    return (
        bound_calls.join(bound_execs, on=flow)
        .join(order, on=flow)
        .sort("_first")
        .unique("exec_idx", keep="first", maintain_order=True)
        .select("call_idx", "exec_idx", via=pl.lit("flow"))
    )
