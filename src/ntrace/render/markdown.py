"""The Markdown renderer: GitHub tables ready to paste into a pull request, times formatted as torch prints them."""

from __future__ import annotations

from typing import Sequence

import polars as pl

from ntrace.analyses.opview import OpView
from ntrace.errors import terminal_text
from ntrace.exprs import each_on_polars_thread, on_polars_thread
from ntrace.neuron.artifacts import Session
from ntrace.render.tables import (
    artifact_files_frame, compare_frame, compare_notes, diff_gaps_frame, diff_lanes_frame, diff_ops_frame, frame_cells, gaps_frame, hardware_tracks_frame,
    device_frame, device_ops_frame, header, memory_devices_frame, memory_ops_frame, rank_collectives_frame, rank_stats_frame, ranks_frame, stragglers_frame, kernels_frame, lanes_frame, op_tables_of, ops_frame, step_devices_frame, steps_frame, summary_frame, variant_names,
)
from ntrace.summary import Summary
from ntrace.units import fmt_time
from ntrace.workflows.analyze import Analysis
from ntrace.workflows.compare import Comparison
from ntrace.workflows.device import DeviceAnalysis, DeviceJoin
from ntrace.workflows.diff import Diff
from ntrace.workflows.ranks import ALIGNMENT_RULE, RankAnalysis

_ESCAPES = str.maketrans({"|": "\\|", "\n": " "})  # other control characters: escaped by terminal_text


def frame_table(frame: pl.DataFrame) -> str:
    """Any display frame as a GitHub Markdown table: text columns left-aligned, numbers right-aligned."""
    numeric = [t.is_numeric() for t in frame.dtypes]
    head = "| " + " | ".join(header(c).translate(_ESCAPES) for c in frame.columns) + " |"
    rule = "|" + "|".join("---:" if n else ":---" for n in numeric) + "|"
    columns = [values if n else [v.translate(_ESCAPES) for v in values] for values, n in zip(frame_cells(frame), numeric)]  # a number's text holds no | or newline
    body = ["| " + " | ".join(row) + " |" for row in zip(*columns)]
    return "\n".join([head, rule, *body])


def summary_markdown(profile: Summary, name: str, view: OpView, joined: DeviceJoin | None, ops: pl.DataFrame) -> str:
    """One trace's section: lanes, hardware tracks, dispatch gaps, steps, the op table in `view` (`ops`, made for every trace at once by op_tables_of)."""
    out = [f"### {name}".translate(_ESCAPES), "", f"{profile.events:,} complete events over a {fmt_time(profile.window_ns)} window.", ""]
    out += ["**Lanes**", "", frame_table(lanes_frame(profile)), ""]
    hw = hardware_tracks_frame(profile)
    if hw.height:
        out += ["**Hardware tracks**", "", frame_table(hw), ""]
    out += ["**Dispatch gaps**", "", frame_table(gaps_frame(profile)), ""]
    if profile.steps.height:
        out += ["**Profiler steps** (host busy per lane inside each step's CPU window)", "", frame_table(steps_frame(profile)), ""]
        if profile.step_devices.height:
            out += ["**Device work per step** (what each step launched; busy + idle = span)", "", frame_table(step_devices_frame(profile)), ""]
        count, ns = profile.outside_steps
        if count:
            out += [f"Device work launched outside every step: {count:,} activities, {fmt_time(ns)}.", ""]
    ops = ops_frame(profile, view, ops)
    if ops.height:
        out += ["**Operators** (torch key_averages() columns, computed from the trace)", "", frame_table(ops), ""]
        out += [f"Self CPU time total: {fmt_time(profile.self_cpu_ns)}; device time total: {fmt_time(profile.device_ns)}.", ""]
    kernels = kernels_frame(profile)
    if kernels.height:
        shown = kernels.head(view.top) if view.top else kernels
        out += ["**Device activities by name**", "", frame_table(shown), ""]
    if ops.height:
        out += ["**Findings**", "", *_findings(profile), ""]
    if profile.memory_devices is not None:
        out += ["**Memory** (the `[memory]` records of profile_memory=True)", "", frame_table(memory_devices_frame(profile)), ""]
        memory_ops = memory_ops_frame(profile).drop("user_annotation")
        if memory_ops.height:
            out += ["**Memory by op** (torch's CPU Mem, Self CPU Mem and device columns)", "", frame_table(memory_ops.head(view.top) if view.top else memory_ops), ""]
    if joined is not None and joined.reports:
        out += ["**Device profiles** of this session", "", frame_table(device_frame(DeviceAnalysis(profile.path, joined.reports)).drop("path", "recommendations")), ""]
        if joined.ops.height:
            out += ["**Device work by op** (each execution's NEFF profile)", "", frame_table(device_ops_frame(joined)), ""]
    return "\n".join(out)


def _findings(profile: Summary) -> list[str]:
    """Each finding as a list item, the events it rests on (name, launching op, start after the window's, duration) below it."""
    if profile.findings.is_empty():
        return ["- none"]
    start = profile.window[0]
    out = []
    for r in profile.findings.iter_rows(named=True):
        events = ", ".join(f"`{e['name'] or ''}`" + (f" (from `{e['op']}`)" if e["op"] else "") + f" at +{fmt_time(e['ts'] - start)} for {fmt_time(e['dur'])}" for e in r["events"])
        out += [f"- {r['summary']}".translate(_ESCAPES), f"  - events: {events}".translate(_ESCAPES)]
    return out


def _summary_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """The comparison columns a reviewer reads first: window, busy per lane, hardware idle, launch latency and queue delay."""
    keep = ["trace", "window_us", *(c for c in frame.columns if c.startswith("busy_us.")), "count.hardware_idle", "total_us.hardware_idle", "p50_us.launch_latency", "p50_us.queue_delay"]
    return frame.select(c for c in keep if c in frame.columns)


@terminal_text
def analysis(result: Analysis, view: OpView = OpView()) -> str:
    """The analysis as Markdown: a summary table when there are several traces, then one section per trace, then warnings."""
    parts = [f"## ntrace analysis of `{result.root}`", ""]
    if len(result.summaries) > 1:
        parts += ["**Summary** (one row per trace)", "", frame_table(_summary_columns(summary_frame(result))), ""]
    names = variant_names(result.summaries, result.root)

    tables = on_polars_thread(lambda: op_tables_of(result.summaries, view))  # every trace's by one query, not one each

    def section(item: tuple[tuple[Summary, Session | None], str, pl.DataFrame]) -> str:
        (summary, session), name, ops = item
        return summary_markdown(summary, name, view, result.device_join(summary, session), ops)

    parts += each_on_polars_thread(section, zip(result, names, tables))
    if result.artifacts:
        parts += ["**Sessions with no framework trace**", "", artifacts(result.artifacts)]
    parts += _warnings(result.all_warnings)
    return "\n".join(parts)


def _warnings(warnings: Sequence[str]) -> list[str]:
    """The closing Warnings list, when there are any."""
    return ["**Warnings**", "", *(f"- {w}".translate(_ESCAPES) for w in warnings), ""] if warnings else []


@terminal_text
def compare(comparison: Comparison) -> str:
    """A variant comparison as a Markdown table, with what each column means and its warnings."""
    notes = [f"- {line}" for line in compare_notes(comparison)]
    return "\n".join(["**Variants**", "", frame_table(compare_frame(comparison).drop("path")), "", *notes, "", *_warnings(comparison.warnings)])


@terminal_text
def diff(d: Diff) -> str:
    """A diff as Markdown: the device-time headline, then ops, lanes and gaps before and after, then warnings."""
    change = "-" if d.device_change_pct is None else f"{d.device_change_pct:+.1f}%"
    return "\n".join(
        [
            f"**Device time** {fmt_time(d.base_device)} → {fmt_time(d.test_device)} ({change}); base `{d.base}`, test `{d.test}`, threshold {d.threshold:g}%".translate(_ESCAPES),
            "",
            "**Ops** (largest device time change first)",
            "",
            frame_table(diff_ops_frame(d)),
            "",
            "**Lanes**",
            "",
            frame_table(diff_lanes_frame(d)),
            "",
            "**Dispatch gaps**",
            "",
            frame_table(diff_gaps_frame(d)),
            "",
            *_warnings(d.warnings),
        ]
    )


@terminal_text
def artifacts(sessions: Sequence[Session]) -> str:
    """Artifact sessions as Markdown: one table of files per session."""
    files = artifact_files_frame(sessions)
    parts = []
    for s in sessions:
        mine = files.filter(pl.col("dir") == str(s.dir)).drop("dir").with_columns(pl.col("path").str.split("/").list.last())
        parts += [f"### {s.dir}".translate(_ESCAPES), "", frame_table(mine), ""]
    return "\n".join(parts)


@terminal_text
def device(result: DeviceAnalysis) -> str:
    """Device profiles as Markdown: one row per profile, then each profile's recommendations."""
    parts = ["**Device profiles** (processed Neuron tables)", "", frame_table(device_frame(result).drop("recommendations")), ""]
    for r in result.reports:
        if r.recommendations.height:
            parts += [f"**{r.path.name}**".translate(_ESCAPES), "", *(f"- `{a['rule']}`: {a['message']}: {a['evidence']}".translate(_ESCAPES) for a in r.recommendations.iter_rows(named=True)), ""]
    return "\n".join([*parts, *_warnings(result.warnings)])


@terminal_text
def ranks(result: RankAnalysis) -> str:
    """Many ranks as Markdown: the per-rank table, the statistics over ranks with outliers, collectives, stragglers, the rules used."""
    parts = [
        "**Ranks**", "", frame_table(ranks_frame(result).drop("trace")), "",
        "**Over ranks** (outliers: more than 3 median absolute deviations from the median)", "", frame_table(rank_stats_frame(result)), "",
        f"**Collectives** (matched by {result.match_rule}; clocks aligned on the {ALIGNMENT_RULE})", "", frame_table(rank_collectives_frame(result)), "",
        "**Stragglers**", "", frame_table(stragglers_frame(result)), "",
    ]  # fmt: skip
    return "\n".join([*parts, *_warnings(result.warnings)])
