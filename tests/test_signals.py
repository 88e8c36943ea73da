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
