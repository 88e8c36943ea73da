"""ntrace ranks and analyze on a Dask cluster (--executor): a LocalCluster of two worker processes gives exactly the local results; an unreachable scheduler is a one-line error."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import REAL_TRACES, REPO
from ntrace.cli import main
from ntrace.workflows import distributed as dist
from ntrace.workflows.analyze import analyze
from ntrace.workflows.ranks import ranks

distributed = pytest.importorskip("distributed")
SRC = REAL_TRACES / "nccl_parser_config__nccl_data.json.gz"
pytestmark = [pytest.mark.skipif(not SRC.exists(), reason=f"{SRC} is absent"), pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Dask cluster of two single-threaded worker processes (they import ntrace from this environment); its scheduler address."""
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as local:
        yield local.scheduler_address


@pytest.fixture(scope="module")
def rank_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four synthetic ranks from the real NCCL trace (scripts/make_ranks.py), rank 2 late before every all-reduce; an absolute path."""
    out = tmp_path_factory.mktemp("ranks").absolute()
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_ranks.py"), str(SRC), str(out), "--ranks", "4", "--offsets-seed", "3",
         "--delay-rank", "2", "--delay-us", "100", "--collectives", "AllReduce", "--manifest", str(out.parent / "manifest.json")],
        check=True, capture_output=True,
    )  # fmt: skip
    return out


def test_ranks_on_the_cluster_equal_the_local_run(cluster: str, rank_dir: Path) -> None:
    local = ranks([rank_dir])
    with dist.dask_executor(cluster) as executor:
        remote = ranks([rank_dir], executor=executor)
    for name in ("table", "stats", "outliers", "collectives", "stragglers"):
        assert getattr(remote, name).equals(getattr(local, name)), name
    assert (remote.lanes, remote.match_rule, remote.warnings) == (local.lanes, local.match_rule, local.warnings)
    assert local.table.height == 4 and local.stragglers.row(0, named=True)["rank"] == 2


def test_analyze_on_the_cluster_equals_the_local_run(cluster: str, rank_dir: Path) -> None:
    local = analyze(rank_dir)
    with dist.dask_executor(cluster) as executor:
        remote = analyze(rank_dir, executor=executor)
        one = analyze(rank_dir / "rank-1.trace.json", executor=executor)
    assert len(remote.summaries) == 4 and remote.all_warnings == local.all_warnings
    for a, b in zip(remote.summaries, local.summaries):
        assert a.path == b.path and a.steps.equals(b.steps) and a.lanes.equals(b.lanes) and a.communication.equals(b.communication)
    assert one.summaries[0].lanes.equals(local.summaries[1].lanes)


@pytest.mark.parametrize("command", ["ranks", "analyze"])
def test_cli_json_is_byte_identical(cluster: str, rank_dir: Path, command: str) -> None:
    here = CliRunner().invoke(main, [command, str(rank_dir), "--format", "json", "-q"])
    there = CliRunner().invoke(main, [command, str(rank_dir), "--format", "json", "-q", "--executor", cluster])
    assert here.exit_code == 0 and there.exit_code == 0, (here.output, there.output)
    assert there.stdout == here.stdout and there.stderr == here.stderr


def _closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["ranks", "analyze"])
def test_unreachable_scheduler_is_one_line_exit_2(rank_dir: Path, command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dist, "CONNECT_TIMEOUT", 2.0)
    address = f"tcp://127.0.0.1:{_closed_port()}"
    res = CliRunner().invoke(main, [command, str(rank_dir), "--executor", address])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith(f"error: {address}: cannot reach the Dask scheduler (") and res.stderr.count("\n") == 1
    assert res.stdout == ""
