#!/usr/bin/env python3
"""Build a SYNTHETIC N-rank trace set from one real single-rank PyTorch profiler (Kineto) trace.

    scripts/make_ranks.py INPUT OUTDIR --ranks 8 [--offsets-seed S] [--max-offset-us 50000]
                          [--delay-rank 5 --delay-us 250 [--collectives PATTERN]]
                          [--gzip] [--manifest PATH]

SYNTHETIC: the ranks are copies of one real trace, not a real multi-rank capture. Every file says
so in a top-level key "ntrace_synthetic", and OUTDIR/manifest.json records how the set was made
and what a correct multi-rank analysis must find (the test oracle for per-collective skew).
Meant for a trace with collectives, e.g. ../shared/traces/nccl_parser_config__nccl_data.json.gz,
whose NCCL kernels are named ncclKernel_AllReduce_RING_LL_Sum_float(...) and
ncclKernel_Broadcast_RING_LL_Sum_int8_t(...) (stream 40), launched under record_param_comms
cpu_ops and nccl:all_reduce / nccl:broadcast user annotations.

Rank r (OUTDIR/rank-{r}.trace.json, or .json.gz with --gzip) is the input with:

* distributedInfo.rank = r and distributedInfo.world_size = N; a process group in pg_config that
  held the input's whole world (ranks 0..W-1, W = the input's world_size) now holds 0..N-1
  (pg_size N), and so do the collectives' args that named it ("Process Group Ranks" equal to the
  input's "[0, ..., W-1]" becomes "[0, ..., N-1]", with "Group size" N). Nothing else in the
  args changes; ids and pids stay as in the input (ranks are separate files).
* every timestamp (ts of every event, metadata included) moved by the rank's clock offset
  OFFSET[r], an integer number of ns: rank 0 has 0; with --offsets-seed S rank r > 0 has
  random.Random(S) drawn uniformly from [-M, +M] ns (M = --max-offset-us x 1000, default 50 ms),
  one draw per rank in rank order; without --offsets-seed every offset is 0.
* with --delay-rank K --delay-us D, the delay model below.

Delay model ("rank K's compute before each chosen collective took D ns longer"). The chosen
collectives C are the NCCL kernels (cat "kernel", name starting ncclKernel_ or ncclDevKernel_)
whose name matches the regex PATTERN (re.search; default: all of them). For c in C let s_c and
e_c = s_c + d_c be its start and end in the input, in integer ns. Define the time warp

    W(t) = t + D x #{c in C : e_c <= t}        (input time -> written time, before the offset)

i.e. D ns of time is inserted at each chosen collective's original end, cumulatively. On every
rank, every event's start becomes W(ts) and a complete event's end becomes W(ts + dur): events
wholly before e_c are untouched, events starting at or after e_c shift by D, events spanning e_c
(the step annotation, a sync, the profiler span) stretch by D, so nesting and order on every
lane are kept; host and device alike, since every rank waits for rank K. Then, on rank K only,
each chosen collective starts late: it keeps its input duration d_c and ends at W(e_c) like on
the other ranks, so it starts at W(e_c) - d_c (its ac2g flow-end event, same lane, ts and id as
its correlation, moves with it). On every other rank it starts at W(s_c) and lasts
W(e_c) - W(s_c) = d_c + D (when no other chosen collective ends inside it), waiting for rank K.
Then for each collective instance, with each rank's offset removed:
    all ranks end at W(e_c);  latest start (rank K) = W(e_c) - d_c;
    arrival skew = latest start - earliest start = W(e_c) - d_c - W(s_c) = D x #{c' in C : s_c < e_c' <= e_c}
                   (= D exactly when d_c > 0 on a serial stream, where no other chosen collective ends inside c);
    transfer time = end - latest start = d_c (the input duration).
An NCCL kernel not in C keeps its start and end under W on every rank: skew 0, transfer
W(e) - W(s). A value that does not change keeps its input text; a changed one is written as
exact decimal µs with three decimals (an input integer stays an integer when it still is one).

manifest.json: ranks, offsets_ns (by rank), offsets_seed, delay_rank, delay_ns, the pattern, the
collective kernel names matched, and for each NCCL kernel instance, in order of its start on its
stream (pid, tid): its name, correlation, whether it was delayed, its input start and duration,
the expected start per rank and end on the common clock (offset removed), expected_skew_ns and
expected_transfer_ns, all in integer ns. (HolisticTraceAnalysis takes every .json in a folder for
a trace: give it the rank files alone, e.g. with --manifest elsewhere/manifest.json.)

Standard library + orjson only; times never pass through a float.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import random
import re
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

NCCL_RE = re.compile(r"nccl(Dev)?Kernel_")


class Num:
    """A number written with exactly this text."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"
MARK_RE = re.compile(b'"' + MARK_OPEN.encode() + rb"(\d+)" + MARK_CLOSE.encode() + b'"')


def dump(objs: list, option: int = 0) -> bytes:
    """JSON texts of objs joined by ',\\n'; Decimals and Nums keep their exact text."""
    reps: list[bytes] = []

    def default(o: Any) -> str:
        if isinstance(o, Decimal):
            reps.append(str(o).encode())
        elif isinstance(o, Num):
            reps.append(o.text.encode())
        else:
            raise TypeError(f"cannot write {type(o).__name__}")
        return f"{MARK_OPEN}{len(reps) - 1}{MARK_CLOSE}"

    text = b",\n".join([orjson.dumps(o, default=default, option=option) for o in objs])
    return MARK_RE.sub(lambda m: reps[int(m.group(1))], text) if reps else text


def load(path: Path) -> dict:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if MARK_OPEN.encode() in raw or MARK_CLOSE.encode() in raw:
        raise ValueError("the input holds U+E000/U+E001, which this script uses as marks")
    doc = json.loads(raw, parse_float=Decimal, parse_constant=Num)
    return {"traceEvents": doc} if isinstance(doc, list) else doc


def to_ns(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, Decimal)):
        raise ValueError(f"{what} is not a number: {v!r}")
    if isinstance(v, int):
        return v * 1000
    n = v.scaleb(3)
    if n != n.to_integral_value():
        raise ValueError(f"{what} {v} is not a whole number of nanoseconds")
    return int(n)


def us_text(ns: int, was_int: bool) -> Any:
    """Exact µs text of an integer ns value (an int when the input was one and still is)."""
    if was_int and ns % 1000 == 0:
        return ns // 1000
    sign, a = ("-", -ns) if ns < 0 else ("", ns)
    return Num(f"{sign}{a // 1000}.{a % 1000:03d}")


def is_nccl_kernel(e: dict) -> bool:
    return e.get("ph") == "X" and e.get("cat") == "kernel" and isinstance(e.get("name"), str) \
        and NCCL_RE.match(e["name"]) is not None


def plan(doc: dict, ranks: int, seed: int | None, max_offset_ns: int, delay_rank: int | None,
         delay_ns: int, pattern: str | None) -> dict:
    """Offsets, the chosen collectives and the expected per-instance figures (the manifest)."""
    events = doc["traceEvents"]
    offsets = [0] * ranks
    if seed is not None:
        rng = random.Random(seed)
        for r in range(1, ranks):
            offsets[r] = rng.randint(-max_offset_ns, max_offset_ns)
    nccl = [i for i, e in enumerate(events) if is_nccl_kernel(e)]
    rx = re.compile(pattern) if pattern else None
    chosen = [i for i in nccl if rx is None or rx.search(events[i]["name"])] if delay_rank is not None else []
    if delay_rank is not None and not chosen:
        raise ValueError(f"no NCCL kernel matches {pattern!r}" if pattern else "the trace has no NCCL kernel")
    span = {}
    for i in nccl:
        s = to_ns(events[i]["ts"], f"event {i} ts")
        span[i] = (s, s + to_ns(events[i]["dur"], f"event {i} dur"))
    ends = sorted(span[i][1] for i in chosen)
    chosen_set = set(chosen)

    def warp(t: int) -> int:
        return t + delay_ns * bisect.bisect_right(ends, t)

    by_stream: dict[tuple, list[int]] = {}
    for i in nccl:
        by_stream.setdefault((events[i].get("pid"), events[i].get("tid")), []).append(i)
    instances = []
    for (pid, tid), idx in by_stream.items():
        idx.sort(key=lambda i: (span[i][0], i))
        for n, i in enumerate(idx):
            s, e = span[i]
            late = i in chosen_set
            starts = [warp(e) - (e - s) if late and r == delay_rank else warp(s) for r in range(ranks)]
            end = warp(e)
            instances.append({
                "pid": pid, "tid": tid, "index_on_stream": n, "name": events[i]["name"],
                "correlation": (events[i].get("args") or {}).get("correlation"), "delayed": late,
                "input_start_ns": s, "input_dur_ns": e - s,
                "expected_start_ns_by_rank": starts, "expected_end_ns": end,
                "expected_skew_ns": max(starts) - min(starts), "expected_transfer_ns": end - max(starts),
            })
    return {
        "offsets": offsets, "warp": warp, "chosen": chosen_set,
        "manifest": {
            "ntrace_synthetic": None, "source": None, "ranks": ranks, "offsets_ns": offsets,
            "offsets_seed": seed, "max_offset_ns": max_offset_ns if seed is not None else 0,
            "delay_rank": delay_rank, "delay_ns": delay_ns if delay_rank is not None else 0,
            "collectives_pattern": pattern,
            "collective_kernels": sorted({events[i]["name"] for i in chosen}),
            "nccl_kernels": sorted({events[i]["name"] for i in nccl}),
            "instances": instances,
        },
    }


def rank_doc(doc: dict, r: int, ranks: int, p: dict, delay_rank: int | None, label: str) -> dict:
    events = doc["traceEvents"]
    off, warp, chosen = p["offsets"][r], p["warp"], p["chosen"]
    out = {"ntrace_synthetic": label}
    di = doc.get("distributedInfo")
    old_world = di.get("world_size") if isinstance(di, dict) else None
    old_ranks_text = str(list(range(old_world))) if isinstance(old_world, int) else None
    new_ranks_text = str(list(range(ranks)))
    for k, v in doc.items():
        if k == "traceEvents":
            out[k] = None
        elif k == "distributedInfo" and isinstance(v, dict):
            v = dict(v)
            v["rank"], v["world_size"] = r, ranks
            if isinstance(v.get("pg_config"), list) and old_ranks_text is not None:
                pgs = []
                for pg in v["pg_config"]:
                    if isinstance(pg, dict) and pg.get("ranks") == list(range(old_world)):
                        pg = dict(pg, ranks=list(range(ranks)), pg_size=ranks)
                    pgs.append(pg)
                v["pg_config"] = pgs
            out[k] = v
        else:
            out[k] = v
    if "distributedInfo" not in out:
        out["distributedInfo"] = {"rank": r, "world_size": ranks}
    late_flows = {}
    if r == delay_rank:
        for i in chosen:
            e = events[i]
            s, d = to_ns(e["ts"], "ts"), to_ns(e["dur"], "dur")
            late_flows[(e.get("pid"), e.get("tid"), s, (e.get("args") or {}).get("correlation"))] = warp(s + d) - d
    new = []
    for i, e in enumerate(events):
        ts = e.get("ts")
        if ts is None:
            new.append(e)
            continue
        e = dict(e)
        s = to_ns(ts, f"event {i} ts")
        dur = e.get("dur") if e.get("ph") == "X" else None
        if dur is not None:
            d = to_ns(dur, f"event {i} dur")
            if r == delay_rank and i in chosen:
                ns, nd = warp(s + d) - d, d
            else:
                ns = warp(s)
                nd = warp(s + d) - ns if d >= 0 else d
            if nd != d:
                e["dur"] = us_text(nd, isinstance(dur, int))
        else:
            ns = warp(s)
            if late_flows and e.get("ph") in ("f", "t"):
                ns = late_flows.get((e.get("pid"), e.get("tid"), s, e.get("id")), ns)
        ns += off
        if ns != s:
            e["ts"] = us_text(ns, isinstance(ts, int))
        args = e.get("args")
        if old_ranks_text is not None and isinstance(args, dict) and args.get("Process Group Ranks") == old_ranks_text:
            args = dict(args)
            args["Process Group Ranks"] = new_ranks_text
            if args.get("Group size") == old_world:
                args["Group size"] = ranks
            e["args"] = args
        new.append(e)
    out["traceEvents"] = new
    return out


def write_doc(path: Path, doc: dict) -> int:
    parts = [b"{"]
    for n, (k, v) in enumerate(doc.items()):
        if n:
            parts.append(b",\n")
        parts.append(orjson.dumps(k) + b": ")
        if k == "traceEvents":
            parts.append(b"[\n" + dump(v) + b"\n]")
        else:
            parts.append(dump([v], orjson.OPT_INDENT_2))  # '"rank": 5' as Kineto spaces it (HTA looks for that)
    parts.append(b"}\n")
    data = b"".join(parts)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(data, compresslevel=6, mtime=0))
    else:
        path.write_bytes(data)
    return len(data)


def parse_us(text: str) -> int:
    try:
        ns = to_ns(Decimal(text), "--delay-us")
    except Exception as e:
        raise argparse.ArgumentTypeError(f"bad µs value {text!r}: {e}")
    if ns < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return ns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build a SYNTHETIC N-rank set from one real trace (see the module docstring).")
    ap.add_argument("input", type=Path)
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--offsets-seed", type=int, default=None, help="seed of the per-rank clock offsets (none: all 0)")
    ap.add_argument("--max-offset-us", type=parse_us, default=50_000_000, metavar="US",
                    help="offsets are drawn from [-US, +US] µs (default 50000 = 50 ms)")
    ap.add_argument("--delay-rank", type=int, default=None)
    ap.add_argument("--delay-us", type=parse_us, default=None, help="delay D in µs (up to 3 decimals)")
    ap.add_argument("--collectives", default=None, metavar="PATTERN", help="regex searched in NCCL kernel names (default: all)")
    ap.add_argument("--gzip", action="store_true", help="write rank-R.trace.json.gz")
    ap.add_argument("--manifest", type=Path, default=None,
                    help="where to write the manifest (default OUTDIR/manifest.json; HTA reads every .json in a folder)")
    a = ap.parse_args(argv)
    if a.ranks < 1:
        ap.error("--ranks must be >= 1")
    if (a.delay_rank is None) != (a.delay_us is None):
        ap.error("--delay-rank and --delay-us go together")
    if a.delay_rank is not None and not 0 <= a.delay_rank < a.ranks:
        ap.error("--delay-rank must be in [0, ranks)")
    if a.collectives is not None and a.delay_rank is None:
        ap.error("--collectives needs --delay-rank and --delay-us")
    doc = load(a.input)
    p = plan(doc, a.ranks, a.offsets_seed, a.max_offset_us, a.delay_rank, a.delay_us or 0, a.collectives)
    m = p["manifest"]
    what = f"clock offsets from seed {a.offsets_seed}" if a.offsets_seed is not None else "no clock offsets"
    if a.delay_rank is not None:
        d_text = f"{a.delay_us // 1000}.{a.delay_us % 1000:03d}".rstrip("0").rstrip(".")
        what += (f", rank {a.delay_rank} late by {d_text} µs ({a.delay_us} ns) before each of {len(p['chosen'])} collective kernels"
                 f" matching {a.collectives or 'any NCCL kernel'}")
    a.outdir.mkdir(parents=True, exist_ok=True)
    total = 0
    for r in range(a.ranks):
        label = (f"SYNTHETIC: rank {r} of {a.ranks} made by scripts/make_ranks.py from the single real trace "
                 f"{a.input.name} ({what}); not a real multi-rank capture")
        path = a.outdir / f"rank-{r}.trace.json{'.gz' if a.gzip else ''}"
        total += write_doc(path, rank_doc(doc, r, a.ranks, p, a.delay_rank, label))
    m["ntrace_synthetic"] = (f"SYNTHETIC: {a.ranks} ranks made by scripts/make_ranks.py from the single real trace "
                             f"{a.input.name} ({what}); not a real multi-rank capture")
    m["source"] = a.input.name
    manifest = a.manifest or a.outdir / "manifest.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_bytes(orjson.dumps(m, option=orjson.OPT_INDENT_2) + b"\n")
    delayed = [i for i in m["instances"] if i["delayed"]]
    print(f"wrote {a.ranks} ranks to {a.outdir} ({total:,} bytes of JSON), {what}; "
          f"{len(m['instances'])} NCCL kernel instances, {len(delayed)} delayed; manifest {manifest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
