"""Discovery of traces by content: a Kineto trace not named *trace*.json is found however long its header is."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from helpers import x
from ntrace.io.discover import find_traces

DATA = Path(__file__).parents[1] / "data" / "kineto"


def _kineto(path: Path, ranks: int, gz: bool = False) -> Path:
    """A Kineto-shaped trace whose distributedInfo lists `ranks` ranks in each of 10 process groups, ahead of traceEvents (as Kineto writes it)."""
    groups = [{"pg_name": str(g), "pg_desc": "default_pg", "pg_size": ranks, "ranks": list(range(ranks))} for g in range(10)]
    doc = {
        "schemaVersion": 1, "deviceProperties": [], "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": ranks, "pg_config": groups},
        "traceEvents": [x("aten::mm", "cpu_op", 0, 5), x("aten::add", "cpu_op", 6, 2)],
    }  # fmt: skip
    data = json.dumps(doc, indent=2).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


@pytest.mark.parametrize("gz", [False, True], ids=["json", "gz"])
def test_a_trace_whose_header_is_longer_than_the_sniff_is_found(tmp_path: Path, gz: bool) -> None:
    path = _kineto(tmp_path / ("rank_3.json.gz" if gz else "rank_3.json"), ranks=300, gz=gz)
    text = gzip.decompress(path.read_bytes()) if gz else path.read_bytes()
    assert text.index(b'"traceEvents"') > 16_000  # far past the first 4 KiB
    assert find_traces(tmp_path) == [path]


def test_the_real_cpu_trace_under_another_name_is_found_and_analyzed(tmp_path: Path) -> None:
    path = tmp_path / "rank-34.json.gz"  # the public trace's header (300 ranks' process groups) runs past 16 KB
    shutil.copy(DATA / "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", path)
    assert find_traces(tmp_path) == [path]
    run = subprocess.run([sys.executable, "-m", "ntrace", "analyze", str(tmp_path), "--format", "json"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    events = len([e for e in orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"] if e.get("ph") == "X"])
    (profile,) = orjson.loads(run.stdout)["profiles"]
    assert profile["trace"] == str(path) and profile["events"] == events


def test_json_that_only_shares_a_key_with_kineto_is_not_a_trace(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"schemaVersion": 2, "settings": {"a": 1}}))
    (tmp_path / "devices.json").write_text(json.dumps({"deviceProperties": [{"name": "x"}]}))
    assert find_traces(tmp_path) == []
