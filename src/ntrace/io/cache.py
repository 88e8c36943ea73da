"""The ntrace Parquet cache: one trace's classified events written once, with the Summary computed from them, read back without decoding JSON.

One file per trace. Columns are `ntrace.trace.EVENT_COLUMNS` (lane and the categorical columns
as plain text), so any Parquet engine (Polars' streaming engine, DuckDB, Spark) can query a
multi-rank set; the trace's source path, metadata, variant and read warnings sit in the file's
key-value metadata under `ntrace.events`, so a Trace read back is the one that was written. The
Summary computed at convert time is stored beside them under `ntrace.summary`
(ntrace.summary.Summary.to_bytes): reading it costs a few small frames, and it is reused only by
the analysis code that wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from ntrace.errors import OutputError, TraceFormatError, one_line
from ntrace.io import parquet
from ntrace.io.atomic import atomic_open
from ntrace.lanes import LANES, classify, lane_table
from ntrace.summary import Summary
from ntrace.trace import CATEGORY_COLUMNS, EVENT_COLUMNS, Trace

#: Key of the file metadata that marks an ntrace events file and holds its provenance.
META_KEY = "ntrace.events"
#: Layout of the events and provenance; files of another version are converted again.
FORMAT_VERSION = 3  # 3: the mem_* columns of allocator records
#: Key of the file metadata that holds the Summary computed at convert time.
SUMMARY_KEY = "ntrace.summary"

_SCHEMA = pl.Schema({**EVENT_COLUMNS, "lane": pl.String(), **dict.fromkeys(CATEGORY_COLUMNS, pl.String())})  # texts on disk, as any engine reads them


def write_cache(trace: Trace, out: str | Path, summary: Summary | None = None) -> Path:
    """Write the trace's events (and its summary, when given) to `out` atomically; returns the path."""
    out = Path(out)
    provenance = {"version": FORMAT_VERSION, "source": str(trace.path), "meta": trace.meta, "warnings": list(trace.warnings), "variant": trace.variant}
    metadata = {META_KEY: json.dumps(provenance, default=str)}  # the stdlib's escapes keep a file name's undecodable bytes (lone surrogates), which orjson refuses
    if summary is not None:
        metadata[SUMMARY_KEY] = summary.to_bytes().decode()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(out, f"cannot be written ({exc.strerror or exc})") from None
    with atomic_open(out) as fh:
        trace.events.select(pl.col(c).cast(t) for c, t in _SCHEMA.items()).write_parquet(fh, compression="zstd", statistics=True, metadata=metadata)
    return out


def is_cache(path: str | Path) -> bool:
    """True when `path` is a Parquet file that ntrace itself wrote (it carries the `ntrace.events` metadata)."""
    return _our_metadata(Path(path)) is not None


def read_cache_summary(path: str | Path) -> Summary | None:
    """The Summary stored in an ntrace Parquet file, or None when there is none or it was computed by other analysis code."""
    metadata = parquet.metadata(Path(path))
    return _summary(Path(path), metadata)


def stored_summary(path: str | Path) -> Summary | None:
    """The Summary stored in `path` when it is an ntrace Parquet file holding one computed by this analysis code, else None: is_cache and read_cache_summary with one read of the footer."""
    path = Path(path)
    return None if (metadata := _our_metadata(path)) is None else _summary(path, metadata)


def _our_metadata(path: Path) -> dict[str, str] | None:
    """The footer's key-value metadata when `path` is a Parquet file ntrace wrote (it carries `ntrace.events`), else None (never raises)."""
    if path.suffix.lower() != ".parquet" or not parquet.looks_like_parquet(path):
        return None
    try:
        metadata = parquet.metadata(path)
    except TraceFormatError:
        return None
    return metadata if META_KEY in metadata else None


def _summary(path: Path, metadata: dict[str, str]) -> Summary | None:
    """The Summary in an ntrace Parquet file's metadata (its provenance checked), None when there is none or other analysis code computed it."""
    _provenance(path, metadata)
    return Summary.from_bytes(metadata[SUMMARY_KEY]) if SUMMARY_KEY in metadata else None


def read_cache_trace(path: str | Path, lanes: Mapping[str, str] | None = None) -> Trace:
    """The Trace stored in an ntrace Parquet file; `lanes` re-classifies its events with extra category → lane rows."""
    path = Path(path)
    provenance = _provenance(path, parquet.metadata(path))
    stored = parquet.schema(path)
    if wrong := [f"{c} is {stored.get(c, 'missing')}" for c, t in _SCHEMA.items() if stored.get(c) != t]:
        raise TraceFormatError(path, f"is not an ntrace events file of this version ({', '.join(wrong[:3])}); convert the trace again")
    events = parquet.read(path, list(_SCHEMA)).with_columns(pl.col("lane").cast(pl.Enum(LANES), strict=False))
    if (unknown := events["lane"].null_count()) or events["idx"].null_count():
        raise TraceFormatError(path, f"is a damaged ntrace events file ({unknown:,} events of no known lane, or events without an index); convert the trace again")
    if lanes:
        events = classify(events.drop("lane", "side"), lane_table(lanes))
    return Trace(Path(provenance["source"]), events, provenance["meta"], tuple(provenance["warnings"]), provenance.get("variant"))


def _provenance(path: Path, metadata: dict[str, str]) -> dict[str, Any]:
    """The `ntrace.events` record of a file's metadata, checked to be this format's."""
    try:
        provenance = json.loads(metadata[META_KEY])
    except (KeyError, ValueError, RecursionError):
        raise TraceFormatError(path, f"is not an ntrace events file (no valid {META_KEY} metadata)") from None
    if not isinstance(provenance, dict) or provenance.get("version") != FORMAT_VERSION:
        version = provenance.get("version") if isinstance(provenance, dict) else None
        raise TraceFormatError(path, f"was written by another ntrace version (format {one_line(repr(version))[:40]}); convert it again")
    warnings = provenance.get("warnings")
    if not (
        isinstance(provenance.get("source"), str)
        and isinstance(provenance.get("meta"), dict)
        and isinstance(warnings, list)
        and all(isinstance(w, str) for w in warnings)
        and isinstance(provenance.get("variant"), (str, type(None)))
    ):
        raise TraceFormatError(path, f"has a damaged {META_KEY} record (source, meta, warnings or variant of the wrong type); convert the trace again")
    return provenance
