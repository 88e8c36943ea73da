"""scripts/make_ranks.py on the real NCCL trace, checked in plain Python over exact integer ns.

The oracle is the delay model as the script's docstring states it: W(t) = t + D x #{chosen
collectives whose input end <= t}; every start and end goes through W, the late rank's chosen
collectives start at W(end) - dur, and every rank's clock is moved by its offset.
"""

from __future__ import annotations

import bisect
import collections
import copy
import gzip
import json
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from helpers import REAL_TRACES as SHARED_TRACES, REPO

SCRIPT = REPO / "scripts" / "make_ranks.py"
SRC = SHARED_TRACES / "nccl_parser_config__nccl_data.json.gz"
RANKS, LATE, D_US = 8, 5, 250
D = D_US * 1000
NCCL = re.compile(r"nccl(Dev)?Kernel_")

pytestmark = pytest.mark.skipif(not SRC.exists(), reason=f"{SRC} is absent")


def load(path: Path):
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=Decimal)


def ns(v) -> int:
    assert isinstance(v, (int, Decimal)) and not isinstance(v, bool), v
    n = Decimal(v) * 1000
    assert n == n.to_integral_value(), v
    return int(n)


def make(out: Path, *args: object) -> tuple[dict, list[dict]]:
    subprocess.run([sys.executable, str(SCRIPT), str(SRC), str(out), "--ranks", str(RANKS), *map(str, args)],
                   check=True, capture_output=True, text=True)
    manifest = json.loads((out / "manifest.json").read_text())
    files = sorted(out.glob("rank-*.trace.json*"), key=lambda p: int(p.name.split("-")[1].split(".")[0]))
    assert [p.name.split(".")[0] for p in files] == [f"rank-{r}" for r in range(RANKS)]
    return manifest, [load(p) for p in files]


@pytest.fixture(scope="module")
def source() -> dict:
    return load(SRC)


@pytest.fixture(scope="module")
def delayed(tmp_path_factory) -> tuple[dict, list[dict]]:
    return make(tmp_path_factory.mktemp("delayed"), "--offsets-seed", 11, "--delay-rank", LATE, "--delay-us", D_US)


def is_nccl(e: dict) -> bool:
    return e.get("ph") == "X" and e.get("cat") == "kernel" and bool(NCCL.match(e.get("name", "")))


def strip_rank_metadata(doc: dict, world: int) -> dict:
    """The doc less what make_ranks may change besides times: the label, distributedInfo and the
    process-group args that named the whole world."""
    doc = {k: v for k, v in doc.items() if k not in ("ntrace_synthetic", "distributedInfo")}
    evs = []
    for e in doc["traceEvents"]:
        a = e.get("args")
        if isinstance(a, dict) and a.get("Process Group Ranks") == str(list(range(world))):
            a = dict(a, **{"Process Group Ranks": "<world>", "Group size": "<world>"})
            e = dict(e, args=a)
        evs.append(e)
    doc["traceEvents"] = evs
    return doc


def test_docstring_and_labels(delayed, source) -> None:
    manifest, ranks = delayed
    assert "SYNTHETIC" in SCRIPT.read_text().split('"""')[1]
    assert "SYNTHETIC" in manifest["ntrace_synthetic"]
    for r, doc in enumerate(ranks):
        assert next(iter(doc)) == "ntrace_synthetic" and doc["ntrace_synthetic"].startswith("SYNTHETIC")
        di = doc["distributedInfo"]
        assert di["rank"] == r and di["world_size"] == RANKS
        assert di["pg_config"][0]["ranks"] == list(range(RANKS)) and di["pg_config"][0]["pg_size"] == RANKS
        assert {k: v for k, v in di.items() if k not in ("rank", "world_size", "pg_config")} == \
            {k: v for k, v in source["distributedInfo"].items() if k not in ("rank", "world_size", "pg_config")}
    assert manifest["ranks"] == RANKS and manifest["delay_rank"] == LATE and manifest["delay_ns"] == D
    assert manifest["collective_kernels"] == sorted({e["name"] for e in source["traceEvents"] if is_nccl(e)})
    assert all(n.startswith("ncclKernel_") for n in manifest["collective_kernels"])


def test_offsets_are_deterministic(delayed, tmp_path: Path) -> None:
    manifest, _ = delayed
    off = manifest["offsets_ns"]
    assert len(off) == RANKS and off[0] == 0 and len(set(off)) == RANKS
    assert all(isinstance(o, int) and abs(o) <= 50_000_000 for o in off)
    again, _ = make(tmp_path, "--offsets-seed", 11, "--delay-rank", LATE, "--delay-us", D_US)
    assert again == manifest


def model(source: dict, r: int, offset: int) -> list[tuple[int, int | None]]:
    """(ts, dur) in ns of every event of rank r, by the documented model."""
    events = source["traceEvents"]
    chosen = [e for e in events if is_nccl(e)]
    ends = sorted(ns(e["ts"]) + ns(e["dur"]) for e in chosen)
    late_flow = {}

    def w(t: int) -> int:
        return t + D * bisect.bisect_right(ends, t)

    out = []
    for e in events:
        s = ns(e["ts"])
        if e.get("ph") == "X" and "dur" in e:
            d = ns(e["dur"])
            if r == LATE and is_nccl(e):
                out.append((w(s + d) - d + offset, d))
                late_flow[(e["pid"], e["tid"], s, e["args"]["correlation"])] = w(s + d) - d
            else:
                out.append((w(s) + offset, w(s + d) - w(s)))
        else:
            out.append((None, s))  # flows resolved below (a flow end may come before its kernel)
    for i, e in enumerate(events):
        if out[i][0] is None:
            s = out[i][1]
            t = late_flow.get((e["pid"], e["tid"], s, e.get("id")), w(s)) if e.get("ph") in ("f", "t") else w(s)
            out[i] = (t + offset, None)
    return out


def test_every_event_follows_the_model(delayed, source) -> None:
    manifest, ranks = delayed
    src_events = source["traceEvents"]
    first_end = min(ns(e["ts"]) + ns(e["dur"]) for e in src_events if is_nccl(e))
    # the flow ends drawn to the collectives' starts move with them on the late rank
    kernel_flows = {(e["pid"], e["tid"], ns(e["ts"]), e["args"]["correlation"]) for e in src_events if is_nccl(e)}
    for r, doc in enumerate(ranks):
        off = manifest["offsets_ns"][r]
        events = doc["traceEvents"]
        assert len(events) == len(src_events)
        untouched = 0
        for (t, d), e, o in zip(model(source, r, off), events, src_events):
            assert ns(e["ts"]) == t
            if d is not None:
                assert ns(e["dur"]) == d
            # everything else as in the input
            rest = lambda x: {k: v for k, v in x.items() if k not in ("ts", "dur", "args")}
            assert rest(e) == rest(o)
            # the events wholly before the first delayed collective's end: the input moved by the offset
            end = ns(o["ts"]) + (ns(o["dur"]) if o.get("ph") == "X" and "dur" in o else 0)
            flow = (o.get("pid"), o.get("tid"), ns(o["ts"]), o.get("id")) in kernel_flows and o.get("ph") == "f"
            if end < first_end and not (r == LATE and flow):
                untouched += 1
                assert ns(e["ts"]) == ns(o["ts"]) + off
                if "dur" in o:
                    assert str(e["dur"]) == str(o["dur"])
        assert untouched > 100  # the first collective (a broadcast) comes early in this trace
    # args: as in the input but for the process-group ones
    for doc in ranks:
        assert [e.get("args") for e in strip_rank_metadata(doc, RANKS)["traceEvents"]] == \
            [e.get("args") for e in strip_rank_metadata(source, source["distributedInfo"]["world_size"])["traceEvents"]]


def recompute(manifest: dict, ranks: list[dict]) -> list[dict]:
    """Per NCCL kernel instance (by start order on its stream), from the written files."""
    per_rank = []
    for r, doc in enumerate(ranks):
        off = manifest["offsets_ns"][r]
        lanes = collections.defaultdict(list)
        for e in doc["traceEvents"]:
            if is_nccl(e):
                s = ns(e["ts"]) - off
                lanes[(e["pid"], e["tid"])].append((s, s + ns(e["dur"]), e["name"]))
        per_rank.append({k: sorted(v) for k, v in lanes.items()})
    out = []
    for lane in per_rank[0]:
        for n in range(len(per_rank[0][lane])):
            starts = [p[lane][n][0] for p in per_rank]
            ends = {p[lane][n][1] for p in per_rank}
            assert len(ends) == 1  # every rank leaves the collective at the same time
            out.append({"lane": lane, "n": n, "name": per_rank[0][lane][n][2], "starts": starts,
                        "skew": max(starts) - min(starts), "transfer": ends.pop() - max(starts)})
    return out


def test_manifest_skews_match_the_files(delayed, source) -> None:
    manifest, ranks = delayed
    got = recompute(manifest, ranks)
    want = manifest["instances"]
    assert len(got) == len(want) == sum(1 for e in source["traceEvents"] if is_nccl(e)) == 21
    by_key = {(i["pid"], i["tid"], i["index_on_stream"]): i for i in want}
    src_dur = {(e["pid"], e["tid"], ns(e["ts"])): ns(e["dur"]) for e in source["traceEvents"] if is_nccl(e)}
    for g in got:
        m = by_key[(*g["lane"], g["n"])]
        assert m["name"] == g["name"] and m["delayed"]
        assert g["skew"] == m["expected_skew_ns"] == D  # a serial stream: exactly D
        assert g["transfer"] == m["expected_transfer_ns"] == m["input_dur_ns"] == src_dur[(*g["lane"], m["input_start_ns"])]
        assert g["starts"] == m["expected_start_ns_by_rank"]
        assert g["starts"].index(max(g["starts"])) == LATE and g["starts"].count(max(g["starts"])) == 1


def test_late_rank_flow_moves_with_its_kernel(delayed) -> None:
    _, ranks = delayed
    doc = ranks[LATE]
    flows = {(e["pid"], e["tid"], e["id"]): ns(e["ts"]) for e in doc["traceEvents"] if e.get("ph") == "f"}
    kernels = [e for e in doc["traceEvents"] if is_nccl(e)]
    assert kernels and all(flows[(k["pid"], k["tid"], k["args"]["correlation"])] == ns(k["ts"]) for k in kernels)


def depth_histogram(events) -> collections.Counter:
    lanes = collections.defaultdict(list)
    for i, e in enumerate(events):
        if e.get("ph") == "X" and "dur" in e:
            s = ns(e["ts"])
            lanes[(str(e["pid"]), str(e["tid"]))].append((s, -ns(e["dur"]), i, s + ns(e["dur"])))
    hist = collections.Counter()
    for spans in lanes.values():
        stack: list[int] = []
        for s, _, _, end in sorted(spans):
            while stack and stack[-1] <= s:
                stack.pop()
            hist[len(stack)] += 1
            stack.append(end)
    return hist


def test_nesting_is_kept(delayed, source) -> None:
    _, ranks = delayed
    want = depth_histogram(source["traceEvents"])
    for doc in ranks:
        assert depth_histogram(doc["traceEvents"]) == want


def test_pattern_chooses_collectives(tmp_path: Path, source) -> None:
    manifest, ranks = make(tmp_path, "--delay-rank", 2, "--delay-us", "0.5", "--collectives", "AllReduce", "--gzip")
    assert manifest["collective_kernels"] == [n for n in manifest["nccl_kernels"] if "AllReduce" in n]
    assert manifest["delay_ns"] == 500 and manifest["offsets_ns"] == [0] * RANKS
    got = recompute(manifest, ranks)
    for g, m in zip(got, manifest["instances"]):
        assert m["delayed"] == ("AllReduce" in g["name"])
        assert g["skew"] == m["expected_skew_ns"] == (500 if m["delayed"] else 0)
        assert g["transfer"] == m["expected_transfer_ns"]
        assert g["starts"] == m["expected_start_ns_by_rank"]


def test_without_delay_or_offsets_ranks_are_the_input(tmp_path: Path, source) -> None:
    manifest, ranks = make(tmp_path)
    assert manifest["offsets_ns"] == [0] * RANKS and manifest["delay_rank"] is None
    want = strip_rank_metadata(copy.deepcopy(source), source["distributedInfo"]["world_size"])
    for r, doc in enumerate(ranks):
        assert doc["distributedInfo"]["rank"] == r and doc["distributedInfo"]["world_size"] == RANKS
        assert strip_rank_metadata(doc, RANKS) == want
    assert all(i["expected_skew_ns"] == 0 and i["expected_transfer_ns"] == i["input_dur_ns"] for i in manifest["instances"])
    # unchanged numbers keep their text
    raw = (tmp_path / "rank-3.trace.json").read_text()
    assert '"ts":4458676388068.751' in raw
