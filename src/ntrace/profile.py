"""The facade: one Trace with every analysis as a lazily computed, memoized Polars frame, and the Summary the outputs read.

Profile holds no state but its Trace and the results it has computed; each property is one
call into `ntrace.analyses` with the frames that analysis needs. `summary()` computes what
every output reads and returns it as a frozen Summary.
"""

from __future__ import annotations

import threading
from functools import cached_property

import polars as pl

from ntrace.analyses import findings as findmod
from ntrace.analyses import ops as opmod
from ntrace.analyses import stats
from ntrace.analyses.links import launch_links
from ntrace.analyses.ops import OpView
from ntrace.analyses.steps import is_step, step_totals, step_windows
from ntrace.analyses.totals import lane_categories, lane_totals, spans, track, track_totals, window
from ntrace.summary import Summary, Timeline
from ntrace.trace import Trace

#: Most complete events for which summary() runs its two branches at once (about 40 MB of Kineto JSON).
TWO_THREADS_MAX = 150_000

#: What every output reads, in two branches that share only the track codes: the op tree and table, and the lanes, tracks, gaps and steps.
_BRANCHES: tuple[tuple[str, ...], tuple[str, ...]] = (
    ("op_groups", "device", "hardware_ns", "self_cpu_ns"),
    ("lanes", "categories", "tracks", "gaps", "steps", "window", "complete_count"),
)


class Profile:
    """One trace's analyses (all times int64 ns); every property is computed on first use and kept.

    `stored` is a Summary computed earlier by this very analysis code (an ntrace Parquet cache's):
    summary() returns it instead of computing one.
    """

    def __init__(self, trace: Trace, stored: Summary | None = None) -> None:
        self.trace = trace
        self._stored = stored

    @property
    def events(self) -> pl.DataFrame:
        """Every event of the trace (ntrace.trace.EVENT_COLUMNS), in file order."""
        return self.trace.events

    @cached_property
    def complete(self) -> pl.DataFrame:
        """The complete ("X") events: the ones with a duration, which lanes and gaps are made of."""
        return self.select_complete(*self.events.columns)

    def select_complete(self, *columns: str | pl.Expr, where: pl.Expr | None = None, **named: str | pl.Expr) -> pl.DataFrame:
        """`columns` (names or expressions, also `named` ones) of the complete events (those where `where` holds, if given), in file order: a filter that copies only them."""
        out = self.complete_rows(where).select(*columns, **named).collect()
        if "idx" in out.columns:  # events are kept in idx order: joins on idx merge instead of hashing
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
        """How many complete events the trace holds."""
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
        return stats.launch_delays(links, calls, self.executions)

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
            {"kind": "hardware_idle", **stats.stats(self.hardware_idle["gap"])},
            {"kind": "launch_delay", **stats.stats(self.launch_delays["delay"])},
        ]
        frame = pl.DataFrame(rows, schema={"kind": pl.String, **{k: pl.Int64 for k in stats.STATS}})
        return frame.with_columns(share=pl.col("total") / self.window_ns if self.window_ns else pl.lit(0.0))

    @cached_property
    def steps(self) -> pl.DataFrame:
        """One row per ProfilerStep#N window with per-lane busy time and hardware idle inside it."""
        spans, names = self._spans
        steps = self.select_complete(is_step(pl.col("name"))).to_series()
        windows = step_windows(self.select_complete("name", "ts", "end", "dur", where=pl.col("name").str.starts_with("ProfilerStep#")))
        return step_totals(windows, spans, max(len(names), 1), steps)

    @cached_property
    def _tree_events(self) -> pl.DataFrame:
        """The complete events torch builds its op tree from, with the columns the op tree and table read, in idx order."""
        return self.select_complete("idx", "pid", "tid", "ts", "end", "lane", "name", "input_dims", "dur", where=opmod.TREE_EVENT)

    @cached_property
    def _tree(self) -> tuple[pl.DataFrame, pl.Series]:
        """The nesting frame and, row for row, each event's parent row (see ntrace.analyses.ops.op_tree)."""
        return opmod.op_tree(self._tree_events.select("idx", "pid", "tid", "ts", "end", "lane"))

    @property
    def nesting(self) -> pl.DataFrame:
        """Per host event torch's op tree is built from: idx, parent_idx, depth, open_pos, close_pos, op_idx (innermost framework op around it)."""
        return self._tree[0]

    @cached_property
    def device(self) -> str:
        """The device the op table's device columns are named for (see ntrace.analyses.ops.device_name)."""
        return opmod.device_name(self.categories)

    @cached_property
    def attribution(self) -> pl.DataFrame:
        """One row per hardware execution: (exec_idx, dur, call_idx, op_idx), the framework op it is self device time of."""
        return opmod.device_attribution(self.executions, self.links, self.nesting)

    @cached_property
    def op_groups(self) -> pl.DataFrame:
        """The op table before any view: sums per (name, input_dims), plus the unlinked device time row (see ntrace.analyses.ops.op_groups)."""
        nest, parent = self._tree
        return opmod.op_groups(self._tree_events.select("idx", "name", "input_dims", "dur"), nest, parent, self.attribution)

    @cached_property
    def hardware_ns(self) -> int:
        """All hardware execution time, ns: the attribution has one row per execution."""
        return int(self.attribution["dur"].sum())

    @cached_property
    def self_cpu_ns(self) -> int:
        """Self CPU time over every op, ns: the footer of torch's table."""
        return opmod.self_cpu_time(self.nesting, self._tree_events)

    @cached_property
    def findings(self) -> pl.DataFrame:
        """What to look at first: device hotspots, runs of small executions, host→device copies (see ntrace.analyses.findings)."""
        return findmod.findings(self.complete_rows(), self.attribution, self.executions, self.links, self.nesting, self.device, self.hardware_ns)

    def op_table(self, view: OpView = OpView()) -> pl.DataFrame:
        """The per-op table of torch's key_averages() (ns) in a view: sorted by a torch key, cut to its top rows, grouped by shape."""
        return opmod.op_table(self.op_groups, self.hardware_ns, view)

    @cached_property
    def ops(self) -> pl.DataFrame:
        """The per-op table in the default view: every row, sorted by self CPU."""
        return self.op_table()

    def summary(self) -> Summary:
        """Every result the outputs read, as a frozen Summary (computed once; the op tree and the lane totals at once on traces of up to TWO_THREADS_MAX complete events).

        An analysis is some 250 Polars queries, and Polars releases the GIL while one runs. On a
        small trace they are short and run mostly on the calling thread, so a second thread keeps
        the other core busy; on a large one Polars already spreads each query over the cores, and
        running both branches at once only adds their memory peaks, so they run one after the
        other. Results are cached properties: a branch needing the other's result waits for it
        (or, without cached_property's lock, computes it too), and nothing is computed wrong.
        """
        if self._stored is not None:
            return self._stored
        if self.complete_count <= TWO_THREADS_MAX:
            self._both_branches()
        trace = self.trace
        return Summary(
            path=trace.path, variant=trace.variant, meta=trace.meta, warnings=trace.warnings,
            window=self.window, events=self.complete_count, device=self.device, hardware_ns=self.hardware_ns, self_cpu_ns=self.self_cpu_ns,
            lanes=self.lanes, categories=self.categories, tracks=self.tracks, gaps=self.gaps, steps=self.steps,
            op_groups=self.op_groups, findings=self.findings, idle_gaps=self.hardware_idle["gap"], launch_delays=self.launch_delays["delay"],
        )  # fmt: skip

    def timeline(self) -> Timeline:
        """What the HTML timeline draws: every complete event on its track, and the hardware idle gaps."""
        events = self.complete.select(pl.col("lane").cast(pl.String), track(), "ts", "end", "dur", "name")
        return Timeline(events, self.hardware_idle.select("track", "gap_start", "gap"))

    def _both_branches(self) -> None:
        """The two _BRANCHES at once: the second on a thread of its own, whose error is raised here."""
        failed: list[BaseException] = []

        def second() -> None:
            try:
                _results(self, _BRANCHES[1])
            except BaseException as exc:  # re-raised in the calling thread
                failed.append(exc)

        helper = threading.Thread(target=second, name="ntrace-analysis")
        helper.start()
        try:
            _results(self, _BRANCHES[0])
        finally:
            helper.join()
        if failed:
            raise failed[0]


def _results(profile: Profile, names: tuple[str, ...]) -> None:
    """Compute (and so cache) these attributes of `profile`."""
    for name in names:
        getattr(profile, name)
