"""The text renderer: aligned tables for people, times as torch prints them (analysis, op table, findings, comparison, diff, artifacts)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import polars as pl

from ntrace.analyses.device import ENGINES, OUTLIER_FACTOR, SMALL_DMA_BYTES, DeviceReport
from ntrace.analyses.opview import OpView
from ntrace.errors import one_line, terminal_text
from ntrace.exprs import each_on_polars_thread, on_polars_thread
from ntrace.lanes import LANES
from ntrace.neuron.artifacts import Session
from ntrace.summary import Summary
from ntrace.units import count, fmt_pct, fmt_time, plural, rate, size
from ntrace.render.columns import header, headers
from ntrace.render.tables import (
    compare_notes, diff_gaps_frame, frame_cells, memory_devices_frame, memory_ops_frame, op_tables_of, rank_collectives_frame, rank_stats_frame, ranks_frame, stragglers_frame,
)
from ntrace.workflows.analyze import Analysis
from ntrace.workflows.compare import Comparison
from ntrace.workflows.device import DeviceAnalysis, DeviceJoin
from ntrace.workflows.diff import Diff
from ntrace.workflows.ranks import ALIGNMENT_RULE, RankAnalysis


def table(headers: list[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """An aligned plain-text table of rows of cells: the first `left` columns left-aligned, the rest right-aligned; control characters in cells escaped."""
    return column_table(headers, [list(column) for column in zip(*rows)] if rows else [[] for _ in headers], left)


def column_table(headers: list[str], columns: Sequence[Sequence[str]], left: int = 1) -> str:
    """`table` of its columns of cells, each padded as a whole: long captures hold steps by the ten thousand."""
    headers = [one_line(h) for h in headers]
    padded = []
    for i, (head, column) in enumerate(zip(headers, columns)):
        cells = [one_line(c) for c in column]
        width = max(len(head), *map(len, cells)) if cells else len(head)
        padded.append([c.ljust(width) if i < left else c.rjust(width) for c in [head, *cells]])
    rule = "  ".join("-" * len(column[0]) for column in padded)
    lines = ["  ".join(cells).rstrip() for cells in zip(*padded)]
    return "\n".join([rule, lines[0], rule, *lines[1:], rule])


#: Rows of the op table `--format table` shows unless `--top` or `--all` says otherwise.
TABLE_TOP = 20

#: torch's max_name_column_width: longer names are cut and end in "...".
NAME_WIDTH = 55


def _name(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 3] + "..."


def short_names(full: Sequence[str]) -> list[str]:
    """The names of a table's rows cut to NAME_WIDTH, with no two different names reading the same: those that would keep their start and end ("start…end")."""
    cut = [_name(n) for n in full]
    groups: dict[str, set[str]] = {}
    for name, short in zip(full, cut):
        groups.setdefault(short, set()).add(name)
    shown: dict[str, str] = {}
    for same in groups.values():
        if len(same) > 1:
            shown.update(_ends(sorted(same)))
    return [shown.get(name, short) for name, short in zip(full, cut)]


def _ends(same: list[str]) -> dict[str, str]:
    """Names that cut alike, each as its start, "…" and the shortest end that tells them all apart within NAME_WIDTH; whole when no such end does."""
    for tail in range(1, NAME_WIDTH - 1):
        shown = {n: n if len(n) <= NAME_WIDTH else n[: NAME_WIDTH - 1 - tail] + "…" + n[-tail:] for n in same}
        if len(set(shown.values())) == len(same):
            return shown
    return {n: n for n in same}


def _pct(value: float) -> str:
    """A percent (0–100) as torch prints it: two decimals."""
    return f"{value:.2f}%"


def ops_text(summary: Summary, ops: pl.DataFrame) -> str:
    """The op table (a view of the summary's) with torch's columns, percentages and footer, named in the one vocabulary; no device columns on CPU-only traces."""
    dev = summary.device
    shapes = "input_dims" in ops.columns
    names = ["name", "self_cpu_pct", "self_cpu_us", "cpu_total_pct", "cpu_total_us", "cpu_avg_us"]
    if dev != "none":
        names += ["self_device_us", "self_device_pct", "device_total_us", "device_avg_us"]
    names += ["calls", *(["input_dims"] if shapes else [])]
    rows = []
    for r, name in zip(ops.iter_rows(named=True), short_names(ops["name"].to_list())):
        row = [name, _pct(r["self_cpu_pct"]), fmt_time(r["self_cpu"]), _pct(r["cpu_total_pct"]), fmt_time(r["cpu_total"]), fmt_time(r["cpu_avg"])]
        if dev != "none":
            row += [fmt_time(r["self_device"]), _pct(r["self_device_pct"]), fmt_time(r["device_total"]), fmt_time(r["device_avg"])]
        row += [str(r["calls"]), *([r["input_dims"] or "[]"] if shapes else [])]
        rows.append(row)
    footer = [f"Self CPU time total: {fmt_time(summary.self_cpu_ns)}"]
    if dev != "none":
        footer.append(f"Self {dev} time total: {fmt_time(summary.device_ns)}")
    return "\n".join([table(headers(*names), rows), *footer])


def kernels_text(summary: Summary, top: int | None = None) -> str:
    """The device activities by name (torch's device rows): calls, total, mean, min, max, share of device time, streams; the first `top` when given."""
    rows = summary.kernels.head(top) if top else summary.kernels
    body = [
        [name, str(r["calls"]), fmt_time(r["total"]), fmt_time(r["mean"]), fmt_time(r["min"]), fmt_time(r["max"]), fmt_pct(r["share"]), ", ".join(r["streams"])]
        for r, name in zip(rows.iter_rows(named=True), short_names(rows["name"].to_list()))
    ]
    more = [f"(first {rows.height} of {summary.kernels.height} names)"] if rows.height < summary.kernels.height else []
    return "\n".join([table(headers("name", "calls", "total_us", "mean_us", "min_us", "max_us", "share", "streams"), body), *more])


def findings_text(summary: Summary) -> str:
    """Each finding as one line, then the events it rests on (name, launching op, start relative to the window, duration)."""
    found = summary.findings
    if found.is_empty():
        return "Findings\n  none"
    start = summary.window[0]
    out = ["Findings"]
    for r in found.iter_rows(named=True):
        out.append(f"  - {r['summary']}")
        out.append("      events: " + ", ".join(_event(e, start) for e in r["events"]))
    return "\n".join(out)


def _event(event: dict[str, Any], start: int) -> str:
    """One event a finding rests on: its name, the op that launched it, its start relative to the window and its duration."""
    launched = f" (from {event['op']})" if event["op"] else ""
    return f"{_name(event['name'] or '')}{launched} at +{fmt_time(event['ts'] - start)} for {fmt_time(event['dur'])}"


def _gaps_text(summary: Summary) -> str:
    """Hardware idle, launch latency and queue delay statistics; only idle has a share (of the hardware tracks' spans)."""
    rows = [
        [r["kind"], str(r["count"]), fmt_time(r["total"]), fmt_time(r["p50"]), fmt_time(r["p90"]), fmt_time(r["max"]), fmt_pct(r["share"])]
        for r in summary.gaps.iter_rows(named=True)
    ]
    return table(headers("kind", "count", "total_us", "p50_us", "p90_us", "max_us", "share"), rows)


def _texts(values: pl.Series) -> list[str]:
    """Each value as str() writes it."""
    return [str(v) for v in values.to_list()]


def _steps_text(summary: Summary) -> list[str]:
    """The step tables: host busy per lane inside each step's CPU window, then per device the work each step launched, then the work no step launched."""
    steps = summary.steps
    lanes = [lane for lane in LANES if f"{lane}_busy" in steps.columns]
    out = ["", "Profiler steps: host busy per lane inside each step's CPU window"]
    times = [[fmt_time(v) for v in steps[c].to_list()] for c in ("dur", *(f"{lane}_busy" for lane in lanes))]
    out.append(column_table(headers("step", "name", "dur_us", *(f"host_busy_us.{lane}" for lane in lanes)), [_texts(steps["step"]), steps["name"].to_list(), *times], left=2))
    devices = summary.step_devices
    if devices.height:
        names = dict(zip(steps["step"].to_list(), steps["name"].to_list()))
        out += ["", "Profiler steps: device work each step launched (busy + idle = span, per device)"]
        out.append(
            column_table(
                headers("step", "name", "device", "events", "busy_us", "idle_us", "span_us"),
                [_texts(devices["step"]), [names.get(step, "-") for step in devices["step"].to_list()], devices["device"].to_list(), _texts(devices["events"]),
                 *([fmt_time(v) for v in devices[c].to_list()] for c in ("busy", "idle", "span"))],
                left=3,
            )  # fmt: skip
        )
    count, ns = summary.outside_steps
    if count:
        out.append(f"device work launched outside every step: {count} activities, {fmt_time(ns)}")
    return out


def summary_text(summary: Summary, session: Session | None, view: OpView, joined: DeviceJoin | None, ops: pl.DataFrame) -> str:
    """One trace's section: header, lanes, hardware tracks, dispatch gaps, steps, the op table in `view` (`ops`: all its rows, made for every trace at once by op_tables_of), kernels, findings, its session's artifacts."""
    title = one_line(f"== {summary.variant}: {summary.shown_path}" if summary.variant else f"== {summary.shown_path}")  # a newline in a name must not forge a line
    out = [title, f"{summary.events} complete events over a {fmt_time(summary.window_ns)} window", ""]
    out.append("Lanes")
    out.append(
        table(
            headers("lane", "events", "total_us", "busy_us", "share"),
            [[r["lane"], str(r["events"]), fmt_time(r["total"]), fmt_time(r["busy"]), fmt_pct(r["share"])] for r in summary.lanes.iter_rows(named=True)],
        )
    )
    hw = summary.hardware_tracks
    if hw.height:
        out += ["", "Hardware tracks (compute executions only)"]
        out.append(
            table(
                headers("track", "events", "busy_us", "idle_us", "span_us", "gaps", "idle_share"),
                [
                    [r["track"], str(r["events"]), fmt_time(r["busy"]), fmt_time(r["idle"]), fmt_time(r["span"]), str(r["gaps"]), fmt_pct(r["idle_share"])]
                    for r in hw.iter_rows(named=True)
                ],
            )
        )
    out += ["", "Dispatch gaps", _gaps_text(summary)]
    if summary.steps.height:
        out += _steps_text(summary)
    shown = ops.head(view.top) if view.top else ops
    if ops.height:
        out += ["", "Operators (torch key_averages() columns, computed from the trace; device time: every device activity, through its launching op)", ops_text(summary, shown)]
        if shown.height < ops.height:
            out.append(f"{plural(ops.height - shown.height, 'more row')}: --all")
    if summary.kernels.height:
        out += ["", "Device activities by name", kernels_text(summary, view.top)]
    if ops.height:
        out += ["", findings_text(summary)]
    out += memory_text(summary, view.top)
    if session and session.has_artifacts:
        out += ["", session_summary_text(session)]
    if joined is not None and (device_text := device_join_text(joined, session)):
        out += ["", device_text]
    return "\n".join(out)


def memory_text(summary: Summary, top: int | None) -> list[str]:
    """The allocator's figures per device and torch's memory columns of the top ops (largest self CPU Mem first), as lines; none when the trace holds no allocator records."""
    if summary.memory_devices is None:
        return []
    ops = memory_ops_frame(summary)
    shown = ops.head(top) if top else ops
    out = ["", "Memory (the [memory] records of profile_memory=True)", _frame_text(memory_devices_frame(summary))]
    if ops.height:
        out += ["", "Memory by op (torch's CPU Mem, Self CPU Mem and device columns)", _frame_text(shown.drop("user_annotation"))]
        if shown.height < ops.height:
            out.append(f"{plural(ops.height - shown.height, 'more row')}: --all")
    return out


def _warnings(warnings: Sequence[str]) -> list[str]:
    """The closing Warnings section, when there are any."""
    return ["Warnings\n" + "\n".join(f"  - {w}" for w in warnings)] if warnings else []


@terminal_text
def analysis(result: Analysis, view: OpView = OpView()) -> str:
    """Every trace's section, then the sessions with no trace, then the warnings."""
    tables = on_polars_thread(lambda: op_tables_of(result.summaries, replace(view, top=None)))  # every trace's by one query, not one each
    parts = each_on_polars_thread(lambda entry: summary_text(*entry[0], view, result.device_join(*entry[0]), entry[1]), zip(result, tables))
    parts += [f"{session_text(s)}\n(no framework trace in this session)" for s in result.artifacts]
    parts += _warnings(result.all_warnings)
    return "\n\n".join(parts) + "\n"


def _speedup(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


@terminal_text
def compare(comparison: Comparison) -> str:
    """The comparison table (device time, compute, self CPU and calls of the ops that reached the device, idle, median step, speed-up), what it means, and its warnings."""
    rows = [
        [
            r["name"], fmt_time(r["device"]), fmt_time(r["compute"]), fmt_time(r["self_cpu"]), str(r["device_op_calls"]), fmt_time(r["idle"]), fmt_time(r["step"]),
            _speedup(r["speedup"]), r["device_name"], str(r["traces"]),
        ]
        for r in comparison.variants.iter_rows(named=True)
    ]  # fmt: skip
    names = ["name", "device_time_us", "compute_us", "self_cpu_us", "device_op_calls", "idle_us", "median_step_us", "speedup", "backend", "traces"]
    blocks = [table(headers(*names), rows), *compare_notes(comparison)]
    variants = comparison.variants
    if variants["device_profiles"].sum():
        blocks += ["", "Device profiles per variant (active % of the execution span, over all cores; MFU over all profiles)"]
        blocks.append(
            table(
                headers("name", "device_profiles", "mfu_pct", *(f"active_pct.{e}" for e in ENGINES), "dma_bytes"),
                [
                    [r["name"], str(r["device_profiles"]), _opt_pct(r["mfu_pct"]), *(_opt_pct(r[f"{e}_active_pct"]) for e in ENGINES), "-" if r["dma_bytes"] is None else size(r["dma_bytes"])]
                    for r in variants.iter_rows(named=True)
                ],
            )
        )
    parts = ["\n".join(blocks), *_warnings(comparison.warnings)]
    return "\n\n".join(parts) + "\n"


def _change(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


@terminal_text
def diff(d: Diff) -> str:
    """Total device time change, per-op statuses, lane totals and gap statistics, BASE → TEST, then warnings."""
    counts = {s: d.ops.filter(d.ops["status_device"] == s).height for s in ("added", "removed", "slower", "faster", "unchanged")}
    out = [
        f"BASE {d.base}",
        f"TEST {d.test}",
        f"device time: {fmt_time(d.base_device)} -> {fmt_time(d.test_device)} ({_change(d.device_change_pct)}); threshold {d.threshold:g}%",
        "ops by device time: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + " (ops with no device time on either side are judged on CPU only)",
        "",
        "Ops (largest device time change first)",
        table(
            headers("name", "status_device", "status_cpu", "calls", "self_device_us.base", "self_device_us.test", "self_device_change_pct", "self_cpu_us.base", "self_cpu_us.test", "self_cpu_change_pct"),
            [
                [
                    r["name"], r["status_device"] or "-", r["status_cpu"] or "-", f"{r['base_calls'] or 0} -> {r['test_calls'] or 0}",
                    fmt_time(r["base_self_device"]), fmt_time(r["test_self_device"]), _change(r["self_device_change_pct"]),
                    fmt_time(r["base_self_cpu"]), fmt_time(r["test_self_cpu"]), _change(r["self_cpu_change_pct"]),
                ]
                for r in d.ops.iter_rows(named=True)
            ],
            left=3,
        ),
        "",
        "Lanes (summed duration / busy)",
        table(
            headers("lane", "total_us.base", "total_us.test", "busy_us.base", "busy_us.test"),
            [[r["lane"], fmt_time(r["base_total"]), fmt_time(r["test_total"]), fmt_time(r["base_busy"]), fmt_time(r["test_busy"])] for r in d.lanes.iter_rows(named=True)],
        ),
        "",
        "Dispatch gaps",
        _frame_text(diff_gaps_frame(d)),
    ]
    return "\n\n".join(["\n".join(out), *_warnings(d.warnings)]) + "\n"


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
        f"{plural(session.pairs.height, 'pair')}, {session.unpaired.height} unpaired, {plural(len(session.device_profiles), 'processed device profile')}, "
        f"{plural(len(session.mappings), 'framework mapping')}"
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
        out.append(table(headers("neff", "valid", "members", "name", "paired_with"), rows, left=5))
    out += [f"  unpaired {_rel(r['path'], session)}: {r['reason']}" for r in session.unpaired.iter_rows(named=True)]
    out += [f"  invalid {_rel(r['path'], session)}: {r['problem']}" for r in neffs.filter(~neffs["valid"]).iter_rows(named=True)]
    return "\n".join(out)


def session_text(session: Session) -> str:
    """One session in full: its traces, decoded NEFFs, NTFFs, .pb files, pairs and unpaired files."""
    out = [one_line(f"== {session.dir}"), _title(session)]
    traces = ", ".join(_rel(str(t), session) for t in session.traces) or "none"
    out.append(f"framework traces: {traces}")
    if session.neffs.height:
        out += ["", "NEFF"]
        out.append(
            table(
                headers("path", "hash", "neff_version", "build_version", "name", "uuid", "members", "subgraphs", "lnc_size", "size", "valid"),
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
                headers("path", "scheme", "hash", "instid", "vnc", "core", "session_number", "rank", "exec", "size"),
                [
                    [_rel(r["path"], session), r["scheme"], r["hash"] or "-", *(_num(r[k]) for k in ("instid", "vnc", "core", "session", "rank", "exec")), str(r["size"])]
                    for r in session.ntffs.iter_rows(named=True)
                ],
                left=3,
            )
        )
    if session.pbs.height:
        out += ["", ".pb (opaque)"]
        out.append(table(headers("path", "kind", "size"), [[_rel(r["path"], session), r["kind"], str(r["size"])] for r in session.pbs.iter_rows(named=True)], left=2))
    if session.pairs.height:
        out += ["", "Pairs"]
        out.append(table(headers("neff", "ntff", "rule"), [[_rel(r["neff"], session), _rel(r["ntff"], session), r["rule"]] for r in session.pairs.iter_rows(named=True)], left=3))
    if session.unpaired.height:
        out += ["", "Unpaired"]
        out += [f"  {_rel(r['path'], session)}: {r['reason']}" for r in session.unpaired.iter_rows(named=True)]
    if session.device_profiles:
        out += ["", "Processed device profiles (Parquet tables; `ntrace device` reads them)"]
        out += [f"  {_rel(str(d), session)}/" for d in session.device_profiles]
    if session.mappings:
        out += ["", "Framework mappings (framework op → runtime; format undocumented: listed, not read)"]
        out += [f"  {_rel(str(m), session)}" for m in session.mappings]
    return "\n".join(out)


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


@terminal_text
def artifacts(sessions: Sequence[Session]) -> str:
    """Every session's full section."""
    return "\n\n".join(session_text(s) for s in sessions) + "\n"


def _engine_pct(report: DeviceReport, engine: str) -> str:
    """An engine's active % over all cores of one profile."""
    row = report.engines.filter((pl.col("engine") == engine) & pl.col("core").is_null())
    return f"{row['active_pct'][0]:.2f}%" if row.height else "-"


def _dma_bytes(report: DeviceReport) -> int:
    """All DMA bytes of one profile."""
    return int(report.dma.filter(pl.col("queue_type") == "all")["bytes"].sum())


def _opt_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}%"


def _bound(report: DeviceReport) -> str:
    """The verdict with both numbers it rests on."""
    u = report.utilization
    if report.bound is None:
        return "not enough data for a verdict (no FLOPs, HBM bytes or peak ratio)"
    sign = "<" if report.bound == "memory" else "≥"
    return f"{report.bound}-bound: arithmetic intensity {u['arithmetic_intensity']:.1f} FLOP/B {sign} peak FLOPs / bandwidth {u['peak_flops_bandwidth_ratio']:.1f} FLOP/B"


def _section(title: str, headers: list[str], rows: list[list[str]], left: int = 1) -> list[str]:
    """A blank line, a title and its table: how every section of the device reports is laid out."""
    return ["", title, table(headers, rows, left=left)]


def device_report_text(report: DeviceReport) -> str:
    """One device profile in full: NEFF, engines, top opcodes, DMA, HBM, FLOPs and utilisation, the verdict, collectives, throttling, framework ops, recommendations, the profile's own warnings."""
    neff, meta, u = report.neff, report.metadata, report.utilization
    out = [
        one_line(f"== {report.path}") + f" (profile schema {report.schema_version or 'unknown'})",
        f"NEFF {neff.get('name') or '-'} (file {neff.get('file') or '-'}, hash {neff.get('hash') or '-'}); {plural(report.executions.height, 'execution')}, "
        f"{fmt_time(report.span_ns)} in all; {meta.get('instance_type') or 'instance type not given'}, {meta.get('num_physical_cores') or '?'} physical cores",
    ]
    engines_title = "Engines (instruction time: summed; active: union of the instruction intervals; % of the execution span)"
    if report.engines.is_empty():
        out += ["", engines_title, "  no engine activity could be read"]
    else:
        out += _section(
            engines_title,
            headers("engine", "core", "instructions", "instruction_us", "active_us", "active_pct"),
            [
                [r["engine"], "all" if r["core"] is None else str(r["core"]), "-" if r["instructions"] is None else f"{r['instructions']:,}",
                 fmt_time(r["instruction_ns"]), fmt_time(r["active_ns"]), f"{r['active_pct']:.2f}%"]
                for r in report.engines.iter_rows(named=True)
            ],
            left=2,
        )  # fmt: skip
    if report.opcodes.height:
        out += _section(
            "Top opcodes per engine (by instruction time, all cores)",
            headers("engine", "opcode", "instructions", "instruction_us", "active_us"),
            [[r["engine"], r["opcode"], f"{r['instructions']:,}", fmt_time(r["instruction_ns"]), fmt_time(r["active_ns"])] for r in report.opcodes.iter_rows(named=True)],
            left=2,
        )
    if report.dma.height:
        out += _section(
            f"DMA (active: union of packet intervals; bandwidth: bytes over active time; small: packets < {SMALL_DMA_BYTES:,} bytes)",
            headers("queue_type", "packets", "bytes", "active_us", "bandwidth_bytes_per_s", "small_packets"),
            [
                [r["queue_type"], f"{r['packets']:,}", size(r["bytes"]), fmt_time(r["active_ns"]), rate(r["bandwidth"]), f"{r['small_packets']:,} ({r['small_packets'] / r['packets']:.0%})"]
                for r in report.dma.iter_rows(named=True)
            ],
        )
    hbm, flops = report.hbm, report.flops
    out += [
        "",
        "HBM: " + ", ".join(f"{k.replace('_', ' ')} {size(v) if v is not None else '-'}" for k, v in hbm.items()) + f"; MBU {_opt_pct(u['mbu_pct'])} of {rate(u['hbm_bandwidth'])}",
        f"FLOPs: model {count(flops['model'])}, hardware {count(flops['hardware'])}, transpose {count(flops['transpose'])}; MFU {_opt_pct(u['mfu_pct'])}, HFU {_opt_pct(u['hfu_pct'])}"
        f" (peak {rate(u['peak_flops'], 'FLOP/s')} per tensor engine)",
        f"Verdict: {_bound(report)}",
    ]
    if report.collectives.height:
        out += _section(
            f"Collectives (outliers: slower than {OUTLIER_FACTOR}× the group's median)",
            headers("operation", "algorithm", "count", "time_us", "median_us", "max_us", "outliers", "algorithm_bandwidth_bytes_per_s", "bus_bandwidth_bytes_per_s", "trigger_delay_us"),
            [
                [r["operation"], r["algorithm"], str(r["count"]), fmt_time(r["time_ns"]), fmt_time(r["median_ns"]), fmt_time(r["max_ns"]), str(r["outliers"]),
                 rate(r["algorithm_bandwidth"]), rate(r["bus_bandwidth"]), fmt_time(r["trigger_delay_ns"])]
                for r in report.collectives.iter_rows(named=True)
            ],
            left=2,
        )  # fmt: skip
    if report.throttle.height:
        out += _section(
            "Throttling (utilisation still allowed: duration-weighted mean of k/n)",
            headers("type", "events", "duration_us", "active_us", "active_pct", "allowed_share"),
            [[r["type"], str(r["events"]), fmt_time(r["duration_ns"]), fmt_time(r["active_ns"]), f"{r['active_pct']:.2f}%", f"{r['utilization']:.1%}"] for r in report.throttle.iter_rows(named=True)],
        )
    if report.framework.height:
        out += _section(
            "By framework op (FrameworkInstruction; active time per engine)",
            headers("name", "instructions", *(f"active_us.{e}" for e in ENGINES), "hbm_bytes", "hardware_flops"),
            [
                [name, f"{r['instructions']:,}", *(fmt_time(r[f"{e}_ns"]) for e in ENGINES), size(r["hbm_bytes"] or 0), count(r["hardware_flops"])]
                for r, name in zip(report.framework.iter_rows(named=True), short_names([f or "-" for f in report.framework["framework"].to_list()]))
            ],
        )
    out += ["", "Recommendations"]
    out += [f"  - [{r['rule']}] {r['message']}: {r['evidence']} (threshold: {r['threshold']})" for r in report.recommendations.iter_rows(named=True)] or ["  none"]
    if report.profile_warnings:
        out += ["", "The profile's own warnings (its Warning table)", *(f"  - {w}" for w in report.profile_warnings)]
    return "\n".join(out)


@terminal_text
def device(result: DeviceAnalysis) -> str:
    """Every device profile in full, then the warnings."""
    parts = [device_report_text(r) for r in result.reports]
    parts += _warnings(result.warnings)
    return "\n\n".join(parts) + "\n"


def device_join_text(joined: DeviceJoin, session: Session | None) -> str:
    """A trace's device section: one line per profile of its session, the device work per op through each execution's profile, NEFFs per step, and the recommendations."""
    out: list[str] = []
    if joined.reports:
        out += _section(
            f"Device profiles ({len(joined.reports)}: processed Neuron tables of this session; `ntrace device {session.dir if session else '.'}` for each in full)",
            headers("neff", "executions", "span_us", *(f"active_pct.{e}" for e in ENGINES), "dma_bytes", "mfu_pct", "mbu_pct", "bound"),
            [
                [r.path.name, str(r.executions.height), fmt_time(r.span_ns), *(_engine_pct(r, e) for e in ENGINES), size(_dma_bytes(r)),
                 _opt_pct(r.utilization["mfu_pct"]), _opt_pct(r.utilization["mbu_pct"]), r.bound or "-"]
                for r in joined.reports
            ],
        )  # fmt: skip
    if joined.ops.height:
        out += _section(
            "Device work by op (each execution's NEFF profile: active time per engine)",
            headers("op", "neff", "executions", "device_time_us", *(f"active_us.{e}" for e in ENGINES), "hardware_flops", "hbm_bytes"),
            [
                [name, r["neff"], str(r["executions"]), fmt_time(r["device_ns"]), *(fmt_time(r[f"{e}_ns"]) for e in ENGINES), count(r["hardware_flops"]), size(r["hbm_bytes"] or 0)]
                for r, name in zip(joined.ops.iter_rows(named=True), short_names(joined.ops["op"].to_list()))
            ],
            left=2,
        )
    if joined.fragmentation.height:
        out += _section(
            "NEFFs per step (host dispatch per execution: its runtime call; device per execution: the execution)",
            headers("step", "neffs", "executions", "dispatch_per_execution_us", "device_per_execution_us"),
            [
                ["outside steps" if r["step"] is None else str(r["step"]), str(r["neffs"]), str(r["executions"]), fmt_time(r["dispatch_ns"]), fmt_time(r["device_ns"])]
                for r in joined.fragmentation.iter_rows(named=True)
            ],
        )
    advice = [f"  - {r.path.name}: [{a['rule']}] {a['message']}: {a['evidence']}" for r in joined.reports for a in r.recommendations.iter_rows(named=True)]
    if advice:
        out += ["", "Device recommendations", *advice]
    return "\n".join(out).lstrip("\n")


def _frame_text(frame: pl.DataFrame, left: int = 1) -> str:
    """A display frame (ntrace.render.tables) as an aligned table, each value as people read it."""
    return column_table([header(c) for c in frame.columns], frame_cells(frame), left=left)


@terminal_text
def ranks(result: RankAnalysis) -> str:
    """Many ranks: the per-rank table, the statistics over ranks with their outliers, the collectives' skew and transfer, the stragglers, then warnings."""
    per_rank = ranks_frame(result)
    blocks = [
        "Ranks\n" + _frame_text(per_rank.drop("rule", "trace")),
        "Traces\n" + _frame_text(per_rank.select("rank", "rule", "trace"), left=3),
        "Over ranks (outliers: more than 3 median absolute deviations from the median)\n" + _frame_text(rank_stats_frame(result), left=1),
        f"Collectives (matched by {result.match_rule}; clocks aligned on the {ALIGNMENT_RULE})\n" + _frame_text(rank_collectives_frame(result)),
        "Stragglers (arrived last at a collective with skew)\n" + _frame_text(stragglers_frame(result)),
    ]
    return "\n\n".join([*blocks, *_warnings(result.warnings)]) + "\n"
