"""Analyze a path: find its traces, load each into a Profile, collect warnings.

With `jobs` > 1 each worker process loads and analyzes its traces and sends back only the
analysis (ntrace.stored.StoredProfile: a few small frames), so decoding and analysis both run in
parallel and no events frame crosses a process boundary; events are loaded again only if asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Mapping

import polars as pl

from ntrace import forked
from ntrace.artifacts import Session, artifact_warnings, find_sessions, session_dir
from ntrace.discover import find_traces
from ntrace.errors import InputError, NtraceError
from ntrace.profile import Profile, load
from ntrace.stored import StoredProfile


@dataclass
class Analysis:
    """Every profile found under one input path, plus warnings about files that could not be analyzed."""

    root: Path
    profiles: list[Profile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    artifacts: list[Session] = field(default_factory=list)  # sessions holding NEFF/NTFF/.pb files but no framework trace

    @property
    def all_warnings(self) -> list[str]:
        """Run-level warnings followed by each profile's own."""
        return [*self.warnings, *(w for p in self.profiles for w in p.warnings)]


def _load_one(path: Path, fast: bool, lanes: Mapping[str, str] | None, max_events: int | None = None, recompute: bool = False) -> Profile | NtraceError:
    """Load one trace, returning the error instead of raising so one bad file never stops the rest."""
    try:
        return load(path, fast=fast, lanes=lanes, max_events=max_events, recompute=recompute).compute()
    except NtraceError as exc:
        return exc


def _analyze_one(path: Path, fast: bool, lanes: Mapping[str, str] | None, max_events: int | None, recompute: bool) -> Profile | NtraceError:
    """In a worker process: load and analyze one trace, returning only its analysis (its events are loaded again if ever needed)."""
    profile = _load_one(path, fast, lanes, max_events, recompute)
    if isinstance(profile, NtraceError):
        return profile
    return StoredProfile.of(profile, partial(_events_of, path, fast, lanes, max_events, recompute))


def _events_of(path: Path, fast: bool, lanes: Mapping[str, str] | None, max_events: int | None, recompute: bool) -> pl.DataFrame:
    """The events of a trace loaded again: what a profile analyzed in a worker process gives when something needs its events."""
    return load(path, fast=fast, lanes=lanes, max_events=max_events, recompute=recompute).events


def analyze(
    path: str | Path,
    *,
    jobs: int = 1,
    fast: bool = True,
    lanes: Mapping[str, str] | None = None,
    max_events: int | None = None,
    recompute: bool = False,
) -> Analysis:
    """Load and analyze every trace at or under `path` (Profile.compute). A single bad file given directly raises; among many it becomes a warning.

    `max_events` keeps only each JSON trace's first events; `recompute` ignores the analysis stored in
    `ntrace convert` Parquet files, recomputing it from their events. Each profile gets its capture session's
    artifacts; sessions whose NEFF/NTFF/.pb files have no analyzable trace land in `Analysis.artifacts`,
    so a directory of artifacts alone is reported rather than refused.
    """
    root = Path(path)
    notes: list[str] = []
    traces = find_traces(root, notes)
    # each step below finds the sessions only after loading: that runs Polars, whose threads forbid the forked decoding helper (ntrace.forked)
    if not traces:
        sessions = find_sessions(root, [] if root.is_dir() else None)
        if bare := [s for s in sessions if s.has_artifacts]:
            return Analysis(root, warnings=notes + artifact_warnings(bare), artifacts=bare)
        why = f" ({'; '.join(notes)})" if notes else ""
        raise InputError(root, f"holds no framework trace (*.json, *.json.gz with traceEvents){why}")
    if not root.is_dir():
        profile = load(root, fast=fast, lanes=lanes, max_events=max_events, recompute=recompute).compute()
        sessions = find_sessions(root, None)
        profile.artifacts = sessions[0]
        return Analysis(root, [profile], warnings=artifact_warnings(sessions))
    n = len(traces)
    if jobs > 1 and n > 1:
        from concurrent.futures import ProcessPoolExecutor  # imported here: process pools cost ~25 ms of start-up to import
        from multiprocessing import get_context

        with ProcessPoolExecutor(max_workers=min(jobs, n), mp_context=get_context("spawn"), initializer=forked.in_worker) as pool:  # fork can deadlock Polars' threads
            results = list(pool.map(_analyze_one, traces, [fast] * n, [lanes] * n, [max_events] * n, [recompute] * n))
    else:
        results = [_load_one(t, fast, lanes, max_events, recompute) for t in traces]
    sessions = find_sessions(root, traces)
    by_dir = {s.dir: s for s in sessions}
    analysis = Analysis(root, warnings=notes)
    for trace, result in zip(traces, results):
        if isinstance(result, NtraceError):
            analysis.warnings.append(f"skipped {result}")
        else:
            result.artifacts = by_dir.get(session_dir(trace))  # the file read: a Parquet cache names its source trace in .path
            analysis.profiles.append(result)
    loaded = {p.artifacts.dir for p in analysis.profiles if p.artifacts}
    analysis.artifacts = [s for s in sessions if s.has_artifacts and s.dir not in loaded]
    analysis.warnings += artifact_warnings(sessions)
    if not analysis.profiles and not analysis.artifacts:
        raise InputError(root, f"none of its {len(traces)} trace files could be analyzed (first: {analysis.warnings[0].removeprefix('skipped ')})")
    return analysis
