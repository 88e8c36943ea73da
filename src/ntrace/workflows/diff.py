"""Regression diff of two profiles (BASE → TEST): per-op changes in device and CPU time, lane totals and gap statistics before and after.

Rows are the op table's (name, user annotation or not). An op is "added" or "removed" when only
one side has it; otherwise each of its two metrics (self device, self CPU) is "slower" or
"faster" when it moved by more than the threshold (percent of the base value) and "unchanged"
otherwise. Device time is judged only on rows with device time on either side, and the
"[unlinked device time]" row is never "added": it is device time, compared as such. Each side
may be one trace or a directory of traces, whose numbers are summed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import polars as pl

from ntrace.analyses import stats
from ntrace.analyses.ops import GROUP_SCHEMA as OP_GROUP_SCHEMA
from ntrace.analyses.ops import UNLINKED
from ntrace.analyses.part import Part
from ntrace.analyses.sums import summable
from ntrace.errors import InputError, valid_path
from ntrace.exprs import stacked
from ntrace.summary import Summary
from ntrace.workflows.analyze import Jobs, analyze
from ntrace.workflows.compare import comparability


@dataclass(frozen=True)
class Diff:
    """The diff of BASE and TEST: per-op rows, lanes and gaps side by side, the change in total device time, and what could make the comparison wrong."""

    base: Path
    test: Path
    threshold: float
    ops: pl.DataFrame  # name, user_annotation, status_device, status_cpu, base/test calls, self_device, self_cpu (ns), *_change_pct
    lanes: pl.DataFrame  # lane, base_total, test_total, base_busy, test_busy (ns)
    gaps: pl.DataFrame  # kind, stat, base, test (ns; count for stat "count")
    base_device: int
    test_device: int
    warnings: tuple[str, ...] = ()

    @property
    def device_change_pct(self) -> float | None:
        """Growth of total device time in percent (negative when TEST is faster); None when BASE has none and TEST has none either."""
        if self.base_device:
            return (self.test_device - self.base_device) / self.base_device * 100
        return float("inf") if self.test_device else None

    def fails(self, above_pct: float) -> bool:
        """True when total device time grew by more than `above_pct` percent: the CI gate."""
        change = self.device_change_pct
        return change is not None and change > above_pct


def _ops(summaries: Sequence[Summary]) -> pl.DataFrame:
    """Op rows summed over traces: name, user_annotation, calls, self_cpu, self_device."""
    groups = stacked([s.op_groups for s in summaries], OP_GROUP_SCHEMA)  # the rows of every trace's op table (default view) summed at once
    return groups.group_by("name", "user_annotation").agg(pl.col("calls", "self_cpu", "self_device").sum()).collect(engine="in-memory")


def _status(metric: str, threshold: float) -> pl.Expr:
    """added / removed / slower / faster / unchanged for one metric of the joined base/test rows; null where it has nothing to judge."""
    base, test = pl.col(f"base_{metric}"), pl.col(f"test_{metric}")
    change = pl.col(f"{metric}_change_pct")
    unlinked = pl.col("name") == UNLINKED
    judged = (
        pl.when(pl.col("base_calls").is_null())
        .then(pl.lit("added"))
        .when(pl.col("test_calls").is_null())
        .then(pl.lit("removed"))
        .when((base == 0) & (test > 0))
        .then(pl.lit("slower"))
        .when(change > threshold)
        .then(pl.lit("slower"))
        .when(change < -threshold)
        .then(pl.lit("faster"))
        .otherwise(pl.lit("unchanged"))
    )
    if metric == "self_device":  # only rows with device time, and the unlinked row as device time that grew or shrank
        b, t = base.fill_null(0), test.fill_null(0)
        judged = (
            pl.when((b == 0) & (t == 0)).then(None)
            .when(unlinked & (t > b * (1 + threshold / 100))).then(pl.lit("slower"))
            .when(unlinked & (t < b * (1 - threshold / 100))).then(pl.lit("faster"))
            .when(unlinked).then(pl.lit("unchanged"))
            .otherwise(judged)
        )  # fmt: skip
    else:
        judged = pl.when(unlinked).then(None).otherwise(judged)
    return judged.alias(f"status_{metric.removeprefix('self_')}")


def op_changes(base: Sequence[Summary], test: Sequence[Summary], threshold: float = 5.0) -> pl.DataFrame:
    """Per op row: status_device, status_cpu, base/test calls, self_device and self_cpu (ns) and their change in percent."""
    joined = _ops(base).join(_ops(test), on=["name", "user_annotation"], how="full", coalesce=True, suffix="_test")
    joined = joined.rename({c: f"base_{c}" for c in ("calls", "self_cpu", "self_device")}).rename(
        {f"{c}_test": f"test_{c}" for c in ("calls", "self_cpu", "self_device")}
    )
    pct = {
        f"{m}_change_pct": pl.when(pl.col(f"base_{m}") > 0).then((pl.col(f"test_{m}") - pl.col(f"base_{m}")) / pl.col(f"base_{m}") * 100)
        for m in ("self_device", "self_cpu")
    }
    return (
        joined.with_columns(**pct)
        .with_columns(_status("self_device", threshold), _status("self_cpu", threshold))
        .with_columns(_delta=(pl.col("test_self_device").fill_null(0) - pl.col("base_self_device").fill_null(0)).abs())
        .sort(["_delta", "name", "user_annotation"], descending=[True, False, False])
        .select(
            "name", "user_annotation", "status_device", "status_cpu", "base_calls", "test_calls", "base_self_device", "test_self_device",
            "self_device_change_pct", "base_self_cpu", "test_self_cpu", "self_cpu_change_pct",
        )
    )


def _lanes(summaries: Sequence[Summary]) -> pl.DataFrame:
    """Lane totals summed over traces: lane, total, busy (ns)."""
    lanes = stacked([s.lanes for s in summaries], pl.Schema({"lane": pl.String(), "total": pl.Int64(), "busy": pl.Int64()}))
    return lanes.group_by(pl.col("lane").cast(pl.String), maintain_order=True).agg(pl.col("total", "busy").sum()).collect(engine="in-memory")


def _gap_stats(summaries: Sequence[Summary]) -> pl.DataFrame:
    """Statistics of hardware idle, launch latency and queue delay over all traces' values together: (kind, stat, value)."""
    kinds = {
        "hardware_idle": pl.concat([s.idle_gaps for s in summaries]),
        "launch_latency": pl.concat([s.launch_latencies for s in summaries]),
        "queue_delay": pl.concat([s.queue_delays for s in summaries]),
    }
    rows = [(kind, stat, value) for kind, values in kinds.items() for stat, value in stats.stats(values).items()]
    return pl.DataFrame(rows, schema={"kind": pl.String, "stat": pl.String, "value": pl.Int64}, orient="row")


def diff(base: str | Path, test: str | Path, threshold: float = 5.0, part: Part | None = None, jobs: Jobs = 1) -> Diff:
    """Compare TEST against BASE (each a trace or a directory of traces, only their `part` when given, in `jobs` worker processes) with a change threshold in percent."""
    found = analyze(base, part=part, jobs=jobs).summaries, analyze(test, part=part, jobs=jobs).summaries
    for path, profiles in zip((base, test), found):
        if not profiles:
            raise InputError(path, "holds no framework trace to diff (only Neuron artifacts)")
    (b, left_b), (t, left_t) = summable(found[0], "base"), summable(found[1], "test")
    lanes = _lanes(b).join(_lanes(t), on="lane", how="full", coalesce=True, suffix="_test", maintain_order="left")
    lanes = lanes.select("lane", base_total="total", test_total="total_test", base_busy="busy", test_busy="busy_test")
    gap = _gap_stats(b).join(_gap_stats(t), on=["kind", "stat"], suffix="_test", maintain_order="left")
    warnings = (*(w for s in (*b, *t) for w in s.warnings), *left_b, *left_t, *comparability([("base", b), ("test", t)]))
    return Diff(
        base=valid_path(Path(base)),
        test=valid_path(Path(test)),
        threshold=threshold,
        ops=op_changes(b, t, threshold),
        lanes=lanes.with_columns(pl.exclude("lane").fill_null(0)),
        gaps=gap.select("kind", "stat", base="value", test="value_test"),
        base_device=sum(s.device_ns for s in b),
        test_device=sum(s.device_ns for s in t),
        warnings=warnings,
    )
