"""Directories of many traces: every command counts traces done for the progress bar, and --jobs gives the same results in chunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import write_trace, x
from ntrace.io.progress import reporting
from ntrace.workflows.analyze import analyze, chunk_size
from ntrace.workflows.compare import compare
from ntrace.workflows.convert import convert


@pytest.fixture
def many(tmp_path: Path) -> Path:
    """Nine tiny traces in one folder."""
    (tmp_path / "run").mkdir()
    for i in range(9):
        write_trace(tmp_path / "run" / f"rank{i}.pt.trace.json", [x("aten::mm", "cpu_op", 10 * i, 5 + i), x("k", "kernel", 10 * i + 1, 2, pid=0, tid=7)])
    return tmp_path / "run"


def _counts(run: object, stage: str) -> list[tuple[int, int | None]]:
    """The (done, total) reports of `stage` while `run()` runs."""
    seen: list[tuple[int, int | None]] = []
    with reporting(lambda s, done, total, unit: seen.append((done, total)) if s == stage else None):
        run()  # type: ignore[operator]
    return seen


@pytest.mark.parametrize("jobs", [1, 3])
def test_analyze_counts_every_trace_and_jobs_change_nothing(many: Path, jobs: int) -> None:
    seen = _counts(lambda: analyze(many, jobs=jobs), "analyzing traces")
    assert seen == [(i, 9) for i in range(1, 10)]
    serial, parallel = analyze(many).summaries, analyze(many, jobs=jobs).summaries
    assert [s.path for s in serial] == [s.path for s in parallel]
    assert all(a.lanes.equals(b.lanes) and a.op_groups.equals(b.op_groups) for a, b in zip(serial, parallel))


def test_compare_and_convert_count_their_traces(many: Path, tmp_path: Path) -> None:
    assert _counts(lambda: compare([many]), "analyzing traces")[-1] == (9, 9)
    assert _counts(lambda: convert(many, tmp_path / "out"), "converting traces") == [(i, 9) for i in range(1, 10)]


def test_chunks_are_a_few_per_worker_and_never_empty() -> None:
    assert chunk_size(1, 4) == 1 and chunk_size(7, 2) == 1
    assert chunk_size(2000, 2) == 64 and chunk_size(400, 2) == 50


def _polars_threads() -> int:
    """A worker's Polars thread pool size."""
    import polars as pl

    return pl.thread_pool_size()


def test_workers_share_out_the_cores_for_polars_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of N workers gives Polars cores / N threads (at least 1); the parent's environment is left as it was, and a user's POLARS_MAX_THREADS wins."""
    import os

    from ntrace.workflows.analyze import cores, worker_pool

    monkeypatch.delenv("POLARS_MAX_THREADS", raising=False)
    with worker_pool(2) as pool:
        assert pool.submit(_polars_threads).result() == max(1, cores() // 2)
    assert "POLARS_MAX_THREADS" not in os.environ
    monkeypatch.setenv("POLARS_MAX_THREADS", "3")
    with worker_pool(2) as pool:
        assert pool.submit(_polars_threads).result() == 3
    assert os.environ["POLARS_MAX_THREADS"] == "3"
