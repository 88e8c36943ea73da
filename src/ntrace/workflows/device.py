"""Device profiles of a path: find every processed profile directory, read and analyze each, and join them to the framework trace of their capture session.

`ntrace device PATH` reports the profiles alone; `ntrace analyze` adds, per trace, the profiles
of its session joined to the trace's executions (what each op's NEFFs did on the engines) and
the NEFF-fragmentation view of its steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import polars as pl

from ntrace.analyses.device import DeviceReport, device_report
from ntrace.analyses.neffs import FRAGMENTATION_SCHEMA, OP_SCHEMA, fragmentation, match_executions, op_breakdown, profile_keys
from ntrace.errors import InputError
from ntrace.neuron.artifacts import Session
from ntrace.neuron.device.layout import find_profiles
from ntrace.neuron.device.tables import read_profile
from ntrace.summary import Summary


@dataclass(frozen=True)
class DeviceAnalysis:
    """Every processed device profile found under one path, each as its report, and the warnings of all of them."""

    root: Path
    reports: tuple[DeviceReport, ...]

    @property
    def warnings(self) -> list[str]:
        """Each report's warnings, in order."""
        return [w for r in self.reports for w in r.warnings]


@dataclass(frozen=True)
class DeviceJoin:
    """A trace's session's device profiles joined to the trace: per (op, NEFF) engine figures, the per-step NEFF fragmentation, and what could not be paired."""

    reports: tuple[DeviceReport, ...]
    ops: pl.DataFrame  # analyses.neffs.OP_SCHEMA
    fragmentation: pl.DataFrame  # analyses.neffs.FRAGMENTATION_SCHEMA
    warnings: tuple[str, ...]


def report(directory: str | Path) -> DeviceReport:
    """The report of the processed profile in `directory`."""
    return device_report(read_profile(directory))


def device(path: str | Path) -> DeviceAnalysis:
    """The report of every processed device profile at or under `path` (InputError when there is none)."""
    root = Path(path)
    if not root.exists():
        raise InputError(root, "does not exist")
    found = find_profiles(root)
    if not found:
        raise InputError(root, "holds no processed device profile (a directory of Neuron Explorer <Table>.parquet files)")
    return DeviceAnalysis(root, tuple(report(d) for d in found))


def session_reports(sessions: Iterable[Session]) -> dict[Path, tuple[DeviceReport, ...]]:
    """The reports of each session's processed device profiles, by session directory (sessions without any left out)."""
    return {s.dir: tuple(report(d) for d in s.device_profiles) for s in sessions if s.device_profiles}


def join(summary: Summary, session: Session | None, reports: Sequence[DeviceReport]) -> DeviceJoin:
    """Pair each profile with the trace's executions of its NEFF; the per-op breakdown over all, and the trace's NEFF fragmentation per step."""
    runs = summary.neff_executions
    warnings: list[str] = []
    matched = []
    for r in reports:
        pairs, notes = match_executions(r, runs, profile_keys(r, session.neffs if session else None))
        matched.append((r, pairs))
        warnings += notes
    ops = op_breakdown(matched) if reports else pl.DataFrame(schema=OP_SCHEMA)
    frag = fragmentation(runs) if runs.height else pl.DataFrame(schema=FRAGMENTATION_SCHEMA)
    return DeviceJoin(tuple(reports), ops, frag, tuple(warnings))
