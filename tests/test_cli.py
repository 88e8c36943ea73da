"""End-to-end CLI: `ntrace analyze` as a real process, in table and JSON form, on files and directories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from helpers import write_trace, x
from ntrace.cli import main


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ntrace", *args], capture_output=True, text=True, timeout=120)


def _two_traces(root: Path) -> None:
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    write_trace(root / "a" / "trace.json", [x("aten::mul", "cpu_op", 0, 5), x("k", "kernel", 6, 2, pid=0, tid=0)])
    write_trace(root / "b" / "rank0.pt.trace.json.gz", [x("aten::add", "cpu_op", 0, 7)], gz=True)
    (root / "b" / "capture.json").write_text('{"variant": "b"}')  # not a trace: ignored


def test_analyze_json_contract_on_directory(tmp_path: Path) -> None:
    _two_traces(tmp_path)
    proc = _run("analyze", str(tmp_path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "ntrace.analysis/3" and doc["warnings"] == []
    assert [Path(p["trace"]).name for p in doc["profiles"]] == ["trace.json", "rank0.pt.trace.json.gz"]
    first = doc["profiles"][0]
    assert first["events"] == 2 and first["window_us"] == 8.0
    assert [lane["lane"] for lane in first["lanes"]] == ["framework", "device", "runtime_api", "hardware", "other"]
    assert first["hardware_tracks"] == [{"track": "device 0", "busy_us": 2.0, "idle_us": 0.0, "span_us": 2.0, "gaps": 0, "idle_share": 0.0}]
    assert set(first["gaps"]) == {"hardware_idle", "launch_latency", "queue_delay"}
    assert "share" in first["gaps"]["hardware_idle"] and "share" not in first["gaps"]["launch_latency"]
    assert set(first["gaps"]["hardware_idle"]) >= {"count", "total_us", "p50_us", "p90_us", "max_us"}


def test_analyze_table_has_one_section_per_trace(tmp_path: Path) -> None:
    _two_traces(tmp_path)
    result = CliRunner().invoke(main, ["analyze", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.count("== ") == 2
    assert "Lanes" in result.output and "Dispatch gaps" in result.output and "5.000us" in result.output


def test_missing_path_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = _run("analyze", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: {tmp_path / 'nope'}: does not exist"]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_every_command_maps_ntrace_errors_to_one_line() -> None:
    unwrapped = [name for name, cmd in main.commands.items() if not hasattr(cmd.callback, "__wrapped__")]
    assert unwrapped == [], f"commands without @_fail_cleanly: {unwrapped}"


def test_lanes_command_prints_the_table() -> None:
    result = CliRunner().invoke(main, ["lanes"])
    assert result.exit_code == 0 and "privateuse1_driver" in result.output and "hardware" in result.output


def test_analyze_names_variants_from_the_capture_manifest(tmp_path: Path) -> None:
    _two_traces(tmp_path)
    (tmp_path / "a" / "capture.json").write_text('{"schema": "ntrace.capture/1", "variant": "fused"}')
    doc = json.loads(_run("analyze", str(tmp_path), "--format", "json").stdout)
    assert [p["variant"] for p in doc["profiles"]] == ["fused", "b"]
    text = CliRunner().invoke(main, ["analyze", str(tmp_path)]).output
    assert "== fused: " in text and "== b: " in text


def test_entry_point_keeps_exit_codes_output_and_atexit_handlers(tmp_path: Path) -> None:
    """`run()` ends the process without the interpreter's teardown: every status, all output and atexit handlers survive."""
    _two_traces(tmp_path)
    code = (
        "import atexit, sys\n"
        "from ntrace.cli import run\n"
        "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
        "sys.argv = ['ntrace', *sys.argv[1:]]\n"
        "run()\n"
    )

    def entry(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)

    ok = entry("analyze", str(tmp_path), "--format", "json")
    assert ok.returncode == 0 and len(json.loads(ok.stdout)["profiles"]) == 2  # the whole JSON, flushed
    assert ok.stderr.endswith("atexit ran\n")
    missing = entry("analyze", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "atexit ran" in missing.stderr
    assert entry("analyze", "--no-such-option").returncode == 2  # click's usage error
    assert entry("--version").stdout.startswith("ntrace, version")
    gate = entry("diff", str(tmp_path / "b"), str(tmp_path / "a"), "--fail-above", "1")  # device time grows from 0: the gate fails
    assert gate.returncode == 1 and "fail: device time grew" in gate.stderr
    assert ok.stdout == _run("analyze", str(tmp_path), "--format", "json").stdout  # python -m ntrace uses the same entry


def test_help_summaries_are_whole_sentences_with_examples_and_exit_codes() -> None:
    runner = CliRunner()
    top = runner.invoke(main, ["--help"], terminal_width=80).output
    assert "..." not in top.split("Commands:")[1]
    for code in ("0 ", "1 ", "2 ", "130", "143"):
        assert f"\n    {code}" in top, code
    for name, command in main.commands.items():
        summary = command.get_short_help_str(limit=60)
        assert summary.endswith(".") and not summary.endswith("..."), name
        assert f"  {name.ljust(9)}  {summary}" in top, name
        page = runner.invoke(main, [name, "--help"], terminal_width=80).output
        assert "Examples:\n    ntrace " + name in page, name
