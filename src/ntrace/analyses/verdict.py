"""The report's verdict: which of the device, kernel launches or the host bounds a trace, named in one line with the figures it rests on (docs/definitions.md §11).

Integer arithmetic only: the class follows from ns sums compared with whole-number thresholds,
so the oracle reaches the same class from the same integers.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ntrace.analyses.findings import MAX_DISPATCH_GAP
from ntrace.analyses.stats import nearest_rank
from ntrace.units import fmt_pct, fmt_time, plural

#: A device idle for less than this percentage of its span is the bottleneck itself (device-bound).
IDLE_BOUND_PCT = 25

KINDS = ("no-device", "device-bound", "launch-bound", "host-bound")


@dataclass(frozen=True)
class Verdict:
    """The class (one of KINDS), its line, and the figures behind it: Σ idle and Σ span of the hardware tracks, the idle gaps' count and p50, and the idle time in gaps longer than MAX_DISPATCH_GAP (ns)."""

    kind: str
    line: str
    idle: int
    span: int
    gaps: int
    p50: int
    long_idle: int


def verdict(tracks: pl.DataFrame, idle_gaps: pl.Series, kernels: pl.DataFrame) -> Verdict:
    """The verdict from a Summary's tracks (lane, idle, span), its hardware idle gaps (ns) and its kernels table (name, share; largest first)."""
    hw = tracks.filter(pl.col("lane") == "hardware")
    idle, span = int(hw["idle"].sum()), int(hw["span"].sum())
    gaps, p50 = idle_gaps.len(), nearest_rank(idle_gaps, 50)
    long_idle = int(idle_gaps.filter(idle_gaps > MAX_DISPATCH_GAP).sum() or 0)
    if span == 0:
        return Verdict("no-device", "no hardware execution in the trace: no-device (a host-only capture)", idle, span, gaps, p50, long_idle)
    share = fmt_pct(idle / span)
    in_gaps = f"in {plural(gaps, 'gap')} of p50 {fmt_time(p50)}"
    if idle * 100 < IDLE_BOUND_PCT * span:
        top = f"; largest device activity {kernels['name'][0]} ({fmt_pct(kernels['share'][0])} of device time)" if kernels.height else ""
        line = f"device busy {fmt_pct(1 - idle / span)} of its span, idle {share} {in_gaps}: device-bound{top}"
        return Verdict("device-bound", line, idle, span, gaps, p50, long_idle)
    if 2 * long_idle >= idle:
        line = f"device idle {share} of its span {in_gaps}, {fmt_pct(long_idle / idle)} of it in gaps over {fmt_time(MAX_DISPATCH_GAP)}: host-bound (the host is busy elsewhere between device work)"
        return Verdict("host-bound", line, idle, span, gaps, p50, long_idle)
    line = f"device idle {share} of its span {in_gaps} between executions: launch-bound (launch and dispatch overhead; fusion or graph capture removes it)"
    return Verdict("launch-bound", line, idle, span, gaps, p50, long_idle)
