"""torch's op tree as whole-column operations, against plain stack and brute-force implementations on random spans: partial overlaps, equal starts, zero-length events."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from ntrace.analyses.nesting import climb, innermost_open, previous_reaching, subtree_sums, tree, tree_order, walk

Span = tuple[int, str, int, int]  # idx, tid, start, end


def torch_parents(spans: list[Span]) -> dict[int, int | None]:
    """profiler_util.EventList._populate_cpu_children, as a plain stack: (idx, tid, start, end) -> parent idx."""
    parent: dict[int, int | None] = {idx: None for idx, *_ in spans}
    for tid in {s[1] for s in spans}:
        ordered = sorted((s for s in spans if s[1] == tid), key=lambda s: (s[2], -s[3], s[0]))
        stack: list[Span] = []
        for ev in ordered:
            while stack:
                top = stack[-1]
                if ev[2] >= top[3] or ev[3] > top[3]:
                    stack.pop()
                else:
                    parent[ev[0]] = top[0]
                    break
            stack.append(ev)
    return parent


def frame(spans: list[Span]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "idx": [s[0] for s in spans],
            "pid": ["1"] * len(spans),
            "tid": [s[1] for s in spans],
            "ts": [s[2] for s in spans],
            "end": [s[3] for s in spans],
            "dur": [s[3] - s[2] for s in spans],
        },
        schema={"idx": pl.Int64, "pid": pl.String, "tid": pl.String, "ts": pl.Int64, "end": pl.Int64, "dur": pl.Int64},
    )


def _spans(raw: list[tuple[int, int, int]]) -> list[Span]:
    return [(i, str(tid), start, start + length) for i, (tid, start, length) in enumerate(raw)]


# Starts and lengths from small ranges: many equal starts, equal ends, zero lengths and partial overlaps.
spans_strategy = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 30), st.integers(0, 14)), max_size=45).map(_spans)


def parents(spans: list[Span]) -> dict[int, int | None]:
    return dict(tree(frame(spans)).select("idx", "parent_idx").iter_rows())


@settings(max_examples=400, deadline=None)
@given(spans_strategy)
def test_parents_match_torch_stack_algorithm(spans: list[Span]) -> None:
    assert parents(spans) == torch_parents(spans)


@settings(max_examples=200, deadline=None)
@given(spans_strategy)
def test_depth_subtree_climb_match_brute_force(spans: list[Span]) -> None:
    nest = tree(frame(spans))
    parent = torch_parents(spans)

    def ancestors(i: int) -> list[int]:
        out = []
        while (up := parent[i]) is not None:
            out.append(up)
            i = up
        return out

    assert dict(nest.select("idx", "depth").iter_rows()) == {i: len(ancestors(i)) for i in parent}
    walked = walk(frame(spans))  # the analyses' frame: tree's rows in the same order, without pos, parent_idx, depth
    assert walked.columns == [c for c in nest.columns if c not in ("pos", "parent_idx", "depth")] and walked["idx"].equals(nest["idx"])
    idx = walked["idx"].to_list()
    subtree = dict(zip(idx, subtree_sums(walked, pl.Series([i + 1 for i in idx], dtype=pl.Int64)).to_list()))
    assert subtree == {i: i + 1 + sum(c + 1 for c in parent if i in ancestors(c)) for i in parent}
    anchor = climb(nest["parent"], pl.Series([i % 2 == 1 for i in idx], dtype=pl.Boolean))
    assert dict(zip(idx, nest["idx"].gather(anchor).to_list())) == {i: next((a for a in ancestors(i) if a % 2 == 1), None) for i in parent}


@settings(max_examples=200, deadline=None)
@given(spans_strategy)
def test_self_time_adds_up_and_is_negative_only_where_children_overlap(spans: list[Span]) -> None:
    """Self = duration − children's durations: the self times of a tree add up to its roots' durations, and an event's self is
    negative only when two of its children overlap (torch subtracts the overlap twice), never otherwise."""
    parent = torch_parents(spans)
    by_idx = {s[0]: s for s in spans}
    children: dict[int, list[Span]] = {i: [] for i in parent}
    for c, p in parent.items():
        if p is not None:
            children[p].append(by_idx[c])
    nest = tree(frame(spans))
    kids = nest.drop_nulls("parent_idx").group_by("parent_idx").agg(pl.col("dur").sum())
    child_time = dict(kids.iter_rows())
    self_time = {i: (by_idx[i][3] - by_idx[i][2]) - child_time.get(i, 0) for i in parent}
    assert sum(self_time.values()) == sum(s[3] - s[2] for s in spans if parent[s[0]] is None)
    for i, own in self_time.items():
        kids_of = sorted(children[i], key=lambda s: (s[2], s[3]))
        disjoint = all(a[3] <= b[2] for a, b in zip(kids_of, kids_of[1:]))
        if disjoint:
            assert own >= 0


def test_partial_overlap_from_the_issue() -> None:
    """ProfilerStep#1 [0,1000), c10d::alltoall_base_ [100,200), hccl:all_to_all [150,850): the collective outlives the op that started it, so its parent is the step."""
    spans = [(0, "1", 0, 1000), (1, "1", 100, 200), (2, "1", 150, 850)]
    assert parents(spans) == {0: None, 1: 0, 2: 0}


def test_tie_rules() -> None:
    # 0 encloses all; 1 and 2 start together (longer first: 1 is the parent of 2);
    # 3 starts where 1 ends (a sibling of 1); 4 is zero-length at 3's start (inside 5, the later of two equal spans);
    # 5 duplicates 3 exactly (the first in the file is the parent).
    spans = [(0, "1", 0, 100), (1, "1", 10, 50), (2, "1", 10, 20), (3, "1", 50, 60), (4, "1", 50, 50), (5, "1", 50, 60)]
    assert parents(spans) == {0: None, 1: 0, 2: 1, 3: 0, 4: 5, 5: 3} == torch_parents(spans)


def test_zero_length_at_an_end_is_outside() -> None:
    spans = [(0, "1", 0, 10), (1, "1", 10, 10)]
    assert parents(spans) == {0: None, 1: None} == torch_parents(spans)


def test_threads_do_not_nest_into_each_other() -> None:
    assert parents([(0, "1", 0, 100), (1, "2", 10, 20)]) == {0: None, 1: None}


def test_empty() -> None:
    assert tree(frame([])).is_empty()


@settings(max_examples=100, deadline=None)
@given(spans_strategy)
def test_times_far_apart_give_the_same_tree(spans: list[Span]) -> None:
    """Near the ends of Int64 (an event 2**61 ns away, timestamps near 1.7e18 ns) the tree is the same."""
    shifted = [(i, tid, a + 1_712_195_495_505_582_988, b + 1_712_195_495_505_582_988) for i, tid, a, b in spans]
    far = [*shifted, (len(spans), "9", 2**62, 2**62 + 1)]
    got = tree(frame(far)).select("idx", "parent_idx").filter(pl.col("idx") < len(spans))
    assert dict(got.iter_rows()) == torch_parents(spans)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20), max_size=30), st.lists(st.integers(0, 1), max_size=30), st.lists(st.booleans(), max_size=30))
def test_previous_reaching_matches_a_scan(values: list[int], bump: list[int], starts: list[bool]) -> None:
    n = len(values)
    thresholds = [v + (bump[i] if i < len(bump) else 0) for i, v in enumerate(values)]
    first = [starts[i] if i < len(starts) else False for i in range(n)]  # position 0 starts a run whether marked or not
    got = previous_reaching(pl.Series(values, dtype=pl.Int64), pl.Series(thresholds, dtype=pl.Int64), pl.Series(first, dtype=pl.Boolean)).to_list()

    def scan(i: int) -> int | None:
        j = i
        while j and not first[j]:
            j -= 1
            if values[j] >= thresholds[i]:
                return j
        return None

    assert got == [scan(i) for i in range(n)]


@settings(max_examples=200, deadline=None)
@given(spans_strategy, st.lists(st.tuples(st.integers(0, 1), st.integers(-2, 46)), max_size=20))
def test_innermost_open_matches_brute_force(spans: list[Span], instants: list[tuple[int, int]]) -> None:
    """The innermost span open at t on a thread: the last one, in torch's walking order, with start ≤ t < end."""
    ops = tree_order(frame(spans).select("idx", "pid", "tid", "ts", "end"))
    at = pl.DataFrame({"pid": ["1"] * len(instants), "tid": [str(t) for t, _ in instants], "t": [t for _, t in instants]}, schema={"pid": pl.String, "tid": pl.String, "t": pl.Int64})
    got = ops["idx"].gather(innermost_open(ops, at)).to_list() if instants else []
    order = ops.select("idx", "tid", "ts", "end").rows()

    def brute(tid: str, t: int) -> int | None:
        hits = [i for i, th, a, b in order if th == tid and a <= t < b]
        return hits[-1] if hits else None

    assert got == [brute(str(tid), t) for tid, t in instants]
