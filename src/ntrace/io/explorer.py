"""Read Neuron Explorer's Parquet export (the `SystemProfileEvents` table) into a Trace, lanes assigned by event source.

Neuron Explorer (formats.md section 7) writes one row per event: id, name, start_ts, end_ts,
duration_ns (int64 ns), trace_event_source ("framework" | "neuron_rt" | "neuron_hw"),
instance_id, process_id, thread_id, nc_idx, pcore_idx, worker_gid, flow_id,
framework_stream_id, extra_attributes_json. This module maps those rows onto the events frame
contract of `ntrace.trace.EVENT_COLUMNS`, so every analysis runs unchanged.
Each source gets the category the lane table already knows for it:

- framework rows with a `framework_stream_id` → `privateuse1_driver` (Explorer's framework/Stream:n,
  "device interaction events grouped by stream ID") → `device` lane, drawn per stream;
- ProfilerStep#N framework rows → `user_annotation`, other framework rows → `cpu_op` → `framework`
  lane (framework/TID:n), drawn per process/thread;
- neuron_rt → `runtime_api` (neuron_rt/NC:n), drawn per process and NeuronCore;
- neuron_hw → `hardware` (neuron_hw/NCa:b), one track per NeuronCore a, physical core b;
- any other source keeps its name as category → `other`, with a warning.

`flow_id` links a framework dispatch to the runtime execution it started, which is what Kineto's
"External id" means, so it fills `external_id`; it also fills `correlation` on runtime and
hardware rows, so a hardware row that carries its runtime call's flow id links to it (whether
Explorer writes flow ids on hardware rows is not documented; without them no launch delays appear).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ntrace.errors import TraceFormatError
from ntrace.exprs import fmt
from ntrace.io import parquet
from ntrace.io.manifest import find_manifest
from ntrace.lanes import classify
from ntrace.trace import EVENT_SCHEMA, MEMORY_COLUMNS, STEP_NAME, Trace, end_fits

#: The documented columns of `SystemProfileEvents`, with the dtype ntrace reads each as.
EXPLORER_SCHEMA = pl.Schema(
    {
        "id": pl.Int64(),
        "name": pl.String(),
        "start_ts": pl.Int64(),
        "end_ts": pl.Int64(),
        "duration_ns": pl.Int64(),
        "trace_event_source": pl.String(),
        "instance_id": pl.String(),
        "process_id": pl.Int64(),
        "thread_id": pl.Int64(),
        "nc_idx": pl.Int64(),
        "pcore_idx": pl.Int64(),
        "worker_gid": pl.Int64(),
        "flow_id": pl.Int64(),
        "framework_stream_id": pl.Int64(),
        "extra_attributes_json": pl.String(),
    }
)

#: The sources Explorer documents; any other value is kept as the category and lands in lane `other`.
SOURCES: tuple[str, ...] = ("framework", "neuron_rt", "neuron_hw")

_REQUIRED = ("name", "start_ts", "trace_event_source")


def read_explorer(path: str | Path) -> pl.DataFrame:
    """The SystemProfileEvents rows of `path`, every documented column present (absent ones as nulls)."""
    path = Path(path)
    stored = parquet.schema(path)
    raw = parquet.read(path, [c for c in EXPLORER_SCHEMA if c in stored])
    missing = [c for c in _REQUIRED if c not in raw.columns]
    if "duration_ns" not in raw.columns and "end_ts" not in raw.columns:
        missing.append("duration_ns or end_ts")
    if missing:
        raise TraceFormatError(path, f"is not a Neuron Explorer SystemProfileEvents table (missing {', '.join(missing)})")
    return raw.select(
        (pl.col(c) if c in raw.columns else pl.lit(None)).cast(dtype, strict=False).alias(c) for c, dtype in EXPLORER_SCHEMA.items()
    )


def explorer_events(rows: pl.DataFrame) -> pl.DataFrame:
    """Map SystemProfileEvents rows onto the events frame (EVENT_SCHEMA columns, then lane and side), sorted by start.

    Each row gets the Kineto category that names the same thing, so the one lane table classifies it
    and an exported trace re-reads into the same lanes.
    """
    source = pl.col("trace_event_source").str.to_lowercase()
    on_stream = (source == "framework") & pl.col("framework_stream_id").is_not_null()
    category = (
        pl.when(on_stream)
        .then(pl.lit("privateuse1_driver"))
        .when((source == "framework") & pl.col("name").str.contains(STEP_NAME))
        .then(pl.lit("user_annotation"))
        .when(source == "framework")
        .then(pl.lit("cpu_op"))
        .otherwise(pl.col("trace_event_source"))
    )
    core = fmt("NC{}:{}", pl.col("nc_idx").fill_null(0), pl.col("pcore_idx").fill_null(0))
    pid = pl.when(source == "neuron_hw").then(core).otherwise(pl.col("process_id").cast(pl.String))
    tid = (
        pl.when(source == "neuron_hw")
        .then(core)
        .when(source == "neuron_rt")
        .then(fmt("NC:{}", pl.col("nc_idx").fill_null(0)))
        .when(on_stream)
        .then(fmt("Stream:{}", pl.col("framework_stream_id")))
        .otherwise(pl.col("thread_id").cast(pl.String))
    )
    dur = pl.coalesce("duration_ns", pl.when(pl.col("end_ts") >= pl.col("start_ts")).then(pl.col("end_ts") - pl.col("start_ts"))).clip(lower_bound=0)
    linked = source.is_in(["neuron_rt", "neuron_hw"])
    events = (
        rows.filter(pl.col("start_ts").is_not_null())
        .sort("start_ts", "id", nulls_last=True)
        .select(
            idx=pl.int_range(0, pl.len(), dtype=pl.Int64),
            ph=pl.lit("X"),
            cat=category,
            name="name",
            pid=pid,
            tid=tid,
            ts="start_ts",
            dur=dur.fill_null(0),
            external_id="flow_id",
            correlation=pl.when(linked).then(pl.col("flow_id")),
            flow_id=pl.lit(None, pl.Int64),
            flow_bp=pl.lit(None, pl.String),
            stream="framework_stream_id",
            device="nc_idx",
            sequence=pl.lit(None, pl.Int64),
            bytes=pl.lit(None, pl.Int64),
            input_dims=pl.lit(None, pl.String),
            model=pl.lit(None, pl.String),
            **{name: pl.lit(None, pl.Int64) for name in MEMORY_COLUMNS},
        )
        .filter(end_fits())
        .with_columns(end=pl.col("ts") + pl.col("dur"))
    )
    return classify(events.select(*(pl.col(c).cast(t) for c, t in EVENT_SCHEMA.items())))


def read_explorer_trace(path: str | Path) -> Trace:
    """The Trace of a Neuron Explorer Parquet export; rows without a start or with an unknown source become warnings."""
    path = Path(path)
    rows = read_explorer(path)
    events = explorer_events(rows)
    warnings = []
    dropped = rows.height - events.height
    if dropped:
        warnings.append(f"{path}: {dropped} rows have no start_ts, or end beyond what int64 ns hold; they were left out")
    unknown = rows.filter(~pl.col("trace_event_source").str.to_lowercase().is_in(list(SOURCES)).fill_null(False))  # a null source too
    if unknown.height:
        kinds = ", ".join(sorted(unknown["trace_event_source"].fill_null("null").unique().to_list()))
        warnings.append(f"{path}: {unknown.height} rows have an unknown trace_event_source ({kinds}); counted in lane other")
    meta = {
        "source": "neuron_explorer",
        "instance_ids": rows["instance_id"].drop_nulls().unique().sort().to_list(),
        "worker_gids": rows["worker_gid"].drop_nulls().unique().sort().to_list(),  # one value: the rank (ntrace ranks)
    }
    manifest = find_manifest(path)
    return Trace(path, events, meta, tuple(warnings), manifest["variant"] if manifest else None)
