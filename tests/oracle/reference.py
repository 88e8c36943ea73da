"""Independent reference implementation ("oracle") of the figures ntrace computes.

Derived ONLY from the written contract: ``docs/definitions.md`` (every section), the
category -> lane -> side table in ``README.md`` ("The lanes"), and torch's own Python source
for the algorithms that page says it follows (``torch/autograd/profiler_util.py``:
``_populate_cpu_children``, ``_remove_dup_nodes``, ``key_averages``, ``_build_table``;
``torch/autograd/profiler.py``: ``_parse_kineto_results``). It never reads or imports ntrace.
Where the page left a choice open, the choice is written down in ``AMBIGUITIES.md`` next to
this file.

Plain Python, standard library only, exact integers of nanoseconds everywhere (times are read
from their decimal text, never through a binary float). Every algorithm is a sort plus a
stack or sweep, so a trace of tens of thousands of events takes seconds at most.

Vocabulary used below (all from docs/definitions.md):

* an *event* is a kept complete event (``ph == "X"``), identified by ``idx``, its position in
  the ``traceEvents`` array (0-based, counting every entry);
* a *thread* is ``(pid text, tid text)``;
* *device activities* are device-side events except ``gpu_user_annotation``;
* *runtime calls* are the events of lane ``runtime_api``;
* *tree events* are host-side events except category ``Trace`` and torch's dropped names.
"""

from __future__ import annotations

import bisect
import decimal
import gzip
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable

# --------------------------------------------------------------------------------------------
# Tables (README.md "The lanes", docs/definitions.md section 2 and 4)
# --------------------------------------------------------------------------------------------

LANES = ("framework", "device", "runtime_api", "hardware", "other")

#: category (lower case) -> (lane, side), copied from README.md's table.
CATEGORY_TABLE: dict[str, tuple[str, str]] = {
    "cpu_op": ("framework", "host"),
    "user_annotation": ("framework", "host"),
    "python_function": ("framework", "host"),
    "cpu_instant_event": ("framework", "host"),
    "fwdbwd": ("framework", "host"),
    "privateuse1_driver": ("device", "host"),
    "gpu_memcpy": ("device", "device"),
    "gpu_memset": ("device", "device"),
    "cuda_sync": ("device", "device"),
    "privateuse1_runtime": ("runtime_api", "host"),
    "neuron_rt": ("runtime_api", "host"),
    "cuda_runtime": ("runtime_api", "host"),
    "cuda_driver": ("runtime_api", "host"),
    "mtia_runtime": ("runtime_api", "host"),
    "xpu_runtime": ("runtime_api", "host"),
    "xpu_driver": ("runtime_api", "host"),
    "kernel": ("hardware", "device"),
    "neuron_hw": ("hardware", "device"),
    "mtia_ccp_events": ("hardware", "device"),
    "gpu_user_annotation": ("other", "device"),
    "trace": ("other", "host"),
    "overhead": ("other", "host"),
    "external_correlation": ("other", "host"),
}

#: category (lower case) -> [(compiled name regex, lane, side)], tried first, first match wins.
NAME_RULES: dict[str, list[tuple[re.Pattern[str], str, str]]] = {
    "mtia_ccp_events": [
        (re.compile(r"^dma_"), "device", "device"),
        (re.compile(r"^event_"), "device", "device"),
    ],
}

#: names torch drops before building its tree (profiler_util._filter_name).
DROPPED_TREE_NAMES = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)

#: the args that take part in the duplicate test (section 1, "Duplicates").
DUPLICATE_ARGS = ("External id", "correlation", "stream", "device", "Sequence number", "Input Dims", "bytes")

STEP_NAME = re.compile(r"ProfilerStep#(-?[0-9]+)")

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")

UNLINKED_ROW = "[unlinked device time]"


# --------------------------------------------------------------------------------------------
# Reading (section 1)
# --------------------------------------------------------------------------------------------


def load_trace_events(path: str | Path) -> list[Any]:
    """Read a trace file (plain or gzip, detected by the magic bytes 1f 8b) and return its
    ``traceEvents`` array (or the bare list when the file is a list). JSON numbers with a
    fraction or exponent are read as ``decimal.Decimal`` so nothing passes through a float."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return events_from_json_text(raw.decode("utf-8"))


def events_from_json_text(text: str) -> list[Any]:
    """Parse JSON text of a trace (object with ``traceEvents`` or a bare list) exactly."""
    doc = json.loads(text, parse_float=decimal.Decimal)
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        evs = doc.get("traceEvents", [])
        return evs if isinstance(evs, list) else []
    return []


#: a context wide enough that scaling a parsed number by 10**3 is exact (digits are bounded
#: by the exponent guards in parse_ns).
_EXACT = decimal.Context(prec=100, Emax=10**6, Emin=-(10**6))


def _round_half_even(value: Fraction) -> int:
    """Round a fraction to the nearest integer, ties to the even one."""
    floor = value.numerator // value.denominator
    rest = value - floor
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2 == 1):
        return floor + 1
    return floor


def parse_ns(value: Any) -> int | None:
    """µs (JSON int, Decimal, or a string holding a JSON number) -> integer ns, or None when
    the value is not a usable number (missing, null, bool, NaN/Infinity, other text).

    ns = exact decimal value × 1000, rounded to nearest, ties to even. A float argument (only
    NaN/Infinity can reach here from the reader, or a caller's own float) is read through its
    shortest repr text, never its binary value."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, str):
        if not _JSON_NUMBER.fullmatch(value):
            return None
        value = decimal.Decimal(value)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        value = decimal.Decimal(repr(value))
    if not isinstance(value, decimal.Decimal) or not value.is_finite():
        return None
    if value.is_zero():
        return 0
    adjusted = value.adjusted()  # the exponent of the leading digit
    if adjusted > 40:  # far outside int64 ns; the caller drops it
        return (1 if value > 0 else -1) * 10**45
    if adjusted < -12:  # |value| < 1e-11 µs: rounds to 0 ns
        return 0
    if value.as_tuple().exponent >= -3:  # at most three decimals: value × 1000 is an integer
        return int(value.scaleb(3, _EXACT))
    return _round_half_even(Fraction(value) * 1000)


def text_of(value: Any) -> str:
    """pid/tid (and stream) as text: a JSON integer as its decimal digits, a string as
    written, missing/null as ``?``; any other JSON value as its compact JSON text."""
    if value is None:
        return "?"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return compact_json(value)


def name_text(value: Any) -> str:
    """An event's name as a string: a string as written, missing/null as ``""``, any other
    JSON value as its compact JSON text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return compact_json(value)


def _json_default(obj: Any) -> Any:
    raise TypeError(type(obj).__name__)


def compact_json(value: Any) -> str:
    """Compact JSON text (``separators=(",", ":")``) of a parsed JSON value; a Decimal is
    written as its decimal text (``str``), so ``[1.50]`` stays ``[1.50]``."""
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(compact_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(str(k)) + ":" + compact_json(v) for k, v in value.items()) + "}"
    return json.dumps(value, separators=(",", ":"), default=_json_default)


def freeze(value: Any) -> Any:
    """A hashable, type-tagged form of a parsed JSON value for equality tests: numbers compare
    by numeric value (``1`` == ``1.0``), strings, bools and null never equal a number."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, decimal.Decimal)):
        if isinstance(value, decimal.Decimal) and not value.is_finite():
            return ("num", str(value))
        return ("num", value)  # Decimal and int hash and compare by numeric value
    if isinstance(value, float):
        return ("num", repr(value))
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list):
        return ("list", tuple(freeze(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), freeze(v)) for k, v in value.items())))
    return ("other", repr(value))


def lane_of(cat: Any, name: Any) -> tuple[str, str]:
    """(lane, side) of a complete event: category looked up case-insensitively, name rules
    first for the categories that have them; anything unknown is (other, host)."""
    if not isinstance(cat, str):
        return ("other", "host")
    key = cat.lower()
    nm = name if isinstance(name, str) else ""
    for pattern, lane, side in NAME_RULES.get(key, ()):
        if pattern.search(nm):
            return (lane, side)
    return CATEGORY_TABLE.get(key, ("other", "host"))


@dataclass
class Event:
    """One kept complete event."""

    idx: int  # position in traceEvents
    cat: str | None  # category as written (None when missing / not a string)
    catl: str  # category lower-cased ("" when missing)
    name: str  # name text
    pid: str  # pid text ("?" when missing)
    tid: str  # tid text ("?" when missing)
    ts: int  # ns
    dur: int  # ns, >= 0
    args: dict = field(repr=False)
    lane: str = ""
    side: str = ""
    track: str = ""

    @property
    def end(self) -> int:
        """ts + dur (ns)."""
        return self.ts + self.dur

    @property
    def thread(self) -> tuple[str, str]:
        """(pid text, tid text)."""
        return (self.pid, self.tid)


def track_of(lane: str, side: str, pid: str, tid: str, args: dict) -> str:
    """Where an event is drawn (section 2, "Track")."""
    if lane == "hardware":
        return f"device {pid}"
    if side == "device":
        return f"device {pid} stream {tid}"
    if lane == "device" and args.get("stream") is not None:
        return f"stream {text_of(args['stream'])}"
    return f"pid {pid} tid {tid}"


class _LazyArgKey:
    """The duplicate-test args of one event (``DUPLICATE_ARGS``), frozen only when needed."""

    __slots__ = ("args", "_key")

    def __init__(self, args: dict):
        self.args = args
        self._key = None

    def key(self) -> tuple:
        """(arg name, frozen value or ("absent",)) for every duplicate-test arg."""
        if self._key is None:
            self._key = tuple(
                (a, freeze(self.args[a]) if a in self.args else ("absent",)) for a in DUPLICATE_ARGS
            )
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _LazyArgKey) and self.key() == other.key()


def read_events(raw_events: list[Any]) -> tuple[list[Event], list[tuple[str, int]]]:
    """Section 1: the kept complete events in file order, and warnings ``(reason, idx)``.

    Left out: no usable ts; ts or end outside int64; a duplicate of an earlier kept event.
    A dur that is missing/null/not a number/negative counts as 0 (warned)."""
    kept: list[Event] = []
    warnings: list[tuple[str, int]] = []
    seen: dict[tuple, list[_LazyArgKey]] = {}
    for idx, raw in enumerate(raw_events):
        if not isinstance(raw, dict) or raw.get("ph") != "X":
            continue
        ts = parse_ns(raw.get("ts"))
        if ts is None:
            warnings.append(("no usable ts", idx))
            continue
        dur = parse_ns(raw.get("dur"))
        if dur is None or dur < 0:
            warnings.append(("dur counted as 0", idx))
            dur = 0
        if not (INT64_MIN <= ts <= INT64_MAX and INT64_MIN <= ts + dur <= INT64_MAX):
            warnings.append(("outside int64", idx))
            continue
        args = raw.get("args")
        if not isinstance(args, dict):
            args = {}
        cat = raw.get("cat")
        pid = text_of(raw.get("pid"))
        tid = text_of(raw.get("tid"))
        # Cheap part of the duplicate test first; the args are compared only on a collision.
        cheap = (freeze(cat), freeze(raw.get("name")), pid, tid, ts, dur)
        arg_key = _LazyArgKey(args)
        earlier = seen.setdefault(cheap, [])
        if any(other == arg_key for other in earlier):
            warnings.append(("duplicate", idx))
            continue
        earlier.append(arg_key)
        lane, side = lane_of(cat, raw.get("name"))
        ev = Event(
            idx=idx,
            cat=cat if isinstance(cat, str) else None,
            catl=cat.lower() if isinstance(cat, str) else "",
            name=name_text(raw.get("name")),
            pid=pid,
            tid=tid,
            ts=ts,
            dur=dur,
            args=args,
            lane=lane,
            side=side,
        )
        ev.track = track_of(lane, side, pid, tid, args)
        kept.append(ev)
    return kept, warnings


# --------------------------------------------------------------------------------------------
# Intervals and statistics (sections 2 and 6)
# --------------------------------------------------------------------------------------------


def merge_intervals(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort [start, end) intervals by start and merge those that overlap or touch. A
    zero-length interval is an interval like any other (it can be a block of its own)."""
    blocks: list[list[int]] = []
    for s, e in sorted(intervals):
        if blocks and s <= blocks[-1][1]:
            if e > blocks[-1][1]:
                blocks[-1][1] = e
        else:
            blocks.append([s, e])
    return [(s, e) for s, e in blocks]


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals."""
    return sum(e - s for s, e in merge_intervals(intervals))


def gaps_of(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The idle stretches between consecutive merged blocks: [block end, next block start)."""
    blocks = merge_intervals(intervals)
    return [(blocks[i][1], blocks[i + 1][0]) for i in range(len(blocks) - 1)]


def nearest_rank(values: Iterable[int], p: int) -> int:
    """Nearest-rank p-th percentile: sorted v, v[ceil(p*N/100) - 1] in integer arithmetic
    (index clamped at 0 for p = 0); 0 for an empty list."""
    v = sorted(values)
    n = len(v)
    if n == 0:
        return 0
    k = -((-p * n) // 100) - 1  # ceil(p*n/100) - 1
    return v[min(max(k, 0), n - 1)]


def stats(values: Iterable[int]) -> dict[str, int]:
    """count, total, p50, p90, max of a list of integers (zeros when empty)."""
    v = sorted(values)
    return {
        "count": len(v),
        "total": sum(v),
        "p50": nearest_rank(v, 50),
        "p90": nearest_rank(v, 90),
        "max": v[-1] if v else 0,
    }


def span_busy_idle(intervals: list[tuple[int, int]]) -> dict[str, int]:
    """span (first start to last end), busy (union), idle = span - busy, gaps (count)."""
    if not intervals:
        return {"span": 0, "busy": 0, "idle": 0, "gaps": 0}
    span = max(e for _, e in intervals) - min(s for s, _ in intervals)
    busy = union_length(intervals)
    return {"span": span, "busy": busy, "idle": span - busy, "gaps": len(gaps_of(intervals))}


# --------------------------------------------------------------------------------------------
# Links (section 3)
# --------------------------------------------------------------------------------------------


def is_device_activity(ev: Event) -> bool:
    """Device-side, and not a gpu_user_annotation."""
    return ev.side == "device" and ev.catl != "gpu_user_annotation"


def link(events: list[Event], raw_events: list[Any]) -> dict[int, int]:
    """activity idx -> runtime call idx: by correlation first, then by ac2g flow."""
    calls = [e for e in events if e.lane == "runtime_api"]
    activities = [e for e in events if is_device_activity(e)]

    first_call_by_corr: dict[Any, int] = {}
    for c in calls:
        corr = c.args.get("correlation")
        if corr is None:
            continue
        first_call_by_corr.setdefault(freeze(corr), c.idx)

    links: dict[int, int] = {}
    for a in activities:
        corr = a.args.get("correlation")
        if corr is None:
            continue
        call = first_call_by_corr.get(freeze(corr))
        if call is not None:
            links[a.idx] = call

    # Flows: each ac2g flow event binds to the first runtime call or device activity (file
    # order) on its thread whose ts equals the flow event's ts. Other events (a cpu_op, a
    # gpu_user_annotation starting at the same time) are never bound to.
    call_set = {c.idx for c in calls}
    activity_set = {a.idx for a in activities}
    first_at: dict[tuple[str, str, int], int] = {}
    for e in events:
        if e.idx in call_set or e.idx in activity_set:
            first_at.setdefault((e.pid, e.tid, e.ts), e.idx)

    flows: dict[Any, list[int]] = {}  # flow id -> bound complete event idxs, in first-seen order of ids
    for raw in raw_events:
        if not isinstance(raw, dict) or raw.get("ph") not in ("s", "f"):
            continue
        cat = raw.get("cat")
        if not isinstance(cat, str) or cat.lower() != "ac2g" or "id" not in raw or raw.get("id") is None:
            continue
        ts = parse_ns(raw.get("ts"))
        bound = None
        if ts is not None:
            bound = first_at.get((text_of(raw.get("pid")), text_of(raw.get("tid")), ts))
        lst = flows.setdefault(freeze(raw["id"]), [])
        if bound is not None:
            lst.append(bound)

    for bound in flows.values():
        cand_calls = [i for i in bound if i in call_set]
        cand_acts = [i for i in bound if i in activity_set and i not in links]
        if cand_calls and cand_acts:
            links[min(cand_acts)] = min(cand_calls)
    return links


# --------------------------------------------------------------------------------------------
# The op table (section 4)
# --------------------------------------------------------------------------------------------


def is_tree_event(ev: Event) -> bool:
    """Host-side, not category Trace, not one of torch's dropped names."""
    return ev.side == "host" and ev.catl != "trace" and ev.name not in DROPPED_TREE_NAMES


def tree_order_key(ev: Event) -> tuple[int, int, int]:
    """(ts ascending, end descending, file order)."""
    return (ev.ts, -ev.end, ev.idx)


def nest(events: Iterable[Event]) -> dict[int, int | None]:
    """torch's ``_populate_cpu_children`` per thread: idx -> parent idx (None for a root).

    Sort by (ts, -end, idx); for each event E pop the stack top P while E.ts >= P.end or
    E.end > P.end; the remaining top (if any) is E's parent; push E."""
    by_thread: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for ev in events:
        by_thread[ev.thread].append(ev)
    parents: dict[int, int | None] = {}
    for evs in by_thread.values():
        evs.sort(key=tree_order_key)
        stack: list[Event] = []
        for ev in evs:
            parent = None
            while stack:
                top = stack[-1]
                if ev.ts >= top.end or ev.end > top.end:
                    stack.pop()
                else:
                    parent = top.idx
                    break
            parents[ev.idx] = parent
            stack.append(ev)
    return parents


def launching_ops(tree: list[Event], links: dict[int, int], by_idx: dict[int, Event]) -> dict[int, int]:
    """activity idx -> launching op idx: the innermost cpu_op open (ts <= call.ts < end) on the
    linked call's thread, i.e. the last such op in (ts, -end, idx) order.

    Per thread the cpu_ops are sorted; the ops with ts <= t are a prefix. Walking queries in
    increasing t, a monotonic stack keeps the prefix's ops that are not dominated (an op is
    dominated by a later one that ends no earlier); the answer is the latest stack entry with
    end > t, found by bisection (the stack's ends strictly decrease)."""
    ops_by_thread: dict[tuple[str, str], list[Event]] = defaultdict(list)
    for ev in tree:
        if ev.catl == "cpu_op":
            ops_by_thread[ev.thread].append(ev)
    queries: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for act, call in links.items():
        c = by_idx[call]
        queries[c.thread].append((c.ts, act))

    result: dict[int, int] = {}
    for thread, qs in queries.items():
        ops = sorted(ops_by_thread.get(thread, []), key=tree_order_key)
        qs.sort()
        stack: list[Event] = []  # ends strictly decreasing from bottom to top
        neg_ends: list[int] = []  # -end of the stack entries: increasing
        k = 0
        for t, act in qs:
            while k < len(ops) and ops[k].ts <= t:
                op = ops[k]
                while stack and stack[-1].end <= op.end:
                    stack.pop()
                    neg_ends.pop()
                stack.append(op)
                neg_ends.append(-op.end)
                k += 1
            # entries with end > t  <=>  -end < -t : a bottom prefix of the stack
            pos = bisect.bisect_left(neg_ends, -t) - 1
            if pos >= 0:
                result[act] = stack[pos].idx
    return result


def fold(
    tree: list[Event], parents: dict[int, int | None], own: dict[int, int]
) -> tuple[set[int], dict[int, int | None], dict[int, list[int]], dict[int, int], int]:
    """torch's ``_remove_dup_nodes``: repeat passes (events in file order) until nothing
    changes; an event whose parent has the same name (the name torch compares: after the
    ``ProfilerStep*`` rename, ``row_name``) and exactly one child (it) is removed, the parent
    takes its children and its own device time (replaced, not added).

    Returns (removed idxs, folded parents, folded children lists, folded own device time,
    the own device time that the replacements discarded)."""
    by_idx = {e.idx: e for e in tree}
    parent = dict(parents)
    children: dict[int, list[int]] = {e.idx: [] for e in tree}
    for e in sorted(tree, key=tree_order_key):
        p = parent[e.idx]
        if p is not None:
            children[p].append(e.idx)
    own = {e.idx: own.get(e.idx, 0) for e in tree}
    alive = sorted(e.idx for e in tree)
    removed: set[int] = set()
    lost = [0]
    while True:
        this_pass = []
        for i in alive:
            p = parent[i]
            if p is not None and row_name(by_idx[p].name) == row_name(by_idx[i].name) and len(children[p]) == 1:
                children[p] = children[i]
                lost[0] += own[p]  # the parent's own device time is replaced, not added to
                own[p] = own[i]
                for c in children[i]:
                    parent[c] = p
                this_pass.append(i)
        if not this_pass:
            break
        removed.update(this_pass)
        alive = [i for i in alive if i not in removed]
    for i in removed:
        del parent[i], children[i], own[i]
    return removed, parent, children, own, lost[0]


def row_name(name: str) -> str:
    """torch's wildcard rename: a name starting with ``ProfilerStep#`` becomes ``ProfilerStep*``."""
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


def input_dims_text(ev: Event) -> str | None:
    """Compact JSON of the ``Input Dims`` arg; None when absent (or null)."""
    dims = ev.args.get("Input Dims")
    return None if dims is None else compact_json(dims)


# --------------------------------------------------------------------------------------------
# Steps (section 5)
# --------------------------------------------------------------------------------------------


def step_number(name: str) -> int | None:
    """N for a name ``ProfilerStep#N`` (N an integer), else None."""
    m = STEP_NAME.fullmatch(name)
    return int(m.group(1)) if m else None


def step_windows(events: list[Event]) -> list[Event]:
    """The first host-side complete event per N named ProfilerStep#N (file order), sorted by
    start (ties: file order). Device-side events of that name are never windows."""
    first: dict[int, Event] = {}
    for ev in events:
        if ev.side != "host":
            continue
        n = step_number(ev.name)
        if n is not None and n not in first:
            first[n] = ev
    return sorted(first.values(), key=lambda e: (e.ts, e.idx))


def steps_table(
    events: list[Event], links: dict[int, int], by_idx: dict[int, Event]
) -> tuple[list[dict], dict[str, int], list[int]]:
    """Per step: host busy per lane (events clipped to the step), device columns per device
    pid (activities whose linked call starts inside the step); the activities in no step; and
    the idxs of step windows that start before the previous window ends (warned)."""
    windows = step_windows(events)
    starts = [w.ts for w in windows]
    overlapping = [w.idx for prev, w in zip(windows, windows[1:]) if w.ts < prev.end]
    host: list[dict[str, list[tuple[int, int]]]] = [defaultdict(list) for _ in windows]
    dev: list[dict[str, list[tuple[int, int]]]] = [defaultdict(list) for _ in windows]

    for ev in events:
        if ev.side != "host" or step_number(ev.name) is not None:
            continue
        k = bisect.bisect_right(starts, ev.ts) - 1
        if k < 0 or ev.ts >= windows[k].end:
            continue
        host[k][ev.lane].append((ev.ts, min(ev.end, windows[k].end)))

    outside = {"events": 0, "total": 0}
    for ev in events:
        if not is_device_activity(ev):
            continue
        k = None
        call = links.get(ev.idx)
        if call is not None:
            t = by_idx[call].ts
            j = bisect.bisect_right(starts, t) - 1
            while j >= 0:  # the last window (sorted order) with start <= t < end
                if t < windows[j].end:
                    k = j
                    break
                j -= 1
        if k is None:
            outside["events"] += 1
            outside["total"] += ev.dur
        else:
            dev[k][ev.pid].append((ev.ts, ev.end))

    rows = []
    for k, w in enumerate(windows):
        devices = {}
        for pid in sorted(dev[k]):
            ivs = dev[k][pid]
            sbi = span_busy_idle(ivs)
            devices[pid] = {"events": len(ivs), "busy": sbi["busy"], "span": sbi["span"], "idle": sbi["idle"]}
        rows.append(
            {
                "step": step_number(w.name),
                "name": w.name,
                "start": w.ts,
                "end": w.end,
                "host_busy": {lane: union_length(host[k].get(lane, [])) for lane in LANES},
                "devices": devices,
            }
        )
    return rows, outside, overlapping


# --------------------------------------------------------------------------------------------
# Everything
# --------------------------------------------------------------------------------------------


def cut_events(raw_events: list[Any], *, window: tuple[int, int | None] | None = None, steps: tuple[int, int] | None = None) -> list[Any]:
    """Section 11: the traceEvents list with the complete events outside the part replaced by None
    (so every index stays the event's position). ``window`` is (start, end or None) in ns from the
    first kept complete event's ts; ``steps`` (first, last) ProfilerStep numbers, from the first
    chosen window's start to the last end. Host events and unlaunched device-side events are kept
    when they start inside; a linked device activity when its runtime call does."""
    events, _ = read_events(raw_events)
    by_idx = {e.idx: e for e in events}
    if steps is not None:
        chosen = [w for w in step_windows(events) if steps[0] <= (step_number(w.name) or 0) <= steps[1]]
        start, end = min(w.ts for w in chosen), max(w.end for w in chosen)
    else:
        origin = min(e.ts for e in events)
        lo, hi = window or (0, None)
        start, end = origin + lo, None if hi is None else origin + hi

    def inside(ts: int) -> bool:
        return ts >= start and (end is None or ts < end)

    links = link(events, raw_events)
    keep = {e.idx for e in events if inside(by_idx[links[e.idx]].ts if is_device_activity(e) and e.idx in links else e.ts)}
    return [None if isinstance(raw, dict) and raw.get("ph") == "X" and idx not in keep else raw for idx, raw in enumerate(raw_events)]


def compute(path: str | Path, *, group_by_shape: bool = False) -> dict:
    """Every figure of docs/definitions.md for one trace file. All times are int ns; an
    "index" is the event's position in the traceEvents array. Keys:

    events            number of kept complete events
    window            (first ts, last end); (0, 0) when there is no complete event
    lanes             {lane: {events, total, busy}} for all five lanes
    tracks            {(lane, track name): {events, total, busy, span, idle, gaps}}
    hardware_idle_gaps  sorted [(track name, gap start, gap end)] of the hardware tracks
    hardware_idle     {count, total, p50, p90, max} of the gap lengths, plus idle = Σ idle and
                      span = Σ span over the hardware tracks (share = idle / span)
    links             {activity index: runtime call index}
    launch_latency, queue_delay   {count, total, p50, p90, max}
    parents           {tree event index: parent index or None}, before folding
    ops               {(name, is_user_annotation[, input dims text or None]):
                       {calls, self_cpu, cpu_total, self_device, device_total}}, in the
                      default order (self_cpu desc, name, user annotation, shapes)
    unlinked          {calls, total}: the [unlinked device time] row
    self_cpu_total, device_total   the footers
    negative_self     tree events (after folding) whose self CPU is < 0
    kernels           {name: {calls, total, min, max, streams}}, total desc then name
    steps             [{step, name, start, end, host_busy: {lane: busy}, devices:
                        {pid: {events, busy, span, idle}}}] sorted by start
    outside_steps     {events, total} of the device activities in no step

    Extras (not in the brief's contract, handy in tests): launchers {activity index: op
    index}, folded_away [removed indexes], folded_parents {index: parent} after folding,
    self_cpu {index: self CPU}, device_lost_to_folding (own device time the fold replaced),
    compare {device, compute, self_cpu, device_op_calls, idle} (section 7), warnings
    [(reason, index)]."""
    return compute_from_events(load_trace_events(path), group_by_shape=group_by_shape)


def compute_from_events(raw_events: list[Any], *, group_by_shape: bool = False) -> dict:
    """``compute`` on an already parsed traceEvents list (numbers as int/Decimal/str)."""
    events, warnings = read_events(raw_events)
    by_idx = {e.idx: e for e in events}

    # ---- section 2: lanes, tracks, window
    window = (min(e.ts for e in events), max(e.end for e in events)) if events else (0, 0)
    lane_ivs: dict[str, list[tuple[int, int]]] = {lane: [] for lane in LANES}
    track_ivs: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        lane_ivs[e.lane].append((e.ts, e.end))
        track_ivs[(e.lane, e.track)].append((e.ts, e.end))
    lanes = {
        lane: {"events": len(iv), "total": sum(b - a for a, b in iv), "busy": union_length(iv)}
        for lane, iv in lane_ivs.items()
    }
    tracks = {}
    hw_gaps: list[tuple[str, int, int]] = []
    hw_idle = hw_span = 0
    for key in sorted(track_ivs):
        iv = track_ivs[key]
        sbi = span_busy_idle(iv)
        tracks[key] = {"events": len(iv), "total": sum(b - a for a, b in iv), **sbi}
        if key[0] == "hardware":
            hw_gaps.extend((key[1], s, e) for s, e in gaps_of(iv))
            hw_idle += sbi["idle"]
            hw_span += sbi["span"]
    hw_gaps.sort()
    hardware_idle = {**stats(e - s for _, s, e in hw_gaps), "idle": hw_idle, "span": hw_span}

    # ---- section 3: links and launch delays
    links = link(events, raw_events)
    latencies = [by_idx[a].ts - by_idx[c].ts for a, c in links.items()]
    queues = [max(0, by_idx[a].ts - by_idx[c].end) for a, c in links.items()]

    # ---- section 4: the op table
    tree = [e for e in events if is_tree_event(e)]
    parents = nest(tree)
    launcher = launching_ops(tree, links, by_idx)
    own: dict[int, int] = defaultdict(int)
    activities = [e for e in events if is_device_activity(e)]
    unlinked = {"calls": 0, "total": 0}
    for a in activities:
        op = launcher.get(a.idx)
        if op is None:
            unlinked["calls"] += 1
            unlinked["total"] += a.dur
        else:
            own[op] += a.dur
    removed, fparent, fchildren, fown, lost = fold(tree, parents, own)
    kept_tree = [e for e in tree if e.idx not in removed]
    self_cpu = {e.idx: e.dur - sum(by_idx[c].dur for c in fchildren[e.idx]) for e in kept_tree}
    device_total: dict[int, int] = {}
    for e in sorted(kept_tree, key=tree_order_key, reverse=True):  # children before parents
        device_total[e.idx] = fown[e.idx] + sum(device_total[c] for c in fchildren[e.idx])

    rows: dict[tuple, dict[str, int]] = {}
    for e in kept_tree:
        key: tuple = (row_name(e.name), e.catl == "user_annotation")
        if group_by_shape:
            key = key + (input_dims_text(e),)
        r = rows.setdefault(key, {"calls": 0, "self_cpu": 0, "cpu_total": 0, "self_device": 0, "device_total": 0})
        r["calls"] += 1
        r["self_cpu"] += self_cpu[e.idx]
        r["cpu_total"] += e.dur
        r["self_device"] += fown[e.idx]
        r["device_total"] += device_total[e.idx]

    def row_order(item):
        key, r = item
        shapes = key[2] if len(key) > 2 else None
        return (-r["self_cpu"], key[0], key[1], (shapes is not None, shapes or ""))

    ops = dict(sorted(rows.items(), key=row_order))

    # ---- kernel table
    kern: dict[str, dict] = {}
    for a in activities:
        k = kern.setdefault(a.name, {"calls": 0, "total": 0, "min": a.dur, "max": a.dur, "streams": set()})
        k["calls"] += 1
        k["total"] += a.dur
        k["min"] = min(k["min"], a.dur)
        k["max"] = max(k["max"], a.dur)
        k["streams"].add(a.tid)
    kernels = {
        name: {**k, "streams": sorted(k["streams"])}
        for name, k in sorted(kern.items(), key=lambda kv: (-kv[1]["total"], kv[0]))
    }

    # ---- section 5: steps
    steps, outside, overlapping = steps_table(events, links, by_idx)
    warnings = warnings + [("overlapping step", i) for i in overlapping]

    # ---- section 7: the figures compare sums (per trace)
    device_rows = [
        (k, r) for k, r in ops.items() if not k[1] and k[0] != "ProfilerStep*" and r["self_device"] > 0
    ]
    compare = {
        "device": sum(a.dur for a in activities),
        "compute": sum(a.dur for a in activities if a.lane == "hardware"),
        "self_cpu": sum(r["self_cpu"] for _, r in device_rows),
        "device_op_calls": sum(r["calls"] for _, r in device_rows),
        "idle": hardware_idle["total"],
    }

    return {
        "events": len(events),
        "window": window,
        "lanes": lanes,
        "tracks": tracks,
        "hardware_idle_gaps": hw_gaps,
        "hardware_idle": hardware_idle,
        "links": dict(sorted(links.items())),
        "launch_latency": stats(latencies),
        "queue_delay": stats(queues),
        "parents": parents,
        "ops": ops,
        "unlinked": unlinked,
        "self_cpu_total": sum(self_cpu.values()),
        "device_total": sum(a.dur for a in activities),
        "negative_self": sum(1 for v in self_cpu.values() if v < 0),
        "kernels": kernels,
        "steps": steps,
        "outside_steps": outside,
        # extras, useful to tests (not part of the brief's contract)
        "launchers": launcher,
        "folded_away": sorted(removed),
        "folded_parents": fparent,
        "self_cpu": self_cpu,
        "device_lost_to_folding": lost,
        "compare": compare,
        "warnings": warnings,
    }
