"""The HTML report: rendered in headless Chromium (no network request, timeline and charts drawn, the seed's three variants shown, a real idle stretch zoomed into), and what its timeline embeds."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import zlib
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from helpers import REAL_TRACES, REPO, write_trace, x
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


def embedded(page: str) -> list[dict]:
    """The timeline data each trace's section embeds (render.timeline's JSON)."""
    return [json.loads(m.replace("<\\/", "</")) for m in re.findall(r'<script type="application/json" class="tl-json">(.*?)</script>', page, re.S)]


def drawn(dom: str) -> list[dict]:
    """What each timeline's script drew, as it writes it into the page after every redraw (view, plot area, tick labels, hardware rows' rects)."""
    return [json.loads(html.unescape(m)) for m in re.findall(r'<pre class="tl-drawn" hidden="">(.*?)</pre>', dom, re.S)]


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
    assert dom.count('<canvas class="tl"') == 3  # one timeline per variant
    data = embedded(rendered["html"])
    # every complete event of the three traces is embedded exactly (small traces: under every budget)
    assert sum(len(r["ex"]["t"]) for d in data for r in d["rows"]) == sum(len(_x_events(t)) for t in traces)
    # every hardware idle gap of the naive variant is marked: count them from the raw JSON
    naive = next(t for t in traces if "naive" in t.parts)
    kernels = sorted((e["ts"], e["ts"] + e["dur"]) for e in _x_events(naive) if e["cat"] == "kernel")
    n_gaps = sum(1 for (_, end), (start, _) in zip(kernels, kernels[1:]) if start > end)
    assert n_gaps == 5 and sorted(sum(len(g["t"]) for g in d["gaps"].values()) for d in data) == [0, 0, n_gaps]
    assert dom.count('<svg class="chart') == 3 * 3 + 1  # busy bars, idle histogram and step chart per variant, one comparison chart
    # the script ran: it drew the timelines and wrote what it drew, tick labels first
    states = drawn(dom)
    assert len(states) == 3 and all(st["ticks"][0] in ("0.0ms", "0.0us", "0ms", "0us") for st in states), [st["ticks"] for st in states]
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
    assert 'class="memory"' not in dom and "memops" not in dom  # no allocator records: no Memory view


@needs_chromium
def test_memory_view_appears_on_a_trace_with_allocator_records(tmp_path: Path) -> None:
    def record(ts: float, size: int, total: int) -> dict:
        args = {"Total Reserved": 0, "Total Allocated": total, "Bytes": size, "Device Id": -1, "Device Type": 0, "Addr": 94000000000000}
        return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": args}

    events = [x("aten::empty", "cpu_op", 0, 4), x("aten::add", "cpu_op", 5, 4), record(1, 3 << 20, 3 << 20), record(6, -(1 << 20), 2 << 20)]
    page = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(write_trace(tmp_path / "mem.json", events)), "-o", str(page)])
    assert result.exit_code == 0, result.output
    dom = _chromium(page, tmp_path, "--dump-dom").stdout
    assert dom.count('class="memory"') == 1 and dom.count('<svg class="chart mem"') == 1 and "peak 3.0 MiB" in dom
    ops = dom[dom.index('<table class="sortable memops"') : dom.index("</table>", dom.index('<table class="sortable memops"'))]
    assert re.findall(r"<td>(aten::[a-z]+)</td>", ops) == ["aten::empty", "aten::add"]  # largest self CPU Mem first
    assert "3.0 MiB" in ops and "-1.0 MiB" in ops


def test_report_of_explorer_parquet(tmp_path: Path) -> None:
    from helpers import explorer_rows

    explorer_rows().write_parquet(tmp_path / "system.parquet")
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(tmp_path / "system.parquet"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    (data,) = embedded(page)
    assert sum(len(r["ex"]["t"]) for r in data["rows"]) == explorer_rows().height and sum(len(g["t"]) for g in data["gaps"].values()) == 4


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


ALEXNET = REAL_TRACES / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
_UNITS = {"ns": 1, "us": 1000, "ms": 10**6, "s": 10**9}


def _dom_at(page: Path, tmp: Path, fragment: str) -> str:
    """The page's DOM after its script ran, opened at a URL fragment (`tl-0=START:END` sets the first timeline's view, ns from the window start)."""
    return subprocess.run(
        [CHROMIUM, *_FLAGS, f"--user-data-dir={tmp / 'profile'}", "--window-size=1400,900", "--dump-dom", f"{page.resolve().as_uri()}#{fragment}"],
        capture_output=True, text=True, timeout=90, check=True,
    ).stdout  # fmt: skip


def _tick_ns(labels: list[str]) -> list[Decimal]:
    values = []
    for label in labels:
        number, unit = re.fullmatch(r"(-?[0-9.]+)(ns|us|ms|s)", label).groups()  # type: ignore[union-attr]
        values.append(Decimal(number) * _UNITS[unit])
    return values


def _assert_round_ticks(labels: list[str]) -> None:
    """Distinct labels, evenly spaced by a 1-2-5 step, each a whole multiple of it."""
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    values = _tick_ns(labels)
    steps = {b - a for a, b in zip(values, values[1:])}
    assert len(steps) == 1, labels
    (step,) = steps
    assert step.normalize().as_tuple().digits[0] in (1, 2, 5) and set(step.normalize().as_tuple().digits[1:]) <= {0}, (labels, step)
    assert all(v % step == 0 for v in values), labels


@pytest.fixture(scope="module")
def alexnet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, int]]]:
    """The report of the real AlexNet trace, and its hardware idle gaps as the oracle finds them (ns from the window start)."""
    from oracle import compute

    tmp = tmp_path_factory.mktemp("alexnet")
    (tmp / "in").mkdir()
    trace = tmp / "in" / ALEXNET.name
    shutil.copy(ALEXNET, trace)
    out = tmp / "r.html"
    result = CliRunner().invoke(main, ["report", str(trace), "-o", str(out)])
    assert result.exit_code == 0, result.output
    want = compute(trace)
    t0 = want["window"][0]
    return out, [(s - t0, e - t0) for _, s, e in want["hardware_idle_gaps"]]


@needs_chromium
def test_zooming_into_a_real_idle_stretch_draws_its_gaps(alexnet: tuple[Path, list[tuple[int, int]]], tmp_path: Path) -> None:
    page, gaps = alexnet
    # the first run of four short gaps (under 5 µs each) within 40 µs: launch gaps between small kernels
    i = next(i for i in range(len(gaps) - 3) if all(e - s < 5000 for s, e in gaps[i : i + 4]) and gaps[i + 3][1] - gaps[i][0] < 40_000)
    a, b = gaps[i][0] - 5000, gaps[i + 3][1] + 5000
    (state, *_) = drawn(_dom_at(page, tmp_path, f"tl-0={a}:{b}"))
    assert state["view"] == [a, b]
    left, width = state["plot"]
    (row,) = [r for r in state["rows"].values() if any(k == "gap" for k, *_ in r["rects"])]
    assert row["mode"] == "exact"

    def px(t: int) -> float:
        return left + (t - a) / (b - a) * width

    want = [(px(s), px(e)) for s, e in gaps if e > a and s < b]
    got = [(x0, x1) for kind, x0, x1 in row["rects"] if kind == "gap"]
    assert len(got) == len(want) >= 4
    assert all(abs(g0 - w0) < 0.02 and abs(g1 - w1) < 0.02 for (g0, g1), (w0, w1) in zip(got, want)), (got, want)
    assert all(x1 - x0 >= 5 for x0, x1 in got)  # each gap is several pixels wide at this zoom
    bars = [(x0, x1) for kind, x0, x1 in row["rects"] if kind == "ev"]
    assert all(e1 <= g0 + 0.02 or e0 >= g1 - 0.02 for e0, e1 in bars for g0, g1 in got)  # no bar covers a gap
    for (_, g1), (g2, _) in zip(got, got[1:]):  # and a kernel is drawn between each two gaps
        assert any(e0 >= g1 - 0.02 and e1 <= g2 + 0.02 for e0, e1 in bars)
    _assert_round_ticks(state["ticks"])


@needs_chromium
def test_tick_labels_are_round_and_distinct_at_every_zoom(alexnet: tuple[Path, list[tuple[int, int]]], tmp_path: Path) -> None:
    page, gaps = alexnet
    start = gaps[len(gaps) // 2][0]
    for width in (10**10, 10**7, 40_000, 2_000, 50):
        (state, *_) = drawn(_dom_at(page, tmp_path, f"tl-0={start}:{start + width}"))
        assert state["view"] == [start, start + width]
        _assert_round_ticks(state["ticks"])


@needs_chromium
def test_long_tables_show_their_first_rows_until_expanded(alexnet: tuple[Path, list[tuple[int, int]]], tmp_path: Path) -> None:
    dom = _dom_at(alexnet[0], tmp_path, "")
    ops = dom[dom.index('<table class="sortable ops"') : dom.index("</table>", dom.index('<table class="sortable ops"'))]
    rows = ops.count("<tr")
    assert rows - 1 > 20 and ops.count('<tr hidden=""') == rows - 1 - 20  # header + the first 20 shown


@needs_chromium
def test_a_search_in_the_url_finds_every_event_of_that_name(alexnet: tuple[Path, list[tuple[int, int]]], tmp_path: Path) -> None:
    import gzip

    raw = json.loads(gzip.decompress(ALEXNET.read_bytes()))["traceEvents"]
    want = sum(1 for e in raw if e.get("ph") == "X" and "conv" in str(e.get("name", "")).lower())
    (state, *_) = drawn(_dom_at(alexnet[0], tmp_path, "tl-0-q=CoNv"))
    assert want > 0 and state["matches"] == want


#: A probe the test appends to a copy of the page: hovers the middle of each bar and gap the first timeline drew on its hardware row and writes the tooltips into the page.
_HOVER_PROBE = """<script>(function () {
  var box = document.getElementById('tl-0'), c = box.querySelector('canvas'), r = c.getBoundingClientRect(), out = [];
  var st = JSON.parse(box.querySelector('.tl-drawn').textContent);
  var row = Object.keys(st.rows).find(function (k) { return st.rows[k].rects.length; });
  st.rows[row].rects.forEach(function (q) {
    var x = (q[1] + q[2]) / 2;
    if (x < st.plot[0] || x > st.plot[0] + st.plot[1]) return;
    c.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + x, clientY: r.top + 30 + 16 * row + 8, bubbles: true }));
    var tip = box.querySelector('.tl-tip');
    out.push([q[0], tip.hidden ? null : tip.textContent]);
  });
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
})();</script></body>"""


@needs_chromium
def test_hover_names_each_bar_and_gap_with_its_start_duration_and_args(alexnet: tuple[Path, list[tuple[int, int]]], tmp_path: Path) -> None:
    page, gaps = alexnet
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", _HOVER_PROBE))
    i = next(i for i in range(len(gaps) - 3) if all(e - s < 5000 for s, e in gaps[i : i + 4]) and gaps[i + 3][1] - gaps[i][0] < 40_000)
    a, b = gaps[i][0] - 5000, gaps[i + 3][1] + 5000
    dom = _dom_at(probe, tmp_path, f"tl-0={a}:{b}")
    tips = json.loads(html.unescape(re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S).group(1)))  # type: ignore[union-attr]
    shown_gaps = [t for kind, t in tips if kind == "gap"]
    want_gaps = [(s, e) for s, e in gaps if e > a and s < b]
    assert len(shown_gaps) == len(want_gaps)
    for tip, (s, e) in zip(shown_gaps, want_gaps):
        assert tip == f"hardware idle {(e - s) / 1000:.3f}us\nfrom {s / 1000:.3f}us"
    bars = [t for kind, t in tips if kind == "ev"]
    assert bars and all(re.fullmatch(r"[^\n]+\nstart \d+\.\d{3}us  duration \d+\.\d{3}us\ncorrelation \d+ · External id \d+\ncat kernel", t or "") for t in bars), bars
    starts = {re.search(r"start (\d+\.\d{3})us", t).group(1) for t in bars}  # type: ignore[union-attr, arg-type]
    assert {f"{e / 1000:.3f}" for _, e in want_gaps[:-1]} <= starts  # the kernel after each gap is the one hovered there
