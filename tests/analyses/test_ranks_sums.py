"""Straggler wait across many ranks at epoch-scale clocks (ntrace.analyses.ranks): each figure a sum of differences, exact against plain Python, never a sum of the starts themselves (which passes int64 from six ranks on)."""

from __future__ import annotations

import random

import polars as pl

from ntrace.analyses import ranks as rk

#: About 2027 in ns since the epoch: what Kineto's clocks give.
EPOCH_NS = 1_800_000_000_000_000_000


def test_wait_caused_is_exact_at_a_thousand_ranks() -> None:
    rnd = random.Random(7)
    n, instances = 1000, 3
    rows = [
        {"name": "ncclAllReduce", "key": i, "rank": r, "ts": EPOCH_NS + i * 10**9 + rnd.randint(0, 10**6), "end": 0}
        for i in range(instances) for r in range(n)
    ]  # fmt: skip
    for row in rows:
        row["end"] = row["ts"] + 5000
    found = pl.DataFrame(rows, schema={"name": pl.String, "key": pl.Int64, "rank": pl.Int64, "ts": pl.Int64, "end": pl.Int64})
    offsets = pl.DataFrame({"rank": list(range(n)), "offset": [0] * n}, schema={"rank": pl.Int64, "offset": pl.Int64})
    assert n * EPOCH_NS > 2**63 - 1  # the starts' sum would not fit
    per_instance, left_out = rk.aligned_instances(found, offsets)
    assert left_out == 0
    got = {r["rank"]: r["wait_caused"] for r in rk.stragglers(found, offsets, per_instance).iter_rows(named=True)}
    want: dict[int, int] = {}
    for i in range(instances):  # plain Python: the last rank to start caused Σ (its start − each start)
        starts = {row["rank"]: row["ts"] for row in rows if row["key"] == i}
        latest = max(starts.values())
        for r, s in starts.items():
            if s == latest:
                want[r] = want.get(r, 0) + sum(latest - t for t in starts.values())
    assert {r: w for r, w in got.items() if w} == want
    assert all(w >= 0 for w in got.values())
