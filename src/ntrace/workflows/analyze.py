"""Analyze a path: find its traces, summarize each (in worker processes with `jobs` > 1), pair each with its capture session, collect warnings.

A worker reads and analyzes its traces and sends back only their Summaries (a few small
frames), so decoding and analysis both run in parallel and no events frame crosses a process
boundary. An ntrace Parquet cache holding a summary computed by this analysis code is not
analyzed again: its summary is read and its events are never decoded.
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence, TypeVar

from ntrace.analyses.device import DeviceReport
from ntrace.analyses.part import Part, cut
from ntrace.analyses.ranks import rank_summary
from ntrace.errors import InputError, NtraceError, valid_path
from ntrace.io import memo, read_trace
from ntrace.io.cache import stored_summary
from ntrace.io.discover import find_traces
from ntrace.io.remote import LocalCopies, is_url, local_copies
from ntrace.io.kineto import in_worker
from ntrace.io.progress import report
from ntrace.neuron.artifacts import Session, artifact_warnings, find_sessions, session_dir
from ntrace.profile import STACK_EVENTS, Profile, rank_summaries, summaries
from ntrace.summary import RankSummary, Summary
from ntrace.trace import Trace
from ntrace.units import plural
from ntrace.workflows.device import DeviceJoin, join, session_reports

if TYPE_CHECKING:  # concurrent.futures is imported only where a pool is made
    from concurrent.futures import Executor

T = TypeVar("T")
S = TypeVar("S")

#: Worker processes: a count, or "auto" (see workers_for).
Jobs = int | Literal["auto"]

#: Most traces summarized as one chunk (a worker's, or in-process): small ones are stacked within it (ntrace.profile.summaries).
STACKED_CHUNK = 256

#: The workers an executor's chunks are cut for: a few chunks each, on a cluster whose size is not known here.
EXECUTOR_SPREAD = 4

#: `jobs="auto"` starts workers only for at least this many traces: a worker's start-up (imports) costs about as much as analyzing ten small traces.
AUTO_MIN_TRACES = 16
#: ... and only when no trace is larger than this (a gzip counted at 10× its size): a large trace already spreads each query over the cores, and every worker would hold one.
AUTO_MAX_BYTES = 64 << 20


@dataclass(frozen=True)
class Analysis:
    """Every trace found under one input path, each as its Summary with its capture session, plus run-level warnings and sessions with no trace."""

    root: Path
    entries: tuple[tuple[Summary, Session | None], ...] = ()
    warnings: tuple[str, ...] = ()
    artifacts: tuple[Session, ...] = ()  # sessions holding NEFF/NTFF/.pb files but no framework trace
    devices: Mapping[Path, tuple[DeviceReport, ...]] = field(default_factory=dict)  # processed device profiles, by session directory
    _joined: dict[int, tuple[Summary, Session | None, DeviceJoin | None]] = field(default_factory=dict, init=False, repr=False, compare=False)  # device_join's, by summary

    @property
    def summaries(self) -> tuple[Summary, ...]:
        """The traces' summaries, in the order their files were found."""
        return tuple(s for s, _ in self.entries)

    @property
    def all_warnings(self) -> list[str]:
        """Run-level warnings, each trace's own, then the device profiles'."""
        return [*self.warnings, *(w for s in self.summaries for w in s.warnings), *self.device_warnings]

    def __iter__(self) -> Iterator[tuple[Summary, Session | None]]:
        return iter(self.entries)

    def device_join(self, summary: Summary, session: Session | None) -> DeviceJoin | None:
        """The trace's session's device profiles joined to it; None when the session has none and the trace names no NEFF.

        Made once per trace: a render and the run's warnings both read it. The memo holds the
        summary and session it was made of, so an id is never matched to another object.
        """
        known = self._joined.get(id(summary))
        if known is not None and known[0] is summary and known[1] is session:
            return known[2]
        reports = self.devices.get(session.dir, ()) if session else ()
        joined = None if not reports and summary.neff_executions.is_empty() else join(summary, session, reports)
        self._joined[id(summary)] = (summary, session, joined)
        return joined

    @property
    def device_warnings(self) -> list[str]:
        """What reading the device profiles, and pairing them with the traces, had to warn about."""
        out = [w for reports in self.devices.values() for r in reports for w in r.warnings]
        for summary, session in self.entries:
            if (joined := self.device_join(summary, session)) is not None:
                out += joined.warnings
        return out


def load(
    path: str | Path, *, fast: bool = True, lanes: Mapping[str, str] | None = None, max_events: int | None = None, recompute: bool = False, part: Part | None = None
) -> Profile:
    """The Profile of one trace file (Kineto JSON, an ntrace Parquet cache or a Neuron Explorer export); `lanes` adds category → lane rows.

    `max_events` keeps only a JSON trace's first events (a memory limit, not a part of the run);
    `part` keeps a time window or a range of steps (ntrace.analyses.part); a cache's stored summary
    is reused by `Profile.summary()` unless `recompute`, `lanes` or `part` are given.
    """
    trace = read_trace(path, fast=fast, lanes=lanes, max_events=max_events)
    if part is not None:
        trace = cut(trace, part)
    stored = None if recompute or lanes or part else stored_summary(path)
    return Profile(trace, stored)


def summarize(
    path: str | Path, fast: bool = True, lanes: Mapping[str, str] | None = None, max_events: int | None = None, recompute: bool = False, timeline: bool = False,
    part: Part | None = None,
) -> Summary:  # fmt: skip
    """The Summary of one trace file (with what its HTML timeline draws when `timeline`); a cache's stored summary, or the memo's (ntrace.io.memo), is read instead of recomputed."""
    path = Path(path)
    kept, drawn = _entries(path, fast, _memoized(lanes, max_events, part), timeline)
    if not (recompute or lanes or part) and (known := _remembered(path, kept, drawn, timeline)) is not None:
        return known
    profile = load(path, fast=fast, lanes=lanes, max_events=max_events, recompute=recompute, part=part)
    summary = profile.summary()
    memo.remember(kept, summary)  # the summary alone, which every other command reads
    if not timeline:
        return summary
    summary = replace(summary, timeline=profile.timeline())
    return replace(summary, drawn_key=memo.remember(drawn, summary))


def summary_of(path: Path, trace: Trace, fast: bool) -> Summary:
    """The Summary of `trace`, read from `path` (a local file) by the `fast` decoder or not: the memo's when it has one (what an earlier command computed), else computed now and remembered."""
    entry = memo.entry(path, "summary", fast)
    if (known := recalled(path, entry)) is not None:
        return known
    summary = Profile(trace).summary()
    memo.remember(entry, summary)
    return summary


def _memoized(lanes: Mapping[str, str] | None, max_events: int | None, part: Part | None) -> bool:
    """Whether an analysis is the default one, which the memo keeps: no extra lanes, no first events only, no part."""
    return not (lanes or part) and max_events is None


def recalled(path: Path, entry: Path | None) -> Summary | None:
    """The Summary computed earlier for the trace at `path`: the one its ntrace Parquet cache stores, else the memo's `entry` (memo.entry) holds; None when there is neither."""
    if (stored := stored_summary(path)) is not None:
        return stored
    kept = memo.recall(entry, path)
    return kept if isinstance(kept, Summary) else None


def _entries(path: Path, fast: bool, memoized: bool, timeline: bool) -> tuple[Path | None, Path | None]:
    """The memo entries summarize reads and writes for the trace at `path`: its summary's, and with `timeline` its summary-with-timeline's (None where not memoized)."""
    if not memoized:
        return None, None
    return memo.entry(path, "summary", fast), memo.entry(path, "timeline", fast) if timeline else None


def _remembered(path: Path, kept: Path | None, drawn: Path | None, timeline: bool) -> Summary | None:
    """What summarize reads instead of the trace: with `timeline` the memo's summary with its timeline (entry `drawn`), else the stored or remembered summary (`kept`, see recalled)."""
    if not timeline:
        return recalled(path, kept)
    found = memo.recall(drawn, path)
    return found if isinstance(found, Summary) else None


def summarize_rank(path: str | Path, fast: bool = True) -> RankSummary:
    """What `ntrace ranks` reads of one trace file, computing only that (no op tree or op table); a summary computed earlier or the memo's rank summary is read instead."""
    path = Path(path)
    kept = memo.entry(path, "rank", fast)  # taken before the trace is read (see memo.entry)
    if (known := _recalled_rank(path, fast, kept)) is not None:
        return known
    result = load(path, fast=fast).rank_summary()
    memo.remember(kept, result)
    return result


def _summarize_many(
    paths: Sequence[Path], *, fast: bool, lanes: Mapping[str, str] | None, max_events: int | None, recompute: bool, timeline: bool, part: Part | None
) -> list[Summary | NtraceError]:  # fmt: skip
    """summarize over many traces, each error returned instead of raised, so one bad file never stops the rest; the small ones summarized stacked (ntrace.profile.summaries): a worker's chunk costs a few hundred queries, not a few hundred per trace."""
    memoized, reused = _memoized(lanes, max_events, part), not (recompute or lanes or part)
    items = []
    for path in paths:
        kept, drawn = _entries(path, fast, memoized, timeline)  # taken before the trace is read (see memo.entry)
        known = functools.partial(_remembered, path, kept, drawn, timeline) if reused else None
        items.append((functools.partial(_known_or_trace, known, functools.partial(load, path, fast=fast, lanes=lanes, max_events=max_events, recompute=True, part=part)),
                      functools.partial(_remember, kept, drawn)))  # fmt: skip
    return in_stacks(items, functools.partial(summaries, timeline=timeline))


def _remember(kept: Path | None, drawn: Path | None, _: Trace, summary: Summary) -> Summary:
    """Keep a summary just computed in the memo as summarize does (alone under `kept`; with its timeline, if it has one, under `drawn`, whose digest it then carries)."""
    memo.remember(kept, replace(summary, timeline=None) if summary.timeline is not None else summary)
    if summary.timeline is None:
        return summary
    return replace(summary, drawn_key=memo.remember(drawn, summary))


def _known_or_trace(known: Callable[[], T | None] | None, loaded: Callable[[], Profile]) -> T | Trace:
    """What was computed earlier (`known`, when it may be read), else the trace to analyze."""
    if known is not None and (found := known()) is not None:
        return found
    return loaded().trace


def summarize_all(
    traces: Sequence[Path],
    *,
    jobs: Jobs = 1,
    executor: Executor | None = None,
    fast: bool = True,
    lanes: Mapping[str, str] | None = None,
    max_events: int | None = None,
    recompute: bool = False,
    timeline: bool = False,
    part: Part | None = None,
) -> list[Summary | NtraceError]:
    """Each trace's Summary, or the error that stopped it, in order: on `executor` when given, else in `jobs` spawned worker processes (see workers_for)."""

    def known(path: Path) -> Summary | None:  # what summarize would read instead of the trace
        return _remembered(path, *_entries(path, fast, _memoized(lanes, max_events, part), timeline), timeline)

    reads = None if recompute or lanes or part else known
    each = functools.partial(_summarize_many, fast=fast, lanes=lanes, max_events=max_events, recompute=recompute, timeline=timeline, part=part)
    return in_chunks(each, traces, jobs, executor, reads)


def summarize_ranks(traces: Sequence[Path], *, jobs: Jobs = 1, executor: Executor | None = None, fast: bool = True) -> list[RankSummary | NtraceError]:
    """Each trace's RankSummary (summarize_rank), or the error that stopped it, in order, run as summarize_all runs."""

    def known(path: Path) -> RankSummary | None:  # what summarize_rank would read instead of the trace
        return _recalled_rank(path, fast, memo.entry(path, "rank", fast))

    return in_chunks(functools.partial(_summarize_ranks_many, fast=fast), traces, jobs, executor, known)


def _summarize_ranks_many(paths: Sequence[Path], *, fast: bool) -> list[RankSummary | NtraceError]:
    """summarize_rank over many traces, each error returned instead of raised; the small ones summarized stacked (ntrace.profile.rank_summaries)."""
    items = []
    for path in paths:
        kept = memo.entry(path, "rank", fast)  # taken before the trace is read (see memo.entry)
        known = functools.partial(_recalled_rank, path, fast, kept)
        items.append((functools.partial(_known_or_trace, known, functools.partial(load, path, fast=fast, recompute=True)), functools.partial(_remember_rank, kept)))
    return in_stacks(items, rank_summaries)


def _remember_rank(kept: Path | None, _: Trace, result: RankSummary) -> RankSummary:
    """Keep a rank summary just computed in the memo under `kept`."""
    memo.remember(kept, result)
    return result


def in_stacks(items: Sequence[tuple[Callable[[], T | Trace | tuple[Trace, S]], Callable[[Trace, S], T]]], many: Callable[[list[Trace]], list[S]]) -> list[T | NtraceError]:
    """Each item's result, or the input error that stopped it, in order.

    An item gives its result known already, the trace to analyze, or a trace with its analysis
    known; and makes its result of a trace and its analysis (storing it in the memo, writing it).
    The traces are analyzed `many` at once (stacked) as soon as they hold STACK_EVENTS events, so
    about that many are held at a time whatever their sizes; each alone when `many` stops on an error.
    """
    results: list[T | NtraceError | None] = [None] * len(items)
    pending: list[tuple[int, Trace]] = []
    held = 0  # events of the pending traces

    def flush() -> None:
        try:
            computed: list[S] | None = list(many([trace for _, trace in pending]))
        except NtraceError:  # each alone, its error kept
            computed = None
        for k, (i, trace) in enumerate(pending):
            try:
                analysis = computed[k] if computed is not None else many([trace])[0]
            except NtraceError as exc:
                results[i] = exc
                continue
            results[i] = items[i][1](trace, analysis)
        pending.clear()

    for i, (given, made) in enumerate(items):
        try:
            found = given()
        except NtraceError as exc:
            results[i] = exc
            continue
        if isinstance(found, Trace):
            pending.append((i, found))
            held += found.events.height
        elif isinstance(found, tuple):
            results[i] = made(*found)
        else:
            results[i] = found
        if held >= STACK_EVENTS:
            flush()
            held = 0
    flush()
    return [r for r in results if r is not None]


def _recalled_rank(path: Path, fast: bool, entry: Path | None) -> RankSummary | None:
    """The RankSummary of a summary computed earlier (recalled, the memo's included), else what the memo's rank `entry` holds; None when there is neither."""
    if (known := recalled(path, memo.entry(path, "summary", fast))) is not None:
        return rank_summary(known)
    kept = memo.recall(entry, path)
    return kept if isinstance(kept, RankSummary) else None


def in_chunks(
    fn: Callable[[Sequence[Path]], list[T]], traces: Sequence[Path], jobs: Jobs, executor: Executor | None, known: Callable[[Path], T | None] | None = None,
    stage: str = "analyzing traces",
) -> list[T]:  # fmt: skip
    """`fn` over the traces, a chunk at a time (it returns a chunk's results, so it can summarize a chunk's small traces stacked), in order: on `executor` when given, else in the spawned worker processes workers_for gives (none when 1).

    Before starting workers, `known` gives what was computed earlier (stored or memo summaries),
    read here at a fraction of a worker's start-up; only the other traces go to the workers.
    """
    n = len(traces)
    if known is not None and executor is None and workers_for(jobs, traces) > 1:
        found = counted((_known_or_none(known, p) for p in traces), n, "reading stored summaries")
        rest: Iterator[T] = iter(in_chunks(fn, [p for p, result in zip(traces, found) if result is None], jobs, None, stage=stage))
        return [next(rest) if result is None else result for result in found]
    workers = workers_for(jobs, traces) if executor is None else EXECUTOR_SPREAD
    size = chunk_size(n, workers, STACKED_CHUNK) if executor is not None or workers > 1 else STACKED_CHUNK
    chunks = [traces[i : i + size] for i in range(0, n, size)]
    if executor is not None:
        return counted(_flat(executor.map(fn, chunks)), n, stage)
    if workers > 1:
        with worker_pool(workers) as pool:
            return counted(_flat(pool.map(fn, chunks)), n, stage)
    return counted(_flat(map(fn, chunks)), n, stage)


def _flat(chunks: Iterable[list[T]]) -> Iterator[T]:
    """The results of each chunk in turn, as they arrive."""
    for chunk in chunks:
        yield from chunk


def _known_or_none(known: Callable[[Path], T | None], path: Path) -> T | None:
    """known(path), or None when reading it fails: the trace then goes to a worker, which reports the error as the trace's own."""
    try:
        return known(path)
    except NtraceError:
        return None


def workers_for(jobs: Jobs, traces: Sequence[Path]) -> int:
    """The worker processes to run for `traces`: `jobs` (at most one per trace), or for "auto" one per core when there are many small traces, whose cost is per-trace overhead, else 1."""
    if jobs != "auto":
        return max(1, min(jobs, len(traces)))
    if len(traces) < AUTO_MIN_TRACES or any(_weight(t) > AUTO_MAX_BYTES for t in traces):
        return 1
    return min(cores(), len(traces))


def _weight(trace: Path) -> int:
    """A trace file's size as workers_for weighs it (0 when it cannot be read: its error is reported by the analysis)."""
    try:
        size = trace.stat().st_size
    except OSError:
        return 0
    return size * 10 if trace.name.lower().endswith(".gz") else size


def cores() -> int:
    """The cores this process may run on (all of the machine's where the platform cannot say)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[Executor]:
    """A pool of `workers` spawned processes (fork can deadlock Polars' threads), each giving Polars its share of the cores.

    The processes share out the machine, so each one's Polars thread pool gets cores / workers
    threads (POLARS_MAX_THREADS, read when Polars is imported, hence set for the spawn) unless
    the user set it: threads beyond that only wait on each other, which costs more than the
    queries of a small trace.
    """
    from concurrent.futures import ProcessPoolExecutor  # imported here: process pools cost ~25 ms of start-up to import
    from multiprocessing import get_context

    user = os.environ.get("POLARS_MAX_THREADS")
    if user is None:
        os.environ["POLARS_MAX_THREADS"] = str(max(1, cores() // workers))
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=in_worker) as pool:
            yield pool
    finally:
        if user is None:
            os.environ.pop("POLARS_MAX_THREADS", None)


def chunk_size(n: int, workers: int, most: int = 64) -> int:
    """Traces sent to a worker at a time (at most `most`): a few chunks per worker, so thousands of tiny traces cost few round trips yet the workers stay evenly loaded."""
    return max(1, min(most, n // (workers * 4)))


def counted(results: Iterable[T], n: int, stage: str = "analyzing traces") -> list[T]:
    """`results` as a list, reporting how many of the `n` are done as each arrives (the CLI's progress bar)."""
    out = []
    for result in results:
        out.append(result)
        report(stage, len(out), n, "traces")
    return out


def _named_by_url(remote: Analysis, copies: LocalCopies) -> Analysis:
    """An analysis of downloaded copies with each trace and warning naming the URL it came from, not the copy (gone by the time it is read)."""
    shown = {s.path: copies.shown(str(s.path)) for s in remote.summaries}
    entries = tuple(
        (replace(s, source=shown[s.path] if shown[s.path] != str(s.path) else None, warnings=tuple(map(copies.shown, s.warnings))), session) for s, session in remote
    )
    return replace(remote, entries=entries, warnings=tuple(map(copies.shown, remote.warnings)))


def analyze(
    path: str | Path,
    *,
    jobs: Jobs = 1,
    executor: Executor | None = None,
    fast: bool = True,
    lanes: Mapping[str, str] | None = None,
    max_events: int | None = None,
    recompute: bool = False,
    timeline: bool = False,
    part: Part | None = None,
) -> Analysis:
    """Summarize every trace at or under `path` (a local path or an fsspec URL such as s3://bucket/prefix), on `executor` when given, else in `jobs` worker processes (see workers_for). A single bad file given directly raises; among many it becomes a warning.

    `max_events` keeps only each JSON trace's first events; `part` only each trace's time window or
    range of steps (ntrace.analyses.part); `recompute` ignores the summaries
    stored in `ntrace convert` Parquet files; `timeline` adds what the HTML report draws. Each
    summary gets its capture session's artifacts; sessions whose NEFF/NTFF/.pb files have no
    analyzable trace land in `Analysis.artifacts`, so a directory of artifacts alone is reported
    rather than refused. A URL's files are downloaded into a temporary directory (ntrace.io.remote),
    analyzed there and removed.
    """
    if is_url(path):
        with local_copies([str(path)]) as copies:
            remote = analyze(copies.paths[0], jobs=jobs, executor=executor, fast=fast, lanes=lanes, max_events=max_events, recompute=recompute, timeline=timeline, part=part)
        return _named_by_url(remote, copies)
    root = Path(path)
    shown = valid_path(root)  # the name outputs print; files are read by `root`
    notes: list[str] = []
    traces = find_traces(root, notes)
    # each step below finds the sessions only after loading: that runs Polars, whose threads forbid the forked decoding helper
    if not traces:
        sessions = find_sessions(root, [] if root.is_dir() else None)
        if bare := [s for s in sessions if s.has_artifacts]:
            return Analysis(shown, warnings=tuple(notes + artifact_warnings(bare)), artifacts=tuple(bare), devices=session_reports(bare))
        why = f" ({'; '.join(notes)})" if notes else ""
        raise InputError(root, f"holds no framework trace (*.json, *.json.gz with traceEvents){why}")
    if not root.is_dir():
        if executor is None:
            summary = summarize(root, fast, lanes, max_events, recompute, timeline, part)
        else:
            (result,) = summarize_all([root], executor=executor, fast=fast, lanes=lanes, max_events=max_events, recompute=recompute, timeline=timeline, part=part)
            if isinstance(result, NtraceError):
                raise result
            summary = result
        sessions = find_sessions(root, None)
        return Analysis(shown, ((summary, sessions[0]),), warnings=tuple(artifact_warnings(sessions)), devices=session_reports(sessions))
    results = summarize_all(traces, jobs=jobs, executor=executor, fast=fast, lanes=lanes, max_events=max_events, recompute=recompute, timeline=timeline, part=part)
    sessions = find_sessions(root, traces)
    by_dir = {s.dir: s for s in sessions}
    warnings = list(notes)
    entries: list[tuple[Summary, Session | None]] = []
    for trace, result in zip(traces, results):
        if isinstance(result, NtraceError):
            warnings.append(f"skipped {result}")
        else:
            entries.append((result, by_dir.get(session_dir(trace))))  # the file read: a Parquet cache names its source trace in .path
    loaded = {s.dir for _, s in entries if s}
    artifacts = tuple(s for s in sessions if s.has_artifacts and s.dir not in loaded)
    warnings += artifact_warnings(sessions)
    if not entries and not artifacts:
        raise InputError(root, f"none of its {plural(len(traces), 'trace file')} could be analyzed (first: {warnings[0].removeprefix('skipped ')})")
    return Analysis(shown, tuple(entries), tuple(warnings), artifacts, session_reports(sessions))

