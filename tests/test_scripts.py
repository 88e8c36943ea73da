"""The set-up scripts: scripts/venv.sh keeps a virtual environment made by the same Python and makes it again when another Python (or none that runs) made it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import REPO


def _venv(venv: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable, "VENV": str(venv)}
    return subprocess.run(["bash", "-c", "source scripts/venv.sh"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_a_venv_of_another_python_is_made_again_and_a_good_one_kept(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stale = venv / "bin" / "python"
    stale.write_text("#!/bin/sh\necho cpython /usr/old 3 9 0\n")  # a venv of Python 3.9, say
    stale.chmod(0o755)
    first = _venv(venv)
    assert first.returncode == 0, first.stderr
    assert "recreating" in first.stderr and "cpython /usr/old 3 9 0" in first.stderr
    version = subprocess.run([str(venv / "bin" / "python"), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True).stdout
    assert version.strip() == str(sys.version_info[:2])
    marker = venv / "kept"
    marker.write_text("")
    again = _venv(venv)
    assert again.returncode == 0 and again.stderr == "" and marker.exists()  # made by this Python: kept as it is


def test_a_venv_of_another_implementation_of_the_same_version_is_made_again(tmp_path: Path) -> None:
    """Same installation path and version, but PyPy (say) made it: its compiled wheels would not load here."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stale = venv / "bin" / "python"
    version = " ".join(str(v) for v in sys.version_info[:3])
    other = "pypy" if sys.implementation.name != "pypy" else "cpython"
    stale.write_text(f"#!/bin/sh\necho {other} {sys.base_prefix} {version}\n")
    stale.chmod(0o755)
    made = _venv(venv)
    assert made.returncode == 0, made.stderr
    assert "recreating" in made.stderr and f"{other} {sys.base_prefix}" in made.stderr
    who = subprocess.run([str(venv / "bin" / "python"), "-c", "import sys; print(sys.implementation.name)"], capture_output=True, text=True).stdout
    assert who.strip() == sys.implementation.name


def test_stages_names_only_what_a_profile_computes_and_runs() -> None:
    """scripts/stages.py times Profile results by name: one renamed or removed there would stop it."""
    trace = REPO / "tests" / "data" / "kineto" / "trace_compare__base__base.json.gz"
    run = subprocess.run([sys.executable, "scripts/stages.py", str(trace), "--repeat", "1"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "nesting (op tree)" in run.stdout and "analysis + render, summed" in run.stdout


#: A child that touches `MiB` MiB, then exits: its own peak RSS is about that plus the interpreter.
_GROW = "import sys; b = bytearray(int(sys.argv[1]) << 20); b[::4096] = b'x' * len(b[::4096])"

#: In a fresh interpreter: grow to 600 MiB and free it, then measure children with scripts/bench.py's run().
_MEASURE = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("bench", sys.argv[1])
bench = sys.modules["bench"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
big = bytearray(600 << 20); big[::4096] = b"x" * len(big[::4096]); del big
small = bench.run([sys.executable, "-c", {_GROW!r}, "1"])
grown = bench.run([sys.executable, "-c", {_GROW!r}, "200"])
print(small.rss_mib, grown.rss_mib, grown.seconds, grown.cpu)
try:
    bench.run([sys.executable, "-c", "raise SystemExit(3)"])
except SystemExit as exc:
    print("failed:", "failed (3)" in str(exc))
"""


def test_bench_reports_each_commands_own_peak_rss_not_the_benchmarks() -> None:
    """A vforked child inherits its parent's peak as its ru_maxrss: the benchmark, which grows as it reads tiles, must not lend its peak to the commands it measures."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(REPO / "scripts" / "bench.py")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    figures, failed = out.stdout.splitlines()
    small, grown, seconds, cpu = map(float, figures.split())
    assert small < 100  # an interpreter touching 1 MiB, not the 600 MiB its grandparent once held
    assert 200 <= grown < 300 and seconds > 0 and cpu > 0
    assert failed == "failed: True"
