"""The facade: one Trace with every analysis as a lazily computed, memoized Polars frame, and the Summary the outputs read.

Profile holds no state but its Trace and the results it has computed; each property is one
call into `ntrace.analyses` with the frames that analysis needs. `summary()` computes what
every output reads and returns it as a frozen Summary.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Sequence

import polars as pl

from ntrace.analyses import findings as findmod
from ntrace.analyses import memory as memmod
from ntrace.analyses import ops as opmod
from ntrace.analyses import stats
from ntrace.analyses.links import ACTIVITY, CALL, launch_links
from ntrace.analyses.ranks import COLLECTIVE, COMMUNICATION_SCHEMA, INSTANCE_SCHEMA, collective_instances, communication_time, rank_figures, rank_summary
from ntrace.analyses.nesting import related
from ntrace.analyses.opview import OpView
from ntrace.analyses.steps import DEVICE_SCHEMA, device_work, host_busy, is_step, launch_step, overlapping, step_windows
from ntrace.analyses.totals import lane_categories, lane_totals, spans, track, track_totals, window
from ntrace.exprs import fmt, grouped_on, matches, on_polars_thread, stacked
from ntrace.summary import RankSummary, Summary, Timeline
from ntrace.trace import EVENT_COLUMNS, Trace

#: Host-side complete events.
HOST = pl.col("side") == "host"

#: Most events (of any kind: known without a query) for which summary() and rank_summary() run on a thread of Polars' pool (see ntrace.exprs.on_polars_thread), one query after another.
POOL_THREAD_MAX = 20_000

#: The events' columns the op tree is built from, in the order `nesting` gives them.
_TREE_EVENT_COLUMNS = ("idx", "pid", "tid", "ts", "end", "dur", "name", "cat", "input_dims")

#: The columns of neff_executions.
NEFF_EXECUTION_SCHEMA = pl.Schema(
    {"idx": pl.Int64(), "model": pl.String(), "track": pl.String(), "ts": pl.Int64(), "dur": pl.Int64(), "op": pl.String(), "call_dur": pl.Int64(), "step": pl.Int64()}
)

#: The columns of Profile.gaps.
GAP_SCHEMA = pl.Schema({"kind": pl.String(), **{k: pl.Int64() for k in stats.STATS}, "share": pl.Float64()})

#: What every output reads, in two branches that share only the track codes: the op tree and table, and the lanes, tracks, gaps and steps.
_BRANCHES: tuple[tuple[str, ...], tuple[str, ...]] = (
    ("op_groups", "device_ns", "self_cpu_ns", "kernels", "neff_executions", "communication"),
    ("lanes", "categories", "tracks", "gaps", "steps", "window", "complete_count"),
)
#: What reads both branches, in order: taken one at a time by whichever thread has finished its branch.
_TAIL = ("_step_work", "executions", "launched", "findings")


class Profile:
    """One trace's analyses (all times int64 ns); every property is computed on first use and kept.

    `stored` is a Summary computed earlier by this very analysis code (an ntrace Parquet cache's):
    summary() returns it instead of computing one. `by` names columns of the events that key
    traces stacked into one (see Stacked): the frames it computes carry them, and summary() is
    then not a trace's.
    """

    def __init__(self, trace: Trace, stored: Summary | None = None, by: tuple[str, ...] = ()) -> None:
        self.trace = trace
        self._stored = stored
        self._by = by

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
        out = self.complete_rows(where).select(*columns, **named).collect(engine="in-memory")
        if "idx" in out.columns:  # events are kept in idx order: joins on idx merge instead of hashing
            out.replace_column(out.get_column_index("idx"), out["idx"].set_sorted())  # in place (the frame is new): no query
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
        return spans(self.events, self._is_complete, self._by)

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
        return lane_totals(self._spans[0], pl.DataFrame({"window_ns": [self.window_ns]}))

    @cached_property
    def categories(self) -> pl.DataFrame:
        """Per (lane, category): events and summed duration."""
        return lane_categories(self.complete_rows().select("lane", "cat", "dur")).collect(engine=grouped_on(self.events.height))

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
        return launch_links(self.events, self.complete_rows(CALL | ACTIVITY), self._by)

    @cached_property
    def hardware_idle(self) -> pl.DataFrame:
        """Every idle gap between hardware executions on the same device: (track, gap_start, gap_end, gap)."""
        return self._track_pass[1]

    @cached_property
    def calls(self) -> pl.DataFrame:
        """The runtime calls that launched device work: idx, name, pid, tid, ts, end."""
        return self.select_complete("idx", "name", "pid", "tid", "ts", "end", where=CALL & pl.col("idx").is_in(self.links["call_idx"].implode()))

    @cached_property
    def activities(self) -> pl.DataFrame:
        """The device activities (what torch counts as device time): idx, name, cat, pid, tid, ts, end, dur, bytes and the track each ran on."""
        return self.select_complete(*self._by, "idx", "name", "cat", "pid", "tid", "ts", "end", "dur", "bytes", track(), where=ACTIVITY)

    @cached_property
    def executions(self) -> pl.DataFrame:
        """The hardware lane's events (compute executions): idx, name, ts, end, dur and the track (device) each ran on."""
        spans, names = self._spans
        tracks = spans.filter(pl.col("lane") == "hardware")["track"]  # the same rows, in the same order
        return self.select_complete(*self._by, "idx", "name", "ts", "end", "dur", where=pl.col("lane") == "hardware").with_columns(track=names.gather(tracks))

    @cached_property
    def collectives(self) -> pl.DataFrame:
        """The collective device activities (NCCL/RCCL kernels, Neuron cc_running/cc_exec_barrier): idx, name, device, ts, end, sequence, by start."""
        return collective_instances(self.select_complete("idx", "name", "pid", "ts", "end", "sequence", where=ACTIVITY))  # which picks the collectives, on these rows only

    @cached_property
    def communication(self) -> pl.DataFrame:
        """Per device with collectives: comm (union of their intervals) and exposed (the part no compute execution of that device overlaps), ns."""
        if self.collectives.is_empty():  # no device communicates: skip the sweep over every execution
            return pl.DataFrame(schema=COMMUNICATION_SCHEMA)
        compute = self.executions.filter(~COLLECTIVE).select(device="track", ts="ts", end="end")
        return communication_time(self.collectives, compute)

    @property
    def launch_delays(self) -> pl.DataFrame:
        """Per linked device activity: the runtime call, the activity, its launch latency and queue delay (see ntrace.analyses.stats); less the longest where their sum would pass int64."""
        return self._launch_delays[0]

    @cached_property
    def _launch_delays(self) -> tuple[pl.DataFrame, tuple[str, ...]]:
        """launch_delays, and the warning that counts the delays left out of it (none on any real trace)."""
        delays, dropped = stats.summable_delays(stats.launch_delays(self.links, self.calls, self.activities))
        note = f"{self.trace.path}: {dropped} launch delays are so long that their sums would pass what int64 ns hold; they were left out"
        return delays, (note,) if dropped else ()

    @cached_property
    def gaps(self) -> pl.DataFrame:
        """Statistics of hardware idle, launch latency and queue delay: (kind, count, total, p50, p90, max, share); only idle has a share, of the hardware tracks' spans."""
        hardware = self.hardware_tracks
        span = int(hardware["span"].sum()) if hardware.height else 0
        rows = [
            {"kind": "hardware_idle", **stats.stats(self.hardware_idle["gap"]), "share": (int(hardware["idle"].sum()) / span) if span else 0.0},
            {"kind": "launch_latency", **stats.stats(self.launch_delays["latency"]), "share": None},
            {"kind": "queue_delay", **stats.stats(self.launch_delays["queue"]), "share": None},
        ]
        return pl.DataFrame(rows, schema=GAP_SCHEMA)

    @cached_property
    def _windows(self) -> pl.DataFrame:
        """The profiler step windows (see ntrace.analyses.steps.step_windows)."""
        return step_windows(self.select_complete(*self._by, "idx", "name", "ts", "end", "dur", where=HOST & matches("name", "^ProfilerStep#")), self._by)

    @cached_property
    def steps(self) -> pl.DataFrame:
        """One row per ProfilerStep#N window: step, name, start, end, dur and the busy ns of each lane's host events inside it."""
        windows = self._windows
        if windows.is_empty():  # no steps: no host event to place in one
            return host_busy(windows, self.events.clear().select("lane", "ts", "end"))  # the empty frame of events, not a copy of the complete ones
        return host_busy(windows, self.complete_rows(HOST & ~is_step()).select("lane", "ts", "end"))

    @cached_property
    def _step_work(self) -> tuple[pl.DataFrame, tuple[int, int]]:
        """Per (step, device) the device work each step launched, and the (count, ns) of device work in no step."""
        windows = self._windows
        if windows.is_empty():  # no steps: every activity is launched in none
            return pl.DataFrame(schema=DEVICE_SCHEMA), (self.activities.height, int(self.activities["dur"].sum()))
        per, outside = device_work(windows, self._device_work)
        return per, (outside.height, int(outside["dur"].sum()))

    @property
    def _device_work(self) -> pl.DataFrame:
        """The device activities as the steps place them: idx, device (`device {pid}`), ts, end, dur and the start of the runtime call that launched each (call_ts)."""
        return self.activities.select("idx", device=fmt("device {}", pl.col("pid").fill_null("?")), ts="ts", end="end", dur="dur").join(
            self.links.select(idx="exec_idx", call_idx="call_idx").join(self.calls.select(call_idx="idx", call_ts="ts"), on="call_idx"), on="idx", how="left"
        )

    @property
    def step_devices(self) -> pl.DataFrame:
        """Per (step, device): events, busy, idle, span of the device activities the step launched (busy + idle = span)."""
        return self._step_work[0]

    @property
    def outside_steps(self) -> tuple[int, int]:
        """The device activities launched in no step: (count, ns)."""
        return self._step_work[1]

    @cached_property
    def nesting(self) -> pl.DataFrame:
        """torch's op tree of the host events, in its walking order: idx, parent_idx, depth, pos, parent, last and the event's columns (see ntrace.analyses.nesting.tree).

        The op tree keeps no name or category (ntrace.analyses.ops.op_tree): they are joined back from the events here.
        """
        by = [*self._by, "idx"]
        named = self._tree.join(self.events.select(*by, "name", "cat"), on=by, how="left", maintain_order="left")
        return related(named.select(*self._by, *_TREE_EVENT_COLUMNS, "thread", "first", "parent", "last", "key", "user_annotation"))

    @cached_property
    def _tree(self) -> pl.DataFrame:
        """The op tree as the analyses read it: nesting without pos, parent_idx, depth, name and cat, with cpu_op (see ntrace.analyses.ops.op_tree).

        Built from the complete events torch builds its tree from (opmod.TREE_EVENT), with the
        columns the op tree and table read, selected and put in walking order by one query: no
        copy of them in file order is kept while the tree is built.
        """
        return opmod.op_tree(self.complete_rows(opmod.TREE_EVENT).select(*self._by, *_TREE_EVENT_COLUMNS))

    @cached_property
    def device(self) -> str:
        """The device the op table's device columns are named for (see ntrace.analyses.ops.device_name)."""
        return opmod.device_name(self.categories)

    @cached_property
    def attribution(self) -> pl.DataFrame:
        """One row per device activity: (idx, dur, call_idx, op_idx), the op it is own device time of (null when no op launched it)."""
        return opmod.attribution(self.activities, self.links, self._tree, self.calls, self._by)

    @cached_property
    def device_ns(self) -> int:
        """All device activity, ns: the device footer of torch's table."""
        return int(self.activities["dur"].sum())

    @cached_property
    def op_groups(self) -> pl.DataFrame:
        """The op table before any view: sums per (name, user_annotation, input_dims), plus the unlinked device time row (see ntrace.analyses.ops.op_groups)."""
        return opmod.op_groups(self._op_rows, self.attribution, self._by)

    @cached_property
    def _op_rows(self) -> pl.DataFrame:
        """The op tree's events still counted after torch's folding, with their self and total times (see ntrace.analyses.ops.op_rows): read by the op groups and the warnings."""
        return opmod.op_rows(self._tree, self.attribution, self._by)

    @cached_property
    def self_cpu_ns(self) -> int:
        """Self CPU time over every op, ns: the CPU footer of torch's table."""
        return opmod.self_cpu_total(self._tree)

    @cached_property
    def kernels(self) -> pl.DataFrame:
        """Per device activity name: calls, total, mean, min, max, share of device time, streams (see ntrace.analyses.ops.kernels)."""
        return opmod.kernels(self.activities, self.device_ns)

    @cached_property
    def neff_executions(self) -> pl.DataFrame:
        """The hardware executions that name the NEFF they ran (Neuron's `model_name` arg): idx, model, track, ts, dur, the launching op, its runtime call's duration and the step that launched it."""
        if self.events["model"].null_count() == self.events.height:  # no execution names a NEFF (every trace but Neuron's)
            return pl.DataFrame(schema=NEFF_EXECUTION_SCHEMA)
        runs = self.select_complete("idx", "model", "ts", "dur", track(), where=(pl.col("lane") == "hardware") & pl.col("model").is_not_null())
        calls = self.calls.select(call_idx="idx", call_ts="ts", call_dur=pl.col("end") - pl.col("ts"))
        ops = self._op_keys(self.attribution["op_idx"])
        joined = (
            runs.join(self.attribution.select("idx", "call_idx", "op_idx"), on="idx", how="left")
            .join(calls, on="call_idx", how="left")
            .join(ops, on="op_idx", how="left")
        )
        windows = self._windows
        row = launch_step(windows, joined["call_ts"])
        step = windows["step"].gather(row) if windows.height else pl.lit(None, pl.Int64)
        return joined.select("idx", "model", "track", "ts", "dur", "op", "call_dur", step=step).cast(NEFF_EXECUTION_SCHEMA).sort("ts", "idx")  # the op as text

    @cached_property
    def findings(self) -> pl.DataFrame:
        """What to look at first: device hotspots, runs of small executions, scalar host→device copies (see ntrace.analyses.findings)."""
        if self.activities.is_empty() and self.executions.height < findmod.MIN_RUN:  # no device time to own, no run to fuse, no copy
            return pl.DataFrame(schema=findmod.FINDING_SCHEMA)
        return findmod.findings(self.op_table().with_columns(device=pl.lit(self.device), device_ns=pl.lit(self.device_ns, pl.Int64)), self.launched, self.executions)

    @cached_property
    def launched(self) -> pl.DataFrame:
        """Per device activity: idx, dur, call_idx, op_idx (as attribution), its name, ts and bytes, and the launching op's name (`op`), names as categoricals as the events hold them."""
        attribution = self.attribution
        ops = self._op_keys(attribution["op_idx"])
        return attribution.join(self.activities.select("idx", "name", "ts", "bytes"), on="idx").join(ops, on="op_idx", how="left")

    def _op_keys(self, op_idx: pl.Series) -> pl.DataFrame:
        """(op_idx, op): the op table's name of each op of the tree among `op_idx`, picked out of the tree first, so that a join on them hashes those ops and not every op."""
        return self._tree.select(op_idx="idx", op="key").filter(pl.col("op_idx").is_in(op_idx.drop_nulls().implode()))

    @property
    def analysis_warnings(self) -> tuple[str, ...]:
        """What the analysis found doubtful in the trace (torch's rules giving negative self CPU, steps overlapping, launch delays too long to sum), one line each."""
        return (*self.op_warnings, *self.step_warnings, *self._launch_delays[1])

    @cached_property
    def op_warnings(self) -> tuple[str, ...]:
        """What the analysis found doubtful in the op table: events to which torch's rule gives negative self CPU."""
        return _op_warning(self.trace, self._op_rows.filter(pl.col("self_cpu") < 0).height)

    @cached_property
    def step_warnings(self) -> tuple[str, ...]:
        """What the analysis found doubtful in the profiler steps: steps that start before the previous one ends."""
        return _step_warning(self.trace, overlapping(self._windows))

    @property
    def has_memory(self) -> bool:
        """Whether the trace holds allocator records (profiled with profile_memory=True)."""
        return not self.memory_series.is_empty()

    @cached_property
    def memory_series(self) -> pl.DataFrame:
        """Every allocator record (`[memory]` instant) in time order: device_type, device_id, ts, bytes, allocated, reserved (see ntrace.analyses.memory)."""
        return memmod.records(self.events)

    @cached_property
    def memory_devices(self) -> pl.DataFrame:
        """Per device with allocator records: counts, bytes allocated and freed, peak allocated (and when), peak reserved."""
        return memmod.devices(self.memory_series)

    @cached_property
    def memory_ops(self) -> pl.DataFrame:
        """torch's CPU Mem, Self CPU Mem, device Mem, Self device Mem per (name, user annotation), with the "[memory]" row of records in no op."""
        return memmod.op_memory(self._tree, self.memory_series)

    def op_table(self, view: OpView = OpView()) -> pl.DataFrame:
        """The per-op table of torch's key_averages() (ns) in a view: sorted by a torch key, cut to its top rows, grouped by shape."""
        return opmod.op_table(self.op_groups, self.self_cpu_ns, self.device_ns, view)

    @cached_property
    def ops(self) -> pl.DataFrame:
        """The per-op table in the default view: every row, sorted by self CPU."""
        return self.op_table()

    @property
    def _small(self) -> bool:
        """Whether the trace is small enough (POOL_THREAD_MAX events) that its analysis runs on a thread of Polars' pool."""
        return self.events.height <= POOL_THREAD_MAX

    def summary(self) -> Summary:
        """Every result the outputs read, as a frozen Summary (computed once), where its queries cost least for the trace's size.

        An analysis is some 250 Polars queries. On a small trace (up to POOL_THREAD_MAX events)
        each is so short that handing it to Polars' pool costs more than running it, so
        the whole analysis runs on a pool thread (unless other Python threads run: see
        ntrace.exprs.on_polars_thread). On a larger one many steps are single-threaded (Series
        operations, the op tree's pointer jumping) and Polars releases the GIL while one runs, so
        the op tree and the lane totals run at once on two threads, whatever the size: a second
        core is kept busy for a few per cent more memory. Results are cached properties: a
        branch needing the other's result waits for it (or, without cached_property's lock,
        computes it too), and nothing is computed wrong.
        """
        if self._stored is not None:
            return self._stored
        if self._small:
            return on_polars_thread(self._summary)
        self._both_branches()
        return self._summary()

    def _summary(self) -> Summary:
        """summary()'s work, on the thread that calls it."""
        trace = self.trace
        return Summary(
            path=trace.path, variant=trace.variant, meta=trace.meta, warnings=(*trace.warnings, *self.analysis_warnings),
            window=self.window, events=self.complete_count, device=self.device, device_ns=self.device_ns, self_cpu_ns=self.self_cpu_ns,
            lanes=self.lanes, categories=self.categories, tracks=self.tracks, gaps=self.gaps,
            steps=self.steps, step_devices=self.step_devices, outside_steps=self.outside_steps,
            op_groups=self.op_groups, kernels=self.kernels, findings=self.findings, neff_executions=self.neff_executions,
            collectives=self.collectives, communication=self.communication,
            idle_gaps=self.hardware_idle["gap"], launch_latencies=self.launch_delays["latency"], queue_delays=self.launch_delays["queue"],
            memory_series=self.memory_series if self.has_memory else None,  # none without records: "not profiled" is not "nothing allocated"
            memory_devices=self.memory_devices if self.has_memory else None,
            memory_ops=self.memory_ops if self.has_memory else None, op_warnings=self.op_warnings,
        )  # fmt: skip

    def rank_summary(self) -> RankSummary:
        """What `ntrace ranks` reads of this trace (see ntrace.analyses.ranks.rank_summary), computing only that: no op tree, op table, kernels or findings."""
        if self._stored is not None:
            return rank_summary(self._stored)
        if self._small:
            return on_polars_thread(self._rank_summary)
        return self._rank_summary()

    def _rank_summary(self) -> RankSummary:
        """rank_summary()'s work, on the thread that calls it."""
        trace = self.trace
        figures = rank_figures(self.steps, self.lanes, self.hardware_idle["gap"], self.communication, self.launch_delays["latency"])
        return RankSummary(trace.path, trace.meta, (*trace.warnings, *self.step_warnings, *self._launch_delays[1]), figures, self.steps, self.collectives)

    def timeline(self) -> Timeline:
        """What the HTML timeline draws: every complete event on its track with the args its hover shows, and the hardware idle gaps."""
        events = self.complete.select(pl.col("lane").cast(pl.String), track(), "ts", "end", "dur", "name", "cat", "correlation", "external_id", "input_dims", "bytes")
        return Timeline(events, self.hardware_idle.select("track", "gap_start", "gap"))

    def _both_branches(self) -> None:
        """The two _BRANCHES at once, then the _TAIL by both threads as each is free: the second thread's error is raised here."""
        failed: list[BaseException] = []
        tail = deque(_TAIL)

        def work(branch: tuple[str, ...]) -> None:
            _results(self, branch)
            while True:
                try:
                    name = tail.popleft()
                except IndexError:  # none left (the other thread may have taken the last one)
                    return
                getattr(self, name)

        def second() -> None:
            try:
                work(_BRANCHES[1])
            except BaseException as exc:  # re-raised in the calling thread
                failed.append(exc)

        helper = threading.Thread(target=second, name="ntrace-analysis")
        helper.start()
        try:
            work(_BRANCHES[0])
        finally:
            helper.join()
        if failed:
            raise failed[0]


def _op_warning(trace: Trace, negative: int) -> tuple[str, ...]:
    """The warning that `negative` events of the trace's op table have negative self CPU (none for 0)."""
    if negative:
        return (f"{trace.path}: {negative} events have negative self CPU: children that partly overlap each other, whose overlap torch's rule subtracts twice",)
    return ()


def _step_warning(trace: Trace, overlaps: int) -> tuple[str, ...]:
    """The warning that `overlaps` of the trace's profiler steps start before the previous one ends (none for 0)."""
    if overlaps:
        return (f"{trace.path}: {overlaps} profiler steps start before the previous one ends; an event counts in the last step started",)
    return ()


def _results(profile: Profile, names: tuple[str, ...]) -> None:
    """Compute (and so cache) these attributes of `profile`."""
    for name in names:
        getattr(profile, name)



#: Most events a trace may have to be summarized stacked with others (see summaries): a trace analyzed on a pool thread alone (POOL_THREAD_MAX), whose queries are small.
STACK_MAX_EVENTS = POOL_THREAD_MAX
#: Most events stacked into one frame: a directory's small traces are summarized in stacks of about this many events.
STACK_EVENTS = 100_000
#: The key column of stacked traces.
_KEY = "trace"


def summaries(traces: Sequence[Trace], timeline: bool = False) -> list[Summary]:
    """Each trace's Summary (with what its timeline draws when `timeline`): the small ones (STACK_MAX_EVENTS) computed stacked, STACK_EVENTS at a time (see Stacked), the others alone; each equal to Profile(trace)'s."""
    out: dict[int, Summary] = {}
    chunk: list[int] = []
    held = 0
    small = [k for k, t in enumerate(traces) if _stackable(t)]
    for k in [*small, None]:
        if k is not None and held + traces[k].events.height <= STACK_EVENTS:
            chunk.append(k)
            held += traces[k].events.height
            continue
        if chunk:
            stack = Stacked([traces[j] for j in chunk])
            out |= dict(zip(chunk, on_polars_thread(lambda: stack.summaries(timeline))))
        chunk, held = ([k], traces[k].events.height) if k is not None else ([], 0)
    return [out[k] if k in out else _alone(t, timeline) for k, t in enumerate(traces)]


def _stackable(trace: Trace) -> bool:
    """Whether the trace is summarized in a stack: it has events, at most STACK_MAX_EVENTS."""
    return 0 < trace.events.height <= STACK_MAX_EVENTS


def _alone(trace: Trace, timeline: bool) -> Summary:
    """The trace's Summary computed alone, with its timeline when asked."""
    profile = Profile(trace)
    summary = profile.summary()
    return replace(summary, timeline=profile.timeline()) if timeline else summary


def rank_summaries(traces: Sequence[Trace]) -> list[RankSummary]:
    """Each trace's RankSummary: of its Summary computed stacked where it is small (see summaries), else computing only what ranks reads (Profile.rank_summary)."""
    small = [k for k, t in enumerate(traces) if _stackable(t)]
    stacked = dict(zip(small, summaries([traces[k] for k in small])))
    return [rank_summary(stacked[k]) if k in stacked else Profile(t).rank_summary() for k, t in enumerate(traces)]


class Stacked:
    """Small traces analyzed at once: their events in one frame keyed by `trace`, moved apart in time and in event index.

    A Polars query costs tens of µs whatever its size, and a small trace's summary is a couple of
    hundred of them; stacked, the traces share each query. Every trace starts after the previous
    one ends (its times shifted by a constant) and its idx after the previous one's, so the
    analyses that follow threads, windows, nesting and idx stay inside one trace by themselves;
    those that sum over a trace, and the id matches, group by the key. A trace holding what is
    only analyzed alone (allocator records, NEFF executions, collectives) is left out of the stack
    and summarized alone, as are all when their times do not fit one int64 axis. Each Summary
    equals the one Profile computes for its trace alone. Its traces are small (STACK_MAX_EVENTS):
    summaries() runs it on a Polars pool thread, where a large trace's two-thread analysis could
    not run.
    """

    def __init__(self, traces: Sequence[Trace]) -> None:
        self.traces = traces
        self.alone: set[int] = set(range(len(traces)))  # the traces summarized alone
        self.profile: Profile | None = None
        events = stacked([t.events for t in traces], EVENT_COLUMNS, _KEY).collect(engine="in-memory")
        bounds = events.group_by(_KEY, maintain_order=True).agg(
            low=pl.min_horizontal(pl.col("ts").min(), pl.col("end").min()), high=pl.max_horizontal(pl.col("ts").max(), pl.col("end").max()), last=pl.col("idx").max()
        )
        shifts, offsets, bases, base, offset = [], [], [], 0, 0
        for low, high, last in bounds.select("low", "high", "last").iter_rows():
            shifts.append(0 if low is None else base - low)
            offsets.append(offset)
            bases.append(base)
            base += 1 if low is None else high - low + 1
            offset += last + 1
        if base >= 1 << 62 or offset >= 1 << 62:
            return
        self._shift, self._offset, self._base = (pl.Series(v, dtype=pl.Int64) for v in (shifts, offsets, bases))
        key = pl.col(_KEY)
        events = events.with_columns(
            idx=pl.col("idx") + pl.lit(self._offset).gather(key), ts=pl.col("ts") + pl.lit(self._shift).gather(key), end=pl.col("end") + pl.lit(self._shift).gather(key)
        )
        special = pl.col("model").is_not_null() | pl.col("mem_bytes").is_not_null() | (ACTIVITY & COLLECTIVE).fill_null(False)
        self.alone = set(events.select(key.filter(special).unique())[_KEY].to_list())
        if self.alone:
            events = events.filter(~key.is_in(sorted(self.alone)))
        self.profile = Profile(Trace(Path("<stacked>"), events.with_columns(pl.col("idx").set_sorted())), by=(_KEY,))

    def _trace_of(self, idx: str) -> pl.Expr:
        """The trace an event belongs to, from its (moved) idx."""
        return _last_at_most(self._offset, idx)

    def summaries(self, timeline: bool = False) -> list[Summary]:
        """Each trace's Summary (with what its timeline draws when `timeline`), in order."""
        done = self._stacked(timeline) if self.profile is not None else {}
        return [done[k] if k in done else _alone(t, timeline) for k, t in enumerate(self.traces)]

    def _stacked(self, timeline: bool) -> dict[int, Summary]:
        """The Summary of every trace in the stack, by its position."""
        p = self.profile
        assert p is not None
        key, by = pl.col(_KEY), (_KEY,)
        kept = [k for k in range(len(self.traces)) if k not in self.alone]
        every = pl.DataFrame({_KEY: kept}, schema={_KEY: pl.Int64})
        shift = pl.lit(self._shift).gather(key)
        spans = p._spans[0]
        per = every.join(
            spans.group_by(_KEY).agg(first=pl.col("ts").min(), last=pl.col("end").max(), events=pl.len().cast(pl.Int64)), on=_KEY, how="left", maintain_order="left"
        ).with_columns(first=pl.col("first") - shift, last=pl.col("last") - shift, events=pl.col("events").fill_null(0))
        per = per.with_columns(window_ns=(pl.col("last") - pl.col("first")).fill_null(0))
        lanes = lane_totals(spans, per.select(_KEY, "window_ns"), _KEY)
        categories = lane_categories(p.complete_rows().select(_KEY, "lane", "cat", "dur"), by).collect(engine="in-memory")
        tracks, idle = p._track_pass
        tracks = tracks.with_columns(self._trace_of_time("first")).with_columns(first=pl.col("first") - shift, last=pl.col("last") - shift)
        idle = idle.with_columns(self._trace_of_time("gap_start"))
        device = every.join(opmod.device_names(categories, by), on=_KEY, how="left", maintain_order="left").with_columns(pl.col("device").fill_null("none"))
        activities = p.activities
        totals = every.join(activities.group_by(_KEY).agg(device_ns=pl.col("dur").sum()), on=_KEY, how="left", maintain_order="left").with_columns(
            pl.col("device_ns").fill_null(0)
        )
        tree = p._tree
        self_cpu = every.join(tree.filter(pl.col("parent").is_null()).group_by(_KEY).agg(self_cpu_ns=pl.col("dur").sum()), on=_KEY, how="left", maintain_order="left")
        footers = totals.join(self_cpu, on=_KEY).with_columns(pl.col("self_cpu_ns").fill_null(0)).join(device, on=_KEY)
        groups = p.op_groups
        kernels = opmod.kernels(activities.join(totals, on=_KEY, how="left"), "device_ns", by)
        table = opmod.op_tables(groups.lazy().join(footers.lazy(), on=_KEY, how="left"), OpView(), by).collect(engine="in-memory")
        findings = findmod.findings(table.join(footers.select(_KEY, "device", "device_ns"), on=_KEY, how="left"), p.launched, p.executions, by)
        delays, dropped = stats.summable_delays(stats.launch_delays(p.links, p.calls, activities))
        if dropped:  # a trace's delays pass int64 when summed: its warning is Profile's
            return {}
        delays = delays.with_columns(self._trace_of("exec_idx"))
        windows = p._windows
        steps = p.steps.with_columns(start=pl.col("start") - shift, end=pl.col("end") - shift)
        if windows.is_empty():
            step_devices, outside = pl.DataFrame(schema={_KEY: pl.Int64(), **DEVICE_SCHEMA}), p._device_work.select("idx", "dur")
        else:
            step_devices, outside = device_work(windows, p._device_work, by)
        outside = every.join(
            outside.group_by(self._trace_of("idx")).agg(count=pl.len().cast(pl.Int64), ns=pl.col("dur").sum()), on=_KEY, how="left", maintain_order="left"
        ).fill_null(0)
        overlaps = windows.group_by(_KEY).agg((pl.col("start") < pl.col("end").cum_max().shift(1)).sum().alias("overlaps"))
        negative = p._op_rows.filter(pl.col("self_cpu") < 0).group_by(_KEY).len()
        gaps = _gap_rows(idle, delays, tracks.filter(pl.col("lane") == "hardware"), kept)
        parts = {
            name: _split(frame, kept)
            for name, frame in {
                "lanes": lanes, "categories": categories, "tracks": tracks, "gaps": gaps, "steps": steps, "step_devices": step_devices,
                "op_groups": groups, "kernels": kernels, "findings": findings,
                "idle": idle.select(_KEY, "gap"), "delays": delays.select(_KEY, "latency", "queue"),
                **(self._timeline(idle) if timeline else {}),
            }.items()
        }  # fmt: skip
        overlapping = dict(overlaps.iter_rows())
        negatives = dict(negative.iter_rows())
        out = {}
        for row in per.join(footers, on=_KEY).join(outside, on=_KEY).iter_rows(named=True):
            k = row[_KEY]
            trace = self.traces[k]
            part = {name: frames[k] for name, frames in parts.items()}
            op_warnings = _op_warning(trace, negatives.get(k, 0))
            window = (row["first"], row["last"]) if row["events"] else (0, 0)
            out[k] = Summary(
                path=trace.path, variant=trace.variant, meta=trace.meta, warnings=(*trace.warnings, *op_warnings, *_step_warning(trace, overlapping.get(k, 0))),
                window=window, events=row["events"], device=row["device"], device_ns=row["device_ns"], self_cpu_ns=row["self_cpu_ns"],
                lanes=part["lanes"], categories=part["categories"], tracks=part["tracks"], gaps=part["gaps"],
                steps=part["steps"], step_devices=part["step_devices"], outside_steps=(row["count"], row["ns"]),
                op_groups=part["op_groups"], kernels=part["kernels"], findings=self._findings(part["findings"], k), neff_executions=pl.DataFrame(schema=NEFF_EXECUTION_SCHEMA),
                collectives=pl.DataFrame(schema=INSTANCE_SCHEMA), communication=pl.DataFrame(schema=COMMUNICATION_SCHEMA),
                idle_gaps=part["idle"]["gap"], launch_latencies=part["delays"]["latency"], queue_delays=part["delays"]["queue"], op_warnings=op_warnings,
                timeline=Timeline(part["drawn"], part["drawn_idle"]) if timeline else None,
            )  # fmt: skip
        return out

    def _timeline(self, idle: pl.DataFrame) -> dict[str, pl.DataFrame]:
        """Profile.timeline's frames of every trace, keyed, times moved back: the complete events ("drawn") and the hardware idle gaps ("drawn_idle")."""
        assert self.profile is not None
        shift = pl.lit(self._shift).gather(pl.col(_KEY))
        events = self.profile.complete.select(
            _KEY, pl.col("lane").cast(pl.String), track(), ts=pl.col("ts") - shift, end=pl.col("end") - shift,
            dur="dur", name="name", cat="cat", correlation="correlation", external_id="external_id", input_dims="input_dims", bytes="bytes",
        )  # fmt: skip
        return {"drawn": events, "drawn_idle": idle.select(_KEY, "track", gap_start=pl.col("gap_start") - shift, gap="gap")}

    def _trace_of_time(self, column: str) -> pl.Expr:
        """The trace a (moved) time lies in."""
        return _last_at_most(self._base, column)

    def _findings(self, findings: pl.DataFrame, k: int) -> pl.DataFrame:
        """Trace k's findings with the idx and start of the events they list moved back."""
        if findings.is_empty():
            return findings
        idx, ts = pl.field("idx") - self._offset[k], pl.field("ts") - self._shift[k]
        return findings.with_columns(pl.col("events").list.eval(pl.element().struct.with_fields(idx=idx, ts=ts)))


def _last_at_most(starts: pl.Series, column: str) -> pl.Expr:
    """The trace key of each value of `column`: the position of the last of the traces' `starts` (non-decreasing) at or below it."""
    return (pl.lit(starts).search_sorted(pl.col(column), side="right").cast(pl.Int64) - 1).alias(_KEY)


def _split(frame: pl.DataFrame, kept: list[int]) -> dict[int, pl.DataFrame]:
    """A stacked frame's rows per trace of `kept`, without the key, each in the frame's order (an empty frame for a trace with none)."""
    parts = frame.partition_by(_KEY, as_dict=True, include_key=False, maintain_order=True)
    empty = frame.clear().drop(_KEY)
    return {k: parts.get((k,), empty) for k in kept}


def _stats_by(frame: pl.DataFrame, column: str) -> dict[int, dict[str, int]]:
    """stats.stats of `column` per trace of a stacked frame."""
    values = pl.col(column)
    per = frame.group_by(_KEY).agg(
        count=pl.len().cast(pl.Int64), total=values.sum(), p50=stats.nearest_rank_of(values, 50), p90=stats.nearest_rank_of(values, 90), max=values.max()
    )
    return {row.pop(_KEY): row for row in per.iter_rows(named=True)}


def _gap_rows(idle: pl.DataFrame, delays: pl.DataFrame, hardware: pl.DataFrame, kept: list[int]) -> pl.DataFrame:
    """Profile.gaps of every trace of `kept`, keyed: from the stacked hardware idle gaps, launch delays and hardware tracks."""
    none = dict.fromkeys(stats.STATS, 0)
    spans = {k: (idle_ns, span) for k, idle_ns, span in hardware.group_by(_KEY).agg(pl.col("idle").sum(), pl.col("span").sum()).iter_rows()}
    kinds = (("hardware_idle", _stats_by(idle, "gap")), ("launch_latency", _stats_by(delays, "latency")), ("queue_delay", _stats_by(delays, "queue")))
    rows = []
    for k in kept:
        idle_ns, span = spans.get(k, (0, 0))
        for kind, per in kinds:
            share = (idle_ns / span if span else 0.0) if kind == "hardware_idle" else None
            rows.append({_KEY: k, "kind": kind, **per.get(k, none), "share": share})
    return pl.DataFrame(rows, schema={_KEY: pl.Int64, **GAP_SCHEMA}, orient="row")
