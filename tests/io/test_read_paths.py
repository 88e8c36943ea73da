"""The ways into a Summary — the native parser, the fast windowed typed msgspec path, the plain orjson path, the Parquet cache with its stored summary and recomputed from its events — give the same JSON."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ntrace.io.kineto._columnar as columnar
import ntrace.io.kineto._fast as fast_path
from ntrace import analyze
from ntrace.io.kineto import read_kineto
from ntrace.render import json as json_renderer
from ntrace.workflows.convert import convert

from helpers import REPO, write_trace, x


def _synth_module():
    spec = importlib.util.spec_from_file_location("synth_trace", REPO / "scripts" / "synth_trace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small synthetic trace laid out over lines as Kineto writes it (kernels, flows, shapes, steps)."""
    path = tmp_path_factory.mktemp("synth") / "synth.pt.trace.json"
    out = io.StringIO()
    _synth_module().write_trace(out, 3_000, seed=1)
    path.write_text(out.getvalue())
    return path


def _rendered(path: Path, **kw: object) -> dict:
    return json.loads(json_renderer.analysis(analyze(path, **kw)))


def _four_ways(trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict, dict, dict]:
    """native, msgspec (NTRACE_NATIVE=0), plain and Parquet JSON; the Parquet both from its stored analysis and recomputed, which must agree."""
    converted = convert(trace, tmp_path / "pq")
    assert converted["error"].is_null().all()
    parquet = Path(converted["parquet"][0])
    stored = _rendered(parquet)
    assert stored == _rendered(parquet, recompute=True)
    with monkeypatch.context() as m:
        m.setenv("NTRACE_NATIVE", "0")
        windowed = _rendered(trace)
    return _rendered(trace), windowed, _rendered(trace, fast=False), stored


def _route(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which decoder read `path`: "native" (_columnar), "msgspec" (the windowed typed decoder) or "fallback" (the plain one)."""
    native: list[bool] = []
    fast: list[bool] = []

    def spy(module, calls):  # type: ignore[no-untyped-def]
        real = module.columns

        def columns(*args):  # type: ignore[no-untyped-def]
            cols = real(*args)
            calls.append(cols is not None)
            return cols

        return columns

    with monkeypatch.context() as m:
        m.setattr(columnar, "columns", spy(columnar, native))
        m.setattr(fast_path, "columns", spy(fast_path, fast))
        read_kineto(path)
    if fast != [True]:
        return "fallback"
    return "native" if native == [True] else "msgspec"


def _uses_batches(path: Path, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether decoding `path` went through the windowed typed decoder (native parser off), not a fallback."""
    with monkeypatch.context() as m:
        m.setenv("NTRACE_NATIVE", "0")
        return _route(path, m) == "msgspec"


def test_real_traces_same_json_four_ways(shared_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    native, fast, plain, parquet = _four_ways(shared_trace, tmp_path, monkeypatch)
    assert native == fast == plain == parquet
    assert fast["profiles"][0]["events"] > 0
    assert _route(shared_trace, monkeypatch) == "native", "the native parser refused: the comparison would not test it"
    assert _uses_batches(shared_trace, monkeypatch), "the fast path fell back: the comparison would not test it"


def test_synthetic_trace_same_json_four_ways(synthetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    native, fast, plain, parquet = _four_ways(synthetic, tmp_path, monkeypatch)
    assert native == fast == plain == parquet
    profile = fast["profiles"][0]
    assert profile["trace"] == str(synthetic)  # the Parquet file names its source trace
    assert {lane["lane"] for lane in profile["lanes"] if lane["events"]} >= {"framework", "runtime_api", "hardware", "device"}
    assert profile["gaps"]["launch_latency"]["count"] > 0 and profile["steps"]
    assert _route(synthetic, monkeypatch) == "native"
    assert _uses_batches(synthetic, monkeypatch)


def test_events_frames_identical_fast_and_plain(synthetic: Path) -> None:
    fast, plain = read_kineto(synthetic), read_kineto(synthetic, fast=False)
    assert fast.events.equals(plain.events) and fast.meta == plain.meta and fast.warnings == plain.warnings
    # shapes survive as compact JSON text, exactly as the plain decoder writes them
    assert fast.events["input_dims"].drop_nulls().str.contains(" ").sum() == 0
    assert fast.events["input_dims"].drop_nulls().len() > 0


@pytest.mark.parametrize("layout", ["compact", "indented", "one_per_line"])
def test_any_layout_takes_the_fast_path(tmp_path: Path, layout: str, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [x("a", "cpu_op", 1.5, 2, **{"External id": 3, "Input Dims": [[1, 2], []]}), x("k", "kernel", 2.25, 1, pid=0, tid=7, correlation=9)]
    doc = {"traceEvents": events, "deviceProperties": [{"id": 0}]}
    text = {
        "compact": json.dumps(doc, separators=(",", ":")),
        "indented": json.dumps(doc, indent=2),
        "one_per_line": '{"traceEvents": [\n' + ",\n".join(json.dumps(e) for e in events) + "\n]}",
    }[layout]
    path = tmp_path / "t.json"
    path.write_text(text)
    assert _route(path, monkeypatch) == "native"
    assert _uses_batches(path, monkeypatch)
    assert read_kineto(path).events.equals(read_kineto(path, fast=False).events)
    assert read_kineto(path).events["input_dims"].to_list() == ["[[1,2],[]]", None]


@pytest.mark.parametrize(
    "odd",
    [
        {"name": ["not", "text"]},  # the batched decoder refuses, the plain decoder keeps the JSON text
        {"ts": "12.5"},  # text where a number belongs: the batched decoder refuses, the whole-file typed decoder reads it
        {"args": {"External id": "0x1f"}},
        {"pid": "Spans", "tid": "PyTorch Profiler"},
        {"name": "[param|cuda]"},  # looks like JSON, is text
    ],
)
def test_odd_values_agree_with_the_plain_path(tmp_path: Path, odd: dict) -> None:
    path = write_trace(tmp_path / "t.json", [{**x("a", "cpu_op", 1, 2, correlation=5), **odd}, x("b", "kernel", 2, 1, correlation=5)])
    fast, plain = read_kineto(path), read_kineto(path, fast=False)
    assert fast.events.equals(plain.events) and fast.warnings == plain.warnings


_scalar = st.one_of(st.none(), st.integers(-(2**40), 2**40), st.floats(-1e9, 1e9, allow_nan=False), st.sampled_from(["", "7", " 8 ", "x"]))


#: pid/tid as profilers write them (integers or names) and as they do not (floats: the fast path falls back)
_pid = st.one_of(st.none(), st.integers(-(2**40), 2**40), st.sampled_from(["Spans", "7", "", 1.0, 2.5]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.fixed_dictionaries(
            {"ph": st.sampled_from(["X", "i", "s", "f"]), "ts": st.one_of(st.integers(0, 2**50), st.floats(0, 1e12)), "dur": _scalar},
            optional={"cat": st.sampled_from(["cpu_op", "kernel", "ac2g"]), "name": st.text(max_size=5), "id": _scalar, "pid": _pid,
                      "args": st.fixed_dictionaries({}, optional={"External id": _scalar, "correlation": _scalar, "stream": _scalar})},
        ),
        min_size=1,
        max_size=15,
    )
)
def test_fast_equals_plain_on_generated_events(tmp_path: Path, events: list[dict]) -> None:
    path = write_trace(tmp_path / "gen.json", events)
    fast, plain = read_kineto(path), read_kineto(path, fast=False)
    assert fast.events.equals(plain.events)
    assert fast.warnings == plain.warnings
