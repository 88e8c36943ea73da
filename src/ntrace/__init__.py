"""ntrace: capture and analyze PyTorch profiles of AWS Trainium (Neuron) workloads — and CUDA, ROCm, MTIA and CPU ones — as Polars frames.

The public names are the keys of `_PUBLIC`, each imported from its module on first use (so
`import ntrace` stays light); everything else is implementation.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ntrace.analyses.opview import OpView
    from ntrace.analyses.part import Part
    from ntrace.capture.profiling import profiling, step
    from ntrace.capture.rmsnorm import capture_study
    from ntrace.errors import CaptureError, InputError, NtraceError, OutputError, TraceFormatError
    from ntrace.io.discover import find_traces
    from ntrace.lanes import lane_table
    from ntrace.neuron.artifacts import find_sessions
    from ntrace.neuron.neff import read_neff
    from ntrace.profile import Profile
    from ntrace.render.html import report
    from ntrace.render.perfetto import export_perfetto
    from ntrace.summary import Summary
    from ntrace.trace import Trace
    from ntrace.workflows.analyze import Analysis, analyze, load
    from ntrace.workflows.compare import compare
    from ntrace.workflows.convert import convert
    from ntrace.workflows.diff import diff
    from ntrace.workflows.ranks import RankAnalysis, ranks

#: The public API: name → the module that defines it.
_PUBLIC: dict[str, str] = {
    # one trace, every analysis on demand
    "load": "ntrace.workflows.analyze",
    "Profile": "ntrace.profile",
    "Trace": "ntrace.trace",
    "Summary": "ntrace.summary",
    "OpView": "ntrace.analyses.opview",
    "Part": "ntrace.analyses.part",
    # every trace under a path
    "analyze": "ntrace.workflows.analyze",
    "Analysis": "ntrace.workflows.analyze",
    "compare": "ntrace.workflows.compare",
    "diff": "ntrace.workflows.diff",
    "convert": "ntrace.workflows.convert",
    # many ranks of one job
    "ranks": "ntrace.workflows.ranks",
    "RankAnalysis": "ntrace.workflows.ranks",
    # outputs
    "report": "ntrace.render.html",
    "export_perfetto": "ntrace.render.perfetto",
    # finding things
    "find_traces": "ntrace.io.discover",
    "find_sessions": "ntrace.neuron.artifacts",
    "read_neff": "ntrace.neuron.neff",
    "lane_table": "ntrace.lanes",
    # capture
    "profiling": "ntrace.capture.profiling",
    "step": "ntrace.capture.profiling",
    "capture_study": "ntrace.capture.rmsnorm",
    # errors
    "NtraceError": "ntrace.errors",
    "InputError": "ntrace.errors",
    "TraceFormatError": "ntrace.errors",
    "CaptureError": "ntrace.errors",
    "OutputError": "ntrace.errors",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    """Import the module holding a public name on first use."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'ntrace' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only."""
    return list(__all__)
