"""One ns-resolution trace through every way in and out — fast and plain decoders, gzip, salvage of a cut file, the Parquet cache (stored and recomputed), `--jobs`, the Perfetto round trip, Neuron Explorer Parquet — gives the same exact numbers, equal to the oracle's.

The trace is a real vendored one with every timestamp moved to Kineto's nanosecond layout near
1.7e15 µs (`1712195495505582.988`), where a float64 of µs has a 0.25 µs spacing: any path that
reads a float on the way loses the nanoseconds and fails here.
"""

from __future__ import annotations

import gzip
import json
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from helpers import REAL_TRACES, explorer_rows
import ntrace.io.kineto._fast as fast_path
from ntrace import analyze, load
from ntrace.io.kineto import read_kineto
from ntrace.render import json as json_renderer
from ntrace.render.perfetto import export_perfetto
from ntrace.units import us_text
from ntrace.workflows.convert import convert
from test_oracle_agreement import EPOCH, agree

SOURCE = REAL_TRACES / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def _number(value: Decimal) -> str:
    """A µs value as Kineto writes ns-resolution ones: three decimals."""
    return f"{value:.3f}"


@pytest.fixture(scope="module")
def ns_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real AMD trace moved to the ns epoch, each ts and dur given random ns digits, one event per line as Kineto writes it."""
    doc = json.loads(gzip.decompress(SOURCE.read_bytes()), parse_float=Decimal)
    rnd = random.Random(7)
    first = min(Decimal(e["ts"]) for e in doc["traceEvents"] if "ts" in e)
    lines = []
    for event in doc["traceEvents"]:
        event = dict(event)
        if "ts" in event:
            event["ts"] = EPOCH + (Decimal(event["ts"]) - first) + Decimal(rnd.randint(0, 999)) / 1000
        if "dur" in event:
            event["dur"] = Decimal(event["dur"]) + Decimal(rnd.randint(0, 999)) / 1000
        lines.append(_unquote(json.dumps(event, default=lambda d: "@" + _number(d) if d in (event.get("ts"), event.get("dur")) else "@" + str(d))))
    text = '{\n  "schemaVersion": 1,\n  "traceEvents": [\n' + ",\n".join(lines) + "\n  ]\n}\n"
    path = tmp_path_factory.mktemp("ns") / "rank_0.pt.trace.json"
    path.write_text(text)
    return path


def _unquote(line: str) -> str:
    """Turn the "@<digits>" strings json.dumps wrote for Decimals back into bare JSON numbers."""
    out, i = [], 0
    while (j := line.find('"@', i)) >= 0:
        k = line.index('"', j + 2)
        out += [line[i:j], line[j + 2 : k]]
        i = k + 1
    return "".join(out) + line[i:]


def _json(path: Path, **kw: Any) -> str:
    return json_renderer.analysis(analyze(path, **kw))


def test_the_trace_has_ns_digits(ns_trace: Path) -> None:
    text = ns_trace.read_text()
    assert '"ts": 17121954955' in text and sum(1 for line in text.splitlines() if '"ph": "X"' in line) > 100
    ts = load(ns_trace).events["ts"].drop_nulls()
    assert (ts % 1000 != 0).sum() > 0.9 * ts.len()  # the ns survive: none rounded to a µs or a quarter µs
    assert (ts % 250 != 0).sum() > 0.9 * ts.len()


def test_equals_the_oracle(ns_trace: Path) -> None:
    agree(ns_trace)


def test_same_numbers_every_way_in(ns_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fast decoder, plain decoder, gzip, Parquet (stored summary and recomputed) and --jobs: one JSON, byte for byte (but the file name)."""
    taken: list[bool] = []
    real = fast_path.columns
    monkeypatch.setattr(fast_path, "columns", lambda *a, **k: taken.append((cols := real(*a, **k)) is not None) or cols)
    reference = _json(ns_trace)
    assert taken == [True], "the fast decoder fell back: the comparison would not test it"
    monkeypatch.undo()
    assert _json(ns_trace, fast=False) == reference
    gz = tmp_path / "gz" / ns_trace.name
    gz.parent.mkdir()
    gz.with_suffix(".json.gz").write_bytes(gzip.compress(ns_trace.read_bytes()))
    assert _json(gz.with_suffix(".json.gz")) == reference.replace(str(ns_trace), str(gz.with_suffix(".json.gz")))
    parquet = Path(convert(ns_trace, tmp_path / "pq")["parquet"][0])
    assert _json(parquet) == reference == _json(parquet, recompute=True)  # the Parquet names its source trace
    jobs = tmp_path / "jobs"
    for rank in range(2):
        (jobs / f"r{rank}").mkdir(parents=True)
        (jobs / f"r{rank}" / ns_trace.name).write_bytes(ns_trace.read_bytes())
    assert _json(jobs, jobs=2) == _json(jobs)
    doc = json.loads(reference, parse_float=Decimal)
    (profile,) = doc["profiles"]
    window = load(ns_trace).window
    assert str(profile["start_us"]) == us_text(window[0]) and profile["window_us"] == Decimal(us_text(window[1] - window[0]))


def test_salvaged_cut_file_keeps_the_ns(ns_trace: Path, tmp_path: Path) -> None:
    """A file cut mid-event is read as far as it goes (with a warning); the events it keeps have the exact ns of the whole file's."""
    data = ns_trace.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) * 2 // 3])
    whole, part = read_kineto(ns_trace), read_kineto(cut)
    assert part.warnings and 0 < part.events.height < whole.events.height
    keep = ["idx", "name", "ts", "dur"]
    assert part.events.select(keep).equals(whole.events.select(keep).head(part.events.height))


def test_perfetto_round_trip_keeps_the_ns(ns_trace: Path, tmp_path: Path) -> None:
    profile = load(ns_trace)
    again = load(export_perfetto(profile, tmp_path / "out.json"))
    assert again.window == profile.window
    assert again.lanes.equals(profile.lanes) and again.gaps.equals(profile.gaps) and again.steps.equals(profile.steps)
    slices = lambda p: sorted(p.complete.select("name", "ts", "dur").rows())  # noqa: E731
    assert slices(again) == slices(profile)


def test_explorer_parquet_keeps_the_ns(tmp_path: Path) -> None:
    """Neuron Explorer writes ns integers: moved to 1.7e18 ns with odd digits, every figure stays exact."""
    rows = explorer_rows()
    shift = int(EPOCH * 1000) + 7
    rows = rows.with_columns(pl.col("start_ts") + shift, pl.col("end_ts") + shift)
    path = tmp_path / "system.parquet"
    rows.write_parquet(path)
    profile = load(path)
    assert profile.window[0] == int(rows["start_ts"].min())
    doc = json.loads(_json(path), parse_float=Decimal)
    assert str(doc["profiles"][0]["start_us"]) == us_text(int(rows["start_ts"].min()))
    busy = profile.lanes.filter(pl.col("lane") == "hardware")["busy"].item()
    assert busy == int(rows.filter(pl.col("trace_event_source") == "neuron_hw")["duration_ns"].sum())
