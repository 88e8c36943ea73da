"""Reference implementation ("oracle") of ntrace's figures, derived only from
docs/definitions.md, README.md's lane table and torch's own profiler source.

Call ``compute(path, group_by_shape=False)``; the helpers are exported for tests.
"""

from .reference import (
    CATEGORY_TABLE,
    DROPPED_TREE_NAMES,
    LANES,
    NAME_RULES,
    UNLINKED_ROW,
    Event,
    compact_json,
    compute,
    compute_from_events,
    cut_events,
    events_from_json_text,
    fold,
    freeze,
    gaps_of,
    input_dims_text,
    is_device_activity,
    is_tree_event,
    lane_of,
    launching_ops,
    link,
    load_trace_events,
    merge_intervals,
    name_text,
    nearest_rank,
    nest,
    parse_ns,
    read_events,
    row_name,
    span_busy_idle,
    stats,
    step_number,
    step_windows,
    steps_table,
    text_of,
    track_of,
    tree_order_key,
    union_length,
)

__all__ = [n for n in dir() if not n.startswith("_")]
