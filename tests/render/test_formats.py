"""Output formats (CSV, Markdown) cross-checked against the JSON contract, and the progress bar on stderr."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from helpers import REPO, write_trace, x
from ntrace.cli import main
from ntrace.io.progress import report, reporting
from ntrace.render.markdown import frame_table


def _variants(root: Path) -> Path:
    """Two variant directories, each with a trace.json: the shape of fixtures/rmsnorm."""
    for name, n in (("naive", 3), ("fused|odd", 1)):
        events = [x("ProfilerStep#1", "user_annotation", 0, 100)]
        for i in range(n):
            events += [x(f"aten::op{i}", "cpu_op", 1 + 20 * i, 10), x("nrt_execute", "privateuse1_runtime", 2 + 20 * i, 5, tid=2, correlation=i + 1)]
            events.append(x("nc_exec_running", "kernel", 9 + 20 * i, 4.5, pid=0, tid=0, correlation=i + 1))
        (root / name).mkdir(parents=True)
        write_trace(root / name / "trace.json", events)
    return root


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_csv_matches_json(tmp_path: Path) -> None:
    root = _variants(tmp_path)
    rows = list(csv.DictReader(io.StringIO(_cli("analyze", str(root), "--format", "csv", "-q"))))
    doc = json.loads(_cli("analyze", str(root), "--format", "json"))
    assert [r["trace"] for r in rows] == ["fused|odd", "naive"]
    for row, prof in zip(rows, doc["profiles"]):
        assert float(row["window_us"]) == prof["window_us"]
        for lane in prof["lanes"]:
            assert float(row[f"busy_us.{lane['lane']}"]) == lane["busy_us"]
            assert int(row[f"events.{lane['lane']}"]) == lane["events"]
        idle = prof["gaps"]["hardware_idle"]
        assert int(row["count.hardware_idle"]) == idle["count"] and float(row["total_us.hardware_idle"]) == idle["total_us"]
    # independent check: naive has 3 non-overlapping 4.5 µs executions 20 µs apart
    naive = rows[1]
    assert float(naive["busy_us.hardware"]) == 13.5 and float(naive["total_us.hardware_idle"]) == 2 * 15.5


def test_markdown_tables(tmp_path: Path) -> None:
    root = _variants(tmp_path)
    md = _cli("analyze", str(root), "--format", "markdown")
    assert md.startswith("## ntrace analysis of")
    assert "**Summary** (one row per trace)" in md
    assert "### fused\\|odd" in md and "### naive" in md  # pipes escaped so the table stays a table
    tables = [block for block in md.split("\n\n") if block.startswith("| ")]
    assert len(tables) == 1 + 2 * 7  # summary, then lanes, hardware tracks, gaps, steps, device work per step, operators, device activities per trace
    for table in tables:
        lines = table.splitlines()
        widths = {line.replace("\\|", "").count("|") for line in lines}
        assert len(widths) == 1, table  # every row has as many cells as the header
        assert set(lines[1].replace("|", "")) <= set(":-")
    assert "| hardware | 3 | 13.500us | 13.500us |" in md


def test_frame_table_formats_cells() -> None:
    frame = pl.DataFrame({"name": ["a|b", None], "calls": [1200, 3], "self_us": [1.5, 2500.0], "share": [0.5, 0.25]})
    assert frame_table(frame).splitlines() == [
        "| name | calls | self | share |",
        "|:---|---:|---:|---:|",
        "| a\\|b | 1,200 | 1.500us | 50.00% |",
        "| - | 3 | 2.500ms | 25.00% |",
    ]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_after_the_delay_and_erases_its_line() -> None:
    from ntrace.cli import _Progress

    stream = _Tty()
    bar = _Progress(stream, delay=0.0)
    bar("reading trace.json", 50 << 20, 200 << 20, "bytes")
    bar("reading trace.json", 100 << 20, 200 << 20, "bytes")
    drawn = stream.getvalue()
    bar("decoding", 12345, None, "events")
    bar.close()
    out = stream.getvalue()
    assert "reading trace.json" in drawn and "50%" in drawn and "100.0 MiB" in drawn
    assert "decoding" in out and "12,345 events" in out
    assert out.endswith("\r\033[K")  # the line is erased at the end
    quiet = _Tty()
    slow = _Progress(quiet, delay=60.0)
    slow("reading", 1, 2, "bytes")  # a fast run prints nothing
    slow.close()
    assert quiet.getvalue() == ""


def test_cli_stderr_has_no_progress_when_piped(tmp_path: Path) -> None:
    root = _variants(tmp_path)
    result = CliRunner().invoke(main, ["analyze", str(root)])
    assert result.exit_code == 0 and result.stderr == ""


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_every_format_runs(tmp_path: Path, fmt: str) -> None:
    assert "naive" in _cli("analyze", str(_variants(tmp_path)), "--format", fmt)


def test_loading_reports_bytes_read_and_events_decoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ntrace.io.kineto._windows as windows_mod
    import ntrace.io.progress as progress_mod
    from ntrace import load

    trace = write_trace(tmp_path / "trace.json", [x(f"op{i}", "cpu_op", i, 1) for i in range(200)])
    monkeypatch.setattr(progress_mod, "_CHUNK", 1024)
    monkeypatch.setattr(windows_mod, "WINDOW", 4096)
    monkeypatch.setenv("NTRACE_NATIVE", "0")  # the msgspec path reports each window it decodes
    seen: list[tuple] = []
    with reporting(lambda *a: seen.append(a)):
        load(trace)  # memory-mapped: decoded window by window
        load(trace, fast=False)  # read into memory first
    size = trace.stat().st_size
    reads = [s for s in seen if s[0] == "reading trace.json"]
    assert len(reads) == -(-size // 1024) and reads[-1] == ("reading trace.json", size, size, "bytes")
    assert [d for d, *_ in reads] == sorted(d for d, *_ in reads)
    windows = [s for s in seen if s[0] == "decoding trace.json" and s[1] > 0]  # bytes of the events array, per window
    array = windows[-1][2]
    assert windows[-1] == ("decoding trace.json", array, array, "bytes") and array < size
    done = [0] + [d for _, d, *_ in windows]
    steps = [b - a for a, b in zip(done, done[1:])]
    assert len(steps) > 2 and min(steps[:-1]) >= 4096 and steps[-1] > 0
    assert seen.count(("decoded trace.json", 200, None, "events")) == 2
    monkeypatch.delenv("NTRACE_NATIVE")
    native: list[tuple] = []
    with reporting(lambda *a: native.append(a)):
        load(trace)
    # the native parser, on a trace this small, is done before its progress is first polled: it reports the whole array once
    assert [s for s in native if s[0] == "decoding trace.json"] == [("decoding trace.json", 0, size, "bytes"), ("decoding trace.json", array, array, "bytes")]
    assert native.count(("decoded trace.json", 200, None, "events")) == 1


def test_shell_completion_as_documented() -> None:
    import os
    import subprocess
    import sys

    def complete(words: str, cword: int) -> list[str]:
        env = {**os.environ, "COMP_WORDS": words, "COMP_CWORD": str(cword), "_NTRACE_COMPLETE": "bash_complete"}
        code = "import sys; from ntrace.cli import main; sys.argv[0] = 'ntrace'; main(prog_name='ntrace')"
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60).stdout
        return [line.split(",", 1)[1] for line in out.splitlines()]

    assert {"report", "export"} <= set(complete("ntrace ", 1))
    assert complete("ntrace analyze x --format ", 4) == ["table", "json", "csv", "markdown"]
    env = {**os.environ, "_NTRACE_COMPLETE": "bash_source"}
    script = subprocess.run([sys.executable, "-c", "from ntrace.cli import main; main(prog_name='ntrace')"], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "_ntrace_completion()" in script and "complete -o nosort -F _ntrace_completion ntrace" in script


RMSNORM = REPO / "fixtures" / "rmsnorm"


def _rows(*args: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_cli(*args))))


def test_compare_csv_and_markdown_match_json() -> None:
    doc = json.loads(_cli("compare", str(RMSNORM), "--format", "json"))
    rows = _rows("compare", str(RMSNORM), "--format", "csv")
    assert [r["name"] for r in rows] == [v["name"] for v in doc["variants"]] == ["naive", "fused", "compiled"]
    for row, v in zip(rows, doc["variants"]):
        assert float(row["device_time_us"]) == v["device_time_us"] and float(row["idle_us"]) == v["idle_us"] and float(row["compute_us"]) == v["compute_us"]
        assert int(row["device_op_calls"]) == v["device_op_calls"] and float(row["speedup"]) == pytest.approx(v["speedup"])
    md = _cli("compare", str(RMSNORM), "--format", "markdown")
    assert "| naive | 2.355ms | 2.352ms | 124.200us | 6 | 245.660us | 2.678ms | 1.00x |" in md  # the seed's naive row
    assert "| fused | 403.300us |" in md and "| compiled | 375.500us |" in md


def test_diff_csv_and_markdown_match_json() -> None:
    base, test = str(RMSNORM / "naive"), str(RMSNORM / "fused")
    doc = json.loads(_cli("diff", base, test, "--format", "json"))
    rows = _rows("diff", base, test, "--format", "csv")
    assert [r["name"] for r in rows] == [op["name"] for op in doc["ops"]]
    for row, op in zip(rows, doc["ops"]):
        assert row["status_device"] == (op["status_device"] or "")  # CSV writes null as an empty cell
        assert (float(row["self_device_us.base"]) if row["self_device_us.base"] else None) == op["self_device_us"]["base"]
    md = _cli("diff", base, test, "--format", "markdown")
    assert md.startswith("**Device time** 2.355ms → 403.300us (-82.9%)")
    assert "| aten::mul | no | removed | removed | 3 | - | 1.165ms |" in md


def test_artifacts_csv_has_one_row_per_file() -> None:
    root = RMSNORM.parent / "damaged"
    doc = json.loads(_cli("artifacts", str(root), "--format", "json"))
    rows = _rows("artifacts", str(root), "--format", "csv")
    listed = {f["path"] for s in doc["sessions"] for kind in ("neff", "ntff", "pb") for f in s.get(kind, [])}
    assert {r["path"] for r in rows} == listed and len(rows) == len(listed)
    orphan = next(r for r in rows if r["path"].endswith("999999999999999_instid_0_vnc_0.ntff"))
    assert orphan["note"] == next(u["reason"] for s in doc["sessions"] for u in s["unpaired"] if u["path"] == orphan["path"])
    md = _cli("artifacts", str(root), "--format", "markdown")
    assert md.startswith("### ") and "| neff_600000000000001_vnc_0.neff | neff | 1,624 |" in md
