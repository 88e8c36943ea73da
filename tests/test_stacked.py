"""Small traces summarized stacked (profile.Stacked, profile.summaries) give each trace the very Summary Profile computes for it alone: real traces, hand-made edge cases and generated ones."""

from __future__ import annotations

import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal, assert_series_equal

from analyses.test_properties import SETTINGS, traces
from helpers import shared_trace_files, write_trace, x
from ntrace.io import read_trace
from ntrace.profile import STACK_MAX_EVENTS, Profile, Stacked, rank_summaries, summaries
from ntrace.summary import Summary
from ntrace.trace import Trace

REPO = Path(__file__).resolve().parents[1]
FIXTURES = sorted((REPO / "fixtures" / "rmsnorm").glob("*/*/*/trace.json"))


def assert_same(got: Summary, want: Summary) -> None:
    """Every field of two summaries equal: frames and columns exactly (dtypes, order, values), the rest by ==."""
    for f in fields(Summary):
        a, b = getattr(got, f.name), getattr(want, f.name)
        if isinstance(b, pl.DataFrame):
            assert isinstance(a, pl.DataFrame), f.name
            assert_frame_equal(a, b, check_exact=True)
        elif isinstance(b, pl.Series):
            assert_series_equal(a, b, check_exact=True)
        elif f.compare:
            assert a == b, (f.name, a, b)


def check(traces_: list[Trace]) -> Stacked:
    """Stack the traces, compare every Summary (and what its timeline draws) with the trace's own, and return the stack."""
    stack = Stacked(traces_)
    for got, drawn, trace in zip(stack.summaries(), stack.summaries(timeline=True), traces_):
        profile = Profile(trace)
        assert_same(got, profile.summary())
        assert_same(drawn, profile.summary())
        want = profile.timeline()
        assert got.timeline is None and drawn.timeline is not None
        assert_frame_equal(drawn.timeline.events, want.events, check_exact=True)
        assert_frame_equal(drawn.timeline.idle, want.idle, check_exact=True)
    return stack


def _edge_traces(tmp: Path) -> list[Trace]:
    """Hand-made traces on the edges the stack must keep apart: steps that overlap, partial overlaps (negative self CPU), flows only, no complete event, a CUDA launch, a lone kernel."""
    cases: dict[str, list[dict[str, Any]]] = {
        "overlapping_steps": [x("ProfilerStep#1", "user_annotation", 0, 10), x("ProfilerStep#2", "user_annotation", 5, 10), x("aten::mm", "cpu_op", 6, 2)],
        "negative_self": [x("outer", "cpu_op", 0, 10), x("a", "cpu_op", 1, 6), x("b", "cpu_op", 4, 8)],
        "launch": [
            x("ProfilerStep#7", "user_annotation", 0, 20), x("aten::mm", "cpu_op", 1, 10), x("cudaLaunchKernel", "cuda_runtime", 2, 3, correlation=1),
            x("gemm", "kernel", 30, 5, pid=0, tid=7, correlation=1), x("gemm", "kernel", 40, 5, pid=0, tid=7, correlation=1),
        ],
        "lone_kernel": [x("gemm", "kernel", 3, 5, pid=0, tid=7, correlation=1)],
        "flows": [
            x("cudaLaunchKernel", "cuda_runtime", 2, 3, tid=2), x("k", "kernel", 9, 1, pid=0, tid=7),
            {"ph": "s", "id": 1, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 2, "ts": 2},
            {"ph": "f", "id": 1, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 9, "bp": "e"},
        ],
        "instants_only": [{"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 5, "s": "t"}],
    }  # fmt: skip
    return [read_trace(write_trace(tmp / f"{name}.json", events)) for name, events in cases.items()]


def _counted_stacks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every stack made from now on, in order."""
    sizes: list[int] = []
    init = Stacked.__init__

    def counted(self: Stacked, traces_: list[Trace]) -> None:
        sizes.append(len(traces_))
        init(self, traces_)

    monkeypatch.setattr(Stacked, "__init__", counted)
    return sizes


def test_real_traces_stacked_are_each_their_own() -> None:
    traces_ = [read_trace(p) for p in [*shared_trace_files(), *FIXTURES]]
    stack = check(traces_)
    # the Neuron fixtures (NEFF executions) and the NCCL trace (collectives) are summarized alone; every other one stacked
    alone = {traces_[k].path.name for k in stack.alone}
    assert alone and all(traces_[k].events["model"].null_count() < traces_[k].events.height or "nccl" in traces_[k].path.name for k in stack.alone), alone
    assert len(stack.alone) < len(traces_) - 5


def test_edge_traces_stacked_and_in_any_order(tmp_path: Path) -> None:
    edges = _edge_traces(tmp_path)
    assert not check(edges).alone
    check(edges[::-1])
    check([*edges, *edges])  # the same trace twice: the same times, ids and names in two traces


def test_summaries_stack_the_small_and_keep_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edges = _edge_traces(tmp_path)
    real = [read_trace(p) for p in shared_trace_files()[:3]]
    neuron = read_trace(FIXTURES[0])  # NEFF executions: summarized alone, inside its stack (on the stack's pool thread)
    mixed = [real[0], *edges[:3], neuron, real[1], *edges[3:], real[2]]
    monkeypatch.setattr("ntrace.profile.STACK_EVENTS", 12)  # several stacks
    stacked = _counted_stacks(monkeypatch)
    for got, trace in zip(summaries(mixed), mixed):
        assert_same(got, Profile(trace).summary())
    small = [t for t in mixed if 0 < t.events.height <= STACK_MAX_EVENTS]
    assert len(stacked) > 1 and sum(stacked) == len(small) > len(edges)  # every small trace in a stack, some real ones among them


@SETTINGS
@given(st.lists(traces(), min_size=1, max_size=5))
def test_generated_traces_stacked_are_each_their_own(drawn: list[list[dict[str, Any]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        check([read_trace(write_trace(Path(tmp) / f"t{k}.json", events)) for k, events in enumerate(drawn)])


@pytest.mark.parametrize("held", [100_000, 12])
def test_a_directory_is_summarized_stacked(held: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ntrace.workflows.analyze import analyze, summarize_ranks

    edges = _edge_traces(tmp_path)
    stacks = _counted_stacks(monkeypatch)
    monkeypatch.setenv("NTRACE_CACHE", "0")
    monkeypatch.setattr("ntrace.workflows.analyze.STACK_EVENTS", held)  # a stack is summarized once it holds this many events
    result = analyze(tmp_path, jobs=1, recompute=True)
    sizes = [t.events.height for t in sorted(edges, key=lambda t: t.path)]
    want, count, held_now = [], 0, 0  # the stacks a worker makes: cut once they hold `held` events
    for size in sizes:
        count, held_now = count + 1, held_now + size
        if held_now >= held:
            want, count, held_now = [*want, count], 0, 0
    assert stacks == [*want, *([count] if count else [])]
    assert (len(stacks) == 1) == (held > sum(sizes))  # one stack, or several when they hold more than `held`
    stacks.clear()
    for got, path in zip(summarize_ranks(sorted(t.path for t in edges), jobs=1), sorted(t.path for t in edges)):
        want_rank = Profile(read_trace(path)).rank_summary()
        assert not isinstance(got, Exception) and got.figures == want_rank.figures and got.warnings == want_rank.warnings
    assert sum(stacks) == len(edges)
    by_path = {s.path: s for s in result.summaries}
    assert len(by_path) == len(edges)
    for trace in edges:
        assert_same(by_path[trace.path], Profile(trace).summary())


def test_rank_summaries_stacked_are_each_traces_own(tmp_path: Path) -> None:
    traces_ = [*_edge_traces(tmp_path), *(read_trace(p) for p in shared_trace_files())]
    assert any(0 < t.events.height <= STACK_MAX_EVENTS for t in traces_[6:])  # real traces among the stacked
    for got, trace in zip(rank_summaries(traces_), traces_):
        want = Profile(trace).rank_summary()
        assert (got.path, got.meta, got.warnings, got.figures, got.source) == (want.path, want.meta, want.warnings, want.figures, want.source)
        assert_frame_equal(got.steps, want.steps, check_exact=True)
        assert_frame_equal(got.collectives, want.collectives, check_exact=True)
