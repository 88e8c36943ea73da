"""Convert every JSON trace under a path into the ntrace Parquet cache: decoded and classified once, with its Summary stored beside its events.

Each trace's file goes to the same relative path under the output directory with `.parquet`
appended to its whole name (`x.json` and `x.json.gz` side by side stay apart), so `pl.scan_parquet("OUT/**/*.parquet")`, DuckDB or Spark can query a multi-rank set and
`ntrace analyze OUT` reads the stored summaries without decoding anything.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import polars as pl

from ntrace.errors import InputError, NtraceError, OutputError, valid_text
from ntrace.io import read_trace
from ntrace.io.cache import write_cache
from ntrace.io.discover import find_traces
from ntrace.io.kineto import in_worker
from ntrace.profile import Profile
from ntrace.workflows.analyze import chunk_size, counted


#: The longest file name (in bytes) that common file systems (ext4, XFS, APFS, NTFS in UTF-8) accept.
NAME_MAX = 255


def parquet_name(trace: Path, root: Path) -> Path:
    """Where a trace's events go, relative to the output directory: its path under `root` with `.parquet` appended, shortened to fit a file name."""
    rel = trace.relative_to(root)
    return rel.with_name(_fit(rel.name + ".parquet"))


def _fit(name: str) -> str:
    """`name` itself when it fits in NAME_MAX bytes; else its start, `~`, 12 hex digits of its sha256 and `.parquet` (still one name per input)."""
    raw = os.fsencode(name)
    if len(raw) <= NAME_MAX:
        return name
    suffix = f"~{hashlib.sha256(raw).hexdigest()[:12]}.parquet"
    cut = NAME_MAX - len(suffix)
    while cut and raw[cut] & 0xC0 == 0x80:  # never inside a UTF-8 character
        cut -= 1
    return os.fsdecode(raw[:cut]) + suffix


def _convert_one(trace: Path, out: Path, fast: bool) -> str | None:
    """Convert one trace; an input's error as its one-line message, so one bad file never stops the rest (an output error, a full disk say, does)."""
    try:
        loaded = read_trace(trace, fast=fast)
        write_cache(loaded, out, Profile(loaded).summary())
    except OutputError:
        raise
    except NtraceError as exc:
        return str(exc)
    return None


def convert(path: str | Path, out_dir: str | Path, *, jobs: int = 1, fast: bool = True) -> pl.DataFrame:
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

        with ProcessPoolExecutor(max_workers=min(jobs, len(traces)), mp_context=get_context("spawn"), initializer=in_worker) as pool:  # fork can deadlock Polars' threads
            errors = counted(pool.map(_convert_one, traces, outs, fasts, chunksize=chunk_size(len(traces), min(jobs, len(traces)))), len(traces), "converting traces")
    else:
        errors = counted(map(_convert_one, traces, outs, fasts), len(traces), "converting traces")
    return pl.DataFrame(
        {"trace": [valid_text(str(t)) for t in traces], "parquet": [valid_text(str(o)) for o in outs], "error": errors},
        schema={"trace": pl.String, "parquet": pl.String, "error": pl.String},
    )
