"""Convert every JSON trace under a path into the ntrace Parquet cache: decoded and classified once, with its Summary stored beside its events.

Each trace's file goes to the same relative path under the output directory with `.parquet`
appended to its whole name (`x.json` and `x.json.gz` side by side stay apart), so `pl.scan_parquet("OUT/**/*.parquet")`, DuckDB or Spark can query a multi-rank set and
`ntrace analyze OUT` reads the stored summaries without decoding anything. With `by_rank` the
output is a rank-partitioned dataset instead (ntrace.io.dataset): `rank=N/` directories, each
trace's events in its rank's, with the summary `ntrace ranks` reads beside them.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

import polars as pl

from ntrace.analyses.ranks import rank_of, rank_summary
from ntrace.errors import InputError, NtraceError, OutputError, valid_text
from ntrace.io import read_trace
from ntrace.io.cache import write_cache
from ntrace.io.dataset import partition, summary_path, write_rank_summary
from ntrace.io.discover import SUMMARY_SUFFIX, find_traces
from ntrace.io.remote import is_url, local_copies
from ntrace.profile import summaries
from ntrace.summary import Summary
from ntrace.trace import Trace
from ntrace.io import memo
from ntrace.workflows.analyze import Jobs, in_chunks, in_stacks, recalled


#: The longest file name (in bytes) that common file systems (ext4, XFS, APFS, NTFS in UTF-8) accept.
NAME_MAX = 255


def parquet_name(trace: Path, root: Path, limit: int = NAME_MAX) -> Path:
    """Where a trace's events go, relative to the output directory: its path under `root` with `.parquet` appended, shortened to fit a file name (`limit` bytes)."""
    rel = trace.relative_to(root)
    return rel.with_name(_fit(rel.name + ".parquet", limit))


def _fit(name: str, limit: int) -> str:
    """`name` itself when it fits in `limit` bytes; else its start, `~`, 12 hex digits of its sha256 and `.parquet` (still one name per input)."""
    raw = os.fsencode(name)
    if len(raw) <= limit:
        return name
    suffix = f"~{hashlib.sha256(raw).hexdigest()[:12]}.parquet"
    cut = limit - len(suffix)
    while cut and raw[cut] & 0xC0 == 0x80:  # never inside a UTF-8 character
        cut -= 1
    return os.fsdecode(raw[:cut]) + suffix


def _convert_many(
    traces: Sequence[Path], *, root: Path, out_dir: Path, limit: int, fast: bool, by_rank: bool, urls: Mapping[Path, str]
) -> list[tuple[Path, str | None]]:  # fmt: skip
    """Convert these traces (`urls` names those downloaded) to `out_dir / parquet_name`, or into the dataset `out_dir` with `by_rank`: per trace (its file, None), or (where it would go, the input's error as its one-line message), so one bad file never stops the rest (an output error, a full disk say, does).

    The summaries a local trace's memo lacks are computed stacked (workflows.analyze.in_stacks), a
    downloaded trace's always (its temporary copy is no memo key).
    """
    items = []
    for trace in traces:
        url = urls.get(trace)
        rel = parquet_name(trace, root, limit)
        entry = None if url is not None else memo.entry(trace, "summary", fast)  # taken before the trace is read (see memo.entry)
        write = functools.partial(_written, _write_rank if by_rank else _write, out_dir, rel, url, entry)
        items.append((functools.partial(_read, trace, fast, entry), write))
    results = in_stacks(items, summaries)
    return [(out_dir / parquet_name(trace, root, limit), str(r)) if isinstance(r, NtraceError) else r for trace, r in zip(traces, results)]


def _read(trace: Path, fast: bool, entry: Path | None) -> Trace | tuple[Trace, Summary]:
    """The trace read, with its summary when the memo holds one (`entry`)."""
    loaded = read_trace(trace, fast=fast)
    known = recalled(trace, entry) if entry is not None else None
    return (loaded, known) if known is not None else loaded


def _written(
    write: Callable[[Path, Path, Trace, Summary], Path], out_dir: Path, rel: Path, url: str | None, entry: Path | None, loaded: Trace, summary: Summary
) -> tuple[Path, str | None]:  # fmt: skip
    """Write the trace with its summary (remembered under `entry`; naming `url` when downloaded) by `write`: (the file written, None), or (`out_dir / rel`, the input's error)."""
    memo.remember(entry, summary)
    try:
        return write(out_dir, rel, loaded, replace(summary, source=url) if url is not None else summary), None
    except OutputError:
        raise
    except NtraceError as exc:
        return out_dir / rel, str(exc)


def _write(out_dir: Path, rel: Path, loaded: Trace, summary: Summary) -> Path:
    """Write the trace and its summary to `out_dir / rel`."""
    return write_cache(loaded, out_dir / rel, summary)


def _write_rank(out_dir: Path, rel: Path, loaded: Trace, summary: Summary) -> Path:
    """Write the trace into the dataset `out_dir` as `rank=N/<rel>`, its rank summary beside it; an error when the trace has no rank."""
    rank, rule = rank_of(loaded.meta, loaded.path)
    if rank is None:
        raise InputError(loaded.path, "has no rank (no distributedInfo.rank, no rank number in the file name, no single worker_gid); not written")
    events = write_cache(loaded, out_dir / partition(rank) / rel, summary)
    write_rank_summary(summary_path(events), rank_summary(summary), rank=rank, rule=rule, events=events.name)
    return events


def convert(path: str | Path, out_dir: str | Path, *, jobs: Jobs = 1, fast: bool = True, by_rank: bool = False) -> pl.DataFrame:
    """Convert every JSON trace at or under `path` (a local path or an fsspec URL) into `out_dir` (a rank-partitioned dataset with `by_rank`); one row per trace: (trace, parquet, error or null).

    A URL is downloaded first; its traces keep their URL (the stored summaries name it), and the
    rows and errors name it, not the temporary copy.
    """
    if is_url(path):
        with local_copies([str(path)]) as copies:
            done = _convert(Path(copies.paths[0]), Path(out_dir), jobs, fast, by_rank, copies.shown)
        return done.with_columns(pl.Series(c, [copies.shown(v) if v is not None else None for v in done[c]], dtype=pl.String) for c in ("trace", "error"))
    return _convert(Path(path), Path(out_dir), jobs, fast, by_rank, None)


def _convert(root: Path, out_dir: Path, jobs: Jobs, fast: bool, by_rank: bool, shown: Callable[[str], str] | None) -> pl.DataFrame:
    """convert() over a local path; `shown` gives a downloaded trace's URL."""
    traces = [t for t in find_traces(root) if not t.name.endswith(".parquet")]
    if not traces:
        raise InputError(root, "holds no JSON framework trace to convert")
    base = root if root.is_dir() else root.parent
    limit = NAME_MAX - len(f"_{SUMMARY_SUFFIX}") + len(".parquet") if by_rank else NAME_MAX  # room for the summary file's name
    urls = {t: shown(str(t)) for t in traces} if shown else {}
    work = functools.partial(_convert_many, root=base, out_dir=out_dir, limit=limit, fast=fast, by_rank=by_rank, urls=urls)
    results = in_chunks(work, traces, jobs, None, stage="converting traces")
    return pl.DataFrame(
        {"trace": [valid_text(str(t)) for t in traces], "parquet": [valid_text(str(o)) for o, _ in results], "error": [e for _, e in results]},
        schema={"trace": pl.String, "parquet": pl.String, "error": pl.String},
    )
