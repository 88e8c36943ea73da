"""Ctrl-C and SIGTERM on a real `python -m ntrace` process: one line on stderr, exit 130 / 143, no traceback, no temporary file left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from helpers import REPO


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 200k-event synthetic trace: several seconds to convert on a small machine, so a signal finds the run still working."""
    path = tmp_path_factory.mktemp("big") / "big.pt.trace.json"
    subprocess.run([sys.executable, str(REPO / "scripts" / "synth_trace.py"), str(path), "--events", "200000"], check=True, capture_output=True, timeout=300)
    return path


def _signal_when(args: list[str], ready: Callable[[int], bool], signum: int) -> tuple[int, str]:
    """Start `python -m ntrace ARGS`, poll (1 ms) until `ready(pid)`, send `signum`; the exit code and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "ntrace", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while not ready(proc.pid):
            assert proc.poll() is None, f"ended (exit {proc.returncode}) before it was ready for the signal: {proc.stderr.read() if proc.stderr else ''}"
            time.sleep(0.001)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _writing(out: Path) -> Callable[[int], bool]:
    """Ready once an atomic write's temporary file is in `out`: the signal lands in the middle of writing the Parquet file."""
    return lambda pid: out.is_dir() and any(n.endswith(".part") for n in os.listdir(out))


@pytest.mark.parametrize(("signum", "code", "line"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "interrupted (SIGTERM)")])
def test_signal_while_writing_removes_the_temporary_file(big_trace: Path, tmp_path: Path, signum: int, code: int, line: str) -> None:
    out = tmp_path / "parquet"
    out.mkdir()
    exit_code, err = _signal_when(["convert", str(big_trace), "-o", str(out)], _writing(out), signum)
    assert (exit_code, err) == (code, line + "\n")
    assert list(out.iterdir()) == []


def test_ctrl_c_while_reading(big_trace: Path) -> None:
    """Ctrl-C while the trace is being read (the file is open in the process): the same one line, exit 130."""

    def reading(pid: int) -> bool:
        with_fds = Path(f"/proc/{pid}/fd")
        try:
            return any(os.readlink(with_fds / fd) == str(big_trace) for fd in os.listdir(with_fds))
        except OSError:  # a descriptor closed between listing and reading it
            return False

    if not Path(f"/proc/{os.getpid()}/fd").is_dir():
        pytest.skip("needs /proc to see that the trace is open")
    exit_code, err = _signal_when(["analyze", str(big_trace), "-q"], reading, signal.SIGINT)
    assert (exit_code, err) == (130, "interrupted\n")


def test_an_interrupt_polars_reports_as_its_own_error_still_ends_the_run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C whose handler runs inside Polars' call back into Python (a write to a file object) comes back as Polars' ComputeError; the run ends as interrupted."""
    import io

    import polars as pl

    from ntrace import cli

    monkeypatch.setattr(cli, "_SIGNALLED", [])

    class Interrupted(io.BytesIO):
        def write(self, data: object) -> int:
            cli._on_sigint(signal.SIGINT, None)  # what Python runs here when the signal arrives during the write
            return 0

    @cli._fail_cleanly
    def convert() -> None:
        pl.DataFrame({"a": list(range(1000))}).write_parquet(Interrupted())

    with pytest.raises(SystemExit) as stopped:
        convert()
    assert stopped.value.code == 130 and capsys.readouterr().err == "interrupted\n"


#: A child running the console entry's `analyze` whose handler of `signum` runs inside a finalizer, where Python cannot raise (it prints "Exception ignored").
_SIGNAL_IN_A_FINALIZER = """
import signal, sys
from ntrace.workflows import analyze
class Finalized:
    def __del__(self):
        signal.getsignal({signum})({signum}, None)
summarize = analyze.summarize
def interrupted_summarize(*args, **kwargs):
    Finalized()  # collected at once: the handler's exception is unraisable
    return summarize(*args, **kwargs)
analyze.summarize = interrupted_summarize
sys.argv = ["ntrace", "analyze", sys.argv[1], "-q"]
from ntrace.cli import run
run()
"""


@pytest.mark.parametrize(("signum", "code", "line"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "interrupted (SIGTERM)")])
def test_signal_in_a_finalizer_still_stops_the_run(tmp_path: Path, signum: int, code: int, line: str) -> None:
    """An interrupt Python could only report as "Exception ignored" (Ctrl-C was lost that way) is delivered again and ends the run."""
    from helpers import write_trace, x

    trace = write_trace(tmp_path / "t.pt.trace.json", [x("aten::mm", "cpu_op", 10 * i, 5) for i in range(50)])
    script = _SIGNAL_IN_A_FINALIZER.replace("{signum}", str(int(signum)))
    proc = subprocess.run([sys.executable, "-c", script, str(trace)], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (code, line + "\n")
