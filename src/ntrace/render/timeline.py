"""What the report's timeline embeds for one trace: one row per (track, nesting depth), exact events where the budget allows, a pyramid of merged blocks for every zoom, idle gaps and step markers.

The page's script redraws the visible range on every zoom from this data (assets/report.js):
exact events when few enough are in view, else the pyramid level whose resolution is finer than
a pixel, so a gap wider than a pixel is always drawn as a gap. The file stays bounded on big
traces: at most EXACT_BUDGET exact events (hardware rows first, then the smallest rows),
BLOCK_BUDGET pyramid blocks and GAP_BUDGET idle gaps per trace. Times are int ns from the trace's window start.
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

from ntrace.analyses.nesting import depths as ancestors, previous_reaching
from ntrace.exprs import fmt
from ntrace.lanes import LANES
from ntrace.summary import Summary, Timeline

#: Exact events embedded per trace (the rest are drawn from the pyramid only).
EXACT_BUDGET = 150_000
#: Merged blocks embedded per trace, over all pyramid levels.
BLOCK_BUDGET = 150_000
#: Hardware idle gaps marked per trace (the longest, when there are more).
GAP_BUDGET = 50_000
#: Pyramid level l merges gaps shorter than span / (LEVEL_BASE · 4^l) ns; at most LEVELS levels.
LEVEL_BASE = 1024
LEVELS = 10
#: A row with at most this many events needs no pyramid: its exact events are drawn at every zoom.
SMALL_ROW = 2000


def depths(events: pl.DataFrame) -> pl.DataFrame:
    """The events (lane, track, ts, end, …) with `depth`: the size of a stack per lane and track (popped while its top has ended) at the event's start, so one depth's events never overlap.

    A stack, not torch's tree (analyses.nesting): the tree places a span that outlives its
    container beside it, overlapping it, and a row of the drawing must not hold two overlapping
    bars. Walked in (start, longer first) order, what is left on the stack under an event is the
    nearest earlier event of its track that ends after it starts, and that one's own stack: so
    `previous_reaching` finds it for every event at once, and the depth is its number of ancestors.
    """
    ordered = events.sort(["lane", "track", "ts", "end"], descending=[False, False, False, True], maintain_order=True)
    first = ordered.select(pl.col("lane").ne_missing(pl.col("lane").shift(1)) | pl.col("track").ne_missing(pl.col("track").shift(1))).to_series()
    below = previous_reaching(ordered["end"] - 1, ordered["ts"], first)  # end − 1 ≥ ts: ends after the start
    return ordered.with_columns(depth=ancestors(below))


def _rows(events: pl.DataFrame) -> pl.DataFrame:
    """One row per (lane, track, depth) in lane order, with its index and event count."""
    order = {lane: i for i, lane in enumerate(LANES)}
    return (
        events.group_by("lane", "track", "depth").agg(n=pl.len())
        .with_columns(_o=pl.col("lane").replace_strict(order, default=len(LANES), return_dtype=pl.Int64))
        .sort("_o", "track", "depth").drop("_o").with_row_index("row")
    )  # fmt: skip


def _exact_rows(rows: pl.DataFrame, budget: int) -> set[int]:
    """The rows whose events are embedded exactly: hardware rows first, then the smallest, while the budget lasts."""
    chosen, used = set(), 0
    for row, n in rows.sort([pl.col("lane") != "hardware", "n", "row"]).select("row", "n").iter_rows():
        if used + n > budget:
            break
        chosen.add(row)
        used += n
    return chosen


def _deltas(values: pl.Series) -> list[int]:
    """Sorted ints as their first value and successive differences (shorter JSON)."""
    return values.diff().fill_null(values.head(1)).to_list() if values.len() else []


def _pyramid(events: pl.DataFrame, rows: pl.DataFrame, exact: set[int], span: int) -> dict[int, list[dict[str, Any]]]:
    """Per row with more than SMALL_ROW events: its levels, each merging the gaps shorter than the level's resolution `r` (starts as deltas, lengths, counts)."""
    big = rows.filter(pl.col("n") > SMALL_ROW)
    levels: dict[int, list[dict[str, Any]]] = {}
    if big.is_empty():
        return levels
    todo = events.join(big.select("row", "n"), on="row").sort("row", "ts")
    used = 0
    for level in range(LEVELS):
        r = max(1, -(-span // (LEVEL_BASE * 4**level)))
        blocks = (
            todo.with_columns(_new=((pl.col("ts") - pl.col("end").shift(1).over("row")) >= r).fill_null(True))
            .with_columns(_g=pl.col("_new").cum_sum().over("row"))
            .group_by("row", "_g", maintain_order=True)
            .agg(ts=pl.col("ts").first(), end=pl.col("end").max(), c=pl.len(), n=pl.col("n").first())
        )
        per_row = blocks.group_by("row").agg(b=pl.len(), n=pl.col("n").first())
        if used + blocks.height > BLOCK_BUDGET:
            break
        used += blocks.height
        for (row,), part in blocks.partition_by("row", as_dict=True, maintain_order=True).items():
            levels.setdefault(int(row), []).append({"r": r, "t": _deltas(part["ts"]), "e": (part["end"] - part["ts"]).to_list(), "c": part["c"].to_list()})
        # a row drawn exactly once its blocks are half its events, or whose blocks are its events, needs no finer level
        done = per_row.filter((pl.col("b") == pl.col("n")) | ((pl.col("b") * 2 >= pl.col("n")) & pl.col("row").is_in(list(exact))))["row"]
        todo = todo.filter(~pl.col("row").is_in(done.implode()))
        if todo.is_empty():
            break
    return levels


def _args() -> pl.Expr:
    """The hover's shared args line of each event: category, Input Dims and bytes, where present (few distinct values; the ids travel as numbers)."""
    parts = [fmt("cat {}", "cat"), fmt("Input Dims {}", "input_dims"), fmt("bytes {}", "bytes")]
    return pl.concat_str(parts, separator=" · ", ignore_nulls=True)


def _ids(part: pl.DataFrame) -> dict[str, list[int]]:
    """A row's correlation (`c`) and External id (`x`) per event, -1 where absent; a column none of its events has is left out."""
    return {key: part[col].fill_null(-1).to_list() for key, col in (("c", "correlation"), ("x", "external_id")) if part[col].null_count() < part.height}


def timeline_data(summary: Summary, timeline: Timeline, span: int) -> dict[str, Any]:
    """The timeline's embedded data for one trace; `span` (ns) is the shared time scale of the report."""
    t0 = summary.window[0]
    events = depths(timeline.events.with_columns(ts=pl.col("ts") - t0, end=pl.col("end") - t0, args=_args()))
    rows = _rows(events)
    events = events.join(rows.select("lane", "track", "depth", "row"), on=["lane", "track", "depth"])
    exact = _exact_rows(rows, EXACT_BUDGET)
    pyramid = _pyramid(events, rows, exact, max(span, 1))
    shown = events.filter(pl.col("row").is_in(list(exact))).sort("row", "ts")
    names = shown["name"].fill_null("").unique(maintain_order=True)
    args = shown["args"].fill_null("").unique(maintain_order=True)
    name_id = {n: i for i, n in enumerate(names.to_list())}
    arg_id = {a: i for i, a in enumerate(args.to_list())}
    by_row = {int(k[0]): part for k, part in shown.partition_by("row", as_dict=True, maintain_order=True).items()}
    out_rows = []
    for row, lane, track, depth, n in rows.select("row", "lane", "track", "depth", "n").iter_rows():
        part = by_row.get(row)
        ex = None
        if part is not None:
            ex = {
                "t": _deltas(part["ts"]), "d": part["dur"].to_list(),
                "k": [name_id[v] for v in part["name"].fill_null("").to_list()], "a": [arg_id[v] for v in part["args"].fill_null("").to_list()], **_ids(part),
            }  # fmt: skip
        out_rows.append({"lane": lane, "track": track, "depth": depth, "n": n, "ex": ex, "lv": pyramid.get(row, [])})
    hw_row = {tr: r for r, lane, tr, d in rows.select("row", "lane", "track", "depth").iter_rows() if lane == "hardware" and d == 0}
    idle = timeline.idle.with_columns(gap_start=pl.col("gap_start") - t0).sort("track", "gap_start")
    if idle.height > GAP_BUDGET:  # the longest gaps, still in time order
        idle = idle.sort("gap", descending=True).head(GAP_BUDGET).sort("track", "gap_start")
    gaps = {
        str(hw_row[str(tr)]): {"t": _deltas(part["gap_start"]), "d": part["gap"].to_list()}
        for (tr,), part in idle.partition_by("track", as_dict=True, maintain_order=True).items()
        if str(tr) in hw_row
    }
    steps = [[int(s - t0), int(e - t0), str(name)] for s, e, name in summary.steps.select("start", "end", "name").iter_rows()]
    return {
        "span": span, "window": summary.window_ns, "names": names.to_list(), "args": args.to_list(), "rows": out_rows,
        "gaps": gaps, "gaps_drawn": int(idle.height), "gaps_total": summary.idle_gaps.len(), "exact": int(shown.height), "events": int(events.height), "steps": steps,
    }  # fmt: skip


def timeline_json(summary: Summary, timeline: Timeline, span: int) -> str:
    """timeline_data as JSON safe inside a <script> element."""
    return orjson.dumps(timeline_data(summary, timeline, span)).decode().replace("</", "<\\/")
