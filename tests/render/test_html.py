"""The HTML report: rendered in headless Chromium (no network request, timeline and charts drawn, the seed's three variants shown) and its downsampling."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zlib
from pathlib import Path
from urllib.parse import urlsplit

import polars as pl
import pytest
from click.testing import CliRunner

from helpers import REPO, write_trace, x
from ntrace import analyze, load
from ntrace.cli import main
from ntrace.render import html as report

RMSNORM = REPO / "fixtures" / "rmsnorm"
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs Debian's chromium package)")

# Quiet the browser's own background traffic, and send anything else to a dead proxy port.
_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
    "--disable-features=SpellCheck,Translate,MediaRouter,OptimizationHints", "--proxy-server=127.0.0.1:9", "--hide-scrollbars",
]


def _chromium(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM, *_FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra, page.resolve().as_uri()],
        capture_output=True, text=True, timeout=90, check=True,
    )


def _requested_hosts(page: Path, tmp: Path, name: str) -> tuple[set[str], Path]:
    """Load `page` with a net log and a screenshot; the hosts of every URL the browser requested, and the screenshot."""
    log, shot = tmp / f"{name}.netlog.json", tmp / f"{name}.png"
    _chromium(page, tmp, f"--log-net-log={log}", f"--screenshot={shot}", "--window-size=1400,1800")
    urls = re.findall(r'"url":"([^"]+)"', log.read_text(errors="replace"))
    return {urlsplit(u).hostname or u for u in urls if not u.startswith(("file:", "data:", "chrome:", "about:"))}, shot


def _png_variety(png: Path) -> int:
    """How many distinct byte values the screenshot's pixel data holds: a blank page has a handful, a drawn one hundreds."""
    data, pos, idat = png.read_bytes(), 8, b""
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(idat)))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The report of fixtures/rmsnorm, its DOM after the script ran, its net log hosts and screenshot, and a blank page's."""
    tmp = tmp_path_factory.mktemp("report")
    out = tmp / "report.html"
    result = CliRunner().invoke(main, ["report", str(RMSNORM), "-o", str(out)])
    assert result.exit_code == 0, result.output
    blank = tmp / "blank.html"
    blank.write_text("<!doctype html><html><body></body></html>")
    doc = {"out": out, "html": out.read_text()}
    if CHROMIUM:
        doc["dom"] = _chromium(out, tmp, "--dump-dom").stdout
        doc["hosts"], doc["shot"] = _requested_hosts(out, tmp, "report")
        doc["blank_hosts"], doc["blank_shot"] = _requested_hosts(blank, tmp, "blank")
        bad = tmp / "bad.html"
        bad.write_text('<!doctype html><img src="http://example.invalid/x.png"><link rel=stylesheet href="https://fonts.example.invalid/a.css">')
        doc["bad_hosts"], _ = _requested_hosts(bad, tmp, "bad")
    return doc


def _x_events(trace: Path) -> list[dict]:
    return [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]


def test_html_references_nothing_outside_the_file(rendered: dict) -> None:
    text = rendered["html"]
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text, re.I)
    assert not re.search(r"<link\b|<script\s+src|@import|url\(", text, re.I)
    assert "http://" not in text and "https://" not in text


@needs_chromium
def test_loads_with_no_network_request(rendered: dict) -> None:
    # the method sees a page's requests (positive control), and the report adds none to a blank page's
    assert {"example.invalid", "fonts.example.invalid"} <= rendered["bad_hosts"]
    assert rendered["hosts"] <= rendered["blank_hosts"], rendered["hosts"] - rendered["blank_hosts"]


@needs_chromium
def test_screenshot_is_not_blank(rendered: dict) -> None:
    blank, drawn = _png_variety(rendered["blank_shot"]), _png_variety(rendered["shot"])
    assert blank < 16 < 100 < drawn, (blank, drawn)


@needs_chromium
def test_dom_has_timeline_charts_and_three_variants(rendered: dict) -> None:
    dom = rendered["dom"]
    traces = sorted(RMSNORM.rglob("trace.json"))
    assert len(traces) == 3
    assert dom.count('<svg class="tl"') == 3  # one timeline per variant
    # every complete event of the three traces is drawn as one rect (small traces: no downsampling)
    assert dom.count('<rect class="ev ') == sum(len(_x_events(t)) for t in traces)
    # every hardware idle gap of the naive variant is highlighted: count them from the raw JSON
    naive = next(t for t in traces if "naive" in t.parts)
    kernels = sorted((e["ts"], e["ts"] + e["dur"]) for e in _x_events(naive) if e["cat"] == "kernel")
    n_gaps = sum(1 for (_, end), (start, _) in zip(kernels, kernels[1:]) if start > end)
    assert n_gaps == 5 and dom.count('<rect class="gap"') == n_gaps
    assert dom.count('<svg class="chart') == 3 * 2 + 1  # busy bars + idle histogram per variant, one comparison chart
    # the script ran: it wrote the time-axis labels (empty in the file)
    assert re.search(r'<g class="axis"><text[^>]*>0\.000us</text>', dom)
    compare = dom[dom.index('id="compare"') : dom.index("</table>", dom.index('id="compare"'))]
    for variant, device_time in (("naive", "2.355ms"), ("fused", "403.300us"), ("compiled", "375.500us")):
        assert f"<td>{variant}</td>" in compare and device_time in compare  # the seed's device times
    # the same numbers as `ntrace compare` (self CPU of device ops, op calls, speed-up)
    doc = json.loads(CliRunner().invoke(main, ["compare", str(RMSNORM), "--format", "json"]).stdout)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", compare)
    for v in doc["variants"]:
        row = cells[cells.index(v["name"]) : cells.index(v["name"]) + 8]
        assert row[3:6] + row[7:] == [f"{v['self_cpu_us']:.3f}us", str(v["device_op_calls"]), f"{v['idle_us']:.3f}us", f"{v['speedup']:.2f}x"], row
    assert "Artifacts" in dom and "Operators" in dom


def test_downsampling_keeps_numbers_and_caps_drawing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [x("k", "kernel", i * 3.0, 2.0, pid=0, tid=0) for i in range(5000)] + [x("aten::op", "cpu_op", 0, 1)]
    (summary,) = analyze(write_trace(tmp_path / "trace.json", events), timeline=True).summaries
    assert summary.timeline is not None
    blocks = report.drawn_blocks(summary, summary.timeline, summary.window[0], summary.window_ns)
    hw = blocks.filter(pl.col("lane") == "hardware")
    assert hw["merged"].sum() == 5000  # every event is in exactly one drawn block
    assert 1 <= hw.height <= report._DATA_W * report.BINS_PER_WIDTH // 2
    assert blocks.filter(pl.col("lane") == "framework").height == 1  # small tracks are drawn exactly
    monkeypatch.setattr(report, "MAX_GAPS_PER_TRACK", 10)
    gaps = report.drawn_gaps(summary, summary.timeline, summary.window[0], summary.window_ns)
    assert gaps.height == 10 and summary.idle_gaps.len() == 4999
    page = report.render(analyze(tmp_path / "trace.json", timeline=True))
    assert "4,999 gaps" in page and "5,000" in page  # histogram title and lane table keep the exact counts
    assert "Downsampled for drawing" in page


def test_report_of_explorer_parquet(tmp_path: Path) -> None:
    from helpers import explorer_rows

    explorer_rows().write_parquet(tmp_path / "system.parquet")
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(tmp_path / "system.parquet"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert page.count('<rect class="ev ') == explorer_rows().height and page.count('<rect class="gap"') == 4


def test_report_write_error_is_one_line(tmp_path: Path) -> None:
    write_trace(tmp_path / "trace.json", [x("k", "kernel", 0, 1)])
    result = CliRunner().invoke(main, ["report", str(tmp_path / "trace.json"), "-o", str(tmp_path / "no" / "r.html")])
    assert result.exit_code == 2 and "cannot be written" in result.output


def test_artifacts_table_lists_every_session_find_sessions_finds() -> None:
    from ntrace.neuron.artifacts import find_sessions

    root = RMSNORM.parent
    page = report.render(analyze(root, timeline=True))
    table = page.split('<h2 id="artifacts">', 1)[1]
    sessions = [s for s in find_sessions(root) if s.has_artifacts]
    assert len(sessions) == 5 and table.count("<tr>") == len(sessions) + 1  # header row + one per session
    positions = [table.index(f">{s.dir.relative_to(root)}<") for s in sessions]
    assert positions == sorted(positions)  # in directory order
