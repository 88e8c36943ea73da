"""The summary: every result the outputs read for one trace, as a frozen value that renderers take, `--jobs` workers return and the Parquet cache stores.

A Summary holds a few small frames and numbers, never the events. It is valid only for the
analysis code that computed it: `ANALYSIS_VERSION` names the definitions it follows and
`analysis_digest()` the code, so a stored summary from other code is recomputed, not reused.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any, Mapping

import orjson
import polars as pl

#: The definitions a Summary follows (docs/definitions.md); bumped whenever a figure's meaning changes.
ANALYSIS_VERSION = 2

#: The modules whose code computes a Summary: a stored one is reused only when these are unchanged.
_ANALYSIS_CODE = ("analyses", "profile.py", "summary.py", "lanes.py", "trace.py")


@cache
def analysis_digest() -> str:
    """The analysis version and a SHA-256 of the code that computes summaries (not the CLI, renderers or readers)."""
    root = Path(__file__).parent
    digest = hashlib.sha256(f"ntrace.analysis/{ANALYSIS_VERSION}\0".encode())
    for name in _ANALYSIS_CODE:
        path = root / name
        for source in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(source.relative_to(root).as_posix().encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()


#: The Summary fields kept as one column, and those kept as tuples (JSON lists once stored).
_SERIES = ("idle_gaps", "launch_latencies", "queue_delays")
_TUPLES = ("window", "warnings", "outside_steps", "op_warnings")
#: Fields a stored summary leaves out: the timeline is kept as frames (below), the digest is of the stored bytes themselves, and the bytes are what is stored.
_NOT_KEPT = ("timeline", "drawn_key", "_stored")
#: How a stored summary names its timeline's frames: the prefix, then each Timeline field.
_TIMELINE = "timeline."
_TIMELINE_PARTS = ("events", "idle")


@dataclass(frozen=True)
class Timeline:
    """What the HTML timeline draws for one trace: its complete events (lane, track, ts, end, dur, name, and cat, correlation, external_id, input_dims, bytes for the hover) and its hardware idle gaps (track, gap_start, gap)."""

    events: pl.DataFrame
    idle: pl.DataFrame


@dataclass(frozen=True)
class Summary:
    """One trace's results: identity, the window, lane/track/gap/step/op/kernel/finding frames (ns Int64) and the footers of torch's table (docs/definitions.md)."""

    path: Path
    variant: str | None
    meta: Mapping[str, Any]
    warnings: tuple[str, ...]
    window: tuple[int, int]  # first start, last end (ns)
    events: int  # complete events
    device: str  # what the op table's device columns are named for (NEURON, CUDA, …, or "none")
    device_ns: int  # all device activity: the op table's device footer
    self_cpu_ns: int  # self CPU over every op: the op table's CPU footer
    lanes: pl.DataFrame
    categories: pl.DataFrame
    tracks: pl.DataFrame
    gaps: pl.DataFrame
    steps: pl.DataFrame  # per step window: host busy per lane
    step_devices: pl.DataFrame  # per (step, device): the device work the step launched
    outside_steps: tuple[int, int]  # device activities in no step: count, ns
    op_groups: pl.DataFrame
    kernels: pl.DataFrame
    findings: pl.DataFrame
    neff_executions: pl.DataFrame  # Neuron executions naming their NEFF: idx, model, track, ts, dur, op, call_dur, step
    collectives: pl.DataFrame  # collective device activities: idx, name, device, ts, end, sequence
    communication: pl.DataFrame  # per device with collectives: comm, exposed (ns)
    idle_gaps: pl.Series  # every hardware idle gap (ns), for statistics pooled over several traces
    launch_latencies: pl.Series  # every launch latency (ns), likewise
    queue_delays: pl.Series  # every queue delay (ns), likewise
    timeline: Timeline | None = field(default=None, compare=False)  # computed only when a report asks for it
    source: str | None = None  # the URL the trace was downloaded from (path is then its temporary copy)
    drawn_key: str | None = field(default=None, compare=False)  # digest of the memo entry holding this summary with its timeline (ntrace.io.memo): keys its report section

    # allocator records (profile_memory=True), None when the trace holds none: see ntrace.analyses.memory
    memory_series: pl.DataFrame | None = None  # every record in time order: device_type, device_id, ts, bytes, allocated, reserved
    memory_devices: pl.DataFrame | None = None  # per device: records, allocs, frees, allocated/freed bytes, peak_allocated, peak_ts, peak_reserved
    memory_ops: pl.DataFrame | None = None  # per (name, user_annotation): calls, cpu_mem, self_cpu_mem, device_mem, self_device_mem (bytes)
    op_warnings: tuple[str, ...] = ()  # those of `warnings` about the op table (torch's rule giving negative self CPU), which `ranks` leaves out
    # the bytes from_bytes read this summary from, which to_bytes gives back as they are (replace() makes a summary without them)
    _stored: bytes | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def shown_path(self) -> str:
        """What outputs name the trace by: its URL when it was downloaded, else its path."""
        return self.source or str(self.path)

    @property
    def window_ns(self) -> int:
        """Length of the profiled window, ns."""
        return self.window[1] - self.window[0]

    @property
    def hardware_tracks(self) -> pl.DataFrame:
        """The hardware lane's tracks (one per device/core): busy + idle = span on each."""
        return self.tracks.filter(pl.col("lane") == "hardware").drop("lane")

    def to_bytes(self) -> bytes:
        """The summary as bytes (JSON holding the numbers and each frame as a zstd Arrow IPC stream), tagged with analysis_digest(); its timeline too, when it holds one.

        A stream, not an IPC file: Polars reads a file through a lazy scan, about 0.5 ms per frame
        whatever its size, which made reading a stored summary cost more than a tiny trace's decode.
        A summary read by from_bytes gives back the bytes it was read from: writing a frame read
        back from IPC can lay out its buffers differently, and the same summary stores the same bytes.
        """
        if self._stored is not None:
            return self._stored
        values: dict[str, Any] = {}
        frames: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Timeline):
                frames |= {f"{_TIMELINE}{part}": _ipc(getattr(value, part)) for part in _TIMELINE_PARTS}
            elif isinstance(value, (pl.DataFrame, pl.Series)):
                frames[f.name] = _ipc(value.to_frame() if isinstance(value, pl.Series) else value)
            elif f.name not in _NOT_KEPT:
                values[f.name] = str(value) if isinstance(value, Path) else value
        return _dumps({"code": analysis_digest(), "values": values, "frames": frames})

    @classmethod
    def from_bytes(cls, data: bytes | str) -> "Summary | None":
        """The summary `to_bytes` wrote, or None when it was written by other analysis code or is damaged (so it is recomputed)."""
        try:
            doc = orjson.loads(data)
            if doc.get("code") != analysis_digest():
                return None
            kwargs: dict[str, Any] = dict(doc["values"])
            drawn: dict[str, pl.DataFrame] = {}
            for name, text in doc["frames"].items():
                frame = pl.read_ipc_stream(io.BytesIO(base64.b64decode(text)))
                if name.startswith(_TIMELINE):
                    drawn[name.removeprefix(_TIMELINE)] = frame
                else:
                    kwargs[name] = frame.to_series() if name in _SERIES else frame
            if drawn:
                kwargs["timeline"] = Timeline(**{part: drawn[part] for part in _TIMELINE_PARTS})
            kwargs["path"] = Path(kwargs["path"])
            for name in _TUPLES:
                kwargs[name] = tuple(kwargs[name])
            summary = cls(**kwargs)
            object.__setattr__(summary, "_stored", data if isinstance(data, bytes) else data.encode())  # frozen: set once, here
            return summary
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError, pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError):
            return None  # PanicException: Polars' reader failing an assertion on forged bytes (it is no Exception)


#: Schema of a stored RankSummary (a dataset's per-rank summary file).
RANK_SUMMARY_SCHEMA = "ntrace.rank-summary/1"

#: The column types a RankSummary frame may hold, by the name its file gives them.
_DTYPES: dict[str, pl.DataType] = {"int64": pl.Int64(), "string": pl.String(), "float64": pl.Float64(), "bool": pl.Boolean()}


@dataclass(frozen=True)
class RankSummary:
    """What `ntrace ranks` needs of one trace, and all a dataset stores per rank: its source, metadata, read warnings, figures (ns), steps and collective instances."""

    path: Path  # the trace it was computed from
    meta: Mapping[str, Any]
    warnings: tuple[str, ...]
    figures: Mapping[str, int]  # steps, step_p50, step_p90, busy_<lane>…, idle, comm, exposed_comm, launch_latency_p50
    steps: pl.DataFrame  # Summary.steps
    collectives: pl.DataFrame  # Summary.collectives: idx, name, device, ts, end, sequence
    source: str | None = None  # the URL the trace was downloaded from (path is then its temporary copy)

    @property
    def shown_path(self) -> str:
        """What outputs name the trace by: its URL when it was downloaded, else its path."""
        return self.source or str(self.path)

    def to_bytes(self, **provenance: Any) -> bytes:
        """The rank summary as JSON (integers exact, each frame as its columns and their types), tagged with analysis_digest() and `provenance`."""
        doc = {
            "schema": RANK_SUMMARY_SCHEMA, "code": analysis_digest(), **provenance, "source": str(self.path), "url": self.source, "meta": self.meta,
            "warnings": list(self.warnings), "figures": dict(self.figures), "steps": _columns(self.steps), "collectives": _columns(self.collectives),
        }  # fmt: skip
        return _dumps(doc)

    @classmethod
    def from_bytes(cls, data: bytes) -> "RankSummary | None":
        """The rank summary `to_bytes` wrote; None when other analysis code wrote it; ValueError when it is damaged."""
        try:
            doc = orjson.loads(data)
            if doc.get("schema") != RANK_SUMMARY_SCHEMA:
                raise ValueError(f"not an {RANK_SUMMARY_SCHEMA} file")
            if doc.get("code") != analysis_digest():
                return None
            return cls(Path(doc["source"]), doc["meta"], tuple(doc["warnings"]), doc["figures"], _frame(doc["steps"]), _frame(doc["collectives"]), doc.get("url"))
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, pl.exceptions.PolarsError) as exc:
            raise ValueError(f"damaged ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'})") from None


def _dumps(doc: Mapping[str, Any]) -> bytes:
    """`doc` as JSON bytes (unknown types as text), by orjson, or by the stdlib where orjson refuses it: metadata nested past orjson's 255 levels (its reader takes 1,024), text holding a lone surrogate."""
    try:
        return orjson.dumps(doc, default=str)
    except TypeError:
        return json.dumps(doc, default=str, separators=(",", ":")).encode()  # ASCII: a lone surrogate in a name is kept as its escape


def _ipc(frame: pl.DataFrame) -> str:
    """`frame` as a zstd Arrow IPC stream, in base64 (text a JSON document holds)."""
    buf = io.BytesIO()
    frame.write_ipc_stream(buf, compression="zstd")
    return base64.b64encode(buf.getvalue()).decode()


def _columns(frame: pl.DataFrame) -> dict[str, Any]:
    """A frame as JSON: its column types (by _DTYPES name) and its columns as lists."""
    names = {v: k for k, v in _DTYPES.items()}
    return {"types": {c: names[t] for c, t in frame.schema.items()}, "columns": frame.to_dict(as_series=False)}


def _frame(doc: Mapping[str, Any]) -> pl.DataFrame:
    """The frame `_columns` wrote."""
    return pl.DataFrame(doc["columns"], schema={c: _DTYPES[t] for c, t in doc["types"].items()})
