"""The oracle's sweep algorithms (interval union/gaps, launching op) against brute force."""

from __future__ import annotations

import pytest

from . import Event, gaps_of, launching_ops, tree_order_key, union_length


# ---------------------------------------------------------------------------------------------
# the sweep algorithms against brute force (hypothesis is a test dependency, not the oracle's)
# ---------------------------------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

intervals_st = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15)), max_size=25)


@hypothesis.given(intervals_st)
@hypothesis.settings(max_examples=300, deadline=None)
def test_union_and_gaps_brute_force(ivs):

    ivs = [(s, s + d) for s, d in ivs]
    covered = {t for s, e in ivs for t in range(s, e)}
    assert union_length(ivs) == len(covered)
    if ivs:
        lo, hi = min(s for s, _ in ivs), max(e for _, e in ivs)
        assert sum(e - s for s, e in gaps_of(ivs)) == (hi - lo) - len(covered)
        for s, e in gaps_of(ivs):
            assert s < e and not any(a < e and s < b for a, b in ivs)


@hypothesis.given(intervals_st, st.lists(st.integers(0, 80), max_size=10))
@hypothesis.settings(max_examples=300, deadline=None)
def test_launching_op_brute_force(ops, call_times):

    tree = [Event(i, "cpu_op", "cpu_op", f"op{i}", "1", "1", s * 1000, d * 1000, {}) for i, (s, d) in enumerate(ops)]
    base = len(tree)
    calls = [Event(base + j, "cuda_runtime", "cuda_runtime", "c", "1", "1", t * 1000, 1000, {}) for j, t in enumerate(call_times)]
    by_idx = {e.idx: e for e in tree + calls}
    links = {10_000 + j: c.idx for j, c in enumerate(calls)}
    got = launching_ops(tree, links, by_idx)
    for act, call in links.items():
        t = by_idx[call].ts
        open_ops = [o for o in tree if o.ts <= t < o.end]
        want = max(open_ops, key=tree_order_key).idx if open_ops else None
        assert got.get(act) == want
