"""The report verdict's class (docs/definitions.md §11) from the oracle's own figures, in plain integers."""

from __future__ import annotations

from typing import Any

#: docs/definitions.md §11: 25 % idle, gaps over 1 ms are long.
IDLE_BOUND_PCT = 25
LONG_GAP = 1_000_000


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """kind, idle, span, gaps, p50, long_idle for one ``compute`` result."""
    hw = result["hardware_idle"]
    gaps = [end - start for _, start, end in result["hardware_idle_gaps"]]
    idle, span = hw["idle"], hw["span"]
    long_idle = sum(g for g in gaps if g > LONG_GAP)
    if span == 0:
        kind = "no-device"
    elif idle * 100 < IDLE_BOUND_PCT * span:
        kind = "device-bound"
    elif 2 * long_idle >= idle:
        kind = "host-bound"
    else:
        kind = "launch-bound"
    return {"kind": kind, "idle": idle, "span": span, "gaps": len(gaps), "p50": hw["p50"], "long_idle": long_idle}
