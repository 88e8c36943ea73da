"""Tests of profiling your own model: `ntrace.profiling`, `ntrace capture --script` and `ntrace capture --inspect`.

A small training script (an MLP with an optimizer) is captured on the CPU for real and analyzed;
the Neuron path runs against the fake torch_neuronx (the documented API), --inspect against a fake
command that writes the runtime's model-mode layout. Nothing here ran on a Neuron device or a GPU.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest
from click.testing import CliRunner, Result

torch = pytest.importorskip("torch")

from helpers import imported_fake_neuronx  # noqa: E402

import ntrace  # noqa: E402
from ntrace.capture import neuron_inspect  # noqa: E402
from ntrace.capture.manifest import KEY_AVERAGES_FILE, capture_info  # noqa: E402
from ntrace.cli import main  # noqa: E402
from ntrace.errors import CaptureError  # noqa: E402
from ntrace.io.discover import find_traces  # noqa: E402
from ntrace.io.manifest import CAPTURE_FILE  # noqa: E402

FAKE = Path(__file__).parent / "fake_neuronx"
MODEL_MODE = Path(__file__).parents[2] / "fixtures" / "model_mode" / "i-0ade06f040a13f2bf_pid_210229"

#: The workload: `python train.py STEPS step|nostep|raise|exit3` trains a tiny MLP for STEPS steps.
TRAIN = '''\
import sys

import torch

import ntrace


def train(steps, step, fail=""):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 8), torch.randn(4, 1)
    for i in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        step()
    if fail == "raise":
        raise ValueError("diverged")
    if fail == "exit3":
        sys.exit(3)


if __name__ == "__main__":
    steps, mode = int(sys.argv[1]), sys.argv[2]
    train(steps, ntrace.step if mode != "nostep" else (lambda: None), mode)
'''

TRAIN_OPS = {"aten::addmm", "aten::relu", "aten::mse_loss", "aten::zero_", "Optimizer.step#SGD.step"}


def _json(path: Path) -> Any:
    return orjson.loads(path.read_bytes())


@pytest.fixture
def train_py(tmp_path: Path) -> Path:
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    return script


def _train(script: Path) -> Callable[..., None]:
    """The script's train() function, imported without running its __main__ block."""
    fn: Callable[..., None] = runpy.run_path(str(script), run_name="train")["train"]
    return fn


def _analyze(out: Path) -> dict[str, Any]:
    """The one profile `ntrace analyze OUT --format json` finds."""
    result = CliRunner().invoke(main, ["analyze", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    profiles = orjson.loads(result.stdout)["profiles"]
    assert len(profiles) == 1
    profile: dict[str, Any] = profiles[0]
    return profile


def _assert_ops_are_torchs(out: Path, profile: dict[str, Any]) -> None:
    """Every op torch's key_averages() saw has the same calls and, to the ns, the same self and total CPU time in analyze's table."""
    oracle = _json(out / KEY_AVERAGES_FILE)["ops"]
    table = {o["name"]: o for o in profile["ops"]}
    assert TRAIN_OPS <= set(table)
    assert {o["name"] for o in oracle} <= set(table)
    for want in oracle:
        got = table[want["name"]]
        assert got["calls"] == want["count"], want["name"]
        assert round(got["self_cpu_us"] * 1000) == round(want["self_cpu_time_total"] * 1000), want["name"]
        assert round(got["cpu_total_us"] * 1000) == round(want["cpu_time_total"] * 1000), want["name"]


def _steps(profile: dict[str, Any]) -> list[str]:
    return [s["name"] for s in profile["steps"]]


# --- the context manager ------------------------------------------------------------------------


def test_context_manager_captures_the_active_steps_on_the_cpu(train_py: Path, tmp_path: Path) -> None:
    out = tmp_path / "mlp"
    lines: list[str] = []
    with ntrace.profiling(out, device="cpu", wait=1, warmup=1, active=2, progress=lines.append) as prof:
        assert prof.device == "cpu"
        _train(train_py)(6, prof.step)  # two steps more than the schedule: not recorded, not a second trace
    assert sorted(p.name for p in out.iterdir()) == ["capture.json", "key_averages.json", "trace.json"]
    profile = _analyze(out)
    assert _steps(profile) == ["ProfilerStep#2", "ProfilerStep#3"]
    assert profile["variant"] == "mlp"
    _assert_ops_are_torchs(out, profile)
    info = _json(out / CAPTURE_FILE)
    assert info["variant"] == "mlp" and info["device"] == "cpu" and info["torch"] == torch.__version__
    assert info["schedule"] == {"wait": 1, "warmup": 1, "active": 2, "steps": 4} and info["steps_taken"] == 6
    assert info["command"] == sys.argv and info["whole_run"] is False and info["correlate_device_time"] is None
    assert lines[1:5] == ["wait (1 step)", "warm-up (1 step)", "capture (2 steps)", "done (later steps are not recorded)"]
    assert lines[-1] == f"wrote {out}; analyze it with: ntrace analyze {out}"


def test_step_outside_a_session_does_nothing(train_py: Path) -> None:
    _train(train_py)(2, ntrace.step)


def test_too_few_steps_write_no_trace_and_say_why(tmp_path: Path) -> None:
    lines: list[str] = []
    with ntrace.profiling(tmp_path / "p", device="cpu", wait=1, warmup=1, active=1, progress=lines.append) as prof:
        prof.step()
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == ["capture.json"]
    assert lines[-1].startswith("no trace written: 1 step(s) taken, but the schedule records only after 2 (wait 1, warm-up 1)")


def test_a_second_session_inside_the_first_is_refused(tmp_path: Path) -> None:
    with ntrace.profiling(tmp_path / "a", device="cpu", progress=lambda line: None):
        with pytest.raises(CaptureError, match="already active"):
            with ntrace.profiling(tmp_path / "b", device="cpu", progress=lambda line: None):
                pass


def test_non_empty_output_is_refused_before_torch_is_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.txt").write_text("x")
    monkeypatch.setitem(sys.modules, "torch", None)  # torch would fail to import: the output check comes first
    with pytest.raises(CaptureError, match="not empty"):
        ntrace.profiling(tmp_path, device="cpu")


# --- the Neuron path against the fake torch_neuronx ---------------------------------------------


def _record(monkeypatch: pytest.MonkeyPatch, calls: list[tuple[Any, ...]]) -> None:
    """Append torch.profiler.schedule calls, profiler construction and every prof.step() to `calls`."""
    real_schedule = torch.profiler.schedule

    class RecordingProfile(torch.profiler.profile):
        def __init__(self, **kwargs: Any) -> None:
            calls.append(("profile", kwargs))
            super().__init__(**kwargs)

        def step(self) -> None:
            calls.append(("step",))
            super().step()

    monkeypatch.setattr(torch.profiler, "schedule", lambda **kw: calls.append(("schedule", kw)) or real_schedule(**kw))
    monkeypatch.setattr(torch.profiler, "profile", RecordingProfile)


@pytest.fixture
def fake_neuronx(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The fake torch_neuronx; torch.profiler.schedule, profile construction and prof.step() also go into its CALLS log."""
    yield from imported_fake_neuronx(monkeypatch, _record)


def test_neuron_context_manager_uses_the_documented_api(fake_neuronx: Any, train_py: Path, tmp_path: Path) -> None:
    from torch_neuronx.profiling import ProfileMode

    out = tmp_path / "neuron"
    with ntrace.profiling(out, device="neuron", wait=1, warmup=1, active=2, record_shapes=True, cores="0,1", progress=lambda line: None) as prof:
        assert prof.device == "neuron"
        _train(train_py)(5, prof.step)  # the fake runs the tensors on the CPU
    calls = fake_neuronx.CALLS
    kinds = [c[0] for c in calls]
    assert [c[1] for c in calls if c[0] == "NeuronConfig"] == [
        {"modes": [ProfileMode.DEVICE, ProfileMode.RUNTIME], "profile_output_dir": str(out), "capture_enabled_for_nc": "0,1", "correlate_device_time": True}
    ]
    (config,) = [c[1] for c in calls if c[0] == "NeuronProfiler"]
    (kwargs,) = [c[1] for c in calls if c[0] == "profile"]
    assert kwargs["experimental_config"] is config
    assert kwargs["activities"] == [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
    assert kwargs["record_shapes"] is True and kwargs["with_stack"] is False
    assert [c[1] for c in calls if c[0] == "schedule"] == [{"wait": 1, "warmup": 1, "active": 2, "repeat": 1}]
    assert kinds.count("export_trace") == 1  # NeuronProfiler(config).export_trace wrote the one cycle
    # a device synchronize before every profiler step (its work belongs to that step), and one before the profiler stops
    segments = " ".join(kinds[kinds.index("profile") :]).split("step")
    assert len(segments) == 6 and all("synchronize" in s for s in segments[:5]), kinds
    assert kinds.count("synchronize") == 6

    (trace,) = find_traces(out)
    assert trace.relative_to(out).parts[0].startswith("i-0fake_pid_") and trace.name == "trace.json"
    info = capture_info(trace)
    assert info is not None and info["variant"] == "neuron" and info["device"] == "neuron"
    assert info["torch_neuronx"] == "0.0.0+fake" and info["correlate_device_time"] is True and info["cores"] == "0,1"
    assert (out / KEY_AVERAGES_FILE).is_file()
    assert _steps(_analyze(out)) == ["ProfilerStep#2", "ProfilerStep#3"]


def test_cuda_context_manager_adds_cuda_activity_and_synchronizes_every_step(train_py: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    _record(monkeypatch, calls)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: calls.append(("synchronize",)))
    with ntrace.profiling(tmp_path / "gpu", device="cuda", wait=0, warmup=1, active=1, progress=lambda line: None) as prof:
        assert prof.device == "cuda"
        _train(train_py)(3, prof.step)  # the tensors stay on the CPU: only the wiring is checked
    kinds = [c[0] for c in calls]
    (kwargs,) = [c[1] for c in calls if c[0] == "profile"]
    assert kwargs["activities"] == [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    segments = " ".join(kinds[kinds.index("profile") :]).split("step")  # torch's own stop_trace synchronizes CUDA too: count ours per segment
    assert len(segments) == 4 and all("synchronize" in s for s in segments), kinds
    assert _json(tmp_path / "gpu" / CAPTURE_FILE)["device"] == "cuda"
    assert (tmp_path / "gpu" / "trace.json").is_file()


# --- ntrace capture --script --------------------------------------------------------------------


def _capture(*args: str) -> Result:
    return CliRunner().invoke(main, ["capture", *args])


def test_script_with_ntrace_step_follows_the_schedule(train_py: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = list(sys.argv)
    result = _capture("-o", str(out), "--script", str(train_py), "--device", "cpu", "--steps", "3", "--", "8", "step")
    assert result.exit_code == 0, result.output
    assert sys.argv == argv
    profile = _analyze(out)
    # torch step 0 is everything before the first ntrace.step() (dropped); then wait 1, warm-up 1, capture 3
    assert _steps(profile) == ["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5"]
    assert profile["variant"] == "train"
    _assert_ops_are_torchs(out, profile)
    info = _json(out / CAPTURE_FILE)
    assert info["schedule"] == {"wait": 1, "warmup": 1, "active": 3, "steps": 5} and info["steps_taken"] == 8 and info["whole_run"] is False
    assert "never called" not in result.stderr and "error" not in result.stderr
    assert f"analyze it with: ntrace analyze {out}" in result.stderr


def test_script_without_ntrace_step_is_profiled_whole(train_py: Path, tmp_path: Path) -> None:
    out = tmp_path / "whole"
    result = _capture("-o", str(out), "--script", str(train_py), "--device", "cpu", "--name", "mlp-whole", "--", "3", "nostep")
    assert result.exit_code == 0, result.output
    assert "ntrace.step() was never called: profiled as a whole (one step)" in result.stderr
    profile = _analyze(out)
    assert _steps(profile) == ["ProfilerStep#0"] and profile["variant"] == "mlp-whole"
    _assert_ops_are_torchs(out, profile)
    assert {o["name"]: o["calls"] for o in profile["ops"]}["aten::addmm"] == 3 * 2  # all three steps, two Linear layers each
    assert _json(out / CAPTURE_FILE)["whole_run"] is True


RAISE_LINE = TRAIN.splitlines().index('        raise ValueError("diverged")') + 1


@pytest.mark.parametrize(("mode", "code", "message"), [("exit3", 3, "train.py: exited with status 3"), ("raise", 1, f"train.py:{RAISE_LINE}: raised ValueError: diverged")])
def test_script_failure_is_one_line_and_its_status_passes_on(train_py: Path, tmp_path: Path, mode: str, code: int, message: str) -> None:
    out = tmp_path / "fails"
    result = _capture("-o", str(out), "--script", str(train_py), "--device", "cpu", "--", "5", mode)
    assert result.exit_code == code
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {message} (what was profiled so far is kept in {out})"]
    assert _steps(_analyze(out)) == ["ProfilerStep#3", "ProfilerStep#4"]  # the profile is kept


def test_script_errors_are_ntrace_errors(tmp_path: Path, train_py: Path) -> None:
    missing = _capture("-o", str(tmp_path / "o"), "--script", str(tmp_path / "nope.py"))
    assert missing.exit_code == 2 and missing.stderr == f"error: {tmp_path / 'nope.py'}: no such script\n"
    study_only = _capture("-o", str(tmp_path / "o"), "--script", str(train_py), "--variants", "naive")
    assert study_only.exit_code == 2 and "--variants: not an option of --script capture" in study_only.stderr
    both = _capture("--script", str(train_py), "--inspect")
    assert both.exit_code == 2 and "--script and --inspect: give one of them" in both.stderr
    stray = _capture("-o", str(tmp_path / "o"), "--", "x")
    assert stray.exit_code == 2 and "they go to --script or --inspect" in stray.stderr
    assert not (tmp_path / "o").exists()


# --- ntrace capture --inspect -------------------------------------------------------------------

#: A stand-in for a Neuron program: records its environment, writes what the runtime writes in model mode, exits with argv[1].
FAKE_RUN = f'''\
import json, os, shutil, sys
from pathlib import Path

env = {{k: v for k, v in os.environ.items() if k.startswith("NEURON_RT_INSPECT_")}}
Path(sys.argv[2]).write_text(json.dumps({{"env": env, "argv": sys.argv}}))
session = Path(env["NEURON_RT_INSPECT_OUTPUT_DIR"]) / f"i-0fake_pid_{{os.getpid()}}"
session.mkdir(parents=True)
for name in ("395760075800974_instid_0_vnc_0.ntff", "neff_395760075800974.neff"):
    shutil.copy(Path({str(MODEL_MODE)!r}) / name, session / name)
sys.exit(int(sys.argv[1]))
'''


@pytest.fixture
def fake_run(tmp_path: Path) -> Path:
    script = tmp_path / "neuron_app.py"
    script.write_text(FAKE_RUN)
    return script


@pytest.fixture
def off_neuron(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This host's /dev replaced by an empty folder: no Neuron device, whatever the host has."""
    (tmp_path / "dev").mkdir()
    real = neuron_inspect.neuron_missing
    monkeypatch.setattr(neuron_inspect, "neuron_missing", lambda dev: real(tmp_path / "dev"))


def test_neuron_missing_looks_for_neuron_devices(tmp_path: Path) -> None:
    assert "no Neuron device here" in (neuron_inspect.neuron_missing(tmp_path) or "")
    (tmp_path / "neuron0").touch()
    assert neuron_inspect.neuron_missing(tmp_path) is None


def test_inspect_off_neuron_is_refused_without_force(fake_run: Path, tmp_path: Path, off_neuron: None) -> None:
    record = tmp_path / "env.json"
    result = _capture("--inspect", "-o", str(tmp_path / "out"), "--", sys.executable, str(fake_run), "0", str(record))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "no Neuron device here" in result.stderr and "Neuron runtime" in result.stderr and "pass --force to run it anyway" in result.stderr
    assert not record.exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("profile", ["model", "session"])
def test_inspect_with_force_runs_the_command_with_the_documented_variables(fake_run: Path, tmp_path: Path, off_neuron: None, profile: str) -> None:
    out, record = tmp_path / "out", tmp_path / "env.json"
    result = _capture("--inspect", "-o", str(out), "--force", "--device-profile", profile, "--", sys.executable, str(fake_run), "0", str(record))
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("warning: no Neuron device here")
    ran = json.loads(record.read_text())
    assert ran["argv"] == [str(fake_run), "0", str(record)]
    assert ran["env"] == {
        "NEURON_RT_INSPECT_ENABLE": "1",
        "NEURON_RT_INSPECT_OUTPUT_DIR": str(out.resolve()),
        "NEURON_RT_INSPECT_SYSTEM_PROFILE": "1",
        "NEURON_RT_INSPECT_DEVICE_PROFILE": profile,
    }
    info = _json(out / CAPTURE_FILE)
    assert info["command"] == [sys.executable, str(fake_run), "0", str(record)] and info["environment"] == ran["env"]
    assert info["variant"] == "out" and info["mode"] == "inspect" and info["exit_code"] == 0

    artifacts = CliRunner().invoke(main, ["artifacts", str(out), "--format", "json"])
    assert artifacts.exit_code == 0, artifacts.output
    (session,) = orjson.loads(artifacts.stdout)["sessions"]
    assert session["session"]["instance"] == "i-0fake"
    assert [(Path(p["neff"]).name, Path(p["ntff"]).name, p["rule"]) for p in session["pairs"]] == [
        ("neff_395760075800974.neff", "395760075800974_instid_0_vnc_0.ntff", "hash")
    ]
    analyzed = CliRunner().invoke(main, ["analyze", str(out), "--format", "json"])
    assert analyzed.exit_code == 0, analyzed.output
    doc = orjson.loads(analyzed.stdout)
    assert doc["profiles"] == [] and [Path(n["path"]).name for n in doc["artifacts"][0]["ntff"]] == ["395760075800974_instid_0_vnc_0.ntff"]


def test_inspect_on_a_neuron_host_needs_no_force_and_passes_the_status_on(fake_run: Path, tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "neuron0").touch()
    lines: list[str] = []
    ran = neuron_inspect.run_inspect([sys.executable, str(fake_run), "5", str(tmp_path / "env.json")], tmp_path / "out", dev=dev, progress=lines.append)
    assert ran.exit_code == 5 and ran.failure == f"{Path(sys.executable).name}: exited with status 5"
    assert not any(line.startswith("warning:") for line in lines)
    assert _json(tmp_path / "out" / CAPTURE_FILE)["exit_code"] == 5


def test_inspect_errors_are_ntrace_errors(tmp_path: Path, off_neuron: None) -> None:
    empty = _capture("--inspect", "-o", str(tmp_path / "o"))
    assert empty.exit_code == 2 and "needs a command after --" in empty.stderr
    device = _capture("--inspect", "-o", str(tmp_path / "o"), "--device", "cpu", "--", "true")
    assert device.exit_code == 2 and "--device: not an option of --inspect capture" in device.stderr
    missing = _capture("--inspect", "--force", "-o", str(tmp_path / "o"), "--", str(tmp_path / "no-such-program"))
    assert missing.exit_code == 2 and missing.stderr.splitlines()[-1].startswith(f"error: {tmp_path / 'no-such-program'}: cannot run: ")
