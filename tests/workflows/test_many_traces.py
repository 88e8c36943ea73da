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


def test_auto_jobs_give_workers_to_many_small_traces_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A count is kept (at most one worker per trace); "auto" gives one worker per core to 16 or more traces of up to 64 MiB (a gzip weighed at 10×), else none."""
    from ntrace.workflows import analyze as module
    from ntrace.workflows.analyze import AUTO_MAX_BYTES, AUTO_MIN_TRACES, workers_for

    monkeypatch.setattr(module, "cores", lambda: 4)
    small = []
    for i in range(AUTO_MIN_TRACES):
        small.append(tmp_path / f"t{i}.json")
        small[-1].write_bytes(b"{}")
    assert workers_for(3, small) == 3 and workers_for(3, small[:2]) == 2 and workers_for(1, small) == 1
    assert workers_for("auto", small) == 4
    assert workers_for("auto", small[:-1]) == 1  # too few to pay for the workers' start-up
    big = tmp_path / "big.json"
    with big.open("wb") as fh:
        fh.truncate(AUTO_MAX_BYTES + 1)  # sparse: no disk used
    assert workers_for("auto", [*small, big]) == 1
    packed = tmp_path / "packed.json.gz"
    with packed.open("wb") as fh:
        fh.truncate(AUTO_MAX_BYTES // 10 + 1)
    assert workers_for("auto", [*small, packed]) == 1
    assert workers_for("auto", [*small, tmp_path / "gone.json"]) == 4  # unreadable: its error comes from the analysis
    monkeypatch.setattr(module, "cores", lambda: 1)
    assert workers_for("auto", small) == 1


def test_auto_jobs_run_workers_and_change_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's default (--jobs auto) on 16 tiny traces starts one worker per core and prints what one process prints."""
    from click.testing import CliRunner

    from ntrace import cli
    from ntrace.workflows import analyze as module

    for i in range(16):
        write_trace(tmp_path / f"rank{i}.pt.trace.json", [x("aten::mm", "cpu_op", 10 * i, 5 + i), x("k", "kernel", 10 * i + 1, 2, pid=0, tid=7)])
    monkeypatch.setattr(module, "cores", lambda: 2)
    pools: list[int] = []
    real = module.worker_pool

    def recorded(workers: int):  # type: ignore[no-untyped-def]
        pools.append(workers)
        return real(workers)

    monkeypatch.setattr(module, "worker_pool", recorded)
    runner = CliRunner()
    auto = runner.invoke(cli.main, ["analyze", str(tmp_path), "--format", "json", "-q"])
    assert auto.exit_code == 0, auto.output
    assert pools == [2]
    serial = runner.invoke(cli.main, ["analyze", str(tmp_path), "--format", "json", "-q", "-j", "1"])
    assert pools == [2] and serial.output == auto.output


@pytest.mark.parametrize("value", ["0", "-2", "x", "1.5"])
def test_jobs_must_be_a_count_or_auto(value: str, many: Path) -> None:
    from click.testing import CliRunner

    from ntrace import cli

    result = CliRunner().invoke(cli.main, ["analyze", str(many), "-j", value])
    assert result.exit_code == 2 and "neither a count of 1 or more nor 'auto'" in result.output


@pytest.mark.parametrize("command", ["compare", "diff"])
def test_compare_and_diff_take_jobs_and_print_the_same(command: str, many: Path) -> None:
    """compare and diff analyze their traces in --jobs workers too: -j 2 prints what -j 1 prints."""
    from click.testing import CliRunner

    from ntrace import cli

    args = [command, str(many), *([str(many)] if command == "diff" else []), "--format", "json"]
    runner = CliRunner()
    serial, parallel = runner.invoke(cli.main, [*args, "-j", "1"]), runner.invoke(cli.main, [*args, "-j", "2"])
    assert serial.exit_code == 0 and parallel.exit_code == 0, (serial.output, parallel.output)
    assert parallel.output == serial.output


def test_compare_raises_the_first_trace_that_cannot_be_analyzed(many: Path) -> None:
    from ntrace.errors import NtraceError

    (many / "rank3.pt.trace.json").write_text("{not json")
    (many / "rank5.pt.trace.json").write_text("{not json either")
    with pytest.raises(NtraceError) as caught:
        compare([many], jobs=2)
    assert "rank3.pt.trace.json" in str(caught.value)
