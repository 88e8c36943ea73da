"""The per-op table of torch's key_averages(), computed from the trace alone, and the per-kernel table of the device activities.

The rules are torch's (torch.autograd.profiler_util; docs/definitions.md section 4): the tree is
nesting.tree's; a device activity is own device time of its launching op, the innermost
`cpu_op` open on its runtime call's thread when the call starts (never a user annotation);
an event whose parent has its name and no other child is folded into that parent, which takes
over its children and its own device time; rows are keyed by (name, user annotation or not),
every `ProfilerStep#N` named `ProfilerStep*`. Device activities no op launched form one
"[unlinked device time]" row, so the rows' self device time adds up to the footer.
"""

from __future__ import annotations

import polars as pl

from ntrace.analyses.opview import SORT_KEYS, OpView
from ntrace.analyses.nesting import HOST_EVENT, climb, innermost_open, subtree_sums, walk
from ntrace.exprs import grouped_on, lookup, matches
from ntrace.lanes import lower_is

UNLINKED = "[unlinked device time]"

#: Category (lowercase) → device name, first match wins; ROCm traces write CUDA categories and torch calls them CUDA too.
_DEVICE_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("NEURON", ("privateuse1_runtime", "privateuse1_driver", "neuron_rt", "neuron_hw")),
    ("MTIA", ("mtia_runtime", "mtia_ccp_events")),
    ("XPU", ("xpu_runtime", "xpu_driver")),
    ("CUDA", ("cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy", "gpu_memset")),
)

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

#: The complete events torch builds its op tree from: every host event except the names it hides.
TREE_EVENT = HOST_EVENT & ~pl.col("name").is_in(HIDDEN_NAMES).fill_null(False)

#: Device activities: what torch counts as device time (device-side events but the annotation ranges drawn over kernels).
DEVICE_ACTIVITY = (pl.col("side") == "device") & (~lower_is("cat", "gpu_user_annotation")).fill_null(True)

#: The additive columns of the op table: every view sums them.
_SUMS = ["calls", "self_cpu", "cpu_total", "self_device", "device_total"]
_KEYS = ["name", "user_annotation", "input_dims"]

GROUP_SCHEMA = pl.Schema(
    {
        "name": pl.String(),
        "user_annotation": pl.Boolean(),
        "input_dims": pl.String(),
        **{c: pl.Int64() for c in _SUMS},
    }
)

OP_SCHEMA = pl.Schema(
    {
        "name": pl.String(),
        "user_annotation": pl.Boolean(),
        "input_dims": pl.String(),
        "calls": pl.Int64(),
        "self_cpu": pl.Int64(),
        "self_cpu_pct": pl.Float64(),
        "cpu_total": pl.Int64(),
        "cpu_total_pct": pl.Float64(),
        "cpu_avg": pl.Int64(),
        "self_device": pl.Int64(),
        "self_device_pct": pl.Float64(),
        "device_total": pl.Int64(),
        "device_avg": pl.Int64(),
    }
)

KERNEL_SCHEMA = pl.Schema(
    {
        "name": pl.String(),
        "calls": pl.Int64(),
        "total": pl.Int64(),
        "mean": pl.Int64(),
        "min": pl.Int64(),
        "max": pl.Int64(),
        "share": pl.Float64(),
        "streams": pl.List(pl.String()),
    }
)


def device_name(categories: pl.DataFrame) -> str:
    """The device the table's device columns are named for (from the (lane, category) frame): NEURON, MTIA, XPU, CUDA (also ROCm), or "none" for CPU-only traces."""
    return str(device_names(categories).item())


def device_names(categories: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """device_name of the (lane, category) frame, as a one-row frame, or per key of its `by` columns (traces stacked): (by, device)."""
    lower = pl.col("category").str.to_lowercase()
    found = [pl.when(lower.is_in(marks).any()).then(pl.lit(name)) for name, marks in _DEVICE_CATEGORIES]
    device = pl.coalesce(*found, pl.lit("none")).alias("device")
    return categories.group_by(by, maintain_order=True).agg(device) if by else categories.select(device)


def op_name() -> pl.Expr:
    """The name torch's table shows for an event (null read as ""): every "ProfilerStep#..." becomes "ProfilerStep*"; a categorical stays one (the literal takes the column's type)."""
    name = pl.col("name").fill_null("")
    return pl.when(matches("name", "^ProfilerStep#").fill_null(False)).then(pl.lit("ProfilerStep*")).otherwise(name).alias("name")


def op_tree(host: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """torch's tree of the tree events (idx, pid, tid, ts, end, dur, name, cat, input_dims; a lazy frame in file order) as the op table reads it: nesting.walk's frame with `key` (the row's name), `user_annotation` and `cpu_op` (the category as the analyses read it) in place of name and cat.

    The three are computed before the walk's sort, which then moves a 4-byte code and two flags
    per event instead of the name's code and the category's text, and the tree keeps them so.
    """
    keyed = host.lazy().with_columns(
        key=op_name(), user_annotation=lower_is("cat", "user_annotation").fill_null(False), cpu_op=lower_is("cat", "cpu_op").fill_null(False)
    )
    return walk(keyed.drop("name", "cat"))


def launching_ops(nest: pl.DataFrame, calls: pl.DataFrame) -> pl.Series:
    """For runtime calls (idx, pid, tid, ts): the idx of the innermost `cpu_op` of the tree `nest` open on the call's thread when it starts, or null."""
    # the tree's rows are in walking order, and so are those of any subset of them: no sort again
    first = pl.col("thread") != pl.col("thread").shift(1).fill_null(-1)
    ops = nest.lazy().filter("cpu_op").select("idx", "pid", "tid", "ts", "end", first=first).collect(engine="in-memory")  # copies only these columns
    return lookup(ops["idx"], innermost_open(ops, calls.select("pid", "tid", t="ts"))).alias("op_idx")


def attribution(activities: pl.DataFrame, links: pl.DataFrame, nest: pl.DataFrame, calls: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """One row per device activity (idx, dur and the `by` columns): (by, idx, dur, call_idx, op_idx), its runtime call (links) and launching op (null when none launched it)."""
    linked = activities.select(*by, "idx", "dur").join(links.select(idx="exec_idx", call_idx="call_idx"), on="idx", how="left", maintain_order="left")
    callers = calls.join(linked.select(idx="call_idx").unique(), on="idx", how="semi")
    by_call = callers.select("idx").with_columns(op_idx=launching_ops(nest, callers))
    return linked.join(by_call.rename({"idx": "call_idx"}), on="call_idx", how="left", maintain_order="left").select(*by, "idx", "dur", "call_idx", "op_idx")


def op_rows(nest: pl.DataFrame, attributed: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Per event of the tree `nest` still counted after folding: its `by` columns, key, user_annotation, input_dims, dur, self_cpu, self_device, device_total (ns).

    Each figure is made by a function of its own, so what it needs on the way is freed before the next one starts.
    """
    folded, keeper = folding(nest)
    self_device = _self_device(nest, attributed, folded, keeper)
    self_cpu = _self_cpu(nest, folded, keeper)
    del keeper
    rows = nest.select(*by, "key", "user_annotation", "input_dims", "dur").with_columns(
        self_cpu=self_cpu, self_device=self_device, device_total=subtree_sums(nest, self_device)
    )
    return rows.filter(~folded) if folded.any() else rows  # with no row folded, the tree's columns are kept, not copied


def _self_device(nest: pl.DataFrame, attributed: pl.DataFrame, folded: pl.Series, keeper: pl.Series) -> pl.Series:
    """Per row of the tree: its own device time as torch counts it (the activities it launched), a kept event taking the deepest folded event's below it (torch assigns the child's kernels); 0 on folded rows."""
    n = nest.height
    own = attributed.drop_nulls("op_idx").group_by("op_idx").agg(pl.col("dur").sum())
    rows_of = nest.select("idx").with_row_index("pos").join(own.rename({"op_idx": "idx"}), on="idx")
    device = pl.zeros(n, dtype=pl.Int64, eager=True).scatter(rows_of["pos"], rows_of["dur"])
    if not folded.any():
        return device
    chain = pl.DataFrame({"keeper": keeper, "pos": pl.int_range(n, dtype=pl.Int64, eager=True)}).filter(folded).group_by("keeper").agg(pl.col("pos").max())
    moved = lookup(device, chain["pos"])  # read before the scatters below change `device` in place
    return device.scatter(chain["keeper"], moved).scatter(folded.arg_true(), 0)


def _self_cpu(nest: pl.DataFrame, folded: pl.Series, keeper: pl.Series) -> pl.Series:
    """Per row of the tree: its duration less the durations of the children counted (those of a folded child pass to its keeper)."""
    children = (
        pl.DataFrame({"keeper": keeper, "dur": nest["dur"]}).lazy()
        .filter(~folded & keeper.is_not_null())  # one copy of the rows counted, not one per condition
        .group_by("keeper").agg(pl.col("dur").sum())
        .collect(engine="in-memory")
    )  # fmt: skip
    return nest["dur"] - pl.zeros(nest.height, dtype=pl.Int64, eager=True).scatter(children["keeper"], children["dur"])


def folding(nest: pl.DataFrame) -> tuple[pl.Series, pl.Series]:
    """torch's _remove_dup_nodes over the tree `nest`: per position, whether it is folded (its parent has its name and no other child) and its keeper (its nearest ancestor still counted, or null)."""
    parent = nest["parent"]
    children = pl.DataFrame({"parent": parent}).drop_nulls().group_by("parent").len()
    only_child = pl.zeros(nest.height, dtype=pl.Boolean, eager=True).scatter(children.filter(pl.col("len") == 1)["parent"], True)
    key = nest["key"]
    folded = (lookup(only_child, parent) & (lookup(key, parent) == key)).fill_null(False)
    return folded, climb(parent, ~folded)


def op_groups(counted: pl.DataFrame, attributed: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Every view of the op table sums these rows: per (name, user_annotation, input_dims) of op_rows' `counted` rows, calls, self_cpu, cpu_total, self_device, device_total (ns), plus the unlinked device time row.

    Rows are keyed by the `by` columns of both frames too (traces stacked): each key gets its own unlinked row.
    """
    schema = pl.Schema({**{k: pl.Int64() for k in by}, **GROUP_SCHEMA})
    rows = (
        counted.lazy()
        .group_by(*by, name="key", user_annotation="user_annotation", input_dims="input_dims")
        .agg(
            calls=pl.len().cast(pl.Int64),
            self_cpu=pl.col("self_cpu").sum(),
            cpu_total=pl.col("dur").sum(),
            self_device=pl.col("self_device").sum(),
            device_total=pl.col("device_total").sum(),
        )
        .cast(schema)
        .collect(engine=grouped_on(counted.height))
    )
    unlinked = attributed.filter(pl.col("op_idx").is_null())
    if unlinked.height:
        extra = unlinked.group_by(by or pl.lit(0).alias("_one")).agg(calls=pl.len().cast(pl.Int64), self_device=pl.col("dur").sum()).select(
            *by, name=pl.lit(UNLINKED), user_annotation=pl.lit(False), input_dims=pl.lit(None, pl.String), calls="calls",
            self_cpu=pl.lit(0, pl.Int64), cpu_total=pl.lit(0, pl.Int64), self_device="self_device", device_total="self_device",
        )  # fmt: skip
        rows = pl.concat([rows, extra.cast(schema)])
    return rows.sort([*by, *_KEYS], nulls_last=False)


def op_table(groups: pl.DataFrame, self_cpu_ns: int, device_ns: int, view: OpView = OpView()) -> pl.DataFrame:
    """key_averages() as a frame, from op_groups' rows: one row per (name, user annotation) — and input shape when the view asks — sorted and cut as the view says.

    Percent columns are 0–100 of the footers: self_cpu_pct and cpu_total_pct of the self CPU
    total, self_device_pct of the device time total. Ties sort by name, user annotation, shape.
    """
    footers = groups.lazy().with_columns(self_cpu_ns=pl.lit(self_cpu_ns, pl.Int64), device_ns=pl.lit(device_ns, pl.Int64))
    return op_tables(footers, view).collect(engine="in-memory")


def op_tables(groups: pl.LazyFrame, view: OpView = OpView(), by: tuple[str, ...] = ()) -> pl.LazyFrame:
    """op_table as one query, of one trace or of many at once: op_groups' rows keyed by the `by` columns, each row with its key's footers (`self_cpu_ns`, `device_ns`).

    The result is keyed by `by` too, each key's rows in its own table's order: rendering a
    directory of small traces makes all their tables with one query, not one per trace.
    """
    keys = _KEYS if view.group_by_shape else _KEYS[:2]
    footers = [pl.col("self_cpu_ns").first(), pl.col("device_ns").first()]
    rows = groups if view.group_by_shape else groups.group_by([*by, *keys]).agg(pl.col(_SUMS).sum(), *footers)
    schema = pl.Schema({**{k: pl.Int64() for k in by}, **{k: v for k, v in OP_SCHEMA.items() if k in keys or k not in _KEYS}})
    table = (  # one query: rendering many small traces runs it once
        rows.with_columns(
            cpu_avg=pl.col("cpu_total") // pl.col("calls"),
            device_avg=pl.col("device_total") // pl.col("calls"),
            self_cpu_pct=_pct(pl.col("self_cpu"), pl.col("self_cpu_ns")),
            cpu_total_pct=_pct(pl.col("cpu_total"), pl.col("self_cpu_ns")),
            self_device_pct=_pct(pl.col("self_device"), pl.col("device_ns")),
        )
        .select(list(schema))
        .cast(schema)
        .sort([*by, SORT_KEYS[view.sort_by], *keys], descending=[*[False] * len(by), True, *[False] * len(keys)], nulls_last=False)
    )
    if not view.top:
        return table
    return table.filter(pl.int_range(pl.len()).over(by) < view.top) if by else table.head(view.top)


def _pct(ns: pl.Expr, total: pl.Expr) -> pl.Expr:
    """`ns` as a percent (0–100) of `total`; 0 where the total is 0.

    Times the total's reciprocal: the percents published before were divided by a number, which
    Polars does that way (at times one bit apart from a division), and they stay the same.
    """
    return pl.when(total != 0).then(ns * 100.0 * (1.0 / total)).otherwise(pl.lit(0.0))


def _share(ns: pl.Expr, total: pl.Expr, by: tuple[str, ...]) -> pl.Expr:
    """`ns` as a share (0–1) of `total` (a column, not a constant), per key of the `by` columns, as one key's frame divided by its total as a number; 0 where the total is 0.

    Polars divides a column by a number (or by a constant column) as a true division when it has
    one row, and as a product with the number's reciprocal when it has more (at times one bit
    apart); a key's rows are divided the way its own frame is, column by column.
    """
    alone = pl.len().over(by) == 1
    return pl.when(total == 0).then(pl.lit(0.0)).when(alone).then(ns / total).otherwise(ns * (1.0 / total))


def self_cpu_total(nest: pl.DataFrame) -> int:
    """Self CPU time over every op, ns (the footer of torch's table): the self times of a tree add up to its roots' durations."""
    return int(nest.select(pl.col("dur").filter(pl.col("parent").is_null()).sum()).item())


def kernels(activities: pl.DataFrame, device_ns: int | str, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """The rows torch prints for device activities (idx, name, tid, dur): per name, calls, total, mean, min, max (ns), share of the device time total and the streams (tids) it ran on.

    `device_ns` is the total, or the column of `activities` holding it per key of the `by` columns, whose rows are then keyed by them too (traces stacked).
    """
    keyed = isinstance(device_ns, str)
    if keyed:
        share = _share(pl.col("total"), pl.col("device_ns"), by)
    else:
        share = pl.col("total") / device_ns if device_ns else pl.lit(0.0)
    return (
        activities.group_by(*by, name=pl.col("name").fill_null(""))
        .agg(
            calls=pl.len().cast(pl.Int64),
            total=pl.col("dur").sum(),
            min=pl.col("dur").min(),
            max=pl.col("dur").max(),
            streams=pl.col("tid").fill_null("?").unique().sort(),
            *([pl.col("device_ns").first()] if keyed else []),
        )
        .with_columns(mean=pl.col("total") // pl.col("calls"), share=share)
        .select(*by, *KERNEL_SCHEMA)
        .cast(dict(KERNEL_SCHEMA))  # type: ignore[arg-type]
        .sort([*by, "total", "name"], descending=[*[False] * len(by), True, False])
    )
