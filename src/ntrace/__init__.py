"""ntrace: capture and analyze PyTorch profiles of AWS Trainium (Neuron) workloads, as Polars frames.

The public API is re-exported here; submodules are implementation.
"""

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
