"""The per-op table of torch's key_averages(), computed from the trace alone: calls, self/total CPU, self/total device time.

Semantics follow torch.autograd.profiler_util: an op's self CPU is its duration minus its direct
children on the same thread (runtime calls included); each hardware execution counts as self
device time of the innermost framework op around the runtime call that launched it, and device
total adds the op's descendants. Hardware time no op launched is kept as one "[unlinked device
time]" row, so self device over all rows always equals the hardware lane total.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ntrace.analyses.nesting import HOST_EVENT, ancestor_rows, subtree_sums, tree

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

OP_SCHEMA = pl.Schema(
    {
        "name": pl.String(),
        "input_dims": pl.String(),
        "calls": pl.Int64(),
        "self_cpu": pl.Int64(),
        "cpu_total": pl.Int64(),
        "cpu_avg": pl.Int64(),
        "self_device": pl.Int64(),
        "device_total": pl.Int64(),
        "device_avg": pl.Int64(),
        "device_pct": pl.Float64(),
    }
)


def device_name(categories: pl.DataFrame) -> str:
    """The device the table's device columns are named for (from the (lane, category) frame): NEURON, MTIA, XPU, CUDA (also ROCm), or "none" for CPU-only traces."""
    cats = set(categories["category"].str.to_lowercase().to_list())
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


#: The complete events torch builds its op tree from: every host event except the names it hides (no fill_null on the text: that would copy every name).
TREE_EVENT = HOST_EVENT & ~pl.col("name").is_in(HIDDEN_NAMES).fill_null(False)


def op_tree(host: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """Of the tree events (idx, pid, tid, ts, end, lane; idx order): their nesting plus op_idx, the innermost framework op around each (itself excluded);
    and each event's parent row in that frame (null at the top)."""
    nest, parent = tree(host)  # in idx order, row for row with `host`
    anchor = ancestor_rows(parent, host["lane"] == "framework")
    return nest.with_columns(op_idx=nest["idx"].gather(anchor)), parent


def launching_ops(execs: pl.DataFrame, links: pl.DataFrame, nest: pl.DataFrame) -> pl.DataFrame:
    """For device-side events (idx, …): (exec_idx, call_idx, op_idx), the runtime call that launched each (`links`) and the innermost framework op around that call (`nest`, op_tree's)."""
    linked = execs.select(exec_idx="idx").join(links.select("exec_idx", "call_idx"), on="exec_idx", how="left").sort("exec_idx")
    return linked.with_columns(op_idx=op_around(nest, linked["call_idx"]))


def op_around(nest: pl.DataFrame, idx: pl.Series) -> pl.Series:
    """For host events given by idx: the innermost framework op around each (itself excluded, from op_tree's `nest`); null for nulls and events outside the op tree.

    A binary search on the nesting frame's sorted idx, no join.
    """
    none = pl.repeat(None, len(idx), dtype=pl.Int64, eager=True).alias("op_idx")
    if nest.is_empty():
        return none
    rows = nest["idx"].search_sorted(idx.fill_null(0)).clip(upper_bound=nest.height - 1)
    found = (nest["idx"].gather(rows) == idx).fill_null(False)
    return nest["op_idx"].gather(rows).zip_with(found, none).alias("op_idx")


def device_attribution(executions: pl.DataFrame, links: pl.DataFrame, nest: pl.DataFrame) -> pl.DataFrame:
    """One row per hardware execution (idx, dur, …): (exec_idx, dur, call_idx, op_idx); op_idx is null when no framework op launched it."""
    hw = executions.select("idx", "dur")
    return launching_ops(hw, links, nest).join(hw.rename({"idx": "exec_idx"}), on="exec_idx", how="left").select("exec_idx", "dur", "call_idx", "op_idx")


def _op_rows(host: pl.DataFrame, nest: pl.DataFrame, parent: pl.Series, attribution: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Per tree event (`host`: idx, name, `columns`, dur in idx order, row for row with op_tree's `nest` and `parent`): `columns`, dur, self_cpu, self_device, device_total and `kept` (false for ops folded into their parent).

    Every column is computed on row positions (one row per event, parents found by row), so no
    join runs and the text columns are copied once. Like torch's EventList._remove_dup_nodes, an
    op whose parent has the same name and no other child is folded into that parent; its self CPU
    and self device time go to the nearest ancestor kept.
    """
    n, dur = host.height, host["dur"]
    own = attribution.drop_nulls("op_idx")
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


def op_groups(host: pl.DataFrame, nest: pl.DataFrame, parent: pl.Series, attribution: pl.DataFrame) -> pl.DataFrame:
    """Every view of the op table sums these rows: per (name, input_dims), calls, self_cpu, cpu_total, self_device, device_total (ns), plus the unlinked device time row.

    `host` holds the tree events' idx, name, input_dims and dur (idx order); `nest` and `parent` are op_tree's; `attribution` is device_attribution's.
    """
    keys = ["name", "input_dims"]
    kept = pl.col("kept")
    rows = (  # grouped on the names as written, then once more on torch's names (ProfilerStep#N -> ProfilerStep*): few rows get renamed
        _op_rows(host, nest, parent, attribution, *keys)
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
    schema = pl.Schema({k: OP_SCHEMA[k] for k in (*keys, *_SUMS)})
    unlinked = attribution.filter(pl.col("op_idx").is_null())
    if unlinked.height:
        unlinked_ns = int(unlinked["dur"].sum())
        extra = {"name": [UNLINKED], "input_dims": [None], "calls": [unlinked.height], "self_cpu": [0], "cpu_total": [0], "self_device": [unlinked_ns], "device_total": [unlinked_ns]}
        rows = pl.concat([rows.cast(schema), pl.DataFrame(extra, schema=schema)])
    return rows.cast(schema).sort(keys, nulls_last=True)


@dataclass(frozen=True)
class OpView:
    """How the op table is shown: sorted by a torch sort key (SORT_KEYS), its first `top` rows (all when None), one row per (name, input shapes) when `group_by_shape`."""

    sort_by: str = "self_cpu_time_total"
    top: int | None = None
    group_by_shape: bool = False

    def __post_init__(self) -> None:
        if self.sort_by not in SORT_KEYS:
            raise ValueError(f"unknown sort key {self.sort_by!r}; use one of {', '.join(SORT_KEYS)}")


def op_table(groups: pl.DataFrame, hardware_ns: int, view: OpView = OpView()) -> pl.DataFrame:
    """key_averages() as a frame, from op_groups' rows: one row per op name (and input shape when the view asks), plus the unlinked device time row.

    Columns: name, [input_dims], calls, self_cpu, cpu_total, cpu_avg, self_device, device_total,
    device_avg (ns) and device_pct (share of all hardware time, `hardware_ns`), sorted descending
    by the view's torch sort key (then by name and shape, so ties always come out in the same
    order), cut to its top rows. Every view sums the same groups, so the op tree is built once.
    """
    group_by_shape, sort_by = view.group_by_shape, view.sort_by
    keys = ["name", "input_dims"] if group_by_shape else ["name"]
    rows = groups if group_by_shape else groups.group_by("name").agg(pl.col(_SUMS).sum())
    hw_total = hardware_ns
    schema = pl.Schema({k: v for k, v in OP_SCHEMA.items() if k in keys or k not in ("name", "input_dims")})
    table = (
        rows.with_columns(
            cpu_avg=pl.col("cpu_total") // pl.col("calls"),
            device_avg=pl.col("device_total") // pl.col("calls"),
            device_pct=pl.col("self_device") / hw_total if hw_total else pl.lit(0.0),
        )
        .select(list(schema))
        .cast(schema)
        .sort([SORT_KEYS[sort_by], *keys], descending=[True, *[False] * len(keys)], nulls_last=True)
    )
    return table.head(view.top) if view.top else table


def self_cpu_time(nest: pl.DataFrame, host: pl.DataFrame) -> int:
    """Self CPU time over every op, ns (the footer of torch's table): the self times of a tree add up to its roots' durations (`host`: idx, dur)."""
    roots = nest.filter(pl.col("parent_idx").is_null()).select("idx")
    return int(roots.join(host.select("idx", "dur"), on="idx")["dur"].sum())
