"""--window and --steps: the figures of a part of a trace equal the oracle's on the events it cuts by the same written rule (docs/definitions.md section 12)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from helpers import shared_trace_files
from ntrace import InputError, Part, load
from oracle import cut_events, load_trace_events, read_events, step_number, step_windows
from test_oracle_agreement import FIXTURES, X, agree, at, write


def thirds(path: Path) -> Part:
    """From the start of the event a third of the way through the trace (by start) to that of the one two thirds through, in ns from the trace's start (the oracle's reader)."""
    starts = sorted(e.ts for e in read_events(load_trace_events(path))[0])
    n = len(starts)
    return Part(window=(starts[n // 3] - starts[0], starts[2 * n // 3] - starts[0] + 1))


def middle_steps(path: Path) -> Part | None:
    """The steps of the trace but its first and last (all of them when there are fewer than three); None without steps."""
    events, _ = read_events(load_trace_events(path))
    numbers = sorted(n for w in step_windows(events) if (n := step_number(w.name)) is not None)
    if not numbers:
        return None
    inner = numbers[1:-1] or numbers
    return Part(steps=(inner[0], inner[-1]))


@pytest.mark.slow
@pytest.mark.parametrize("path", shared_trace_files(), ids=lambda p: p.name.split("__")[0])
def test_window_of_real_traces(path: Path) -> None:
    want = agree(path, part=thirds(path))
    assert want["events"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("path", shared_trace_files(), ids=lambda p: p.name.split("__")[0])
def test_steps_of_real_traces(path: Path) -> None:
    part = middle_steps(path)
    if part is None:
        pytest.skip("no profiler steps")
    want = agree(path, part=part)
    assert want["steps"]


@pytest.mark.parametrize("path", FIXTURES[:3], ids=lambda p: p.parts[-4])
def test_fixture_parts(path: Path) -> None:
    agree(path, part=thirds(path))
    if (part := middle_steps(path)) is not None:
        agree(path, part=part)


def launch_trace(tmp_path: Path) -> Path:
    """Two steps; step 1 launches a kernel that runs during step 2, step 2 one that runs after every step."""
    events = [
        X("ProfilerStep#1", at("0"), 100, "user_annotation"),
        X("aten::mm", at("10"), 20),
        X("cudaLaunchKernel", at("12"), 3, "cuda_runtime", correlation=1),
        X("ProfilerStep#2", at("100"), 100, "user_annotation"),
        X("gemm", at("120"), 50, "kernel", pid=0, tid=7, correlation=1, device=0, stream=7),
        X("aten::mm", at("110"), 20),
        X("cudaLaunchKernel", at("112"), 3, "cuda_runtime", correlation=2),
        X("gemm", at("250"), Decimal("40.5"), "kernel", pid=0, tid=7, correlation=2, device=0, stream=7),
        X("memset", at("150"), 5, "gpu_memset", pid=0, tid=7),  # launched by nothing: kept where it starts
    ]
    return write(tmp_path / "t.json", events)


def test_device_work_follows_the_call_that_launched_it(tmp_path: Path) -> None:
    path = launch_trace(tmp_path)
    second = load(path, part=Part(steps=(2, 2)))
    kernels = second.complete.filter(second.complete["cat"] == "kernel")
    assert kernels["ts"].to_list() == [int(at("250") * 1000)]  # step 1's kernel ran in step 2's window but is step 1's work
    assert "memset" in second.complete["name"].to_list()
    assert load(path, part=Part(window=(0, 100_000))).kernels["calls"].sum() == 1  # step 1's kernel, after the window
    agree(path, part=Part(steps=(2, 2)))
    agree(path, part=Part(window=(50_000, None)))
    assert cut_events(load_trace_events(path), steps=(1, 1))[4] is not None  # the oracle keeps it too


def test_parts_that_hold_nothing_are_errors(tmp_path: Path) -> None:
    path = launch_trace(tmp_path)
    with pytest.raises(InputError, match=r"--steps 3-4: no profiler step in that range \(its steps are 1–2\)"):
        load(path, part=Part(steps=(3, 4)))
    with pytest.raises(InputError, match="no complete event"):
        load(path, part=Part(window=(10**9, None)))


@pytest.mark.parametrize(
    ("text", "ns"), [("250", 250_000), ("1.5ms", 1_500_000), ("2s", 2_000_000_000), ("800ns", 800), ("3µs", 3000), ("0.0015us", 1), (" 7 us ", 7000)]
)
def test_times_people_write(text: str, ns: int) -> None:
    from ntrace.units import parse_time

    assert parse_time(text) == ns


@pytest.mark.parametrize("text", ["", "abc", "-5", "1.5 minutes", "nan", "inf"])
def test_times_that_are_not(text: str) -> None:
    from ntrace.units import parse_time

    with pytest.raises(ValueError):
        parse_time(text)


def test_cli_window_and_steps(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from ntrace.cli import main

    path = launch_trace(tmp_path)
    runner = CliRunner()
    whole = json.loads(runner.invoke(main, ["analyze", str(path), "--format", "json"]).output)["profiles"][0]
    for args, events in ((["--steps", "2"], 5), (["--steps", "1-2"], whole["events"]), (["--window", ":100"], 4), (["--window", "0.1ms:"], 5)):
        result = runner.invoke(main, ["analyze", str(path), "--format", "json", *args])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)["profiles"][0]
        assert doc["events"] == events, args
        assert any(args[0] in w for w in doc["warnings"])
    for args in (["--window", "5"], ["--window", "9:3"], ["--window", "x:"], ["--steps", "3-1"], ["--steps", "a"], ["--steps", "1", "--window", "0:1"]):
        result = runner.invoke(main, ["analyze", str(path), *args])
        assert result.exit_code == 2, args
    result = runner.invoke(main, ["analyze", str(path), "--steps", "7"])
    assert result.exit_code == 2 and result.output.strip().splitlines() == [f"error: {path}: --steps 7-7: no profiler step in that range (its steps are 1–2)"]


def test_every_command_that_reads_a_trace_takes_a_part(tmp_path: Path) -> None:
    """--steps and --window on export, report, compare and diff read the same part analyze does: the same events, op table and device time."""
    import json

    from click.testing import CliRunner

    from ntrace.cli import main

    path = launch_trace(tmp_path)
    runner = CliRunner()

    def ok(*args: str) -> str:
        result = runner.invoke(main, [*args])
        assert result.exit_code == 0, (args, result.output)
        return result.stdout

    for part, cut in ((["--steps", "2"], Part(steps=(2, 2))), (["--window", ":100"], Part(window=(0, 100_000)))):
        profile = load(path, part=cut)
        events, device_us = profile.complete.height, profile.device_ns / 1000
        assert json.loads(ok("analyze", str(path), "--format", "json", *part))["profiles"][0]["events"] == events < load(path).complete.height
        ok("export", str(path), "--perfetto", str(tmp_path / "out.json"), "-q", *part)
        exported = json.loads((tmp_path / "out.json").read_text())["traceEvents"]
        assert sorted(e["name"] for e in exported if e.get("ph") == "X" and e.get("pid") != "ntrace") == sorted(profile.complete["name"].to_list()), part
        ok("report", str(path), "-o", str(tmp_path / "r.html"), "-q", *part)
        assert f"{events} complete events over a" in (tmp_path / "r.html").read_text(), part
        (row,) = json.loads(ok("compare", str(path), "--format", "json", *part))["variants"]
        assert row["device_time_us"] == device_us, part
        same = json.loads(ok("diff", str(path), str(path), "--format", "json", *part))
        assert same["device_time_us"] == {"base": device_us, "test": device_us} and {o["status_cpu"] for o in same["ops"]} - {None} == {"unchanged"}, part
    result = runner.invoke(main, ["report", str(path), "-o", str(tmp_path / "none.html"), "--steps", "7"])
    assert result.exit_code == 2 and result.output.strip().splitlines() == [f"error: {path}: --steps 7-7: no profiler step in that range (its steps are 1–2)"]
    assert not (tmp_path / "none.html").exists()
