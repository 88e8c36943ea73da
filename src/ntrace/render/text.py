"""The text renderer: aligned tables for people, times as torch prints them (analysis, op table, findings, comparison, diff, artifacts)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import polars as pl

from ntrace.analyses.ops import OpView, op_table
from ntrace.lanes import LANES
from ntrace.neuron.artifacts import Session
from ntrace.summary import Summary
from ntrace.units import fmt_pct, fmt_time
from ntrace.workflows.analyze import Analysis
from ntrace.workflows.diff import Diff


def table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    """An aligned plain-text table: the first `left` columns left-aligned, the rest right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([rule, line(headers), rule, *(line(r) for r in rows), rule])


#: torch's max_name_column_width: longer names are cut and end in "...".
NAME_WIDTH = 55


def _name(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 3] + "..."


def ops_text(summary: Summary, ops: pl.DataFrame) -> str:
    """The op table (a view of the summary's) with torch's columns, percentages and footer; device columns named for the device (none on CPU-only traces)."""
    dev = summary.device
    self_cpu_total, self_dev_total = summary.self_cpu_ns, summary.hardware_ns
    shapes = "input_dims" in ops.columns
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if dev != "none":
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    headers += ["# of Calls", *(["Input Shapes"] if shapes else [])]

    def share(ns: int, total: int) -> str:
        return fmt_pct(ns / total if total else 0.0)

    rows = []
    for r in ops.iter_rows(named=True):
        row = [_name(r["name"]), share(r["self_cpu"], self_cpu_total), fmt_time(r["self_cpu"]), share(r["cpu_total"], self_cpu_total), fmt_time(r["cpu_total"]), fmt_time(r["cpu_avg"])]
        if dev != "none":
            row += [fmt_time(r["self_device"]), share(r["self_device"], self_dev_total), fmt_time(r["device_total"]), fmt_time(r["device_avg"])]
        row += [str(r["calls"]), *([r["input_dims"] or "[]"] if shapes else [])]
        rows.append(row)
    footer = [f"Self CPU time total: {fmt_time(self_cpu_total)}"]
    if dev != "none":
        footer.append(f"Self {dev} time total: {fmt_time(self_dev_total)}")
    return "\n".join([table(headers, rows, left=0), *footer])


def findings_text(summary: Summary) -> str:
    """Each finding as one line, then the events it rests on (idx, name, start relative to the window, duration)."""
    found = summary.findings
    if found.is_empty():
        return "Findings\n  none"
    start = summary.window[0]
    out = ["Findings"]
    for r in found.iter_rows(named=True):
        out.append(f"  - {r['summary']}")
        events = ", ".join(f"#{e['idx']} {_name(e['name'] or '')} at +{fmt_time(e['ts'] - start)} for {fmt_time(e['dur'])}" for e in r["events"])
        out.append(f"      events: {events}")
    return "\n".join(out)



def summary_text(summary: Summary, session: Session | None, view: OpView = OpView()) -> str:
    """One trace's section: header, lanes, hardware tracks, dispatch gaps, steps, the op table in `view`, findings, its session's artifacts."""
    title = f"== {summary.variant}: {summary.path}" if summary.variant else f"== {summary.path}"
    out = [title, f"{summary.events} complete events over a {fmt_time(summary.window_ns)} window", ""]
    out.append("Lanes")
    out.append(
        table(
            ["lane", "events", "total", "busy", "% window"],
            [[r["lane"], str(r["events"]), fmt_time(r["total"]), fmt_time(r["busy"]), fmt_pct(r["share"])] for r in summary.lanes.iter_rows(named=True)],
        )
    )
    hw = summary.hardware_tracks
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
                for r in summary.gaps.iter_rows(named=True)
            ],
        )
    )
    if summary.steps.height:
        out += ["", "Profiler steps (busy per lane inside each step)"]
        out.append(
            table(
                ["step", "dur", *LANES, "hw idle"],
                [
                    [r["name"], fmt_time(r["dur"]), *(fmt_time(r[f"{lane}_busy"]) for lane in LANES), fmt_time(r["hardware_idle"])]
                    for r in summary.steps.iter_rows(named=True)
                ],
            )
        )
    ops = op_table(summary.op_groups, summary.hardware_ns, view)
    if ops.height:
        out += ["", "Operators (torch key_averages() columns, computed from the trace)", ops_text(summary, ops), "", findings_text(summary)]
    if session and session.has_artifacts:
        out += ["", session_summary_text(session)]
    return "\n".join(out)


def analysis(result: Analysis, view: OpView = OpView()) -> str:
    """Every trace's section, then the sessions with no trace, then the warnings."""
    parts = [summary_text(s, session, view) for s, session in result]
    parts += [f"{session_text(s)}\n(no framework trace in this session)" for s in result.artifacts]
    warnings = result.all_warnings
    if warnings:
        parts.append("Warnings\n" + "\n".join(f"  - {w}" for w in warnings))
    return "\n\n".join(parts) + "\n"


def _speedup(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def compare(frame: pl.DataFrame) -> str:
    """The comparison table: device time, self CPU of the ops that reached the device, their calls, hardware idle, speed-up."""
    baseline = frame.filter(pl.col("speedup") == 1.0)["name"].head(1).to_list()
    rows = [
        [r["name"], fmt_time(r["device"]), fmt_time(r["self_cpu"]), str(r["device_op_calls"]), fmt_time(r["gap"]), _speedup(r["speedup"]), r["device_name"], str(r["traces"])]
        for r in frame.iter_rows(named=True)
    ]
    note = [
        f"speed-up: device time of {baseline[0] if baseline else 'the baseline'} over each variant's",
        "self CPU and op calls: the op table rows that carry device time; idle: hardware idle between executions",
    ]
    return "\n".join([table(["variant", "device time", "self CPU", "op calls", "idle", "speed-up", "device", "traces"], rows), *note]) + "\n"



def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def diff(d: Diff) -> str:
    """Total device time change, per-op statuses, lane totals and gap statistics, BASE → TEST."""
    counts = {s: d.ops.filter(d.ops["status_device"] == s).height for s in ("added", "removed", "slower", "faster", "unchanged")}
    out = [
        f"BASE {d.base}",
        f"TEST {d.test}",
        f"device time: {fmt_time(d.base_device)} -> {fmt_time(d.test_device)} ({_pct(d.device_change_pct)}); threshold {d.threshold:g}%",
        "ops by device time: " + ", ".join(f"{n} {s}" for s, n in counts.items()),
        "",
        "Ops (largest device time change first)",
        table(
            ["op", "device", "cpu", "calls", "base device", "test device", "change", "base self CPU", "test self CPU", "change"],
            [
                [
                    r["name"], r["status_device"], r["status_cpu"], f"{r['base_calls'] or 0} -> {r['test_calls'] or 0}",
                    fmt_time(r["base_self_device"]), fmt_time(r["test_self_device"]), _pct(r["self_device_change_pct"]),
                    fmt_time(r["base_self_cpu"]), fmt_time(r["test_self_cpu"]), _pct(r["self_cpu_change_pct"]),
                ]
                for r in d.ops.iter_rows(named=True)
            ],
            left=3,
        ),
        "",
        "Lanes (summed duration / busy)",
        table(
            ["lane", "base total", "test total", "base busy", "test busy"],
            [[r["lane"], fmt_time(r["base_total"]), fmt_time(r["test_total"]), fmt_time(r["base_busy"]), fmt_time(r["test_busy"])] for r in d.lanes.iter_rows(named=True)],
        ),
        "",
        "Gaps",
        table(
            ["gap", "stat", "base", "test"],
            [
                [r["kind"], r["stat"], *(str(r[s]) if r["stat"] == "count" else fmt_time(r[s]) for s in ("base", "test"))]
                for r in d.gaps.iter_rows(named=True)
            ],
            left=2,
        ),
    ]
    return "\n".join(out) + "\n"



def _title(session: Session) -> str:
    if session.pid is None:
        return f"directory {session.dir} (not an <instance>_pid_<pid> session)"
    stamp = f", timestamp {session.timestamp}" if session.timestamp else ""
    return f"instance {session.instance}, pid {session.pid}{stamp}"


def _rel(path: str, session: Session) -> str:
    """A path as shown in tables: relative to the session directory."""
    try:
        return str(Path(path).relative_to(session.dir))
    except ValueError:
        return path


def session_summary_text(session: Session) -> str:
    """The short artifact summary `ntrace analyze` prints beside a trace's lanes."""
    neffs, ntffs = session.neffs, session.ntffs
    valid = int(neffs["valid"].sum()) if neffs.height else 0
    head = (
        f"Artifacts ({_title(session)}): {neffs.height} NEFF ({valid} valid), {ntffs.height} NTFF, {session.pbs.height} .pb, "
        f"{session.pairs.height} pairs, {session.unpaired.height} unpaired"
    )
    if not session.has_artifacts:
        return head
    paired = session.pairs.group_by("neff").agg("ntff", "rule")
    partners = {r["neff"]: r for r in paired.iter_rows(named=True)}
    rows = []
    for r in neffs.iter_rows(named=True):
        p = partners.get(r["path"])
        pair = ", ".join(f"{_rel(n, session)} ({rule})" for n, rule in zip(p["ntff"], p["rule"])) if p else "-"
        rows.append([_rel(r["path"], session), "yes" if r["valid"] else "NO", str(r["members"]), r["neff_name"] or "-", pair])
    out = [head]
    if rows:
        out.append(table(["NEFF", "valid", "members", "name", "paired with"], rows, left=5))
    out += [f"  unpaired {_rel(r['path'], session)}: {r['reason']}" for r in session.unpaired.iter_rows(named=True)]
    out += [f"  invalid {_rel(r['path'], session)}: {r['problem']}" for r in neffs.filter(~neffs["valid"]).iter_rows(named=True)]
    return "\n".join(out)


def session_text(session: Session) -> str:
    """One session in full: its traces, decoded NEFFs, NTFFs, .pb files, pairs and unpaired files."""
    out = [f"== {session.dir}", _title(session)]
    traces = ", ".join(_rel(str(t), session) for t in session.traces) or "none"
    out.append(f"framework traces: {traces}")
    if session.neffs.height:
        out += ["", "NEFF"]
        out.append(
            table(
                ["file", "hash", "version", "build", "name", "uuid", "members", "subgraphs", "lnc", "size", "valid"],
                [
                    [
                        _rel(r["path"], session), r["hash"] or "-", r["neff_version"] or "-", r["build_version"] or "-", r["neff_name"] or "-",
                        r["uuid"] or "-", str(r["members"]), ",".join(r["subgraphs"]) or "-", _num(r["lnc_size"]), str(r["size"]),
                        "yes" if r["valid"] else f"NO: {r['problem']}",
                    ]
                    for r in session.neffs.iter_rows(named=True)
                ],
                left=6,
            )
        )
    if session.ntffs.height:
        out += ["", "NTFF (opaque: only the name is read)"]
        out.append(
            table(
                ["file", "scheme", "hash", "instance", "vnc", "core", "session", "rank", "exec", "size"],
                [
                    [_rel(r["path"], session), r["scheme"], r["hash"] or "-", *(_num(r[k]) for k in ("instid", "vnc", "core", "session", "rank", "exec")), str(r["size"])]
                    for r in session.ntffs.iter_rows(named=True)
                ],
                left=3,
            )
        )
    if session.pbs.height:
        out += ["", ".pb (opaque)"]
        out.append(table(["file", "kind", "size"], [[_rel(r["path"], session), r["kind"], str(r["size"])] for r in session.pbs.iter_rows(named=True)], left=2))
    if session.pairs.height:
        out += ["", "Pairs"]
        out.append(table(["NEFF", "NTFF", "rule"], [[_rel(r["neff"], session), _rel(r["ntff"], session), r["rule"]] for r in session.pairs.iter_rows(named=True)], left=3))
    if session.unpaired.height:
        out += ["", "Unpaired"]
        out += [f"  {_rel(r['path'], session)}: {r['reason']}" for r in session.unpaired.iter_rows(named=True)]
    return "\n".join(out)


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def artifacts(sessions: Sequence[Session]) -> str:
    """Every session's full section."""
    return "\n\n".join(session_text(s) for s in sessions) + "\n"
