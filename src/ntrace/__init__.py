"""ntrace: capture and analyze PyTorch profiles of AWS Trainium (Neuron) workloads, as Polars frames.

The public API is re-exported here; submodules are implementation.
"""

from ntrace.analysis import Analysis, analyze
from ntrace.artifacts import Session, find_sessions
from ntrace.capture import ProfileSchedule, capture_info, capture_study
from ntrace.decode import decode_trace
from ntrace.discover import find_traces
from ntrace.errors import ArtifactError, CaptureError, InputError, NtraceError, OutputError, TraceFormatError
from ntrace.explorer import load_explorer
from ntrace.lanes import LANES, classify, lane_table
from ntrace.neff import Neff, read_neff
from ntrace.perfetto import export_perfetto, perfetto_json
from ntrace.profile import Profile, load
from ntrace.render.html import write_report

__all__ = [
    "LANES",
    "Analysis",
    "ArtifactError",
    "CaptureError",
    "InputError",
    "Neff",
    "NtraceError",
    "OutputError",
    "Profile",
    "ProfileSchedule",
    "Session",
    "TraceFormatError",
    "analyze",
    "capture_info",
    "capture_study",
    "classify",
    "decode_trace",
    "export_perfetto",
    "find_sessions",
    "find_traces",
    "lane_table",
    "load",
    "load_explorer",
    "perfetto_json",
    "read_neff",
    "write_report",
]
