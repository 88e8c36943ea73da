"""The per-op table of torch's key_averages(), computed from the trace alone: calls, self/total CPU, self/total device time.

Semantics follow torch.autograd.profiler_util: an op's self CPU is its duration minus its direct
children on the same thread (runtime calls included); each hardware execution counts as self
device time of the innermost framework op around the runtime call that launched it, and device
total adds the op's descendants. Hardware time no op launched is kept as one "[unlinked device
time]" row, so self device over all rows always equals the hardware lane total.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import polars as pl

from ntrace.nesting import HOST_EVENT, ancestor_rows, subtree_sums, tree

if TYPE_CHECKING:
    from ntrace.profile import Profile

UNLINKED = "[unlinked device time]"

#: torch's sort keys (key_averages().table(sort_by=...)) → the op table column they sort on.
SORT_KEYS: dict[str, str] = {
    "self_cpu_time_total": "self_cpu",
    "cpu_time_total": "cpu_total",
    "cpu_time": "cpu_avg",
    "self_device_time_total": "self_device",
    "self_cuda_time_total": "self_device",
    "self_privateuse1_time_total": "self_device",
    "device_time_total": "device_total",
    "cuda_time_total": "device_total",
    "privateuse1_time_total": "device_total",
    "device_time": "device_avg",
    "count": "calls",
}

#: Category (lowercase) → device name, first match wins; ROCm traces write CUDA categories and torch calls them CUDA too.
_DEVICE_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("NEURON", ("privateuse1_runtime", "privateuse1_driver", "neuron_rt", "neuron_hw")),
    ("MTIA", ("mtia_runtime", "mtia_ccp_events")),
    ("XPU", ("xpu_runtime", "xpu_driver")),
    ("CUDA", ("cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy", "gpu_memset")),
)

#: The op table's additive columns: every view sums them.
_SUMS = ["calls", "self_cpu", "cpu_total", "self_device", "device_total"]

OP_SCHEMA: dict[str, pl.DataType] = {
    "name": pl.String,
    "input_dims": pl.String,
    "calls": pl.Int64,
    "self_cpu": pl.Int64,
    "cpu_total": pl.Int64,
    "cpu_avg": pl.Int64,
    "self_device": pl.Int64,
    "device_total": pl.Int64,
    "device_avg": pl.Int64,
    "device_pct": pl.Float64,
}


def device_name(profile: "Profile") -> str:
    """The device the table's device columns are named for: NEURON, MTIA, XPU, CUDA (also ROCm), or "none" for CPU-only traces."""
    cats = set(profile.categories["category"].str.to_lowercase().to_list())
    return next((name for name, marks in _DEVICE_CATEGORIES if cats.intersection(marks)), "none")


#: Names torch's profiler drops before building its tree (profiler._parse_kineto_results via _filter_name).
HIDDEN_NAMES: tuple[str, ...] = (
    "[memory]",
    "[OutOfMemory]",
    "profiler::_record_function_enter",
    "profiler::_record_function_enter_new",
    "profiler::_record_function_exit",
    "aten::is_leaf",
    "aten::output_nr",
    "aten::_version",
)


def op_name(name: pl.Expr) -> pl.Expr:
    """The name torch's table shows for an event: every "ProfilerStep#N" becomes "ProfilerStep*"."""
    return pl.when(name.str.starts_with("ProfilerStep#")).then(pl.lit("ProfilerStep*")).otherwise(name).alias("name")


def _tree_events(profile: "Profile", *columns: str) -> pl.DataFrame:
    """`columns` of the host events torch builds its op tree from (every host complete event except the names it hides), in idx order."""
    hidden = pl.col("name").is_in(HIDDEN_NAMES).fill_null(False)  # no fill_null on the text: that would copy every name
    return profile.select_complete(*columns, where=HOST_EVENT & ~hidden).sort("idx")


def op_tree(profile: "Profile") -> tuple[pl.DataFrame, pl.Series]:
    """Nesting of the host events torch's tree is built from, plus op_idx: the innermost framework op around each (itself excluded);
    and each event's parent row in that frame (null at the top)."""
    host = _tree_events(profile, "idx", "pid", "tid", "ts", "end", "lane")
    nest, parent = tree(host)  # in idx order, row for row with `host`
    anchor = ancestor_rows(parent, host["lane"] == "framework")
    return nest.with_columns(op_idx=nest["idx"].gather(anchor)), parent


def launching_ops(profile: "Profile", execs: pl.DataFrame) -> pl.DataFrame:
    """For device-side events (idx, …): (exec_idx, call_idx, op_idx), the runtime call that launched each and the innermost framework op around that call."""
    linked = execs.select(exec_idx="idx").join(profile.links.select("exec_idx", "call_idx"), on="exec_idx", how="left").sort("exec_idx")
    return linked.with_columns(op_idx=op_around(profile, linked["call_idx"]))


def op_around(profile: "Profile", idx: pl.Series) -> pl.Series:
    """For host events given by idx: the innermost framework op around each (itself excluded); null for nulls and events outside the op tree.

    A binary search on the nesting frame's sorted idx, no join.
    """
    nest, none = profile.nesting, pl.repeat(None, len(idx), dtype=pl.Int64, eager=True).alias("op_idx")
    if nest.is_empty():
        return none
    rows = nest["idx"].search_sorted(idx.fill_null(0)).clip(upper_bound=nest.height - 1)
    found = (nest["idx"].gather(rows) == idx).fill_null(False)
    return nest["op_idx"].gather(rows).zip_with(found, none).alias("op_idx")


def hardware_time(profile: "Profile") -> int:
    """All hardware execution time, ns: the attribution has one row per execution, so its durations add up to the hardware lane's total."""
    return int(profile.attribution["dur"].sum())


def device_attribution(profile: "Profile") -> pl.DataFrame:
    """One row per hardware execution: (exec_idx, dur, call_idx, op_idx); op_idx is null when no framework op launched it."""
    hw = profile.executions.select("idx", "dur")
    return launching_ops(profile, hw).join(hw.rename({"idx": "exec_idx"}), on="exec_idx", how="left").select("exec_idx", "dur", "call_idx", "op_idx")


def _op_rows(profile: "Profile", *columns: str) -> pl.DataFrame:
    """Per host tree event (idx order): `columns`, dur, self_cpu, self_device, device_total and `kept` (false for ops folded into their parent).

    Every column is computed on row positions (one row per event, parents found by row), so no
    join runs and the text columns are copied once. Like torch's EventList._remove_dup_nodes, an
    op whose parent has the same name and no other child is folded into that parent; its self CPU
    and self device time go to the nearest ancestor kept.
    """
    nest, parent = profile._tree
    host = _tree_events(profile, *dict.fromkeys(["idx", "name", *columns, "dur"]))
    n, dur = host.height, host["dur"]
    own = profile.attribution.drop_nulls("op_idx")
    own = own.group_by(row=nest["idx"].search_sorted(own["op_idx"]).cast(pl.Int64)).agg(pl.col("dur").sum())
    self_device = pl.zeros(n, dtype=pl.Int64, eager=True).scatter(own["row"], own["dur"])
    device_total = subtree_sums(nest, self_device)
    # one pass over the parents: children's summed duration, their count and the first child of each
    kids = (
        pl.DataFrame({"parent": parent, "dur": dur}).with_row_index("row").drop_nulls("parent")
        .group_by("parent").agg(pl.col("dur").sum(), pl.len(), pl.col("row").first())
    )
    self_cpu = dur - pl.zeros(n, dtype=pl.Int64, eager=True).scatter(kids["parent"], kids["dur"])
    # a row is folded when it is its parent's only child and has the parent's name; its times move to the nearest kept ancestor
    name = host["name"]
    only = kids.filter(pl.col("len") == 1)
    only = only.filter(name.gather(only["row"]).fill_null("") == name.gather(only["parent"]).fill_null(""))
    folded = pl.zeros(n, dtype=pl.Boolean, eager=True).scatter(only["row"], True)
    rows = only["row"].cast(pl.Int64)
    moved = (
        pl.DataFrame({"keeper": ancestor_rows(parent, ~folded).gather(rows), "self_cpu": self_cpu.gather(rows), "self_device": self_device.gather(rows)})
        .group_by("keeper").agg(pl.all().sum())
    )
    keepers = moved["keeper"]
    self_cpu.scatter(keepers, self_cpu.gather(keepers) + moved["self_cpu"])  # in place, on Series made here
    self_device.scatter(keepers, self_device.gather(keepers) + moved["self_device"])
    return host.select(*columns, "dur").with_columns(self_cpu=self_cpu, self_device=self_device, device_total=device_total, kept=~folded)


def op_groups(profile: "Profile") -> pl.DataFrame:
    """Every view of the op table sums these rows: per (name, input_dims), calls, self_cpu, cpu_total, self_device, device_total (ns), plus the unlinked device time row."""
    keys = ["name", "input_dims"]
    kept = pl.col("kept")
    rows = (  # grouped on the names as written, then once more on torch's names (ProfilerStep#N -> ProfilerStep*): few rows get renamed
        _op_rows(profile, *keys)
        .group_by(keys)
        .agg(
            calls=kept.sum().cast(pl.Int64),
            self_cpu=pl.col("self_cpu").filter(kept).sum(),
            cpu_total=pl.col("dur").filter(kept).sum(),
            self_device=pl.col("self_device").filter(kept).sum(),
            device_total=pl.col("device_total").filter(kept).sum(),
        )
        .filter(pl.col("calls") > 0)
        .with_columns(op_name(pl.col("name").fill_null("")))
        .group_by(keys)
        .agg(pl.col(_SUMS).sum())
    )
    schema = {k: OP_SCHEMA[k] for k in (*keys, *_SUMS)}
    unlinked = profile.attribution.filter(pl.col("op_idx").is_null())
    if unlinked.height:
        unlinked_ns = int(unlinked["dur"].sum())
        extra = {"name": [UNLINKED], "input_dims": [None], "calls": [unlinked.height], "self_cpu": [0], "cpu_total": [0], "self_device": [unlinked_ns], "device_total": [unlinked_ns]}
        rows = pl.concat([rows.cast(schema), pl.DataFrame(extra, schema=schema)])
    return rows.cast(schema).sort(keys, nulls_last=True)


def op_table(profile: "Profile", group_by_shape: bool = False, sort_by: str = "self_cpu_time_total") -> pl.DataFrame:
    """key_averages() as a frame: one row per op name (and input shape when asked), plus the unlinked device time row.

    Columns: name, [input_dims], calls, self_cpu, cpu_total, cpu_avg, self_device, device_total,
    device_avg (ns) and device_pct (share of all hardware time), sorted descending by a torch sort
    key (then by name and shape, so ties always come out in the same order). Every view sums
    Profile.op_groups, so the op tree is built once whatever the view.
    """
    if sort_by not in SORT_KEYS:
        raise ValueError(f"unknown sort key {sort_by!r}; use one of {', '.join(SORT_KEYS)}")
    keys = ["name", "input_dims"] if group_by_shape else ["name"]
    rows = profile.op_groups if group_by_shape else profile.op_groups.group_by("name").agg(pl.col(_SUMS).sum())
    hw_total = profile.hardware_ns
    schema = {k: v for k, v in OP_SCHEMA.items() if k in keys or k not in ("name", "input_dims")}
    return (
        rows.with_columns(
            cpu_avg=pl.col("cpu_total") // pl.col("calls"),
            device_avg=pl.col("device_total") // pl.col("calls"),
            device_pct=pl.col("self_device") / hw_total if hw_total else pl.lit(0.0),
        )
        .select(list(schema))
        .cast(schema)
        .sort([SORT_KEYS[sort_by], *keys], descending=[True, *[False] * len(keys)], nulls_last=True)
    )


def self_cpu_time(profile: "Profile") -> int:
    """Self CPU time over every op, ns: the self times of a tree add up to its roots' durations."""
    roots = profile.nesting.filter(pl.col("parent_idx").is_null()).select("idx")
    return int(roots.join(_tree_events(profile, "idx", "dur"), on="idx")["dur"].sum())


def totals(profile: "Profile") -> tuple[int, int]:
    """(self CPU time total, self device time total) in ns over every op, the footer of torch's table (top-N views included)."""
    return profile.self_cpu_ns, profile.hardware_ns


def set_view(profiles: "Iterable[Profile]", sort_by: str = "self_cpu_time_total", top: int | None = None, group_by_shape: bool = False) -> None:
    """Make each profile's `ops` the view every renderer shows: sorted by a torch key, the first `top` rows, grouped by shape."""
    for profile in profiles:
        table = op_table(profile, group_by_shape=group_by_shape, sort_by=sort_by)
        profile.ops = table.head(top) if top else table
