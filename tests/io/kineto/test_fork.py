"""The forked decoding helper (ntrace.io.kineto._fork) of the msgspec path: the same events as decoding alone, whatever the helper does, and no fork once Polars' threads run.

Each case runs in a fresh interpreter: this test process has long started Polars' thread pool,
so it may not fork (and the helper would rightly refuse).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import write_trace, x

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    sys.platform != "linux" or len(os.sched_getaffinity(0)) < 2, reason="the helper forks on Linux with two or more cores only"
)]

#: Decodes spec["path"] with the helper forced (SPLIT_MIN 0, forks counted, the helper sabotaged as asked), then alone, and prints what a test checks ("windowed": the windowed decoder gave the columns, no fallback did).
_DRIVER = r"""
import json, os, re, sys, time
spec = json.loads(sys.argv[1])
import ntrace.io.kineto._fast as batches
import ntrace.io.kineto._fork as forked
from ntrace.io.kineto import read_kineto

forked.SPLIT_MIN = 0
parent, forks, real_fork = os.getpid(), [], os.fork
def counting_fork():
    pid = real_fork()
    forks.append(pid)
    return pid
os.fork = counting_fork

sabotage, real_part = spec.get("sabotage"), batches._part_columns
def part(text, piece, stage=None, whole=None):
    if os.getpid() != parent:
        if sabotage == "none":
            return None
        if sabotage == "raise":
            raise RuntimeError("helper broke")
        if sabotage == "hang":
            time.sleep(600)
    return real_part(text, piece, stage, whole)
batches._part_columns = part
if sabotage == "garbage":  # the helper says done, but what it wrote is no Arrow IPC
    import polars as pl
    real_write = pl.DataFrame.write_ipc
    def write_ipc(self, fh, **kw):
        if os.getpid() == parent:
            return real_write(self, fh, **kw)
        fh.write(b"not arrow")
    pl.DataFrame.write_ipc = write_ipc
if sabotage == "no_fork":  # no process left to fork
    def counting_fork():
        forks.append(None)
        raise BlockingIOError(11, "Resource temporarily unavailable")
    os.fork = counting_fork
if spec.get("cut_in_string"):  # a cut inside a string value: the parent's last window cannot end there
    forked.next_cut = lambda text, start, end: re.compile(rb"\}  ,  \{").search(text, start, end)

windowed, real_columns = [], batches.columns
def columns(*args):
    cols = real_columns(*args)  # raises windows.Uncut when it gave up on windows
    windowed.append(cols is not None)
    return cols
batches.columns = columns

began = time.monotonic()
helped = read_kineto(spec["path"])
took = time.monotonic() - began
helped_windowed = windowed == [True]
try:
    left = os.waitpid(-1, os.WNOHANG)[0]  # a child not reaped: 0 while it runs, its pid once it exited
except ChildProcessError:
    left = None
os.environ["NTRACE_FORK"] = "0"
alone = read_kineto(spec["path"])
print(json.dumps({
    "forks": len(forks),
    "windowed": helped_windowed,
    "same": helped.events.equals(alone.events) and helped.meta == alone.meta and helped.warnings == alone.warnings,
    "rows": helped.events.height,
    "took": took,
    "left": left,
}))
"""


def _env() -> dict[str, str]:
    """This process's environment for a case: the helper allowed, and the native parser off (the helper decodes for the msgspec path only)."""
    return {**{k: v for k, v in os.environ.items() if k != "NTRACE_FORK"}, "NTRACE_NATIVE": "0"}


def _decode_both(path: Path, **spec: Any) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps({"path": str(path), **spec})],
        capture_output=True, text=True, timeout=120, env=_env(),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _events(n: int, name: str = "aten::mm") -> list[dict[str, Any]]:
    """Nested host events with shapes and links, some text pids: every column the helper sends back."""
    events = []
    for i in range(n):
        events.append(x(name, "cpu_op", 10.0 * i, 8.0, pid="Spans" if i % 7 == 0 else 1, **{"External id": i, "Input Dims": [[i % 3, 4]]}))
        events.append(x("cudaLaunchKernel", "cuda_runtime", 10.0 * i + 1, 2.0, tid=2, correlation=i))
    return events


def test_real_traces_decode_the_same_with_the_helper(shared_trace: Path) -> None:
    result = _decode_both(shared_trace)
    assert result["forks"] == 1 and result["windowed"], "no helper was forked: the comparison would not test it"
    assert result["same"] and result["rows"] > 0
    assert result["left"] is None  # the helper was reaped


def test_helper_that_gives_nothing_raises_or_writes_garbage_leaves_its_part_to_the_parent(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", _events(4000))
    for sabotage in ("none", "raise", "garbage"):
        result = _decode_both(trace, sabotage=sabotage)
        assert result["forks"] == 1 and result["windowed"] and result["same"] and result["rows"] == 8000 and result["left"] is None, sabotage


def test_failed_fork_decodes_alone(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", _events(4000))
    result = _decode_both(trace, sabotage="no_fork")
    assert result["forks"] == 1 and result["windowed"] and result["same"] and result["rows"] == 8000 and result["left"] is None


def test_helper_that_hangs_is_killed_and_its_part_decoded_here(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", _events(4000))
    result = _decode_both(trace, sabotage="hang")
    assert result["forks"] == 1 and result["windowed"] and result["same"] and result["rows"] == 8000 and result["left"] is None
    assert result["took"] < 30  # waited about a second (twice the parent's own part, at least 1 s), not the helper's 600


def test_cut_inside_a_string_is_caught_and_everything_decoded_here(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", _events(4000, name="weird}  ,  {name"))
    result = _decode_both(trace, cut_in_string=True)
    assert result["forks"] == 1 and result["windowed"] and result["same"] and result["rows"] == 8000 and result["left"] is None


def test_no_fork_once_polars_threads_run_or_when_turned_off_or_in_a_jobs_worker() -> None:
    code = (
        "import json, os; import ntrace.io.kineto._fork as forked; import polars as pl\n"
        "fresh = forked._can_fork()\n"
        "os.environ['NTRACE_FORK'] = '0'; off = forked._can_fork(); del os.environ['NTRACE_FORK']\n"
        "pl.Series([3, 1, 2]).sort()\n"
        "started = forked._can_fork()\n"
        "forked.in_worker()\n"
        "print(json.dumps([fresh, off, started, forked._can_fork()]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert json.loads(done.stdout) == [True, False, False, False], done.stderr


def test_cli_analyze_forks_a_helper_and_prints_the_same(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", _events(3000))
    code = (
        "import os, sys; import ntrace.io.kineto._fork as forked; forked.SPLIT_MIN = 0\n"
        "real = os.fork\n"
        "def fork():\n"
        "    pid = real()\n"
        "    if pid: sys.stderr.write('forked\\n')\n"
        "    return pid\n"
        "os.fork = fork\n"
        "from ntrace.cli import run; sys.argv = ['ntrace', 'analyze', '--format', 'json', sys.argv[1]]; run()"
    )

    def cli(fork: str) -> subprocess.CompletedProcess[str]:
        env = {**_env(), "NTRACE_FORK": fork}
        return subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True, text=True, timeout=120, env=env)

    helped, alone = cli("1"), cli("0")
    assert helped.returncode == alone.returncode == 0
    assert helped.stderr.count("forked") == 1 and "forked" not in alone.stderr
    assert json.loads(helped.stdout) == json.loads(alone.stdout)
