"""The human renderer: aligned tables of lanes, hardware tracks, gaps and steps, times as torch prints them."""

from __future__ import annotations

from ntrace.analysis import Analysis
from ntrace.lanes import LANES
from ntrace.profile import Profile
from ntrace.render.artifacts import session_text, summary_text
from ntrace.render.ops import findings_text, ops_text
from ntrace.render.units import fmt_pct, fmt_time, table


def profile_text(profile: Profile) -> str:
    """One profile's section: header, lanes, hardware tracks, dispatch gaps, steps."""
    title = f"== {profile.variant}: {profile.path}" if profile.variant else f"== {profile.path}"
    out = [title, f"{profile.complete_count} complete events over a {fmt_time(profile.window_ns)} window", ""]
    out.append("Lanes")
    out.append(
        table(
            ["lane", "events", "total", "busy", "% window"],
            [[r["lane"], str(r["events"]), fmt_time(r["total"]), fmt_time(r["busy"]), fmt_pct(r["share"])] for r in profile.lanes.iter_rows(named=True)],
        )
    )
    hw = profile.hardware_tracks
    if hw.height:
        out += ["", "Hardware tracks"]
        out.append(
            table(
                ["track", "events", "busy", "idle", "span", "gaps"],
                [[r["track"], str(r["events"]), fmt_time(r["busy"]), fmt_time(r["idle"]), fmt_time(r["span"]), str(r["gaps"])] for r in hw.iter_rows(named=True)],
            )
        )
    out += ["", "Dispatch gaps"]
    out.append(
        table(
            ["gap", "count", "total", "p50", "p90", "max", "% window"],
            [
                [r["kind"], str(r["count"]), fmt_time(r["total"]), fmt_time(r["p50"]), fmt_time(r["p90"]), fmt_time(r["max"]), fmt_pct(r["share"])]
                for r in profile.gaps.iter_rows(named=True)
            ],
        )
    )
    if profile.steps.height:
        out += ["", "Profiler steps (busy per lane inside each step)"]
        out.append(
            table(
                ["step", "dur", *LANES, "hw idle"],
                [
                    [r["name"], fmt_time(r["dur"]), *(fmt_time(r[f"{lane}_busy"]) for lane in LANES), fmt_time(r["hardware_idle"])]
                    for r in profile.steps.iter_rows(named=True)
                ],
            )
        )
    if profile.ops.height:
        out += ["", "Operators (torch key_averages() columns, computed from the trace)", ops_text(profile), "", findings_text(profile)]
    if profile.artifacts and profile.artifacts.has_artifacts:
        out += ["", summary_text(profile.artifacts)]
    return "\n".join(out)


def render(analysis: Analysis) -> str:
    """Every profile's section, then the warnings."""
    parts = [profile_text(p) for p in analysis.profiles]
    parts += [f"{session_text(s)}\n(no framework trace in this session)" for s in analysis.artifacts]
    warnings = analysis.all_warnings
    if warnings:
        parts.append("Warnings\n" + "\n".join(f"  - {w}" for w in warnings))
    return "\n\n".join(parts) + "\n"
