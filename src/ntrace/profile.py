"""The Profile object: one decoded, lane-classified trace, with every analysis as a lazily computed Polars frame."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from ntrace import findings as findmod
from ntrace import gaps as gapmod
from ntrace import ops as opmod
from ntrace.artifacts import Session
from ntrace.decode import DecodedTrace, decode_trace
from ntrace.lanes import classify, lane_table
from ntrace.links import launch_links
from ntrace.manifest import find_manifest
from ntrace.steps import is_step, step_totals, step_windows
from ntrace.totals import lane_categories, lane_totals, spans, track, track_totals, window


@dataclass
class Profile:
    """One framework trace, classified into lanes. All times in the frames are int64 nanoseconds."""

    path: Path
    events: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    artifacts: Session | None = None  # the capture session's NEFF/NTFF/.pb files, filled in by analysis.analyze

    @classmethod
    def from_decoded(cls, decoded: DecodedTrace, lanes: Mapping[str, str] | None = None) -> "Profile":
        """Classify a decoded trace into lanes (with optional extra category → lane rows)."""
        table = lane_table(lanes) if lanes else None
        return cls(decoded.path, classify(decoded.events, table), decoded.meta, list(decoded.warnings))

    @cached_property
    def variant(self) -> str | None:
        """The variant named by the capture manifest (capture.json) beside or above the trace, if there is one."""
        doc = find_manifest(self.path)
        return doc["variant"] if doc else None

    @cached_property
    def complete(self) -> pl.DataFrame:
        """The complete ("X") events: the ones with a duration, which lanes and gaps are made of."""
        return self.select_complete(*self.events.columns)

    def select_complete(self, *columns: str | pl.Expr, where: pl.Expr | None = None, **named: str | pl.Expr) -> pl.DataFrame:
        """`columns` (names or expressions, also `named` ones) of the complete events (those where `where` holds, if given), in file order: a filter that copies only them.

        The analyses read their few columns this way, so no full copy of the complete events is
        made unless Profile.complete itself is asked for (then it is reused).
        """
        out = self.complete_rows(where).select(*columns, **named).collect()  # only the columns read are filtered, expressions run on the rows kept
        if "idx" in out.columns and self._idx_sorted:  # file order, as decoded or read back: flagged, joins on idx merge instead of hashing
            out = out.with_columns(pl.col("idx").set_sorted())
        return out

    def complete_rows(self, where: pl.Expr | None = None) -> pl.LazyFrame:
        """The complete events (those where `where` holds, if given) as a lazy frame: a query on it copies only the columns it reads."""
        cached = "complete" in self.__dict__
        frame = self.complete if cached else self.events
        keep = None if cached else self._is_complete
        if where is not None:  # as one mask over the whole frame: the columns it reads are not copied
            hit = frame.select(where.fill_null(False)).to_series()
            keep = hit if keep is None else keep & hit
        return frame.lazy() if keep is None else frame.lazy().filter(keep)

    @cached_property
    def _is_complete(self) -> pl.Series:
        """Per event: whether it is a complete ("X") event."""
        return self.events.select((pl.col("ph") == "X").fill_null(False)).to_series()

    @cached_property
    def _idx_sorted(self) -> bool:
        """Whether the events are in idx order (as decoded or read back)."""
        return self.events["idx"].is_sorted()

    @cached_property
    def _spans(self) -> tuple[pl.DataFrame, pl.Series]:
        """The complete events as (lane, track, ts, end) with track an integer code, and the track names by code (see totals.spans)."""
        return spans(self.events, self._is_complete)

    @cached_property
    def tracked(self) -> pl.DataFrame:
        """The complete events with the track each is drawn on: idx, name, lane (as text), track, ts, end, dur."""
        return self.complete.select("idx", "name", pl.col("lane").cast(pl.String), track(), "ts", "end", "dur")

    @cached_property
    def window(self) -> tuple[int, int]:
        """(first start, last end) of the profiled window, ns."""
        return window(self._spans[0])

    @property
    def window_ns(self) -> int:
        """Length of the profiled window, ns."""
        return self.window[1] - self.window[0]

    @cached_property
    def complete_count(self) -> int:
        """How many complete events the profile holds."""
        return self._spans[0].height

    @cached_property
    def lanes(self) -> pl.DataFrame:
        """Per lane: events, total, busy, share of the window."""
        return lane_totals(self._spans[0], self.window_ns)

    @cached_property
    def categories(self) -> pl.DataFrame:
        """Per (lane, category): events and summed duration."""
        return lane_categories(self.select_complete("lane", "cat", "dur"))

    @cached_property
    def _track_pass(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Per-track totals and hardware idle gaps, from one sort of the spans by track and start."""
        return track_totals(*self._spans)

    @cached_property
    def tracks(self) -> pl.DataFrame:
        """Per (lane, track): events, total, busy, idle, gaps, span."""
        return self._track_pass[0]

    @cached_property
    def hardware_tracks(self) -> pl.DataFrame:
        """The hardware lane's tracks (one per device/core): busy + idle = span on each."""
        return self.tracks.filter(pl.col("lane") == "hardware").drop("lane")

    @cached_property
    def links(self) -> pl.DataFrame:
        """Runtime call → device activity links: (call_idx, exec_idx, via)."""
        ends = (pl.col("lane") == "runtime_api") | (pl.col("side") == "device")  # only these take part in links
        return launch_links(self.events, self.complete_rows(ends))

    @cached_property
    def hardware_idle(self) -> pl.DataFrame:
        """Every idle gap between hardware executions on the same device: (track, gap_start, gap_end, gap)."""
        return self._track_pass[1]

    @cached_property
    def launch_delays(self) -> pl.DataFrame:
        """Per linked hardware execution: the runtime call, the execution and the delay between their starts."""
        links = self.links
        calls = self.select_complete("idx", "name", "ts", where=pl.col("idx").is_in(links["call_idx"].implode()))
        return gapmod.launch_delays(links, calls, self.executions)

    @cached_property
    def executions(self) -> pl.DataFrame:
        """The hardware lane's events (device executions): idx, name, ts, end, dur and the track (device) each ran on."""
        spans, names = self._spans
        tracks = spans.filter(pl.col("lane") == "hardware")["track"]  # the same rows, in the same order
        return self.select_complete("idx", "name", "ts", "end", "dur", where=pl.col("lane") == "hardware").with_columns(track=names.gather(tracks))

    @cached_property
    def gaps(self) -> pl.DataFrame:
        """Statistics of both gap kinds: (kind, count, total, p50, p90, max, share of the window)."""
        rows = [
            {"kind": "hardware_idle", **gapmod.stats(self.hardware_idle["gap"])},
            {"kind": "launch_delay", **gapmod.stats(self.launch_delays["delay"])},
        ]
        frame = pl.DataFrame(rows, schema={"kind": pl.String, **{k: pl.Int64 for k in gapmod.STATS}})
        return frame.with_columns(share=pl.col("total") / self.window_ns if self.window_ns else pl.lit(0.0))

    @cached_property
    def steps(self) -> pl.DataFrame:
        """One row per ProfilerStep#N window with per-lane busy time and hardware idle inside it."""
        spans, names = self._spans
        steps = self.select_complete(is_step(pl.col("name"))).to_series()
        windows = step_windows(self.select_complete("name", "ts", "end", "dur", where=pl.col("name").str.starts_with("ProfilerStep#")))
        return step_totals(windows, spans, max(len(names), 1), steps)

    @cached_property
    def _tree(self) -> tuple[pl.DataFrame, pl.Series]:
        """The nesting frame and, row for row, each event's parent row (see ntrace.ops.op_tree)."""
        return opmod.op_tree(self)

    @property
    def nesting(self) -> pl.DataFrame:
        """Per host event torch's op tree is built from: idx, parent_idx, depth, open_pos, close_pos, op_idx (innermost framework op around it)."""
        return self._tree[0]

    @cached_property
    def device(self) -> str:
        """The device the op table's device columns are named for (see ntrace.ops.device_name)."""
        return opmod.device_name(self)

    @cached_property
    def attribution(self) -> pl.DataFrame:
        """One row per hardware execution: (exec_idx, dur, call_idx, op_idx), the framework op it is self device time of (see ntrace.ops.device_attribution)."""
        return opmod.device_attribution(self)

    @cached_property
    def op_groups(self) -> pl.DataFrame:
        """The op table before any view: sums per (name, input_dims), plus the unlinked device time row (see ntrace.ops.op_groups)."""
        return opmod.op_groups(self)

    @cached_property
    def hardware_ns(self) -> int:
        """All hardware execution time, ns (see ntrace.ops.hardware_time)."""
        return opmod.hardware_time(self)

    @cached_property
    def self_cpu_ns(self) -> int:
        """Self CPU time over every op, ns: the footer of torch's table (see ntrace.ops.self_cpu_time)."""
        return opmod.self_cpu_time(self)

    @cached_property
    def findings(self) -> pl.DataFrame:
        """What to look at first: device hotspots, runs of small executions, host→device copies (see ntrace.findings)."""
        return findmod.profile_findings(self)

    @cached_property
    def ops(self) -> pl.DataFrame:
        """The per-op table of torch's key_averages() (ns), sorted by self CPU; see ntrace.ops.op_table for other views."""
        return opmod.op_table(self)

    def compute(self) -> "Profile":
        """Compute every result the outputs read (RESULTS, then findings, which reads both branches), the two branches at once for traces of up to TWO_THREADS_MAX complete events.

        An analysis is some 250 Polars queries, and Polars releases the GIL while one runs. On a
        small trace they are short and run mostly on the calling thread, so a second thread keeps
        the other core busy (a quarter off the analysis of a 34 MiB trace); on a large one Polars
        already spreads each query over the cores, and running both branches at once only adds
        their peaks (94 MiB: 20 ms of 0.85 s saved for 24 MiB more memory), so they run one after
        the other. Results are cached properties: a branch needing the other's result waits for
        it (or, without cached_property's lock, computes it too), and nothing is computed wrong.
        """
        if self.complete_count <= TWO_THREADS_MAX:
            self._both_branches()
        else:
            for branch in RESULTS:
                _results(self, branch)
        self.findings
        return self

    def _both_branches(self) -> None:
        """The two RESULTS branches at once: the second on a thread of its own, whose error is raised here."""
        failed: list[BaseException] = []

        def second() -> None:
            try:
                _results(self, RESULTS[1])
            except BaseException as exc:  # re-raised in the calling thread
                failed.append(exc)

        helper = threading.Thread(target=second, name="ntrace-analysis")
        helper.start()
        try:
            _results(self, RESULTS[0])
        finally:
            helper.join()
        if failed:
            raise failed[0]


#: Most complete events for which Profile.compute runs its two branches at once (about 40 MB of Kineto JSON).
TWO_THREADS_MAX = 150_000

#: What every output reads (the frames and numbers a Parquet cache stores but findings) in two branches that share only `_spans`: the op tree and table, and the lanes, tracks, gaps and steps.
RESULTS: tuple[tuple[str, ...], tuple[str, ...]] = (
    ("op_groups", "device", "hardware_ns", "self_cpu_ns"),
    ("lanes", "categories", "tracks", "gaps", "steps", "window", "complete_count"),
)


def _results(profile: Profile, names: tuple[str, ...]) -> None:
    """Compute (and so cache) these attributes of `profile`."""
    for name in names:
        getattr(profile, name)


def load(
    path: str | Path, *, fast: bool = True, lanes: Mapping[str, str] | None = None, max_events: int | None = None, recompute: bool = False
) -> Profile:
    """Decode and classify one trace file (an `ntrace convert` or Neuron Explorer .parquet file too); `lanes` adds category → lane rows.

    `max_events` keeps only a JSON trace's first events (for traces too large to analyze whole);
    `recompute` ignores the analysis an `ntrace convert` file stores, recomputing it from its events.
    """
    if Path(path).suffix.lower() == ".parquet":
        from ntrace.explorer import load_explorer  # imported here: explorer and parquet build on Profile
        from ntrace.parquet import is_ntrace_parquet, read_parquet

        return read_parquet(path, lanes, recompute=recompute) if is_ntrace_parquet(path) else load_explorer(path)
    return Profile.from_decoded(decode_trace(path, fast=fast, max_events=max_events), lanes)
