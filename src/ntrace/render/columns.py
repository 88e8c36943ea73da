"""The one vocabulary of column names every output uses: JSON keys and CSV headers are these names, text and Markdown headers are `header(name)`.

Unit rule (docs/formats.md, "Column names"): a name ending `_us` is microseconds, `_pct` a percent
0–100, `share` or `_share` a fraction 0–1, `_bytes` bytes, `_bytes_per_s` bytes per second;
anything else is a count, a number without unit, or text. A nested JSON value `{"a": {"b": v}}`
is the flat column `a.b` in CSV (`busy_us.framework`, `self_device_us.base`), where `b` is a
data value (a lane, an engine, a side of a diff), never a name of this table.
"""

from __future__ import annotations

#: Canonical column name → what it holds. A name here means one thing in every table that has it.
VOCABULARY: dict[str, str] = {
    # which row
    "trace": "the trace file of the row",
    "traces": "the traces of the row: how many (compare), or which files (artifacts)",
    "variant": "the variant a capture manifest names (else the first directory under the analyzed path)",
    "name": "the name of the row's op, kernel, step, variant or collective",
    "path": "a file or directory the row is about",
    "lane": "one of the five lanes (framework, device, runtime_api, hardware, other)",
    "track": "where events are drawn: a host thread, a stream or a device",
    "device": "a device track, `device <pid>`",
    "backend": "the device type the trace ran on: CUDA, PrivateUse1 (Neuron), MTIA, … or none",
    "kind": "what sort of row: a gap kind, a finding kind, an artifact file kind",
    "step": "a profiler step number (ProfilerStep#N)",
    "rank": "a distributed rank",
    "rule": "the rule that decided the row: a pairing, a rank number or a recommendation",
    "figure": "the per-rank figure a statistic is about",
    "engine": "a NeuronCore engine (tensor, vector, scalar, gpsimd, sync)",
    "core": "a NeuronCore index (null: all cores)",
    "queue_type": "a DMA queue type",
    "opcode": "an engine instruction's opcode",
    "operation": "a collective operation",
    "algorithm": "a collective algorithm",
    "type": "a throttling type",
    "op": "the op that launched the row's work",
    "neff": "a NEFF (compiled graph) file or name",
    "ntff": "an NTFF (device trace) file",
    "neffs": "how many distinct NEFFs",
    "dir": "a Neuron profile session's directory",
    "instance": "the instance id a session directory names",
    "pid": "the process id a session directory names",
    "timestamp": "the timestamp a session directory names",
    "file": "the NEFF file a device profile names",
    "schema_version": "the schema version a device profile declares",
    "index": "an execution's position in its profile",
    "session_number": "the session number an NTFF's name encodes",
    "instid": "the instance number an NTFF's name encodes",
    "vnc": "the virtual NeuronCore an NTFF's name encodes",
    "exec": "the execution number an NTFF's name encodes",
    "scheme": "which NTFF naming scheme the name follows",
    "status_device": "a diff row's verdict on self device time: added, removed, slower, faster, unchanged",
    "status_cpu": "a diff row's verdict on self CPU time",
    "user_annotation": "whether an op row is a record_function or ProfilerStep range, not an op",
    "input_dims": "the op's input shapes (--group-by-shape)",
    "streams": "the streams a kernel ran on",
    "subject": "what a finding is about",
    "summary": "a finding in one sentence",
    "message": "a recommendation in one sentence",
    "evidence": "the numbers a recommendation rests on",
    "threshold": "the value a recommendation's rule compares against",
    "recommendations": "the rules of a profile's recommendations",
    "bound": "compute or memory: the device verdict",
    "valid": "whether a NEFF's header and payload are sound",
    "problem": "why a NEFF is not valid",
    "reason": "why a file is unpaired",
    "note": "why a file is invalid or unpaired",
    "paired_with": "the files a NEFF or NTFF pairs with",
    "hash": "the hash a file's name or header gives",
    "uuid": "a NEFF header's uuid",
    "neff_version": "a NEFF header's format version",
    "build_version": "a NEFF header's build version",
    "members": "how many files a NEFF's tarball holds",
    "subgraphs": "a NEFF's subgraph directories",
    "lnc_size": "a NEFF header's logical NeuronCore size",
    "base": "a diff's BASE side",
    "test": "a diff's TEST side",
    "outliers": "ranks (or collectives) more than the rule's distance from the median",
    # counts
    "events": "how many complete events",
    "calls": "how many calls",
    "count": "how many gaps, delays or collectives",
    "gaps": "how many idle stretches on a track",
    "steps": "how many profiler steps",
    "executions": "how many executions of a NEFF",
    "instructions": "how many engine instructions",
    "packets": "how many DMA packets",
    "small_packets": "how many DMA packets under the small-packet size",
    "instances": "how many matched instances of a collective",
    "times_last": "how many times a rank arrived last at a collective",
    "device_profiles": "how many processed device profiles",
    "device_op_calls": "calls of the ops that carry self device time",
    "size": "a file's size in bytes",
    "memory": "the allocator records' figures (profile_memory=True), null without any",
    "device_type": "torch's device type number of an allocator record (0 CPU, 1 CUDA, 20 PrivateUse1, …)",
    "device_id": "the device index of an allocator record",
    "records": "how many allocator records",
    "allocs": "how many allocations",
    "frees": "how many frees",
    "allocated_bytes": "bytes allocated",
    "freed_bytes": "bytes freed",
    "peak_allocated_bytes": "the most bytes allocated at once",
    "peak_us": "when the allocation peak was reached",
    "peak_reserved_bytes": "the most bytes the allocator reserved at once",
    "cpu_mem_bytes": "torch's CPU Mem: bytes the op and its children allocated on the CPU, less what they freed",
    "self_cpu_mem_bytes": "torch's Self CPU Mem: the op's CPU Mem less its children's",
    "device_mem_bytes": "torch's device Mem: as CPU Mem, on the device",
    "self_device_mem_bytes": "torch's Self device Mem: as Self CPU Mem, on the device",
    "bytes": "bytes a DMA queue type moved",
    "categories": "events per Kineto category of a lane",
    "flops": "FLOPs by kind: model, hardware, transpose",
    "dma_bytes": "bytes moved by DMA",
    "hbm_bytes": "HBM bytes read and written",
    "data_size": "a NEFF header's payload size in bytes",
    "hardware_flops": "FLOPs the hardware executed",
    "model_flops": "FLOPs the model needs",
    "min": "smallest value over ranks",
    "median": "median value over ranks",
    "max": "largest value over ranks",
    "value": "an outlier's value",
    "mad": "median absolute deviation over ranks",
    "speedup": "the baseline's device time (or median step) over the row's",
    "arithmetic_intensity": "FLOPs per HBM byte",
    "peak_flops_bandwidth_ratio": "peak FLOP/s over peak HBM bytes per second",
    "peak_flops": "peak FLOP/s of one tensor engine",
    # times (µs)
    "window_us": "first start to last end over the complete events",
    "start_us": "a start",
    "dur_us": "a duration",
    "ts_us": "an event's start",
    "total_us": "Σ durations",
    "busy_us": "length of the union of the intervals",
    "idle_us": "span − busy (compare: Σ hardware idle)",
    "span_us": "first start to last end",
    "host_busy_us": "busy time of a host lane inside a step's CPU window",
    "mean_us": "total // calls",
    "min_us": "the shortest",
    "max_us": "the longest",
    "p50_us": "nearest-rank median",
    "median_us": "median collective time",
    "p90_us": "nearest-rank 90th percentile",
    "self_cpu_us": "CPU time of an op less its children's",
    "cpu_total_us": "CPU time of an op with its children",
    "cpu_avg_us": "cpu_total // calls",
    "self_device_us": "device time of the activities an op launched itself",
    "device_total_us": "self device time with the children's",
    "device_avg_us": "device_total // calls",
    "device_time_us": "Σ device activities (kernels, copies, memsets)",
    "compute_us": "Σ hardware executions",
    "median_step_us": "the median profiler step",
    "time_us": "time a finding or collective costs",
    "instruction_us": "Σ engine instruction durations",
    "active_us": "union of the engine's (or queue's) active intervals",
    "duration_us": "Σ durations of throttling events",
    "trigger_delay_us": "mean collective trigger delay",
    "dispatch_per_execution_us": "host dispatch time per NEFF execution",
    "device_per_execution_us": "device time per NEFF execution",
    "step_p50_us": "median profiler step over a rank's steps",
    "step_p90_us": "90th percentile profiler step",
    "comm_us": "union of a rank's collectives",
    "exposed_comm_us": "communication not overlapped by compute",
    "launch_latency_p50_us": "median launch latency",
    "offset_us": "a rank's clock offset from rank 0 (alignment rule)",
    "skew_p50_us": "median arrival skew of a collective",
    "skew_max_us": "largest arrival skew",
    "transfer_p50_us": "median transfer time of a collective",
    "wait_caused_us": "waiting a late rank caused the others",
    # percents and shares
    "share": "a fraction 0–1: of the window (lanes), of device time (kernels), of the hardware spans (hardware idle)",
    "idle_share": "idle / span of a track",
    "small_share": "small packets / packets",
    "allowed_share": "utilisation a throttle still allowed",
    "self_cpu_pct": "self CPU over the self CPU total",
    "cpu_total_pct": "CPU total over the self CPU total",
    "self_device_pct": "self device over the device total",
    "self_cpu_change_pct": "a diff's change of self CPU",
    "self_device_change_pct": "a diff's change of self device time",
    "device_change_pct": "a diff's change of total device time",
    "threshold_pct": "a diff's --threshold",
    "overlap_pct": "communication overlapped by compute",
    "last_pct": "times last over matched instances",
    "active_pct": "active over the execution span",
    "mfu_pct": "model FLOPs utilisation",
    "hfu_pct": "hardware FLOPs utilisation",
    "mbu_pct": "memory bandwidth utilisation",
    # rates
    "bandwidth_bytes_per_s": "bytes over active time",
    "algorithm_bandwidth_bytes_per_s": "collective algorithm bandwidth",
    "bus_bandwidth_bytes_per_s": "collective bus bandwidth",
}

#: The tables `--format csv --table NAME` writes, per command; the first is the default.
CSV_TABLES: dict[str, tuple[str, ...]] = {
    "analyze": ("summary", "lanes", "tracks", "gaps", "steps", "step_devices", "ops", "kernels", "findings", "memory_devices", "memory_ops"),
    "diff": ("ops", "lanes", "gaps"),
    "ranks": ("ranks", "stats", "collectives", "stragglers"),
}

#: Unit suffixes and what a header shows in their place.
_UNITS = (("_bytes_per_s", ""), ("_us", ""), ("_pct", " %"))


def base_name(column: str) -> str:
    """The vocabulary name of a column: `busy_us.framework` → `busy_us`."""
    return column.partition(".")[0]


def header(column: str) -> str:
    """A column name for people: the unit suffix dropped (`_pct` as " %"), underscores as spaces, a `.qualifier` first (`self_device_us.base` → "base self device")."""
    name, _, qualifier = column.partition(".")
    for suffix, mark in _UNITS:
        if name.endswith(suffix):
            name = name.removesuffix(suffix) + mark
            break
    words = name.replace("_", " ")
    return f"{qualifier.replace('_', ' ')} {words}" if qualifier else words


def headers(*columns: str) -> list[str]:
    """The headers of a table's columns, in order."""
    return [header(c) for c in columns]
