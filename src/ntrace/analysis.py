"""Analyze a path: find its traces, load each into a Profile (in parallel when asked), collect warnings."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ntrace.discover import find_traces
from ntrace.errors import InputError, NtraceError
from ntrace.profile import Profile, load


@dataclass
class Analysis:
    """Every profile found under one input path, plus warnings about files that could not be analyzed."""

    root: Path
    profiles: list[Profile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def all_warnings(self) -> list[str]:
        """Run-level warnings followed by each profile's own."""
        return [*self.warnings, *(w for p in self.profiles for w in p.warnings)]


def _load_one(path: Path, fast: bool, lanes: Mapping[str, str] | None, max_events: int | None = None) -> Profile | NtraceError:
    """Load one trace, returning the error instead of raising so one bad file never stops the rest."""
    try:
        return load(path, fast=fast, lanes=lanes, max_events=max_events)
    except NtraceError as exc:
        return exc


def analyze(
    path: str | Path, *, jobs: int = 1, fast: bool = True, lanes: Mapping[str, str] | None = None, max_events: int | None = None
) -> Analysis:
    """Load every trace at or under `path`. A single bad file given directly raises; among many it becomes a warning.

    `max_events` keeps only each JSON trace's first events.
    """
    root = Path(path)
    notes: list[str] = []
    traces = find_traces(root, notes)
    if not traces:
        why = f" ({'; '.join(notes)})" if notes else ""
        raise InputError(root, f"holds no framework trace (*.json, *.json.gz with traceEvents){why}")
    if not root.is_dir():
        return Analysis(root, [load(root, fast=fast, lanes=lanes, max_events=max_events)])
    n = len(traces)
    if jobs > 1 and n > 1:
        with ProcessPoolExecutor(max_workers=min(jobs, n)) as pool:
            results = list(pool.map(_load_one, traces, [fast] * n, [lanes] * n, [max_events] * n))
    else:
        results = [_load_one(t, fast, lanes, max_events) for t in traces]
    analysis = Analysis(root, warnings=notes)
    for result in results:
        if isinstance(result, NtraceError):
            analysis.warnings.append(f"skipped {result}")
        else:
            analysis.profiles.append(result)
    if not analysis.profiles:
        raise InputError(root, f"none of its {len(traces)} trace files could be analyzed (first: {analysis.warnings[0].removeprefix('skipped ')})")
    return analysis
