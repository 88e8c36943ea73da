"""ntrace: capture and analyze PyTorch profiles of AWS Trainium (Neuron) workloads, as Polars frames.

The public API is re-exported here (imported on first use); submodules are implementation.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ntrace.analysis import Analysis, analyze
    from ntrace.artifacts import Session, find_sessions
    from ntrace.capture import ProfileSchedule, capture_info, capture_study
    from ntrace.compare import compare_variants
    from ntrace.decode import decode_trace
    from ntrace.diff import Diff, diff_profiles
    from ntrace.discover import find_traces
    from ntrace.errors import ArtifactError, CaptureError, InputError, NtraceError, OutputError, TraceFormatError
    from ntrace.explorer import load_explorer
    from ntrace.findings import profile_findings
    from ntrace.lanes import LANES, classify, lane_table
    from ntrace.neff import Neff, read_neff
    from ntrace.ops import device_name, op_table
    from ntrace.parquet import convert_to_parquet, read_parquet, write_parquet
    from ntrace.output import atomic_open
    from ntrace.perfetto import export_perfetto, perfetto_json
    from ntrace.profile import Profile, load
    from ntrace.render.html import write_report

_SOURCES = {
    "Analysis": "ntrace.analysis",
    "ArtifactError": "ntrace.errors",
    "CaptureError": "ntrace.errors",
    "Diff": "ntrace.diff",
    "InputError": "ntrace.errors",
    "LANES": "ntrace.lanes",
    "Neff": "ntrace.neff",
    "NtraceError": "ntrace.errors",
    "OutputError": "ntrace.errors",
    "Profile": "ntrace.profile",
    "ProfileSchedule": "ntrace.capture",
    "Session": "ntrace.artifacts",
    "TraceFormatError": "ntrace.errors",
    "analyze": "ntrace.analysis",
    "atomic_open": "ntrace.output",
    "capture_info": "ntrace.capture",
    "capture_study": "ntrace.capture",
    "classify": "ntrace.lanes",
    "compare_variants": "ntrace.compare",
    "convert_to_parquet": "ntrace.parquet",
    "decode_trace": "ntrace.decode",
    "device_name": "ntrace.ops",
    "diff_profiles": "ntrace.diff",
    "export_perfetto": "ntrace.perfetto",
    "find_sessions": "ntrace.artifacts",
    "find_traces": "ntrace.discover",
    "lane_table": "ntrace.lanes",
    "load": "ntrace.profile",
    "load_explorer": "ntrace.explorer",
    "op_table": "ntrace.ops",
    "perfetto_json": "ntrace.perfetto",
    "profile_findings": "ntrace.findings",
    "read_neff": "ntrace.neff",
    "read_parquet": "ntrace.parquet",
    "write_parquet": "ntrace.parquet",
    "write_report": "ntrace.render.html",
}


def __getattr__(name: str) -> Any:
    """Import the module holding a public name on first use, so `import ntrace` stays light."""
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module 'ntrace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, imported or not."""
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "LANES",
    "Analysis",
    "ArtifactError",
    "CaptureError",
    "Diff",
    "InputError",
    "Neff",
    "NtraceError",
    "OutputError",
    "Profile",
    "ProfileSchedule",
    "Session",
    "TraceFormatError",
    "analyze",
    "atomic_open",
    "capture_info",
    "capture_study",
    "classify",
    "compare_variants",
    "convert_to_parquet",
    "decode_trace",
    "device_name",
    "diff_profiles",
    "export_perfetto",
    "find_sessions",
    "find_traces",
    "lane_table",
    "load",
    "load_explorer",
    "op_table",
    "perfetto_json",
    "profile_findings",
    "read_neff",
    "read_parquet",
    "write_parquet",
    "write_report",
]
