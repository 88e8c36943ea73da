"""A rank-partitioned ntrace dataset: each rank's events as `rank=N/<trace>.parquet` (the ntrace Parquet cache format), and beside them `_<trace>.summary.json`, all `ntrace ranks` needs of that rank.

The partitions are Hive-style, so `pl.scan_parquet("DATASET/rank=*/**/*.parquet",
hive_partitioning=True)`, DuckDB or Spark scan every rank's events with a `rank` column; the
summary files start with `_`, a name those engines skip. `ranks` reads only the summary files,
each a few kilobytes, so its memory grows with the number of collectives, not of events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ntrace.errors import InputError, TraceFormatError
from ntrace.io.atomic import write_bytes
from ntrace.io.discover import SUMMARY_SUFFIX, is_rank_summary
from ntrace.summary import RankSummary

#: A partition directory's name: the rank it holds.
PARTITION = re.compile(r"rank=(\d+)")


@dataclass(frozen=True)
class Part:
    """One trace of a dataset: its partition's rank, its events file and its summary file (either may be missing)."""

    rank: int
    events: Path | None
    summary: Path | None


def partition(rank: int) -> str:
    """The partition directory of a rank."""
    return f"rank={rank}"


def summary_path(events: Path) -> Path:
    """The summary file beside an events file: `rank=N/x.json.parquet` → `rank=N/_x.json.summary.json`."""
    return events.with_name("_" + events.name.removesuffix(".parquet") + SUMMARY_SUFFIX)


def is_dataset(path: str | Path) -> bool:
    """True when `path` is a directory holding at least one `rank=N` partition directory."""
    path = Path(path)
    return path.is_dir() and any(p.is_dir() and PARTITION.fullmatch(p.name) for p in path.iterdir())


def dataset_parts(root: Path) -> list[Part]:
    """Every trace of the dataset at `root`, by rank then file name: events files paired with the summary files beside them."""
    parts = []
    partitions = [(int(m[1]), d) for d in root.iterdir() if d.is_dir() and (m := PARTITION.fullmatch(d.name))]
    for rank, directory in sorted(partitions):
        events = {summary_path(p): p for p in directory.rglob("*.parquet") if not p.name.startswith(("_", "."))}
        summaries = {p for p in directory.rglob(f"_*{SUMMARY_SUFFIX}") if is_rank_summary(p)}
        for key in sorted(events.keys() | summaries):
            parts.append(Part(rank, events.get(key), key if key in summaries else None))
    return parts


def is_partition_events(name: str) -> bool:
    """True for the name (relative to a dataset's root, with /) of an events file in a rank partition: what `ranks` reads only when its summary is missing or unusable."""
    first, _, rest = name.partition("/")
    return bool(rest) and PARTITION.fullmatch(first) is not None and name.endswith(".parquet") and not name.rpartition("/")[2].startswith(("_", "."))


def write_rank_summary(path: Path, summary: RankSummary, **provenance: Any) -> Path:
    """Write a rank summary file atomically, with `provenance` (its rank, rule, events file) recorded in it."""
    return write_bytes(path, summary.to_bytes(**provenance))


def read_rank_summary(path: Path) -> RankSummary | None:
    """The rank summary stored at `path`; None when other analysis code wrote it; the one-line error naming it when it is missing or damaged."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "does not exist") from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        return RankSummary.from_bytes(data)
    except ValueError as exc:
        raise TraceFormatError(path, f"is not a readable rank summary ({exc})") from None


def events_problem(path: Path) -> str | None:
    """Why an events file cannot be read, judged from its Parquet footer alone (None when it can)."""
    try:
        pl.read_parquet_metadata(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None
