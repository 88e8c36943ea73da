#!/usr/bin/env python3
"""Where one `ntrace analyze --format json` goes: import, decode + lane classification, each analysis stage, rendering.

    PYTHONPATH=src scripts/stages.py TRACE [--repeat 3]

Every Profile result is computed in turn on this one thread (`analyze` runs the op tree and the
lane totals on two threads on small traces, so the stages' sum is above its analysis time there),
each stage timed on its own: a stage's figure holds the queries of the results it needs that no
earlier stage computed. Wall and CPU seconds (CPU counts Polars' threads too), the best of
`--repeat` fresh profiles of one decoded trace; the import and decode figures are of the first.
Ratios between stages are what to read; absolute figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

T0 = time.perf_counter()
import ntrace  # noqa: E402
from ntrace.profile import Profile  # noqa: E402
from ntrace.render.json import analysis  # noqa: E402
from ntrace.workflows.analyze import Analysis  # noqa: E402

IMPORTED = time.perf_counter() - T0

#: (stage, the Profile results it computes), in the order `Profile.summary` needs them.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("lanes, tracks, idle", ("_spans", "window", "lanes", "categories", "_track_pass")),
    ("links", ("links",)),
    ("device activities, calls", ("calls", "activities", "executions")),
    ("nesting (op tree)", ("nesting",)),
    ("attribution (launching op)", ("attribution",)),
    ("ops (folded rows, groups)", ("_op_rows", "op_groups", "self_cpu_ns", "device_ns", "kernels")),
    ("collectives, communication", ("collectives", "communication")),
    ("gaps (launch delays)", ("launch_delays", "gaps")),
    ("steps", ("_windows", "steps", "_step_work", "neff_executions")),
    ("findings, warnings", ("findings", "analysis_warnings")),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    profile = ntrace.load(args.trace)
    decoded = time.perf_counter() - start
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.repeat):
        fresh = Profile(profile.trace)
        for stage, names in (*STAGES, ("render JSON", ())):
            wall, cpu = time.perf_counter(), time.process_time()
            if names:
                for name in names:
                    getattr(fresh, name)
            else:
                analysis(Analysis(Path(args.trace), ((fresh.summary(), None),)))
            took = (time.perf_counter() - wall, time.process_time() - cpu)
            best[stage] = min(best.get(stage, took), took)
    print(f"{args.trace}: {profile.events.height:,} events, {profile.complete_count:,} complete")
    print(f"{'stage':30s} {'wall s':>8s} {'cpu s':>8s}")
    print(f"{'import ntrace (+ Polars)':30s} {IMPORTED:8.3f}")
    print(f"{'decode + classify (load)':30s} {decoded:8.3f}")
    for stage, (wall, cpu) in best.items():
        print(f"{stage:30s} {wall:8.3f} {cpu:8.3f}")
    print(f"{'analysis + render, summed':30s} {sum(w for w, _ in best.values()):8.3f} {sum(c for _, c in best.values()):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
