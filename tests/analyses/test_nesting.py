"""Nesting of host events: the Polars parent computation against torch's own stack algorithm, on random nested spans."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from ntrace.analyses.nesting import ancestor_rows, subtree_sums, tree


def parents(events: pl.DataFrame) -> pl.DataFrame:
    return tree(events)[0]


def torch_parents(spans: list[tuple[int, str, int, int]]) -> dict[int, int | None]:
    """profiler_util.EventList._populate_cpu_children, transcribed: (idx, tid, start, end) -> parent idx."""
    parent: dict[int, int | None] = {idx: None for idx, *_ in spans}
    for tid in {s[1] for s in spans}:
        ordered = sorted((s for s in spans if s[1] == tid), key=lambda s: (s[2], -s[3], s[0]))
        stack: list[tuple[int, str, int, int]] = []
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


def laminar(raw: list[tuple[int, int, int]]) -> list[tuple[int, str, int, int]]:
    """Keep the spans that nest properly with the ones kept before them (per thread), in random order."""
    kept: list[tuple[int, str, int, int]] = []
    for tid_n, start, length in raw:
        tid, end = str(tid_n), start + length
        if all(o[1] != tid or end <= o[2] or start >= o[3] or (o[2] <= start and end <= o[3]) or (start <= o[2] and o[3] <= end) for o in kept):
            kept.append((len(kept), tid, start, end))
    return kept


def frame(spans: list[tuple[int, str, int, int]]) -> pl.DataFrame:
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


spans_strategy = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 30), st.integers(0, 12)), max_size=40).map(laminar)


@settings(max_examples=300, deadline=None)
@given(spans_strategy)
def test_parents_match_torch_stack_algorithm(spans: list[tuple[int, str, int, int]]) -> None:
    got = dict(parents(frame(spans)).select("idx", "parent_idx").iter_rows())
    assert got == torch_parents(spans)


@settings(max_examples=150, deadline=None)
@given(spans_strategy)
def test_depth_subtree_and_child_time_match_brute_force(spans: list[tuple[int, str, int, int]]) -> None:
    nest, parent_row = tree(frame(spans))
    parent = torch_parents(spans)
    dur = {s[0]: s[3] - s[2] for s in spans}

    def ancestors(i: int) -> list[int]:
        out = []
        while (i := parent[i]) is not None:  # type: ignore[assignment]
            out.append(i)
        return out

    depth = dict(nest.select("idx", "depth").iter_rows())
    assert depth == {i: len(ancestors(i)) for i in parent}
    idx = nest["idx"].to_list()
    kids = dict.fromkeys(idx, 0)
    for row, up in enumerate(parent_row.to_list()):  # the parent rows tree() hands out, as the op table reads them
        if up is not None:
            kids[idx[up]] += dur[idx[row]]
    assert kids == {i: sum(dur[c] for c, p in parent.items() if p == i) for i in parent}
    subtree = dict(zip(idx, subtree_sums(nest, pl.Series([i + 1 for i in idx], dtype=pl.Int64)).to_list()))
    assert subtree == {i: i + 1 + sum(c + 1 for c in parent if i in ancestors(c)) for i in parent}
    anchor = ancestor_rows(parent_row, pl.Series([i % 2 == 1 for i in idx], dtype=pl.Boolean))
    assert dict(zip(idx, nest["idx"].gather(anchor).to_list())) == {i: next((a for a in ancestors(i) if a % 2 == 1), None) for i in parent}


def test_tie_rules() -> None:
    # 0 encloses all; 1 and 2 start together (longer first: 1 is the parent of 2);
    # 3 starts where 1 ends (a sibling of 1); 4 is zero-length at 3's start (inside 3);
    # 5 duplicates 3 exactly (the first in the file is the parent).
    spans = [(0, "1", 0, 100), (1, "1", 10, 50), (2, "1", 10, 20), (3, "1", 50, 60), (4, "1", 50, 50), (5, "1", 50, 60)]
    got = dict(parents(frame(spans)).select("idx", "parent_idx").iter_rows())
    assert got == {0: None, 1: 0, 2: 1, 3: 0, 4: 5, 5: 3}
    assert got == torch_parents(spans)


def test_threads_do_not_nest_into_each_other() -> None:
    spans = [(0, "1", 0, 100), (1, "2", 10, 20)]
    assert dict(parents(frame(spans)).select("idx", "parent_idx").iter_rows()) == {0: None, 1: None}


def test_empty() -> None:
    assert parents(frame([])).is_empty()


@settings(max_examples=100, deadline=None)
@given(spans_strategy)
def test_times_too_far_apart_to_pack_give_the_same_tree(spans: list[tuple[int, str, int, int]]) -> None:
    """An event 2**61 ns away leaves no room to pack (end, row) into one Int64: the two-key sort must give the same tree."""
    far = [*spans, (len(spans), "9", 2**61, 2**61 + 1)]
    packed = parents(frame(spans)).select("idx", "parent_idx", "depth")
    unpacked = parents(frame(far)).select("idx", "parent_idx", "depth").filter(pl.col("idx") < len(spans))
    assert packed.equals(unpacked)
    assert dict(unpacked.select("idx", "parent_idx").iter_rows()) == torch_parents(spans)
