"""Checks on a decoded events frame that turn suspicious content into warnings: unknown `ph` values, duplicated complete events.

Decisions (documented in the README):
- an event whose `ph` the Chrome trace format does not define is kept (it is not analyzed:
  only "X" events are timed) and counted in a warning;
- an exact duplicate of a complete event (every field equal, a writer that flushed twice) is
  dropped with a warning, since it would count its duration twice; duplicate metadata ("M")
  events are normal in Kineto traces and left alone;
- flow starts without ends and the reverse are normal at the edges of a capture window
  (most real traces have them) and are not warned about: links.py pairs what it can.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

#: Every phase the Chrome Trace Event Format defines (including deprecated async/flow forms).
KNOWN_PH: frozenset[str] = frozenset("BEXiICbneSTpFstfPONDMRVvc()")


def checked_events(events: pl.DataFrame, path: Path, warnings: list[str]) -> pl.DataFrame:
    """`events` without duplicated complete events; appends a warning for each kind of oddity found."""
    unknown = events.filter(~pl.col("ph").is_in(list(KNOWN_PH)))["ph"]
    if len(unknown):
        shown = ", ".join(repr(p) for p in unknown.cast(pl.String).unique().sort().head(5).to_list())
        warnings.append(f"{path}: {len(unknown)} events have a ph the trace format does not define ({shown}); they were not analyzed")
    # sorted hashes of the complete events' times: only events sharing one are compared field by field
    # (no hash table, no copy of the text columns; two hashes instead of four keep the peak lower)
    complete = pl.col("ph") == "X"
    slot = pl.col("ts").hash(1).xor(pl.col("dur").hash(2))
    hashes = events.select(slot.filter(complete).sort()).to_series()
    shared = hashes.filter(hashes == hashes.shift(1))
    if shared.is_empty():
        return events  # the common case
    fields = [c for c in events.columns if c != "idx"]
    candidates = events.filter(complete & slot.is_in(shared.unique().implode()))
    copies = candidates.filter(~pl.struct(fields).is_first_distinct())["idx"]
    if copies.is_empty():
        return events
    warnings.append(f"{path}: {len(copies)} complete events are exact duplicates of earlier ones; the copies were dropped")
    return events.filter(~pl.col("idx").is_in(copies.implode()))
