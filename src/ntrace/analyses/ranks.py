"""Many ranks of one job: each trace's rank, its collectives and communication time, the cross-rank statistics, the clock alignment and the matched collectives (docs/definitions.md, "Ranks")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from ntrace.analyses.stats import nearest_rank
from ntrace.exprs import fmt, matches
from ntrace.io.bounds import INT64_MAX
from ntrace.summary import RankSummary, Summary

#: A collective: a device activity named like an NCCL/RCCL kernel, or a Neuron collective execution.
COLLECTIVE = matches("name", "(?i-u)nccl|rccl") | pl.col("name").is_in(["cc_running", "cc_exec_barrier"])

#: A rank number in a file name: rank_3, rank-3, rank3 (case-insensitive; the last such number wins).
RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)

#: The columns of a trace's collective instances (ns).
INSTANCE_SCHEMA = pl.Schema({"idx": pl.Int64(), "name": pl.String(), "device": pl.String(), "ts": pl.Int64(), "end": pl.Int64(), "sequence": pl.Int64()})

#: The columns of a trace's communication time per device (ns).
COMMUNICATION_SCHEMA = pl.Schema({"device": pl.String(), "comm": pl.Int64(), "exposed": pl.Int64()})

#: How far from the median, in median absolute deviations, a rank's figure must be to be an outlier.
MAD_LIMIT = 3


def nearest_rank_expr(column: str, p: int) -> pl.Expr:
    """The p-th nearest-rank percentile of `column` as an aggregation: the ⌈p·n/100⌉-th smallest (null for no values)."""
    n = pl.col(column).count()
    return pl.when(n > 0).then(pl.col(column).drop_nulls().sort().get(((n * p + 99) // 100 - 1).clip(lower_bound=0)))


def collective_instances(activities: pl.DataFrame) -> pl.DataFrame:
    """The collectives among the device activities (idx, name, pid, ts, end, sequence): idx, name, device (`device {pid}`), ts, end, sequence, by start."""
    return (
        activities.filter(COLLECTIVE)
        .select("idx", "name", device=fmt("device {}", pl.col("pid").fill_null("?")), ts="ts", end="end", sequence="sequence")
        .sort("ts", "idx")
        .cast(dict(INSTANCE_SCHEMA))  # type: ignore[arg-type]
    )


def communication_time(collectives: pl.DataFrame, compute: pl.DataFrame) -> pl.DataFrame:
    """Per device: `comm` (length of the union of its collectives' intervals) and `exposed` (the part of it no compute interval of that device covers).

    Both frames hold (device, ts, end). A sweep over every interval's two ends counts, between
    consecutive points of a device, how many collectives and compute intervals are open.
    """
    points = pl.concat(
        [
            collectives.select("device", t="ts", dc=pl.lit(1), dk=pl.lit(0)),
            collectives.select("device", t="end", dc=pl.lit(-1), dk=pl.lit(0)),
            compute.select("device", t="ts", dc=pl.lit(0), dk=pl.lit(1)),
            compute.select("device", t="end", dc=pl.lit(0), dk=pl.lit(-1)),
        ]
    ).sort("device", "t")
    open_ = points.with_columns(
        comm_open=pl.col("dc").cum_sum().over("device") > 0,
        compute_open=pl.col("dk").cum_sum().over("device") > 0,
        length=(pl.col("t").shift(-1).over("device") - pl.col("t")).fill_null(0),
    )
    devices = collectives.select("device").unique(maintain_order=True)
    per = open_.group_by("device").agg(
        comm=pl.col("length").filter(pl.col("comm_open")).sum(),
        exposed=pl.col("length").filter(pl.col("comm_open") & ~pl.col("compute_open")).sum(),
    )
    return devices.join(per, on="device", how="left").select("device", "comm", "exposed").cast(dict(COMMUNICATION_SCHEMA)).sort("device")  # type: ignore[arg-type]


def rank_figures(steps: pl.DataFrame, lanes: pl.DataFrame, idle_gaps: pl.Series, communication: pl.DataFrame, launch_latencies: pl.Series) -> dict[str, int]:
    """One rank's figures (ns) from its steps, lane totals, hardware idle gaps, communication and launch latencies: step count and percentiles, busy per lane as busy_<lane>, idle, comm, exposed comm, launch latency p50."""
    durations = steps["dur"]
    return {
        "steps": steps.height, "step_p50": nearest_rank(durations, 50), "step_p90": nearest_rank(durations, 90),
        **{f"busy_{lane}": busy for lane, busy in lanes.select("lane", "busy").iter_rows()},
        "idle": int(idle_gaps.sum()), "comm": int(communication["comm"].sum()), "exposed_comm": int(communication["exposed"].sum()),
        "launch_latency_p50": nearest_rank(launch_latencies, 50),
    }  # fmt: skip


def rank_summary(summary: Summary) -> RankSummary:
    """What `ranks` keeps of one trace's Summary: its figures (ns; busy per lane as busy_<lane>), steps, collective instances and warnings (not those about the op table)."""
    figures = rank_figures(summary.steps, summary.lanes, summary.idle_gaps, summary.communication, summary.launch_latencies)
    warnings = tuple(w for w in summary.warnings if w not in summary.op_warnings)
    return RankSummary(summary.path, summary.meta, warnings, figures, summary.steps, summary.collectives, summary.source)


def rank_of(meta: Mapping[str, Any], path: Path) -> tuple[int | None, str]:
    """A trace's rank and the rule that gave it: `distributedInfo.rank`, else a number in the file name, else Neuron's single `worker_gid`; (None, "none") without any."""
    info = meta.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, Mapping) else None
    if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
        return rank, "distributedInfo.rank"
    found = RANK_IN_NAME.findall(path.name)
    if found:
        return int(found[-1]), "file name"
    gids = meta.get("worker_gids")
    if isinstance(gids, list) and len(gids) == 1 and isinstance(gids[0], int):
        return gids[0], "worker_gid"
    return None, "none"


def cross_rank_stats(table: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """Per figure column of the per-rank table: min, median (nearest rank) and max over the ranks."""
    rows = [
        table.select(column=pl.lit(c), min=pl.col(c).min().cast(pl.Float64), median=nearest_rank_expr(c, 50).cast(pl.Float64), max=pl.col(c).max().cast(pl.Float64))
        for c in columns
    ]
    return pl.concat(rows) if rows else pl.DataFrame(schema={"column": pl.String, "min": pl.Float64, "median": pl.Float64, "max": pl.Float64})


def outliers(table: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """The (column, rank) pairs whose value lies more than MAD_LIMIT median absolute deviations from the column's median: column, rank, value, median, mad."""
    parts = []
    for c in columns:
        value = pl.col(c).cast(pl.Int128) if table.schema[c].is_integer() else pl.col(c)  # two offsets can lie further apart than int64 reaches
        median = table.select(m=nearest_rank_expr(c, 50)).item()
        deviation = table.select("rank", value=pl.col(c), d=(value - median).abs())
        mad = deviation.select(nearest_rank_expr("d", 50)).item()
        parts.append(
            deviation.filter(pl.col("d") > MAD_LIMIT * mad).select(
                column=pl.lit(c), rank="rank", value=pl.col("value").cast(pl.Float64), median=pl.lit(median, pl.Float64), mad=pl.lit(mad, pl.Float64)
            )
        )
    schema = {"column": pl.String, "rank": pl.Int64, "value": pl.Float64, "median": pl.Float64, "mad": pl.Float64}
    return pl.concat(parts) if parts else pl.DataFrame(schema=schema)


def instance_keys(instances: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """Every rank's collectives (rank, name, device, ts, end, sequence, idx) with the `key` that matches them across ranks, and the rule used.

    By `Sequence number` when every instance carries one, else by occurrence: the n-th instance
    of a name on a rank (by start, then file order) is the n-th on every other rank.
    """
    if instances.height and instances["sequence"].null_count() == 0:
        return instances.with_columns(key=pl.col("sequence")), "sequence number"
    ordered = instances.sort("rank", "name", "ts", "idx")
    return ordered.with_columns(key=pl.int_range(0, pl.len(), dtype=pl.Int64).over("rank", "name")), "occurrence"


def partial_instances(keyed: pl.DataFrame, ranks: int) -> pl.DataFrame:
    """Per collective name whose instances are not all on every one of `ranks` ranks: name, the instances on only some ranks, and the instance count per rank."""
    held = keyed.group_by("name", "key").agg(on=pl.col("rank").n_unique())
    partial = held.filter(pl.col("on") < ranks).group_by("name").agg(partial=pl.len())
    counts = keyed.group_by("name", "rank").agg(n=pl.len()).sort("rank").group_by("name").agg(per_rank=fmt("rank {} {}", "rank", "n").str.join(", "))
    return partial.join(counts, on="name", how="left").sort("name")


def matched(keyed: pl.DataFrame, ranks: int) -> pl.DataFrame:
    """The collective instances present on all `ranks` ranks (once each): rank, name, key, ts, end."""
    full = keyed.group_by("name", "key").agg(on=pl.col("rank").n_unique(), rows=pl.len()).filter((pl.col("on") == ranks) & (pl.col("rows") == ranks))
    return keyed.join(full.select("name", "key"), on=["name", "key"]).select("rank", "name", "key", "ts", "end")


def clock_offsets(instances: pl.DataFrame, ranks: list[int]) -> tuple[pl.DataFrame, list[int]]:
    """Per rank: `offset`, the median (nearest rank) over matched instances of its end − the lowest rank's end (0 without any); and the ranks whose offset int64 ns cannot hold (given 0 here).

    The differences are taken in Int128: two ranks' clocks can each fit int64 and lie further apart than it reaches.
    """
    ref = instances.filter(pl.col("rank") == min(ranks)).select("name", "key", ref_end="end")
    diffs = instances.join(ref, on=["name", "key"]).with_columns(d=pl.col("end").cast(pl.Int128) - pl.col("ref_end"))
    per = diffs.group_by("rank").agg(offset=nearest_rank_expr("d", 50))
    offsets = pl.DataFrame({"rank": ranks}, schema={"rank": pl.Int64}).join(per, on="rank", how="left", maintain_order="left").with_columns(pl.col("offset").fill_null(0))
    far = offsets.filter(~_fits("offset"))["rank"].to_list()
    return offsets.select("rank", pl.when(_fits("offset")).then("offset").otherwise(0).cast(pl.Int64).alias("offset")), far


def _fits(column: str) -> pl.Expr:
    """Whether an Int128 column's values lie within int64."""
    return pl.col(column).is_between(-INT64_MAX - 1, INT64_MAX)


def aligned_instances(instances: pl.DataFrame, offsets: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Per matched instance (name, key), on the reference clock: ranks, first and latest start, latest end, `skew` (latest − first start), `transfer` (latest end − latest start), `behind` (Σ latest − each start); and how many were left out.

    Computed in Int128. An instance whose figures int64 ns cannot hold is left out, and so are
    those with the most `behind` beyond what sums within int64 (the stragglers' wait sums them).
    """
    shifted = _shifted(instances, offsets).with_columns(stop=pl.col("end").cast(pl.Int128) - pl.col("offset"))
    figures = ("first", "latest", "stop", "behind", "skew", "transfer")
    per = (
        shifted.group_by("name", "key")
        .agg(
            ranks=pl.len(), first=pl.col("start").min(), latest=pl.col("start").max(), stop=pl.col("stop").max(),
            behind=(pl.col("start").max() - pl.col("start")).sum(),  # Σ latest − start: the wait the last rank caused (summing the starts themselves passes int64 at six ranks)
        )  # fmt: skip
        .with_columns(skew=pl.col("latest") - pl.col("first"), transfer=pl.col("stop") - pl.col("latest"))
        .sort("name", "key")
    )
    fitting = per.filter(pl.all_horizontal(_fits(c) for c in figures)).with_row_index("_i")
    kept = fitting.sort("behind", "_i").filter(pl.col("behind").cum_sum() <= INT64_MAX).sort("_i").drop("_i")  # the least behind first
    return kept.with_columns(pl.col(figures).cast(pl.Int64)), per.height - kept.height


def _shifted(instances: pl.DataFrame, offsets: pl.DataFrame) -> pl.DataFrame:
    """The instances with `start`, their start on the reference clock (Int128: a start and an offset can each fit int64 while their difference does not)."""
    return instances.join(offsets.select("rank", "offset"), on="rank").with_columns(start=pl.col("ts").cast(pl.Int128) - pl.col("offset"))


def collective_stats(per_instance: pl.DataFrame) -> pl.DataFrame:
    """Per collective name: matched instances, skew p50 and max, transfer p50 (ns, nearest rank)."""
    return (
        per_instance.group_by("name")
        .agg(instances=pl.len(), skew_p50=nearest_rank_expr("skew", 50), skew_max=pl.col("skew").max(), transfer_p50=nearest_rank_expr("transfer", 50))
        .with_columns(pl.col("instances").cast(pl.Int64))
        .sort("name")
    )


def stragglers(instances: pl.DataFrame, offsets: pl.DataFrame, per_instance: pl.DataFrame) -> pl.DataFrame:
    """Per rank: `times_last` (matched instances with skew > 0 where it started last, ties counting for each), `pct_last` of all matched instances, `wait_caused` (Σ there of its start − each other rank's start); most wait first."""
    total = per_instance.height
    last = _shifted(instances, offsets).join(per_instance.filter(pl.col("skew") > 0).select("name", "key", "latest", "behind"), on=["name", "key"]).filter(
        pl.col("start") == pl.col("latest")
    )
    per = last.group_by("rank").agg(times_last=pl.len(), wait_caused=pl.col("behind").sum())
    return (
        offsets.select("rank")
        .join(per, on="rank", how="left", maintain_order="left")
        .select(
            "rank",
            times_last=pl.col("times_last").fill_null(0).cast(pl.Int64),
            pct_last=(100 * pl.col("times_last").fill_null(0) / total) if total else pl.lit(0.0),
            wait_caused=pl.col("wait_caused").fill_null(0).cast(pl.Int64),
        )
        .sort(["wait_caused", "times_last", "rank"], descending=[True, True, False])
    )
