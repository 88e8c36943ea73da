"""The report's Distributed view on a synthetic 3-rank set (scripts/make_ranks.py on the real NCCL trace): every heat-map cell holds the figure of the Summary or of `ntrace ranks` it stands for."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REAL_TRACES, REPO
from ntrace import analyze
from ntrace.render import html as report
from ntrace.workflows.ranks import ranks

NCCL = REAL_TRACES / "nccl_parser_config__nccl_data.json.gz"


@pytest.fixture(scope="module")
def rank_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ranks") / "set"
    cmd = [sys.executable, str(REPO / "scripts" / "make_ranks.py"), str(NCCL), str(out), "--ranks", "3", "--offsets-seed", "1", "--delay-rank", "1", "--delay-us", "250"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    (out / "manifest.json").unlink()
    return out


def _cells(page: str, title: str) -> dict[tuple[int, str], int]:
    """(rank, column label) → value of one heat map's cells."""
    start = page.index(f'<text x="0" y="12" font-weight="bold">{title} (')
    svg = page[start : page.index("</svg>", start)]
    return {(int(r), label): int(v) for v, r, label in re.findall(r'<rect class="cell" data-v="(-?\d+)"[^>]*><title>rank (\d+) · ([^:]+): ', svg)}


def test_heat_maps_hold_the_figures_they_stand_for(rank_set: Path) -> None:
    analysis = analyze(rank_set, timeline=True)
    page = report.render(analysis)
    assert '<h2 id="distributed">Distributed: 3 ranks</h2>' in page
    by_rank = {int(re.search(r"rank-(\d+)", s.path.name).group(1)): s for s in analysis.summaries}  # type: ignore[union-attr]
    step_time = {(r, f"step {n}"): d for r, s in by_rank.items() for n, d in s.steps.select("step", "dur").iter_rows()}
    assert _cells(page, "Step time") == step_time and len(step_time) == 3 * 3
    idle: dict[tuple[int, str], int] = {}
    for r, s in by_rank.items():
        for n, v in s.step_devices.select("step", "idle").iter_rows():
            idle[(r, f"step {n}")] = idle.get((r, f"step {n}"), 0) + v
    assert _cells(page, "Device idle in the step&#x27;s device work") == idle
    table = ranks([rank_set]).table
    comm = {(row["rank"], label): row[col] for row in table.iter_rows(named=True) for col, label in (("comm", "comm"), ("exposed_comm", "exposed comm"))}
    assert _cells(page, "Communication per rank") == comm


def test_no_distributed_view_for_one_trace(rank_set: Path) -> None:
    assert 'id="distributed"' not in report.render(analyze(rank_set / "rank-0.trace.json", timeline=True))
