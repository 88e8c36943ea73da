"""Torch's op tree over host events, as whole-column operations: each event's parent, depth and subtree by torch's own stack rule, partial overlaps included.

torch (profiler_util.EventList._populate_cpu_children) walks each thread's events in (start,
longer first, file order) order with a stack, popping every entry the new event does not fit
inside (it starts at or after the entry's end, or ends after it). Walked that way, an event's
parent is the nearest earlier event on its thread whose end reaches it: end ≥ its end, or, for
a zero-length event, end > its start. (Every event in between ends before that, so it is
neither still on the stack nor a container; and that earlier event was never popped, as
nothing in between ends after it.) So a span that starts inside an op and outlives it becomes a
child of the innermost span holding it whole, as in torch. And an event's descendants are the
events after it in that order up to its last descendant: a contiguous run.

"Nearest earlier position whose value reaches a threshold" is computed for all positions at
once by pointer jumping (`previous_reaching`): each position points at a candidate and, while
the candidate falls short, jumps to the candidate's own candidate, skipping only values that
fall short too. The loops run over O(log n) rounds (or over tree depth), never over events.

Inside the loops, positions are looked up by indexing (`lookup`), and filtered, compared
and added as Series: those run directly, where `gather`, `fill_null` or `is_not_null` each
build a one-expression query, whose fixed cost is most of a small trace's analysis.
"""

from __future__ import annotations

import polars as pl

from ntrace.analyses.totals import thread_key
from ntrace.exprs import lookup, nulls
from ntrace.lanes import lower_is

#: The complete events that run on host threads and take part in nesting (the profiler's own "Trace" span excluded).
HOST_EVENT = (pl.col("side") == "host") & (~lower_is("cat", "trace")).fill_null(True)


def tree_order(events: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """`events` (idx, pid, tid, ts, end, …) in torch's walking order: by thread, start, end descending, file order; with `thread` (an integer per thread) and `first` (the thread's first event).

    A lazy frame must give its events in file order (as Profile.complete_rows does): selected and
    sorted in one query, the selection is freed as soon as it is sorted.
    """
    if isinstance(events, pl.DataFrame) and not events["idx"].is_sorted():  # instant on the idx-sorted frames the profile selects
        events = events.sort("idx")
    thread = thread_key(pl.col("pid").fill_null("?"), pl.col("tid").fill_null("?"))
    # in file order, a stable sort on the other keys breaks their ties by file order: three sort keys, not four
    ordered = events.lazy().with_columns(thread).sort(["thread", "ts", "end"], descending=[False, False, True], maintain_order=True)
    return ordered.with_columns(first=pl.col("thread") != pl.col("thread").shift(1).fill_null(-1)).collect(engine="in-memory")


def previous_reaching(values: pl.Series, thresholds: pl.Series, first: pl.Series) -> pl.Series:
    """Per position i: the nearest earlier position j of its run (`first` marks where runs start) with values[j] ≥ thresholds[i], or null.

    Needs every jump to skip only values below the threshold of the position jumping, which holds
    when thresholds[i] − values[i] ∈ {0, 1} (integers), or when thresholds never decrease along a run.
    """
    n = values.len()
    positions = pl.int_range(n, dtype=pl.Int64, eager=True)
    # a position that no earlier value of its run reaches has no answer: settled now, not after a jump a round
    # back to its run's start (every event of a flat trace is such a root); the running max is per run, or over
    # all when there is one run (a max over more positions only settles fewer: the jumps still stop at run starts)
    if first.sum() <= 1:
        highest = values.cum_max().shift(1)
    else:
        highest = pl.DataFrame({"value": values, "run": first.cum_sum()}).select(pl.col("value").cum_max().shift(1).over("run")).to_series()
    cand = (positions - 1).zip_with(~first & (highest >= thresholds).fill_null(False), nulls(n))
    # only the positions still short jump (one that reached its threshold keeps its candidate for
    # good), all at once from the previous round's candidates: most are settled in the first rounds;
    # a null candidate compares null, which filter drops
    active = positions.filter(lookup(values, cand) < thresholds)
    while active.len():
        jumped = lookup(cand, lookup(cand, active))
        cand = cand.scatter(active, jumped)
        active = active.filter(lookup(values, jumped) < lookup(thresholds, active))
    return cand.alias("previous")


def chain_end(step: pl.Series) -> pl.Series:
    """Per position: where following `step` (a position or null) from it ends, by pointer doubling (rounds: log of the longest chain)."""
    here = pl.int_range(step.len(), dtype=pl.Int64, eager=True)
    end = step.fill_null(here)
    while True:
        further = lookup(end, end)
        if further.equals(end):
            return end
        end = further


def depths(parent: pl.Series) -> pl.Series:
    """Per position: how many ancestors it has (parent: a position or null), by pointer doubling."""
    n = parent.len()
    # "no parent" points at an extra position n, of depth 0, whose own parent is itself: no nulls in the loop
    up = parent.fill_null(n).append(pl.Series([n], dtype=pl.Int64))
    depth = (up != n).cast(pl.Int64)
    while (up != n).any():
        depth = depth + lookup(depth, up)
        up = lookup(up, up)
    return depth.head(n).alias("depth")


def walk(events: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """torch's tree of the host events (idx, pid, tid, ts, end) as the analyses read it: one row per event in walking order with `parent` (the parent's row, or null), `last` (the row of its last descendant, itself when none) and the input columns.

    Rows are positions: an event's descendants are the rows after it up to `last`.
    """
    ordered = tree_order(events)
    end, ts = ordered["end"], ordered["ts"]
    reach = pl.select(pl.when(end > ts).then(end).otherwise(end + 1)).to_series()  # a zero-length event needs an end after its start
    parent = previous_reaching(end, reach, ordered["first"])
    n = ordered.height
    # the last child of each event (children come in walking order), followed down to a leaf: the last descendant
    kids = pl.DataFrame({"parent": parent, "pos": pl.int_range(n, dtype=pl.Int64, eager=True)}).drop_nulls("parent").group_by("parent").agg(pl.col("pos").max())
    last_child = nulls(n).scatter(kids["parent"], kids["pos"])
    return ordered.with_columns(parent=parent, last=chain_end(last_child))


def related(walked: pl.DataFrame) -> pl.DataFrame:
    """A `walk` frame (and any columns added to it) with what a reader of the tree looks for: `pos` (the row) before `parent`, then `parent_idx` (the parent by idx) and `depth` (how many ancestors)."""
    parent = walked["parent"]
    added = walked.with_columns(pos=pl.int_range(walked.height, dtype=pl.Int64), parent_idx=lookup(walked["idx"], parent), depth=depths(parent))
    return added.select(c for name in walked.columns for c in (("pos", "parent", "parent_idx", "depth") if name == "parent" else (name,)))


def tree(events: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """torch's tree of the host events (idx, pid, tid, ts, end): one row per event in walking order with `pos`, `parent` (a pos or null), `parent_idx`, `depth`, `last` (the pos of its last descendant, itself when none) and the input columns (`walk`, `related`)."""
    return related(walk(events))


def subtree_sums(nest: pl.DataFrame, values: pl.Series) -> pl.Series:
    """Per row of a `walk` frame: the sum of `values` (one per row, in its order) over the event and all its descendants (its row to `last`)."""
    if values.is_empty():
        return values
    running = values.cum_sum()
    return lookup(running, nest["last"]) - running.shift(1, fill_value=0)


def climb(parent: pl.Series, stop: pl.Series) -> pl.Series:
    """Per position: the nearest strict ancestor where `stop` holds (or null), climbing all positions at once, a level per round."""
    anchor = parent
    while True:
        climbs = ~lookup(stop, anchor)  # null where there is no anchor: zip_with keeps the anchor there, and any() skips it
        if not climbs.any():
            return anchor.alias("anchor")
        anchor = lookup(parent, anchor).zip_with(climbs, anchor)


def innermost_open(ops: pl.DataFrame, at: pl.DataFrame) -> pl.Series:
    """For each instant of `at` (pid, tid, t): the row of `ops` (a `tree_order` frame of candidate events) of the innermost one open at t on that thread — ts ≤ t < end, the last in walking order — or null.

    The last candidate starting at or before t is found by an as-of join; from there the walk
    skips back along each candidate's nearest earlier end that is at least its own, so it only
    passes candidates that ended by t.
    """
    if ops.is_empty() or at.is_empty():
        return nulls(at.height)
    ends = ops["end"]
    previous = previous_reaching(ends, ends, ops["first"])
    # one integer per thread, coded over both frames at once so the codes match
    pairs = pl.concat([ops.select("pid", "tid"), at.select("pid", "tid")])
    codes = pairs.select(thread_key(pl.col("pid").fill_null("?"), pl.col("tid").fill_null("?")))["thread"]
    rows = pl.DataFrame({"thread": codes.head(ops.height), "ts": ops["ts"], "pos": pl.int_range(ops.height, dtype=pl.Int64, eager=True)})
    # ops come by thread, then start: each (thread, start)'s last row in walking order ends its run
    run_ends = (pl.col("thread") != pl.col("thread").shift(-1)) | (pl.col("ts") != pl.col("ts").shift(-1))
    last_start = rows.filter(run_ends.fill_null(True))
    # an as-of join by thread needs each thread's rows sorted by start, not the threads in any order: walking order has them so
    found = (
        pl.DataFrame({"thread": codes.tail(at.height), "t": at["t"]}).with_row_index("_q")
        .sort("thread", "t")
        .join_asof(last_start, left_on="t", right_on="ts", by="thread", strategy="backward", check_sortedness=False)
        .sort("_q")
    )
    cand, t = found["pos"].clone(), found["t"]
    active = pl.int_range(at.height, dtype=pl.Int64, eager=True).filter(lookup(ends, cand) <= t)  # only these move on; the others have their answer
    while active.len():
        stepped = lookup(previous, lookup(cand, active))
        cand = cand.scatter(active, stepped)
        active = active.filter(lookup(ends, stepped) <= lookup(t, active))
    return cand.alias("open")


