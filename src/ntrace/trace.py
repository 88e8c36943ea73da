"""The trace: one profile's decoded, lane-classified events, as the immutable value every analysis reads.

Every reader (Kineto JSON, the ntrace Parquet cache, Neuron Explorer's Parquet export) yields a
Trace whose `events` frame has exactly `EVENT_COLUMNS`; every analysis reads its columns and
nothing else. Times are int64 nanoseconds as written (no rebasing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from ntrace.lanes import LANES

#: The name of a profiler step annotation (torch.profiler's schedule writes one per step).
STEP_NAME = r"^ProfilerStep#(\d+)$"

#: The largest int64: an event whose end (ts + dur, ns) would pass it cannot be timed and is left out.
INT64_MAX = 2**63 - 1


def end_fits(dur: pl.Expr | None = None) -> pl.Expr:
    """Whether ts + dur (dur ≥ 0; the `dur` column unless given) fits in int64, tested without computing the sum (which would wrap)."""
    return (pl.col("ts") <= INT64_MAX - (pl.col("dur") if dur is None else dur)).fill_null(True)

#: Columns of the events frame as decoded, in order, with their dtypes.
EVENT_SCHEMA = pl.Schema(
    {
        "idx": pl.Int64(),  # position in the file's event list: a stable identity for each event
        "ph": pl.String(),
        "cat": pl.String(),
        "name": pl.String(),
        "pid": pl.String(),
        "tid": pl.String(),
        "ts": pl.Int64(),  # ns, as written (no rebasing)
        "dur": pl.Int64(),  # ns
        "end": pl.Int64(),  # ns, ts + dur
        "external_id": pl.Int64(),  # args["External id"]: CPU op <-> runtime call
        "correlation": pl.Int64(),  # args["correlation"]: runtime call <-> device activity
        "flow_id": pl.Int64(),  # "id" of flow events (ph s/f)
        "flow_bp": pl.String(),  # "bp" of flow ends ("e": binds to the enclosing slice)
        "stream": pl.Int64(),
        "device": pl.Int64(),
        "sequence": pl.Int64(),  # args["Sequence number"]
        "bytes": pl.Int64(),  # args["bytes"]: the size of a copy or fill
        "input_dims": pl.String(),  # args["Input Dims"] as compact JSON text, for grouping by shape
        "model": pl.String(),  # args["model_name"] of a Neuron execution (nc_exec_running): the NEFF it ran
        # the args of a `[memory]` instant (profile_memory=True): one allocation (Bytes > 0) or free (< 0)
        "mem_bytes": pl.Int64(),  # args["Bytes"]
        "mem_allocated": pl.Int64(),  # args["Total Allocated"]: the device's allocated bytes after it
        "mem_reserved": pl.Int64(),  # args["Total Reserved"]
        "mem_addr": pl.Int64(),  # args["Addr"]
        "mem_device_type": pl.Int64(),  # args["Device Type"]: c10::DeviceType (0 CPU, 1 CUDA, 20 PrivateUse1, ...)
        "mem_device_id": pl.Int64(),  # args["Device Id"] (-1 for the CPU)
    }
)

#: The columns holding a `[memory]` instant's args (null on every other event).
MEMORY_COLUMNS = tuple(c for c in EVENT_SCHEMA if c.startswith("mem_"))

#: The lane columns the classifier adds (ntrace.lanes.classify).
LANE_SCHEMA = pl.Schema({"lane": pl.Enum(LANES), "side": pl.Categorical()})

#: The text columns whose texts repeat (the phase, name, process and thread ids, a flow end's binding point, the side), which a Trace holds as
#: categoricals: a 4-byte code per event instead of a 16-byte string view and the text itself, in the events frame and in every selection an
#: analysis makes of it.
CATEGORY_COLUMNS = ("ph", "name", "pid", "tid", "flow_bp", "side")

#: Every column of a Trace's events frame, in order: as decoded and classified, CATEGORY_COLUMNS as categoricals.
EVENT_COLUMNS = pl.Schema({c: pl.Categorical() if c in CATEGORY_COLUMNS else t for c, t in {**EVENT_SCHEMA, **LANE_SCHEMA}.items()})


@dataclass(frozen=True)
class Trace:
    """One profile: where it came from, its events (EVENT_COLUMNS), its top-level metadata and what reading it had to warn about."""

    path: Path  # the trace file (for an ntrace Parquet cache: the trace it was converted from)
    events: pl.DataFrame
    meta: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    variant: str | None = None  # the variant its capture manifest (capture.json) names, found when it was read

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", compact(self.events))


def compact(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` as a Trace holds it: its CATEGORY_COLUMNS as categoricals, and every column that holds only nulls as one constant null, not a value per row (one query for both).

    Categoricals hold the same texts and are compared, joined and sorted as text; string expressions
    do not take them, so the analysis matches texts with `exprs.matches`. Most traces leave
    several columns empty (the `[memory]` fields without profile_memory, the NEFF name outside
    Neuron): stored per row they cost 8 bytes (Int64) or 16 (String) per event, and so does every
    copy an analysis makes of them. The values are the same.
    """
    schema = frame.schema  # built anew by every call: read once
    texts = {c for c in CATEGORY_COLUMNS if schema.get(c) == pl.String}
    empty = {c for c, nulls in zip(schema, frame.null_count().row(0)) if nulls == frame.height} if frame.height else set()
    changed = [
        pl.lit(None, pl.Categorical() if c in texts else dtype).alias(c) if c in empty else pl.col(c).cast(pl.Categorical)
        for c, dtype in schema.items()
        if c in empty or c in texts
    ]
    return frame.with_columns(changed) if changed else frame
