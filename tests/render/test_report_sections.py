"""How the report draws many traces: sections in worker processes and on Polars' pool thread, in the order of the variants, all giving the very page one process draws."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import REAL_TRACES, REPO
from ntrace import analyze
from ntrace.cli import main
from ntrace.render import html as report

RMSNORM = REPO / "fixtures" / "rmsnorm"
SMALL = ("trace_compare__base__base.json.gz", "trace_compare__test__test.json.gz", "triton_example__triton_example.json.gz", "critical_path__cuda_event_sync__event_sync_trace.json.gz")


def _first_variant(path: Path, variants: list[Path]) -> int:
    """The rule _order follows, as a scan: the first variant that is the trace or a directory above it (len(variants) when none)."""
    for k, variant in enumerate(variants):
        if path == variant or path.is_relative_to(variant):
            return k
    return len(variants)


_PART = st.sampled_from(["a", "b", "c", "t.json"])
_PATH = st.builds(lambda absolute, parts: Path("/" if absolute else ".", *parts), st.booleans(), st.lists(_PART, max_size=4))


@settings(max_examples=300, deadline=None)
@given(traces=st.lists(_PATH, max_size=12), variants=st.lists(_PATH, max_size=8))
def test_traces_are_ordered_by_the_first_variant_holding_them(traces: list[Path], variants: list[Path]) -> None:
    analysis: Any = SimpleNamespace(summaries=[SimpleNamespace(path=p) for p in traces])
    comparison: Any = SimpleNamespace(variants=pl.DataFrame({"path": [str(v) for v in variants]}, schema={"path": pl.String}))
    expected = sorted(range(len(traces)), key=lambda i: (_first_variant(traces[i], variants), i))
    assert report._order(analysis, comparison) == expected


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of small real traces under two variant folders, one nested a level deeper."""
    root = tmp_path_factory.mktemp("many")
    for i, name in enumerate(SMALL):
        folder = root / ("first" if i % 2 else "second") / ("deep" if i == 3 else "")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(REAL_TRACES / name, folder / name)
    return root


@pytest.mark.parametrize("root", ["many", "rmsnorm"])
def test_sections_drawn_in_workers_make_the_same_page(root: str, many: Path) -> None:
    analysis = analyze(many if root == "many" else RMSNORM, timeline=True)
    assert len(analysis.summaries) >= 3
    assert report.render(analysis, jobs=2) == report.render(analysis, jobs=1)


def test_report_cli_writes_the_same_file_with_workers(many: Path, tmp_path: Path) -> None:
    pages = []
    for jobs in ("1", "2"):
        out = tmp_path / f"r{jobs}.html"
        result = CliRunner().invoke(main, ["report", str(many), "-o", str(out), "-j", jobs, "--title", "t"])
        assert result.exit_code == 0, result.output
        pages.append(out.read_bytes())
    assert pages[0] == pages[1] and pages[0].count(b'<section class="profile"') == len(SMALL)


def test_a_small_trace_s_section_is_drawn_on_a_pool_thread(many: Path, monkeypatch: pytest.MonkeyPatch, alone: None) -> None:
    analysis = analyze(many, timeline=True)
    seen: list[int] = []
    draw = report.profile_section

    def watched(*args: Any) -> str:
        seen.append(threading.get_native_id())
        return draw(*args)

    monkeypatch.setattr(report, "profile_section", watched)
    page = report.render(analysis, jobs=1)
    assert len(seen) == len(SMALL) and threading.get_native_id() not in seen
    monkeypatch.setattr(report, "POOL_THREAD_MAX", 0)  # every trace "large": drawn on the caller's thread
    seen.clear()
    assert report.render(analysis, jobs=1) == page and set(seen) == {threading.get_native_id()}


def test_auto_starts_workers_only_for_many_sections(many: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (summary, _), *_ = analyze(many, timeline=True)

    def refused(workers: int) -> None:
        raise AssertionError("a worker pool was started")

    monkeypatch.setattr(report, "worker_pool", refused)
    monkeypatch.setattr("ntrace.workflows.analyze.cores", lambda: 4)  # where workers_for would give analysis workers
    for n in (16, report.SECTIONS_MIN - 1):
        sections = report._sections([summary] * n, ["t"] * n, 1, [str(i) for i in range(n)], [()] * n, "auto")
        assert len(sections) == n and len(set(sections)) == n  # each with its own uid
    with pytest.raises(AssertionError, match="pool was started"):
        report._sections([summary] * report.SECTIONS_MIN, ["t"] * report.SECTIONS_MIN, 1, ["0"] * report.SECTIONS_MIN, [()] * report.SECTIONS_MIN, "auto")
