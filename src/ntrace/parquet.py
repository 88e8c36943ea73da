"""The Parquet cache: decoded, lane-classified events written once, read back by `ntrace analyze` without decoding JSON.

One file per trace. Columns are `decode.EVENT_SCHEMA` plus `lane` and `side` as plain text, so
any Parquet engine (Polars' streaming engine, DuckDB, Spark) can query a multi-rank set; the
trace's source path, metadata and decode warnings sit in the file's key-value metadata under
`ntrace.events`, so a Profile read back is the one that was written and analyzes to the same result.
The analysis computed at convert time is stored beside them (`ntrace.analysis`, see ntrace.stored),
so analyzing the cache again reads a few small frames instead of recomputing from every event.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Callable, Mapping, TypeVar

import orjson
import polars as pl

from ntrace import forked
from ntrace.decode import EVENT_SCHEMA
from ntrace.discover import find_traces
from ntrace.errors import InputError, NtraceError, OutputError, TraceFormatError
from ntrace.lanes import LANES, classify, lane_table
from ntrace.profile import Profile, load
from ntrace.stored import StoredProfile, pack, unpack

#: Key of the file metadata that marks an ntrace events file and holds its provenance.
META_KEY = "ntrace.events"
FORMAT_VERSION = 1
#: Key of the file metadata that holds the analysis computed at convert time (see ntrace.stored).
ANALYSIS_KEY = "ntrace.analysis"

T = TypeVar("T")

_SCHEMA = {**EVENT_SCHEMA, "lane": pl.String, "side": pl.String}


def write_parquet(profile: Profile, out: str | Path, *, analysis: bool = True) -> Path:
    """Write the profile's events to `out`, with its analysis unless `analysis` is false (see ntrace.stored); through a temporary name, then renamed, so readers never see half a file."""
    out = Path(out)
    provenance = {"version": FORMAT_VERSION, "source": str(profile.path), "meta": profile.meta, "warnings": profile.warnings}
    metadata = {META_KEY: orjson.dumps(provenance, default=str).decode()}
    if analysis:
        metadata[ANALYSIS_KEY] = pack(profile)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        profile.events.select(pl.col(c).cast(t) for c, t in _SCHEMA.items()).write_parquet(tmp, compression="zstd", statistics=True, metadata=metadata)
        tmp.replace(out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(out, f"cannot be written ({exc.strerror or exc})") from None
    return out


def is_ntrace_parquet(path: str | Path) -> bool:
    """True when `path` is a Parquet file that ntrace itself wrote (it carries the `ntrace.events` metadata)."""
    try:
        return META_KEY in pl.read_parquet_metadata(path)
    except (OSError, pl.exceptions.PolarsError):
        return False


def read_parquet(path: str | Path, lanes: Mapping[str, str] | None = None, *, recompute: bool = False) -> Profile:
    """The Profile stored in an ntrace Parquet file; `lanes` re-classifies its events with extra category → lane rows.

    The analysis stored with the events is reused (and the events read only when needed) unless
    `recompute` is true, `lanes` are given, or it was computed by other ntrace code.
    """
    path = Path(path)
    metadata = _read(path, pl.read_parquet_metadata)
    try:
        provenance = orjson.loads(metadata[META_KEY])
    except (KeyError, orjson.JSONDecodeError):
        raise TraceFormatError(path, f"is not an ntrace events file (no valid {META_KEY} metadata)") from None
    if provenance.get("version") != FORMAT_VERSION:
        raise TraceFormatError(path, f"was written by another ntrace version (format {provenance.get('version')}); convert it again")
    source = Path(provenance["source"])
    stored = None if recompute or lanes or ANALYSIS_KEY not in metadata else unpack(metadata[ANALYSIS_KEY])
    if stored is not None:
        return StoredProfile(source, partial(_events, path), provenance["meta"], provenance["warnings"], stored)
    events = _events(path)
    if lanes:
        events = classify(events.drop("lane", "side"), lane_table(lanes))
    return Profile(source, events, provenance["meta"], provenance["warnings"])


def _events(path: Path) -> pl.DataFrame:
    """The events frame of an ntrace Parquet file, with the dtypes the analysis reads."""
    events = _read(path, lambda p: pl.read_parquet(p, columns=list(_SCHEMA)))
    return events.cast(_SCHEMA).with_columns(pl.col("lane").cast(pl.Enum(LANES)))


def _read(path: Path, reader: Callable[[Path], T]) -> T:
    """`reader(path)`, with a missing or unreadable file as the one-line error naming it."""
    try:
        return reader(path)
    except FileNotFoundError:
        raise InputError(path, "does not exist") from None
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise TraceFormatError(path, f"is not a readable ntrace Parquet file ({str(exc).splitlines()[0]})") from None


def parquet_name(trace: Path, root: Path) -> Path:
    """Where a trace's events go, relative to the output directory: its path under `root`, suffix `.parquet`."""
    rel = trace.relative_to(root)
    name = rel.name.removesuffix(".gz").removesuffix(".json")
    return rel.with_name(name + ".parquet")


def _convert_one(trace: Path, out: Path, fast: bool) -> str | None:
    """Convert one trace; the error's one-line message instead of raising, so one bad file never stops the rest."""
    try:
        write_parquet(load(trace, fast=fast), out)
    except NtraceError as exc:
        return str(exc)
    return None


def convert_to_parquet(path: str | Path, out_dir: str | Path, *, jobs: int = 1, fast: bool = True) -> pl.DataFrame:
    """Convert every JSON trace at or under `path` into `out_dir`; one row per trace: (trace, parquet, error or null)."""
    root, out_dir = Path(path), Path(out_dir)
    traces = [t for t in find_traces(root) if not t.name.endswith(".parquet")]
    if not traces:
        raise InputError(root, "holds no JSON framework trace to convert")
    base = root if root.is_dir() else root.parent
    outs = [out_dir / parquet_name(t, base) for t in traces]
    fasts = [fast] * len(traces)
    if jobs > 1 and len(traces) > 1:
        from concurrent.futures import ProcessPoolExecutor  # imported only here: start-up of every other command
        from multiprocessing import get_context

        with ProcessPoolExecutor(max_workers=min(jobs, len(traces)), mp_context=get_context("spawn"), initializer=forked.in_worker) as pool:  # fork can deadlock Polars' threads
            errors = list(pool.map(_convert_one, traces, outs, fasts))
    else:
        errors = list(map(_convert_one, traces, outs, fasts))
    return pl.DataFrame(
        {"trace": [str(t) for t in traces], "parquet": [str(o) for o in outs], "error": errors},
        schema={"trace": pl.String, "parquet": pl.String, "error": pl.String},
    )
