"""The text renderer's op table: the top 20 rows unless --all, a line saying how many were left out, cut names that never read alike."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from helpers import write_trace, x
from ntrace.cli import main
from ntrace.render.text import NAME_WIDTH, TABLE_TOP, short_names as names


def _many_ops(path: Path, n: int) -> Path:
    """A trace with `n` differently named CPU ops, two of them long names that differ only at the end."""
    long = "aten::" + "very_long_operator_name_" * 3
    ops = [x(f"aten::op{i}", "cpu_op", i * 10, 5, pid=1, tid=1) for i in range(n - 2)]
    ops += [x(long + "alpha", "cpu_op", 1000, 7, pid=1, tid=1), x(long + "beta", "cpu_op", 1010, 6, pid=1, tid=1)]
    return write_trace(path, ops)


def test_names_tell_rows_apart() -> None:
    a, b, c = "x" * 60 + "alpha", "x" * 60 + "beta", "y" * 70
    shown = names([a, b, c, "short", a])
    assert shown[0] != shown[1] and shown[0] == shown[4]
    assert shown[0].endswith("ha") and shown[1].endswith("ta") and "…" in shown[0]
    assert shown[2] == "y" * (NAME_WIDTH - 3) + "..." and shown[3] == "short"
    assert all(len(s) <= NAME_WIDTH for s in shown)
    same_ends = ["p" * 60 + "a" + "q" * 60, "p" * 60 + "b" + "q" * 60]  # alike in their first and last 60 characters: kept whole
    assert names(same_ends) == same_ends


def test_table_shows_top_rows_unless_all(tmp_path: Path) -> None:
    trace = _many_ops(tmp_path / "trace.json", 30)
    cut = CliRunner().invoke(main, ["analyze", str(trace), "-q"])
    assert cut.exit_code == 0, cut.output
    assert f"{30 - TABLE_TOP} more rows: --all" in cut.output
    assert "aten::op27" not in cut.output
    rows = [line for line in cut.output.splitlines() if "very_long_operator_name" in line]
    assert len(rows) == 2 and rows[0].split()[0] != rows[1].split()[0]  # both long names shown, told apart
    every = CliRunner().invoke(main, ["analyze", str(trace), "-q", "--all"])
    assert "more rows" not in every.output and "aten::op27" in every.output
    doc = json.loads(CliRunner().invoke(main, ["analyze", str(trace), "-q", "--format", "json"]).output)
    assert "aten::op27" in json.dumps(doc)  # JSON keeps every row


def test_a_directory_section_is_the_trace_alone(tmp_path: Path) -> None:
    """The text of many traces, whose op tables are made by one query, holds each trace's section exactly as it is written alone (its own op table query), in each view."""
    from dataclasses import replace

    from helpers import shared_trace_files
    from ntrace import load
    from ntrace.analyses.ops import op_table
    from ntrace.analyses.opview import OpView
    from ntrace.render.text import analysis, summary_text
    from ntrace.workflows.analyze import Analysis

    extra = write_trace(tmp_path / "none.json", [x("PyTorch Profiler (0)", "Trace", 0, 10)])  # a trace with no op row at all
    summaries = [load(p).summary() for p in [*shared_trace_files(), extra]]
    for view in (OpView(), OpView(sort_by="count", top=2), OpView(group_by_shape=True, top=3)):
        text = analysis(Analysis(tmp_path, tuple((s, None) for s in summaries)), view)
        whole = replace(view, top=None)  # the text section cuts the table itself
        sections = [summary_text(s, None, view, None, op_table(s.op_groups, s.self_cpu_ns, s.device_ns, whole)) for s in summaries]
        assert text.startswith("\n\n".join(sections)), view


def test_a_directory_markdown_section_is_the_trace_alone(tmp_path: Path) -> None:
    """The Markdown of many traces, whose op tables are made by one query, holds each trace's section exactly as it is written alone, in each view."""
    from helpers import shared_trace_files
    from ntrace import load
    from ntrace.analyses.ops import op_table
    from ntrace.analyses.opview import OpView
    from ntrace.render.markdown import analysis, summary_markdown
    from ntrace.render.tables import variant_names
    from ntrace.workflows.analyze import Analysis

    extra = write_trace(tmp_path / "none.json", [x("PyTorch Profiler (0)", "Trace", 0, 10)])  # a trace with no op row at all
    summaries = [load(p).summary() for p in [*shared_trace_files(), extra]]
    names = variant_names(summaries, tmp_path)
    for view in (OpView(), OpView(sort_by="count", top=2), OpView(group_by_shape=True, top=3)):
        text = analysis(Analysis(tmp_path, tuple((s, None) for s in summaries)), view)
        alone = (summary_markdown(s, name, view, None, op_table(s.op_groups, s.self_cpu_ns, s.device_ns, view)) for s, name in zip(summaries, names))
        assert "\n".join(alone) in text, view
