"""Tests of `ntrace capture`: the Neuron path against a fake torch_neuronx (the documented API), and a real CPU capture end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from helpers import imported_fake_neuronx  # noqa: E402

from ntrace.capture import backends, manifest, rmsnorm  # noqa: E402
from ntrace.errors import CaptureError  # noqa: E402
from ntrace.io.manifest import CAPTURE_FILE  # noqa: E402
from ntrace.cli import main  # noqa: E402
from ntrace.io.discover import find_traces  # noqa: E402
from ntrace import load  # noqa: E402

FAKE = Path(__file__).parent / "fake_neuronx"
SMALL = (4, 64)


def _json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


# --- the product's building blocks -------------------------------------------------------------


def test_naive_rms_norm_matches_torch_rms_norm() -> None:
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(3, 17, generator=g), torch.randn(17, generator=g)
    expected = x / torch.sqrt((x * x).mean(-1, keepdim=True) + rmsnorm.EPS) * w
    torch.testing.assert_close(rmsnorm.naive_rms_norm(x, w), expected)
    torch.testing.assert_close(rmsnorm.naive_rms_norm(x, w), torch.rms_norm(x, (17,), w, rmsnorm.EPS))


def test_schedule_steps_is_wait_plus_warmup_plus_active() -> None:
    assert backends.ProfileSchedule().steps == 4
    assert backends.ProfileSchedule(0, 2, 3).steps == 5


def test_analysis_and_cli_import_without_torch(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import ntrace, ntrace.cli, ntrace.capture\n"
        "assert not any(m == 'torch' or m.startswith('torch.') for m in sys.modules if sys.modules[m] is not None), 'torch imported'\n"
        "from click.testing import CliRunner\n"
        f"r = CliRunner().invoke(ntrace.cli.main, ['capture', '-o', {str(tmp_path / 'out')!r}])\n"
        "print(r.exit_code); print(r.output)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    exit_code, message = done.stdout.split("\n", 1)
    assert exit_code == "2"
    assert "pip install 'ntrace[capture]'" in message
    assert not (tmp_path / "out").exists()


# --- the Neuron path against the fake torch_neuronx ---------------------------------------------


def _record(monkeypatch: pytest.MonkeyPatch, calls: list[tuple[Any, ...]]) -> None:
    """Append torch.compile, torch.profiler.schedule, profiler construction and every prof.step() to `calls`."""

    def fake_compile(fn: Any, **kwargs: Any) -> Any:
        calls.append(("compile", fn, kwargs))
        return fn

    real_schedule = torch.profiler.schedule

    def recording_schedule(**kwargs: Any) -> Any:
        calls.append(("schedule", kwargs))
        return real_schedule(**kwargs)

    class RecordingProfile(torch.profiler.profile):
        def __init__(self, **kwargs: Any) -> None:
            calls.append(("profile", kwargs))
            super().__init__(**kwargs)

        def step(self) -> None:
            calls.append(("step",))
            super().step()

    monkeypatch.setattr(torch, "compile", fake_compile)
    monkeypatch.setattr(torch.profiler, "schedule", recording_schedule)
    monkeypatch.setattr(torch.profiler, "profile", RecordingProfile)


def _assert_synchronized_steps(calls: list[tuple[Any, ...]], steps: int) -> None:
    """Per profiler: `steps` steps, and a synchronize between the start (or the previous step) and every step."""
    starts = [i for i, c in enumerate(calls) if c[0] == "profile"] + [len(calls)]
    assert len(starts) > 1
    for begin, end in zip(starts, starts[1:]):
        kinds = [c[0] for c in calls[begin:end]]
        assert kinds.count("step") == steps
        segments = " ".join(kinds).split("step")[:-1]
        assert all("synchronize" in s for s in segments), kinds


@pytest.fixture
def fake_neuronx(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Import the fake torch_neuronx; torch.compile / profiler / schedule calls go into its CALLS log too."""
    yield from imported_fake_neuronx(monkeypatch, _record)


def _of(calls: list[tuple[Any, ...]], kind: str) -> list[tuple[Any, ...]]:
    return [c for c in calls if c[0] == kind]


def test_neuron_path_uses_the_documented_api(fake_neuronx: Any, tmp_path: Path) -> None:
    from torch_neuronx.profiling import NeuronProfiler, ProfileMode

    lines: list[str] = []
    backend = backends.neuron_backend(backends.ProfileSchedule(2, 1, 1), "0", tensor_device="cpu")
    frame = rmsnorm.capture_study(tmp_path / "out", backend=backend, shape=SMALL, progress=lines.append)
    calls = fake_neuronx.CALLS
    assert frame["variant"].to_list() == list(rmsnorm.VARIANTS)

    configs = _of(calls, "NeuronConfig")
    assert [c[1] for c in configs] == [
        {
            "modes": [ProfileMode.DEVICE, ProfileMode.RUNTIME],
            "profile_output_dir": str(tmp_path / "out" / v),
            "capture_enabled_for_nc": "0",
            "correlate_device_time": True,
        }
        for v in rmsnorm.VARIANTS
    ]
    profilers = [c[1] for c in _of(calls, "NeuronProfiler")]
    profiles = [c[1] for c in _of(calls, "profile")]
    assert len(profilers) == len(profiles) == 3
    for config, kwargs in zip(profilers, profiles):
        assert kwargs["experimental_config"] is config
        exporter = kwargs["on_trace_ready"]
        assert exporter.__func__ is NeuronProfiler.export_trace and exporter.__self__.config is config
        assert kwargs["activities"] == [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
    assert [c[1] for c in _of(calls, "schedule")] == [{"wait": 2, "warmup": 1, "active": 1, "repeat": 1}] * 3
    assert len(_of(calls, "export_trace")) == 3

    _assert_synchronized_steps(calls, 4)

    compiles = _of(calls, "compile")
    assert len(compiles) == 1
    assert compiles[0][1] is rmsnorm.naive_rms_norm
    assert compiles[0][2] == {"backend": "neuron", "fullgraph": True}

    for variant in rmsnorm.VARIANTS:
        info = _json(tmp_path / "out" / variant / CAPTURE_FILE)
        assert info["device"] == "neuron" and info["torch_neuronx"] == "0.0.0+fake"
        assert info["correlate_device_time"] is True
        assert info["schedule"] == {"wait": 2, "warmup": 1, "active": 1, "steps": 4}
        traces = find_traces(tmp_path / "out" / variant)
        assert [t.name for t in traces] == ["trace.json"]  # nested <instance>_pid_<pid>/<ts>/, side files not taken for traces
        assert manifest.capture_info(traces[0])["variant"] == variant
    assert sum("correlate_device_time=passed" in line for line in lines) == 3


def test_neuron_without_correlate_device_time_is_reported(fake_neuronx: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch_neuronx.profiling as profiling

    monkeypatch.setattr(profiling, "NeuronConfig", profiling.NeuronConfigWithoutCorrelate)
    lines: list[str] = []
    backend = backends.neuron_backend(backends.ProfileSchedule(), "0,1", tensor_device="cpu")
    frame = rmsnorm.capture_study(tmp_path, variants=("fused",), backend=backend, shape=SMALL, progress=lines.append)
    assert frame["correlate_device_time"].to_list() == [False]
    assert _json(tmp_path / "fused" / CAPTURE_FILE)["correlate_device_time"] is False
    assert [c[1] for c in _of(fake_neuronx.CALLS, "NeuronConfig")][0]["capture_enabled_for_nc"] == "0,1"
    assert any("not accepted" in line for line in lines)


def test_torch_neuronx_without_profiling_module_fails_cleanly(fake_neuronx: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_neuronx.profiling", None)
    with pytest.raises(CaptureError, match=r"0\.0\.0\+fake has no torch_neuronx.profiling"):
        backends.neuron_backend(backends.ProfileSchedule(), "0", tensor_device="cpu")


# --- the CUDA path's wiring, on the CPU -----------------------------------------------------------


@pytest.mark.slow
def test_cuda_path_profiles_cuda_activity_and_synchronizes_every_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    _record(monkeypatch, calls)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: calls.append(("synchronize",)))
    backend = backends.torch_backend("cuda", backends.ProfileSchedule(1, 1, 2), tensor_device="cpu")
    rmsnorm.capture_study(tmp_path, variants=("naive", "compiled"), backend=backend, shape=SMALL, schedule=backends.ProfileSchedule(1, 1, 2))
    profiles = [c[1] for c in _of(calls, "profile")]
    assert [p["activities"] for p in profiles] == [[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]] * 2
    assert all(p["record_shapes"] for p in profiles)
    assert [c[1] for c in _of(calls, "schedule")] == [{"wait": 1, "warmup": 1, "active": 2, "repeat": 1}] * 2
    _assert_synchronized_steps(calls, 4)
    assert [c[2] for c in _of(calls, "compile")] == [{"fullgraph": True}]  # torch.compile's default backend off Neuron
    info = _json(tmp_path / "compiled" / CAPTURE_FILE)
    assert info["device"] == "cuda" and info["compile_backend"] == "default" and info["schedule"]["steps"] == 4
    assert (tmp_path / "naive" / "trace.json").is_file()


# --- CLI errors ---------------------------------------------------------------------------------


def test_device_neuron_without_torch_neuronx_says_what_is_needed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_neuronx", None)
    result = CliRunner().invoke(main, ["capture", "-o", str(tmp_path / "out"), "--device", "neuron"])
    assert result.exit_code == 2
    assert "Trainium" in result.stderr and "Neuron SDK" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_auto_without_torch_neuronx_is_not_neuron(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_neuronx", None)
    assert backends.resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")


def test_non_empty_output_dir_is_refused_and_force_keeps_user_files(tmp_path: Path) -> None:
    user = tmp_path / "notes.txt"
    user.write_text("mine")
    args = ["capture", "-o", str(tmp_path), "--device", "cpu", "--variants", "fused", "--shape", "2,8"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "not empty" in refused.stderr and "--force" in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    forced = CliRunner().invoke(main, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert user.read_text() == "mine"
    assert sorted(p.name for p in (tmp_path / "fused").iterdir()) == ["capture.json", "key_averages.json", "trace.json"]


@pytest.mark.parametrize(
    ("flag", "value", "needle"),
    [("--variants", "naive,slow", "unknown slow"), ("--dtype", "bfloat17", "not a torch dtype"), ("--schedule", "2,1,0", "active")],
)
def test_bad_options_fail_cleanly(tmp_path: Path, flag: str, value: str, needle: str) -> None:
    result = CliRunner().invoke(main, ["capture", "-o", str(tmp_path / "out"), "--device", "cpu", flag, value])
    assert result.exit_code == 2 and needle in result.stderr


# --- real CPU capture, end to end ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    out = tmp_path_factory.mktemp("cap") / "rmsnorm"
    result = CliRunner().invoke(main, ["capture", "-o", str(out), "--device", "cpu", "--shape", ",".join(map(str, SMALL))])
    assert result.exit_code == 0, result.output
    return out, result


@pytest.mark.slow
def test_cpu_capture_writes_one_directory_per_variant(cpu_capture: tuple[Path, Any]) -> None:
    out, result = cpu_capture
    for variant in rmsnorm.VARIANTS:
        info = _json(out / variant / CAPTURE_FILE)
        assert info["variant"] == variant and info["device"] == "cpu" and info["dtype"] == "bfloat16"
        assert info["shape"] == list(SMALL) and info["torch"] == torch.__version__
        assert info["correlate_device_time"] is None
        assert info["compile_backend"] == ("default" if variant == "compiled" else None)
        assert f"{variant}: capture on cpu" in result.stderr
    assert "compiled: compile" in result.stderr and "naive: warm-up" in result.stderr
    assert [p.relative_to(out).as_posix() for p in find_traces(out)] == [f"{v}/trace.json" for v in sorted(rmsnorm.VARIANTS)]


@pytest.mark.slow
def test_cpu_capture_analyzes_and_fused_holds_the_rms_norm_op(cpu_capture: tuple[Path, Any]) -> None:
    out, _ = cpu_capture
    result = CliRunner().invoke(main, ["analyze", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    traces = sorted(Path(p["trace"]).relative_to(out).as_posix() for p in orjson.loads(result.stdout)["profiles"])
    assert traces == [f"{v}/trace.json" for v in sorted(rmsnorm.VARIANTS)]
    names = set(load(out / "fused" / "trace.json").events["name"].to_list())
    assert {"aten::rms_norm", "aten::_fused_rms_norm"} & names
    naive = load(out / "naive" / "trace.json").events["name"].to_list()
    assert naive.count("aten::mul") == 3 and "aten::rsqrt" in naive and "aten::rms_norm" not in naive
    assert "Torch-Compiled Region: 0/0" in set(load(out / "compiled" / "trace.json").events["name"].to_list())


@pytest.mark.slow
def test_cpu_capture_op_table_matches_the_key_averages_torch_saw(cpu_capture: tuple[Path, Any]) -> None:
    out, _ = cpu_capture
    for variant in rmsnorm.VARIANTS:
        oracle = {o["name"]: o for o in _json(out / variant / manifest.KEY_AVERAGES_FILE)["ops"]}
        table = {r["name"]: r for r in load(out / variant / "trace.json").ops.iter_rows(named=True)}
        assert set(oracle) <= set(table), (variant, set(oracle) - set(table))
        if variant == "fused":
            assert {"aten::rms_norm", "aten::_fused_rms_norm"} <= set(table)
        for name, want in oracle.items():
            got = table[name]
            assert got["calls"] == want["count"], (variant, name)
            for mine, theirs in (("self_cpu", "self_cpu_time_total"), ("cpu_total", "cpu_time_total")):
                assert got[mine] == round(want[theirs] * 1000), (variant, name, mine)  # torch's float µs of integer ns, back to the ns


@pytest.mark.slow
def test_cpu_capture_compares(cpu_capture: tuple[Path, Any]) -> None:
    out, _ = cpu_capture
    result = CliRunner().invoke(main, ["compare", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in orjson.loads(result.stdout)["variants"]}
    assert set(rows) == set(rmsnorm.VARIANTS)
    for variant, row in rows.items():
        oracle = _json(out / variant / manifest.KEY_AVERAGES_FILE)["ops"]
        assert row["traces"] == 1
        assert round(row["device_time_us"] * 1000) == round(sum(o["self_device_time_total"] for o in oracle) * 1000)  # 0 on the CPU
