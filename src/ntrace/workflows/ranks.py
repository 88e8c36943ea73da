"""Analyze the traces of many ranks of one job together: a row per rank, cross-rank statistics and outliers, clock alignment on collectives, arrival skew and stragglers (docs/definitions.md, "Ranks")."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import polars as pl

from ntrace.analyses import ranks as rk
from ntrace.errors import InputError, NtraceError
from ntrace.io.dataset import dataset_parts, events_problem, is_dataset, is_partition_events, read_rank_summary, summary_path
from ntrace.io.discover import find_traces
from ntrace.io.remote import local_copies
from ntrace.summary import RankSummary, Summary
from ntrace.units import first_missing, plural
from ntrace.workflows.analyze import Jobs, summarize_ranks

if TYPE_CHECKING:  # concurrent.futures is imported only where a pool is made
    from concurrent.futures import Executor

#: How clocks are aligned, as the output names it.
ALIGNMENT_RULE = "median over matched collectives of (end on the rank - end on the lowest rank)"

#: The per-rank figures after rank, trace and rule, besides the busy columns (`busy_<lane>`).
FIGURES = ("steps", "step_p50", "step_p90", "idle", "comm", "exposed_comm", "overlap_pct", "launch_latency_p50", "offset")


@dataclass(frozen=True)
class RankAnalysis:
    """Many ranks analyzed together: the per-rank table (ns), the statistics over ranks, outliers, collectives, stragglers, the rules used and warnings."""

    table: pl.DataFrame  # rank, trace, rule, steps, step_p50, step_p90, busy_<lane>…, idle, comm, exposed_comm, overlap_pct, launch_latency_p50, offset
    lanes: tuple[str, ...]  # the lanes with a busy_<lane> column, in column order
    stats: pl.DataFrame  # column, min, median, max
    outliers: pl.DataFrame  # column, rank, value, median, mad
    collectives: pl.DataFrame  # name, instances, skew_p50, skew_max, transfer_p50
    stragglers: pl.DataFrame  # rank, times_last, pct_last, wait_caused
    match_rule: str  # how collectives are matched across ranks: "sequence number" or "occurrence"
    warnings: tuple[str, ...]

    @property
    def figures(self) -> list[str]:
        """The per-rank figure columns, in table order."""
        return [c for c in self.table.columns if c not in ("rank", "trace", "rule")]


def _row(summary: RankSummary, rank: int, rule: str) -> dict[str, Any]:
    """One rank's row of the table: its rank, trace and rule, then its figures (ns) and overlap."""
    comm, exposed = summary.figures["comm"], summary.figures["exposed_comm"]
    return {"rank": rank, "trace": summary.shown_path, "rule": rule, **summary.figures, "overlap_pct": 100 * (comm - exposed) / comm if comm else 0.0}


def _ranked(summaries: list[RankSummary], warnings: list[str]) -> list[tuple[int, str, RankSummary]]:
    """The summaries with a rank, one per rank (the first found), sorted by rank; the rest become warnings, as do ranks missing from 0..N-1."""
    kept: dict[int, tuple[int, str, RankSummary]] = {}
    worlds = set()
    for summary in summaries:
        rank, rule = rk.rank_of(summary.meta, summary.path)
        if rank is None:
            warnings.append(f"{summary.path}: no rank (no distributedInfo.rank, no rank number in the file name, no single worker_gid); left out")
        elif rank in kept:
            warnings.append(f"{summary.path}: rank {rank} ({rule}) repeats {kept[rank][2].path}; left out")
        else:
            kept[rank] = (rank, rule, summary)
        info = summary.meta.get("distributedInfo")
        if isinstance(info, dict) and isinstance(info.get("world_size"), int):
            worlds.add(info["world_size"])
    world = max([*worlds, max(kept, default=-1) + 1])
    if missing := world - len(kept):
        first = first_missing(kept.keys(), world)
        more = f", … ({missing:,} in all)" if missing > len(first) else ""
        warnings.append(f"ranks missing from 0..{world - 1}: {', '.join(map(str, first))}{more}")
    return [kept[r] for r in sorted(kept)]


def ranks(paths: Sequence[str | Path], jobs: Jobs = 1, executor: Executor | None = None) -> RankAnalysis:
    """Analyze every trace at or under `paths` (local paths or fsspec URLs) as one rank each (in `jobs` worker processes, or on `executor`), then compare and align the ranks."""
    with local_copies(paths, defer=is_partition_events) as copies:  # a dataset's events are fetched only for ranks whose summary is unusable
        for events in list(copies.deferred):
            if not _usable(summary_path(events)):
                copies.fetch(events)
        result = _ranks(copies.paths, jobs, executor)
    if not copies.urls:
        return result
    table = result.table.with_columns(trace=pl.Series([copies.shown(t) for t in result.table["trace"]], dtype=pl.String))
    return replace(result, table=table, warnings=tuple(map(copies.shown, result.warnings)))


def _usable(summary: Path) -> bool:
    """True when the rank summary file at `summary` exists and holds a summary this analysis code wrote."""
    try:
        return summary.is_file() and read_rank_summary(summary) is not None
    except NtraceError:
        return False


def _from_dataset(root: Path, notes: list[str]) -> list[RankSummary | Path]:
    """A dataset's traces: each rank's stored summary, or its events file where the summary is missing, damaged or from other analysis code (the first two noted)."""
    found: list[RankSummary | Path] = []
    for part in dataset_parts(root):
        fallback = f"summarized again from {part.events}" if part.events else "left out"
        stored = None
        try:
            stored = read_rank_summary(part.summary) if part.summary is not None else None
        except NtraceError as exc:
            notes.append(f"{exc}; rank {part.rank} {fallback}")
        else:
            if part.summary is None:
                notes.append(f"{part.events}: no rank summary beside it; summarized from its events")
            elif stored is None and part.events is None:
                notes.append(f"{part.summary}: written by other ntrace analysis code, and no events file beside it; rank {part.rank} left out")
        if stored is not None:
            if part.events is not None and (problem := events_problem(part.events)):
                notes.append(f"{part.events}: damaged events file ({problem}); rank {part.rank} analyzed from its summary")
            found.append(stored)
        elif part.events is not None:
            found.append(part.events)
    return found


def _ranks(paths: Sequence[str | Path], jobs: Jobs, executor: Executor | None) -> RankAnalysis:
    """ranks() over local paths: a dataset's stored rank summaries are read, every other trace (and a dataset rank without a usable summary) summarized."""
    notes: list[str] = []
    groups = [_from_dataset(Path(p), notes) if is_dataset(p) else list[RankSummary | Path](find_traces(Path(p), notes)) for p in paths]
    traces = list(dict.fromkeys(t for g in groups for t in g if isinstance(t, Path)))
    if not any(groups):
        raise InputError(paths[0] if paths else None, "holds no framework trace (*.json, *.json.gz with traceEvents)")
    warnings = list(notes)
    done: dict[Path, RankSummary] = {}
    for trace, result in zip(traces, summarize_ranks(traces, jobs=jobs, executor=executor)):
        if isinstance(result, NtraceError):
            warnings.append(f"skipped {result}")
        else:
            done[trace] = result
    summaries = []
    for path, group in zip(paths, groups):
        got = [t if isinstance(t, RankSummary) else done[t] for t in group if not isinstance(t, Path) or t in done]
        summaries += sorted(got, key=lambda s: str(s.path)) if is_dataset(path) else got  # a dataset's in the order of their traces' paths
    summaries = list({id(s): s for s in summaries}.values())
    warnings += [w for s in summaries for w in s.warnings]
    ranked = _ranked(summaries, warnings)
    if not ranked:
        first = warnings[0].removeprefix("skipped ") if warnings else "no trace has a rank"
        raise InputError(paths[0], f"none of its {plural(len(traces) + sum(isinstance(t, RankSummary) for g in groups for t in g), 'trace')} could be analyzed as a rank ({first})")
    return rank_analysis(ranked, warnings)


def ranked_summaries(summaries: list[Summary]) -> tuple[list[tuple[int, str, Summary]], list[str]]:
    """The summaries that have a rank, one per rank, sorted by rank (rank, rule, summary), and the warnings about the others."""
    warnings: list[str] = []
    pairs = [(rk.rank_summary(summary), summary) for summary in summaries]
    full = {id(r): summary for r, summary in pairs}
    return [(n, rule, full[id(r)]) for n, rule, r in _ranked([r for r, _ in pairs], warnings)], warnings


def _aligned(keyed: pl.DataFrame, numbers: list[int], warnings: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The instances matched on every rank whose clock can be aligned to the lowest rank's, and every rank's offset: a rank further from it than int64 ns reach is left out of the matching (offset 0), with a warning."""
    aligned = list(numbers)
    while True:
        found = rk.matched(keyed.filter(pl.col("rank").is_in(aligned)), len(aligned))
        offsets, far = rk.clock_offsets(found, aligned)
        if not far:
            break
        warnings += [f"rank {n}: its clock lies further from rank {aligned[0]}'s than int64 ns reach; left out of the collective matching (offset 0)" for n in far]
        aligned = [n for n in aligned if n not in far]
    return found, pl.DataFrame({"rank": numbers}, schema={"rank": pl.Int64}).join(offsets, on="rank", how="left", maintain_order="left").with_columns(pl.col("offset").fill_null(0))


def rank_analysis(ranked: Sequence[tuple[int, str, RankSummary]], warnings: list[str]) -> RankAnalysis:
    """The ranks compared and aligned: from (rank, rule, rank summary) sorted by rank, at least one; `warnings` so far come first in the result's."""
    warnings = list(warnings)
    rows = [_row(s, r, rule) for r, rule, s in ranked]
    lanes = tuple(dict.fromkeys(k.removeprefix("busy_") for row in rows for k in row if k.startswith("busy_")))
    steps = {row["steps"] for row in rows}
    if len(steps) > 1:
        warnings.append("ranks have different step counts: " + ", ".join(f"rank {row['rank']} {row['steps']}" for row in rows))
    instances = pl.concat([s.collectives.select(pl.lit(r, pl.Int64).alias("rank"), pl.all()) for r, _, s in ranked])
    numbers = [r for r, _, _ in ranked]
    keyed, match_rule = rk.instance_keys(instances)
    for row in rk.partial_instances(keyed, len(numbers)).iter_rows(named=True):
        warnings.append(f"collective {row['name']}: {row['partial']} instances are not on every rank (instances per rank: {row['per_rank']}); left out of the matching")
    found, offsets = _aligned(keyed, numbers, warnings)
    if instances.height and found.is_empty():
        warnings.append("no collective instance is on every rank: clocks are not aligned (offset 0)")
    per_instance, left_out = rk.aligned_instances(found, offsets)
    if left_out:
        warnings.append(f"{plural(left_out, 'matched collective instance')} left out: on the aligned clocks their skews or waits would pass what int64 ns hold")
    table = pl.DataFrame(rows, infer_schema_length=None).join(offsets.select("rank", "offset"), on="rank", maintain_order="left")
    columns = ["rank", "trace", "rule", "steps", "step_p50", "step_p90", *(f"busy_{lane}" for lane in lanes), *FIGURES[3:]]
    table = table.with_columns(pl.col(f"busy_{lane}").fill_null(0) for lane in lanes).select(columns)
    figures = columns[3:]
    return RankAnalysis(
        table=table, lanes=lanes, stats=rk.cross_rank_stats(table, figures), outliers=rk.outliers(table, figures),
        collectives=rk.collective_stats(per_instance), stragglers=rk.stragglers(found, offsets, per_instance),
        match_rule=match_rule, warnings=tuple(warnings),
    )  # fmt: skip
