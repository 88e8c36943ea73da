"""The four lanes of a Neuron profile (plus `other`), as one category → lane table (and name rules for categories that mix two kinds of work), and the classifier that applies them.

The table is data, not code: read it at a glance here, print it with `ntrace lanes`, or extend it
with `lane_table({"my_cat": "hardware"})`. Each row says why the category sits in its lane.
"""

from __future__ import annotations

import re
from typing import Mapping

import polars as pl

from ntrace.exprs import lookup

#: The lanes, top to bottom as Neuron Explorer draws them, then `other`.
LANES: tuple[str, ...] = ("framework", "device", "runtime_api", "hardware", "other")

#: (category, lane, side, why). `side` says where the event runs: "host" (a CPU thread) or
#: "device" (a device stream/queue/core track). Categories are matched case-insensitively.
LANE_ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("cpu_op", "framework", "host", "aten operators dispatched by PyTorch on a Python/C++ thread"),
    ("user_annotation", "framework", "host", "record_function ranges, including ProfilerStep#N"),
    ("python_function", "framework", "host", "Python frames recorded with with_stack=True"),
    ("cpu_instant_event", "framework", "host", "instant markers emitted by the framework"),
    ("fwdbwd", "framework", "host", "forward/backward links between framework ops"),
    ("privateuse1_driver", "device", "host", "Neuron 'PrivateUse1 driver' events: device interaction, drawn per stream (framework/Stream:n)"),
    ("gpu_memcpy", "device", "device", "host<->device and device<->device copies: data movement, not compute"),
    ("gpu_memset", "device", "device", "device memory fills: data movement, not compute"),
    ("cuda_sync", "device", "device", "stream/event synchronization waits recorded on the device stream"),
    ("privateuse1_runtime", "runtime_api", "host", "Neuron runtime calls (nrt_execute, nrt_tensor_write, …) on the host"),
    ("neuron_rt", "runtime_api", "host", "Neuron Explorer's runtime lane name (neuron_rt/NC:n)"),
    ("cuda_runtime", "runtime_api", "host", "CUDA runtime API calls (cudaLaunchKernel, …); ROCm writes hip* calls here too"),
    ("cuda_driver", "runtime_api", "host", "CUDA driver API calls (cuLaunchKernel): host-side API like the runtime"),
    ("mtia_runtime", "runtime_api", "host", "MTIA runtime API calls"),
    ("xpu_runtime", "runtime_api", "host", "Intel XPU runtime API calls"),
    ("xpu_driver", "runtime_api", "host", "Intel XPU driver API calls"),
    ("kernel", "hardware", "device", "device executions: CUDA/ROCm kernels, Neuron graph executions (nc_exec_running)"),
    ("neuron_hw", "hardware", "device", "Neuron Explorer's hardware lane name (neuron_hw/NCa:b)"),
    ("mtia_ccp_events", "hardware", "device", "MTIA compute-core executions"),
    ("gpu_user_annotation", "other", "device", "annotation ranges drawn over kernels on the device: counting them would double kernel time"),
    ("Trace", "other", "host", "the profiler's own span over the whole capture"),
    ("overhead", "other", "host", "profiler bookkeeping, not the workload"),
    ("external_correlation", "other", "host", "correlation records, not timed work"),
)


#: (category, name pattern, lane, side, why): categories that hold two kinds of work, split by event name; the first
#: matching pattern wins, before the category table. MTIA's compute-core events hold DMA requests and event waits
#: beside compute, which are data movement and synchronization, not execution.
NAME_RULES: tuple[tuple[str, str, str, str, str], ...] = (
    ("mtia_ccp_events", r"^dma_", "device", "device", "MTIA DMA requests: data movement, not compute"),
    ("mtia_ccp_events", r"^event_", "device", "device", "MTIA event records and waits: synchronization, not compute"),
)


#: Lowercase texts the case-insensitive matchers below accept: ASCII with no `k` (the Kelvin sign lowercases to `k`).
_ASCII_NO_K = re.compile(r"[a-jl-z0-9_ ]+")


def lower_is(column: str, text: str) -> pl.Expr:
    """Whether `column` lowercased equals `text`, as one ASCII case-insensitive match: the same as `.str.to_lowercase() == text`
    (null where the column is), without building the lowered text of every event.

    Only ASCII letters lowercase to an ASCII letter other than `k`, so for such a `text` the two agree on every string.
    """
    return lower_contains(column, f"^{text}$")


def lower_contains(column: str, pattern: str) -> pl.Expr:
    """Whether `column` lowercased holds a match of `pattern` (words of lowercase ASCII without `k`, `|`, `^`, `$`), as `lower_is` does it."""
    if not all(_ASCII_NO_K.fullmatch(word.strip("^$")) for word in pattern.split("|")):
        raise ValueError(f"{pattern!r} is not lowercase ASCII words without k")
    return pl.col(column).str.contains(f"(?i-u){pattern}")


def lane_table(extra: Mapping[str, str] | None = None) -> pl.DataFrame:
    """The category → lane table as a frame (category, lane, side, why); `extra` adds or overrides rows."""
    rows = {cat.lower(): (cat, lane, side, why) for cat, lane, side, why in LANE_ROWS}
    for cat, lane in (extra or {}).items():
        if lane not in LANES:
            raise ValueError(f"unknown lane {lane!r} for category {cat!r}; lanes are {', '.join(LANES)}")
        side = "device" if lane == "hardware" else "host"
        rows[cat.lower()] = (cat, lane, side, "added by the user")
    return pl.DataFrame(list(rows.values()), schema=["category", "lane", "side", "why"], orient="row")


def classify(events: pl.DataFrame, table: pl.DataFrame | None = None) -> pl.DataFrame:
    """Add `lane` and `side` to every event; categories the table does not name go to `other` on the host."""
    table = lane_table() if table is None else table
    by_category = dict(zip(table["category"].str.to_lowercase(), zip(table["lane"], table["side"])))
    # each distinct category looked up once (a few dozen, in Python: a query per lookup costs more on a
    # small trace), then given to its events by code in one query: a lookup of every event's text held
    # 30-40 MiB more at its peak (330k events), a join would copy every column
    names = events["cat"].unique().drop_nulls()
    lower = names.str.to_lowercase()
    found = [by_category.get(c, ("other", "host")) for c in lower.to_list()]
    lane, side = pl.Series([a for a, _ in found], dtype=pl.Enum(LANES)), pl.Series([b for _, b in found], dtype=pl.Categorical)
    code = pl.col("cat").cast(pl.Enum(names)).to_physical()
    out = events.with_columns(lane=pl.lit(lane).gather(code).fill_null("other"), side=pl.lit(side).gather(code).fill_null("host"))
    ruled = {cat for cat, *_ in NAME_RULES} & set(lower.to_list())
    if not ruled:  # the common case: no category that needs its names read
        return out
    # the rules read names only in their categories' rows: those rows are picked by code, and only their names matched
    codes = events.select(code).to_series()
    rows = lookup(lower.is_in(list(ruled)), codes).fill_null(False).arg_true()
    picked = pl.DataFrame({"cat": lookup(lower, lookup(codes, rows)), "name": events["name"].gather(rows).cast(pl.String).fill_null(""), "lane": out["lane"].gather(rows), "side": out["side"].gather(rows)})
    new_lane, new_side = pl.col("lane"), pl.col("side")
    for rule_cat, pattern, rule_lane, rule_side, _ in reversed(NAME_RULES):  # the first rule applied last: it wins
        hit = (pl.col("cat") == rule_cat) & pl.col("name").str.contains(pattern)
        new_lane = pl.when(hit).then(pl.lit(rule_lane, pl.Enum(LANES))).otherwise(new_lane)
        new_side = pl.when(hit).then(pl.lit(rule_side, pl.Categorical)).otherwise(new_side)
    ruled_rows = picked.select(lane=new_lane, side=new_side)
    return out.with_columns(out["lane"].scatter(rows, ruled_rows["lane"]), out["side"].scatter(rows, ruled_rows["side"]))


def name_rule_table() -> pl.DataFrame:
    """The name rules as a frame (category, name, lane, side, why), as `ntrace lanes` prints them."""
    return pl.DataFrame(list(NAME_RULES), schema=["category", "name", "lane", "side", "why"], orient="row")
