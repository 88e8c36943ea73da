#!/usr/bin/env python3
"""Enlarge a real PyTorch profiler (Kineto / Chrome trace JSON) trace by repeating its steps.

    scripts/tile_trace.py INPUT OUT --size 35MB      # repeat until OUT is about 35 MB of JSON
    scripts/tile_trace.py INPUT OUT --repeat 3       # exactly 3 copies
    (OUT ending in .gz is gzip-compressed; INPUT may be .json or .json.gz)

What it writes, exactly:

* Every top-level key of the input, once, in the input's order, and every metadata event
  (``ph: "M"``) once, unchanged, ahead of the copies.
* The repeated unit is every other event (``ph`` not ``"M"``), in input order. In a trace with
  ``ProfilerStep#N`` annotations this is the events from the first step's start to the last step's
  end plus the device activity they launched (which may run later) and the profiler's own spans;
  without steps it is simply the whole trace. Copy 0 is the input's events as they are.
* Copy k is shifted by k x PERIOD, where PERIOD = (latest end - earliest start over the unit's
  events, ``ts + dur`` for complete events) + ``--gap-us`` (default 1 µs), rounded up to whole
  microseconds, so copies never overlap and integer-µs timestamps stay integers.
* Ids are renumbered so that no two copies share one: copy k adds k x (max + 1) of the input's
  values of that key to each non-negative integer value (negative values are sentinels and stay):
  ``args["correlation"]`` (with ``args["wait_on_cuda_event_record_corr_id"]``, which names a
  correlation id), ``args["External id"]``, the ``id`` of flow and async events
  (``ph`` s/f/t and b/n/e), ``args["Sequence number"]``, ``args["Python id"]`` (with
  ``args["Python parent id"]``), and the step number of ``ProfilerStep#N`` names (on the host and
  on the device) becomes N + k x (max N - min N + 1).
* A top-level key ``"ntrace_tile"`` at the end records the source, copies, period and offsets.

Exactness: the input is parsed with ``parse_float=decimal.Decimal``; times never pass through a
float. A decimal ``ts`` is written with exactly three decimals (integer ns split into µs and
ns % 1000); an integer ``ts`` stays an integer; ``dur`` and every other number keep their input
text. A negative decimal ``ts`` (Kineto writes none) is written as exact integer ns with an
exponent, e.g. ``-1250e-3``, since its copies may cross zero. A ``ts`` that is not a whole number
of nanoseconds is refused.

Streaming: the unit is turned once into byte templates with integer holes (times, ids); each copy
is formatted from them and written at once, so memory is about the input's, whatever the output's
size. ``--size`` accepts B, KB, MB, GB (powers of 1000) and KiB, MiB, GiB (powers of 1024) and
stops at the copy count whose uncompressed size is nearest to it (at least one copy).

Standard library + orjson only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import operator
import re
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

STEP_RE = re.compile(r"ProfilerStep#(\d+)\Z")
#: id groups: each group shares one offset per copy (its members refer to each other)
ARG_GROUPS = {
    "correlation": "correlation",
    "wait_on_cuda_event_record_corr_id": "correlation",
    "External id": "External id",
    "Sequence number": "Sequence number",
    "Python id": "Python id",
    "Python parent id": "Python id",
}
ID_PHASES = frozenset("sftbne")
GROUPS = ("ts", "correlation", "External id", "flow id", "Sequence number", "Python id", "ProfilerStep", "ts_ns")
KIND = {g: i for i, g in enumerate(GROUPS)}
CHUNK_EVENTS = 20000
UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


class Hole:
    """An integer that changes per copy: written as prefix + (base + offset[kind]) + suffix."""

    __slots__ = ("kind", "base", "prefix", "suffix")

    def __init__(self, kind: int, base: int, prefix: bytes = b"", suffix: bytes = b""):
        self.kind, self.base, self.prefix, self.suffix = kind, base, prefix, suffix


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]i?b|b)?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: use e.g. 35MB, 1GB, 90MiB")
    return int(Decimal(m.group(1)) * UNITS[(m.group(2) or "b").lower()])


def load(path: Path) -> Any:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if MARK_OPEN.encode() in raw or MARK_CLOSE.encode() in raw:
        raise ValueError("the input holds the private-use characters U+E000/U+E001 this script uses as marks")
    return json.loads(raw, parse_float=Decimal, parse_constant=Const)


def to_ns(v: Any, what: str) -> int:
    """Exact integer nanoseconds of a µs value parsed as int or Decimal."""
    if isinstance(v, bool) or not isinstance(v, (int, Decimal)):
        raise ValueError(f"{what} is not a number: {v!r}")
    if isinstance(v, int):
        return v * 1000
    n = v.scaleb(3)
    if n != n.to_integral_value():
        raise ValueError(f"{what} {v} is not a whole number of nanoseconds")
    return int(n)


# -- serializer: JSON text with holes ---------------------------------------------------------

class Const:
    """NaN / Infinity / -Infinity as the input spelled it (a float would come out as null)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


#: orjson writes non-ASCII as raw UTF-8, so these private-use marks survive into its output
MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"
MARK_RE = re.compile(b'"' + MARK_OPEN.encode() + rb"(\d+)" + MARK_CLOSE.encode() + b'"')


def dump(objs: list, holes: list[Hole] | None, option: int = 0) -> bytes:
    """The objects' JSON texts joined by ',\n'. Decimals keep their text. With holes (a list to
    fill), the result is a bytes %-template: '%' is escaped and each Hole becomes prefix%dsuffix."""
    reps: list[bytes] = []

    def default(o: Any) -> str:
        if isinstance(o, Decimal):
            reps.append(str(o).encode())
        elif isinstance(o, Hole):
            reps.append(o.prefix + b"%d" + o.suffix)
            holes.append(o)  # type: ignore[union-attr]
        elif isinstance(o, Const):
            reps.append(o.text.encode())
        else:
            raise TypeError(f"cannot write {type(o).__name__}")
        return f"{MARK_OPEN}{len(reps) - 1}{MARK_CLOSE}"

    text = b",\n".join([orjson.dumps(o, default=default, option=option) for o in objs])
    if holes is not None:
        text = text.replace(b"%", b"%%")
    return MARK_RE.sub(lambda m: reps[int(m.group(1))], text) if reps else text


def plain(v: Any, option: int = 0) -> bytes:
    return dump([v], None, option)


# -- the unit ---------------------------------------------------------------------------------

def is_id(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def analyse(events: list[dict]) -> dict:
    """Span of the unit and the max of each id group (over non-negative integer values)."""
    lo = hi = None
    maxes = {g: -1 for g in GROUPS[1:6]}
    steps: list[int] = []
    for i, e in enumerate(events):
        ts = to_ns(e.get("ts"), f"event {i} ts")
        end = ts
        d = e.get("dur")
        if d is not None and e.get("ph") == "X":
            end = ts + max(0, to_ns(d, f"event {i} dur"))
        lo = ts if lo is None or ts < lo else lo
        hi = end if hi is None or end > hi else hi
        args = e.get("args")
        if isinstance(args, dict):
            for k, g in ARG_GROUPS.items():
                v = args.get(k)
                if is_id(v) and v > maxes[g]:
                    maxes[g] = v
        if e.get("ph") in ID_PHASES and is_id(e.get("id")) and e["id"] > maxes["flow id"]:
            maxes["flow id"] = e["id"]
        name = e.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            m = STEP_RE.match(name)
            if m:
                steps.append(int(m.group(1)))
    return {"lo": lo, "hi": hi, "maxes": maxes, "steps": (min(steps), max(steps)) if steps else None}


def holed(e: dict) -> dict:
    """A copy of event e whose per-copy numbers are Holes."""
    e = dict(e)
    ts = e["ts"]
    ns = to_ns(ts, "ts")
    if isinstance(ts, int):
        e["ts"] = Hole(KIND["ts"], ts)
    elif ns < 0:  # "-1.250" + 2 µs cannot keep a fixed fraction: write exact ns as "NNNe-3"
        e["ts"] = Hole(KIND["ts_ns"], ns, suffix=b"e-3")
    else:
        e["ts"] = Hole(KIND["ts"], ns // 1000, suffix=b".%03d" % (ns % 1000))
    if e.get("ph") in ID_PHASES and is_id(e.get("id")):
        e["id"] = Hole(KIND["flow id"], e["id"])
    name = e.get("name")
    if isinstance(name, str) and name.startswith("ProfilerStep#") and STEP_RE.match(name):
        e["name"] = Hole(KIND["ProfilerStep"], int(name[13:]), prefix=b'"ProfilerStep#', suffix=b'"')
    args = e.get("args")
    if isinstance(args, dict) and any(k in args for k in ARG_GROUPS):
        args = dict(args)
        for k, g in ARG_GROUPS.items():
            if is_id(args.get(k)):
                args[k] = Hole(KIND[g], args[k])
        e["args"] = args
    return e


def templates(events: list[dict]) -> list[tuple[bytes, list[int], list[int]]]:
    """Chunks of the unit as (bytes %-template, hole bases, hole kinds); events joined by ',\\n'."""
    out = []
    for c in range(0, len(events), CHUNK_EVENTS):
        holes: list[Hole] = []
        tmpl = b"\n" + dump([holed(e) for e in events[c:c + CHUNK_EVENTS]], holes)
        out.append((tmpl, [h.base for h in holes], [h.kind for h in holes]))
    return out


class Counting:
    """Counts the uncompressed bytes on their way to the real file."""

    def __init__(self, f):
        self.f, self.n = f, 0

    def write(self, b: bytes) -> None:
        self.f.write(b)
        self.n += len(b)


def tile(inp: Path, out: Path, repeat: int | None = None, size: int | None = None,
         gap_us: int = 1, compresslevel: int = 6) -> dict:
    t0 = time.perf_counter()
    doc = load(inp)
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        raise ValueError("no traceEvents list")
    meta = [e for e in events if e.get("ph") == "M"]
    unit = [e for e in events if e.get("ph") != "M"]
    if not unit:
        raise ValueError("the trace has no events besides metadata")
    info = analyse(unit)
    period_us = (info["hi"] - info["lo"] + gap_us * 1000 + 999) // 1000
    steps = info["steps"]
    nsteps = steps[1] - steps[0] + 1 if steps else 0
    step_offset = {g: m + 1 for g, m in info["maxes"].items()}
    chunks = templates(unit)
    n_unit = len(unit)
    del events, unit
    doc["traceEvents"] = None

    f = gzip.open(out, "wb", compresslevel=compresslevel) if out.suffix == ".gz" else open(out, "wb")
    w = Counting(f)
    copies = 0
    with f:
        w.write(b"{\n")
        keys = list(doc)
        for k in keys:
            if k == "traceEvents":
                break
            # top-level values spaced as Kineto writes them ('"rank": 0': HTA's rank lookup needs the space)
            w.write(plain(k) + b": " + plain(doc[k], orjson.OPT_INDENT_2) + b",\n")
        w.write(b'"traceEvents":[')
        if meta:
            w.write(b"\n" + b",\n".join(plain(e) for e in meta))
        written_any = bool(meta)
        add = operator.add
        while True:
            k = copies
            offs = [k * period_us] + [k * step_offset[g] for g in GROUPS[1:6]] + [k * nsteps, k * period_us * 1000]
            get = offs.__getitem__
            before = w.n
            for tmpl, bases, kinds in chunks:
                if written_any:
                    w.write(b",")
                w.write(tmpl % tuple(map(add, bases, map(get, kinds))))
                written_any = True
            copies += 1
            unit_bytes = w.n - before
            if repeat is not None:
                if copies >= repeat:
                    break
            elif w.n + unit_bytes / 2 >= size:
                break
        w.write(b"\n]")
        for k in keys[keys.index("traceEvents") + 1:]:
            w.write(b",\n" + plain(k) + b": " + plain(doc[k], orjson.OPT_INDENT_2))
        record = {
            "source": inp.name, "copies": copies, "period_ns": period_us * 1000,
            "id_offsets_per_copy": {g: step_offset[g] for g in GROUPS[1:6]},
            "profiler_step_offset_per_copy": nsteps,
        }
        w.write(b',\n"ntrace_tile": ' + orjson.dumps(record) + b"\n}\n")
    res = {
        "out": str(out), "copies": copies, "events_per_copy": n_unit,
        "metadata_events": len(meta), "bytes": w.n, "period_ns": period_us * 1000,
        "seconds": time.perf_counter() - t0,
    }
    res["events"] = res["copies"] * res["events_per_copy"] + res["metadata_events"]
    if out.suffix == ".gz":
        res["gzip_bytes"] = out.stat().st_size
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input", type=Path)
    ap.add_argument("out", type=Path)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--size", type=parse_size, help="target uncompressed size, e.g. 35MB, 1GB, 90MiB")
    g.add_argument("--repeat", type=int, help="number of copies (>= 1)")
    ap.add_argument("--gap-us", type=int, default=1, help="gap between copies in µs (default 1)")
    ap.add_argument("--compresslevel", type=int, default=6, help="gzip level for .gz output (default 6)")
    a = ap.parse_args(argv)
    if a.repeat is not None and a.repeat < 1:
        ap.error("--repeat must be >= 1")
    if a.gap_us < 0:
        ap.error("--gap-us must be >= 0")
    r = tile(a.input, a.out, repeat=a.repeat, size=a.size, gap_us=a.gap_us, compresslevel=a.compresslevel)
    gz = f", {r['gzip_bytes']:,} bytes gzip" if "gzip_bytes" in r else ""
    print(f"wrote {r['out']}: {r['copies']} copies x {r['events_per_copy']:,} events + {r['metadata_events']} metadata"
          f" = {r['events']:,} events, {r['bytes']:,} bytes ({r['bytes'] / 2**20:.1f} MiB) of JSON{gz};"
          f" period {r['period_ns']:,} ns; {r['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
