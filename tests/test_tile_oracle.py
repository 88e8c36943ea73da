"""Exactness on tiles: every real trace enlarged by scripts/tile_trace.py, analyzed by ntrace and by the oracle, every figure equal.

The speed work keeps its output byte-identical on the vendored traces (tests/test_golden.py);
this checks the same figures on traces made larger the way scripts/bench.py makes them (copies
shifted in time with renumbered ids), so the paths taken only on large inputs — the decoding
helper, several joined window groups, Polars' multi-threaded queries — are checked too. The
CLI's JSON on each tile is also checked against the oracle's counts and totals.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, shared_trace_files
from test_oracle_agreement import agree

TILE = REPO / "scripts" / "tile_trace.py"
#: The MTIA training trace is 63 MiB per copy: one copy already takes the large paths, two would take minutes in the oracle.
ONE_COPY = ("mtia_trace_single_rank",)


def tile(source: Path, out: Path, copies: int) -> Path:
    """`source` tiled to `copies` copies at `out`."""
    subprocess.run([sys.executable, str(TILE), str(source), str(out), "--repeat", str(copies)], check=True, capture_output=True)
    return out


def cli_json(path: Path) -> dict:
    """`ntrace analyze --format json` of one trace, run as the CLI runs (its decoding helper included)."""
    done = subprocess.run([sys.executable, "-m", "ntrace", "analyze", "--format", "json", "-q", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)["profiles"][0]


@pytest.mark.slow
@pytest.mark.parametrize("source", shared_trace_files(), ids=lambda p: p.name.split("__")[0])
def test_tiles_agree_with_the_oracle(source: Path, tmp_path: Path) -> None:
    copies = 1 if source.name.startswith(ONE_COPY) else 3
    path = tile(source, tmp_path / "tile.json", copies)
    want = agree(path)
    got = cli_json(path)
    assert got["events"] == want["events"]
    lanes = {lane["lane"]: (lane["events"], lane["total_us"], lane["busy_us"]) for lane in got["lanes"]}
    assert lanes == {k: (v["events"], v["total"] / 1000, v["busy"] / 1000) for k, v in want["lanes"].items()}


@pytest.mark.slow
def test_one_process_decoding_gives_the_same_json(tmp_path: Path) -> None:
    """Decoded without the helper process (as in a worker), the MTIA tile's frames hold empty chunks, on which Polars' own `format` panicked; the JSON is the same."""
    (source,) = [p for p in shared_trace_files() if p.name.startswith(ONE_COPY)]
    path = tile(source, tmp_path / "tile.json", 1)
    alone = subprocess.run([sys.executable, "-m", "ntrace", "analyze", "--format", "json", "-q", str(path)], capture_output=True, text=True, env={**os.environ, "NTRACE_FORK": "0"})
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert json.loads(alone.stdout)["profiles"][0] == cli_json(path)
