"""Tests of the device-profile step of `ntrace capture`, against a fake `neuron-explorer` that each test writes (no real tool is run here).

The fake logs its argv, answers `--version`, and for `view … --output-file DIR` writes two tiny Parquet
tables into DIR; other modes exit 1 with a message, hang, or exit 0 without writing anything.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson
import polars as pl
import pytest
from click.testing import CliRunner

from ntrace.capture import explorer
from ntrace.cli import main
from ntrace.errors import CaptureError
from ntrace.neuron.device.layout import DEVICE_PROFILES
from ntrace.io.manifest import CAPTURE_FILE
from ntrace.neuron.artifacts import Session, find_sessions

from helpers import REPO

FAKE_NEURONX = Path(__file__).parent / "fake_neuronx"
FIXTURE_SESSIONS = {
    "naive": REPO / "fixtures" / "rmsnorm" / "naive" / "i-0123456789abcdef0_pid_48213" / "20260115_093012",
    "fused": REPO / "fixtures" / "rmsnorm" / "fused" / "i-0123456789abcdef0_pid_48377" / "20260115_093012",
}
FUSED_NEFF = "neff_511836260334481_vnc_0"
VERSION = "neuron-explorer 2.31.0 (fake)"
SMALL = (4, 64)

FAKE_TOOL = '''#!{python}
"""A fake neuron-explorer (ntrace tests only): mode {mode!r}."""
import json
import sys
import time
from pathlib import Path

with open({log!r}, "a") as fh:
    fh.write(json.dumps(sys.argv) + "\\n")
args = sys.argv[1:]
if args == ["--version"]:
    if {mode!r} == "hang":
        time.sleep(600)
    print("{version}")
    sys.exit(0)
assert args[0] == "view", args
out = Path(args[args.index("--output-file") + 1])
if {mode!r} == "empty":
    sys.exit(0)
import polars as pl

out.mkdir(parents=True)
pl.DataFrame({{"profile_schema_version": ["7.4.0"]}}).write_parquet(out / "Metadata.parquet")  # half a profile so far
if {mode!r} == "fail":
    print("processing profile", file=sys.stderr)
    print("ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch", file=sys.stderr)
    sys.exit(1)
if {mode!r} == "hang":
    time.sleep(600)
pl.DataFrame({{"total_time": [403300]}}).write_parquet(out / "Summary.parquet")
'''

MakeTool = Callable[..., tuple[Path, Path]]


@pytest.fixture
def fake_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MakeTool:
    """Write a fake neuron-explorer in `mode` into its own bin/ directory, first on PATH; returns (tool, argv log)."""
    monkeypatch.delenv(explorer.ENV_VAR, raising=False)

    def make(mode: str = "ok", on_path: bool = True) -> tuple[Path, Path]:
        bin_dir = tmp_path / f"bin-{mode}"
        bin_dir.mkdir()
        log = tmp_path / f"argv-{mode}.log"
        tool = bin_dir / explorer.TOOL
        tool.write_text(FAKE_TOOL.format(python=sys.executable, mode=mode, log=str(log), version=VERSION))
        tool.chmod(0o755)
        if on_path:
            monkeypatch.setenv("PATH", f"{bin_dir}:{_empty_bin(tmp_path)}")
        return tool, log

    return make


def _empty_bin(tmp_path: Path) -> Path:
    """A PATH entry holding nothing, so no real neuron-explorer is ever found."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return empty


@pytest.fixture
def no_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH without any neuron-explorer and no override."""
    monkeypatch.delenv(explorer.ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", str(_empty_bin(tmp_path)))


def _argvs(log: Path) -> list[list[str]]:
    return [orjson.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _copy_session(variant: str, dest: Path, with_profiles: bool = False) -> Session:
    """A copy of a fixture session under `dest` (without its processed device profiles unless asked), as find_sessions sees it."""
    source = FIXTURE_SESSIONS[variant]
    target = dest / source.parent.name / source.name
    shutil.copytree(source, target, ignore=None if with_profiles else shutil.ignore_patterns(DEVICE_PROFILES))
    (session,) = find_sessions(dest)
    assert session.dir == target and session.pairs.height > 0
    return session


def _listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# --- finding the tool and its version -------------------------------------------------------------


def test_the_tool_is_found_on_path_or_through_the_override(fake_tool: MakeTool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool, _ = fake_tool()
    assert explorer.find_explorer() == str(tool)
    other, _ = fake_tool("fail", on_path=False)
    monkeypatch.setenv(explorer.ENV_VAR, str(other))
    assert explorer.find_explorer() == str(other)
    monkeypatch.setenv(explorer.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(CaptureError, match=f"{explorer.ENV_VAR}=.*nowhere: not an executable"):
        explorer.find_explorer()


def test_without_the_tool_none_is_found(no_tool: None) -> None:
    assert explorer.find_explorer() is None


def test_version_is_the_first_line_of_dash_dash_version(fake_tool: MakeTool) -> None:
    tool, log = fake_tool()
    assert explorer.explorer_version(str(tool)) == VERSION
    assert _argvs(log) == [[str(tool), "--version"]]


def test_a_hanging_version_gives_none(fake_tool: MakeTool) -> None:
    tool, _ = fake_tool("hang")
    assert explorer.explorer_version(str(tool), timeout=0.5) is None


# --- process_session on copies of the fixture sessions ---------------------------------------------


def test_every_pair_runs_the_documented_view_command_and_lands_beside_the_session(fake_tool: MakeTool, tmp_path: Path) -> None:
    tool, log = fake_tool()
    session = _copy_session("naive", tmp_path / "naive")
    heard: list[str] = []
    rows = explorer.process_session(session, str(tool), progress=heard.append)

    profiles = session.dir / DEVICE_PROFILES
    neffs = sorted(session.dir.glob("*.neff"))
    (ntff,) = session.dir.glob("*.ntff")
    assert len(neffs) == 6
    assert [(r["neff"], r["ntff"], r["dir"], r["ok"], r["status"], r["problem"]) for r in rows] == [
        (str(n), str(ntff), str(profiles / n.stem), True, "written", None) for n in neffs
    ]
    argvs = _argvs(log)
    assert len(argvs) == 6
    for argv, neff in zip(argvs, neffs):
        written = Path(argv[-1])
        assert argv == [str(tool), "view", "-n", str(neff), "-s", str(ntff), "--output-format", "parquet", "--output-file", str(written)]
        assert written.name == neff.stem and written.parent.parent == profiles and written.parent.name.startswith(".")  # a temporary sibling
    assert heard == [explorer.command_for(explorer.ProfileJob(n, ntff, profiles / n.stem), str(tool)) for n in neffs]
    assert sorted(p.name for p in profiles.iterdir()) == [n.stem for n in neffs]  # no temporary directory left
    for neff in neffs:
        assert sorted(p.name for p in (profiles / neff.stem).iterdir()) == ["Metadata.parquet", "Summary.parquet"]
        assert pl.read_parquet(profiles / neff.stem / "Metadata.parquet")["profile_schema_version"].to_list() == ["7.4.0"]


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("fail", "exited 1: ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch"),
        ("hang", "timed out after 0.5 s and was killed"),
        ("empty", "exited 0 but wrote no Parquet table into its --output-file directory"),
    ],
)
def test_a_failure_is_a_warning_row_and_leaves_no_directory(fake_tool: MakeTool, tmp_path: Path, mode: str, problem: str) -> None:
    tool, log = fake_tool(mode)
    session = _copy_session("fused", tmp_path / "fused")
    before = _listing(session.dir)
    (row,) = explorer.process_session(session, str(tool), timeout=0.5 if mode == "hang" else 60)  # only the hang waits out its timeout
    neff, ntff = session.dir / f"{FUSED_NEFF}.neff", session.dir / "profile_nc_0_session_0.ntff"
    assert row == {
        "neff": str(neff), "ntff": str(ntff), "dir": str(session.dir / DEVICE_PROFILES / FUSED_NEFF),
        "ok": False, "status": "failed", "problem": f"neuron-explorer failed on {neff} with {ntff}: {problem}",
    }
    assert len(_argvs(log)) == 1
    assert _listing(session.dir) == before  # not even an empty device_profiles/


def test_an_existing_profile_is_kept_unless_force_and_a_failed_rerun_keeps_it(fake_tool: MakeTool, tmp_path: Path) -> None:
    tool, log = fake_tool()
    session = _copy_session("fused", tmp_path / "fused", with_profiles=True)
    out = session.dir / DEVICE_PROFILES / FUSED_NEFF
    fixture_tables = sorted(p.name for p in out.iterdir())
    assert len(fixture_tables) > 2

    (kept,) = explorer.process_session(session, str(tool))
    assert (kept["status"], kept["ok"], kept["problem"]) == ("kept", True, None)
    assert _argvs(log) == [] and sorted(p.name for p in out.iterdir()) == fixture_tables

    failing, _ = fake_tool("fail", on_path=False)
    (failed,) = explorer.process_session(session, str(failing), force=True)
    assert failed["status"] == "failed" and sorted(p.name for p in out.iterdir()) == fixture_tables  # the old profile survives
    assert [p.name for p in out.parent.iterdir()] == [FUSED_NEFF]

    (forced,) = explorer.process_session(session, str(tool), force=True)
    assert (forced["status"], forced["ok"]) == ("written", True)
    assert sorted(p.name for p in out.iterdir()) == ["Metadata.parquet", "Summary.parquet"]
    assert [p.name for p in out.parent.iterdir()] == [FUSED_NEFF]


def test_a_neff_with_two_ntffs_gets_one_directory_per_pair(fake_tool: MakeTool, tmp_path: Path) -> None:
    tool, log = fake_tool()
    source = _copy_session("fused", tmp_path / "fused").dir
    shutil.copyfile(source / "profile_nc_0_session_0.ntff", source / "profile_nc_0_session_1.ntff")
    (session,) = find_sessions(tmp_path / "fused")
    rows = explorer.process_session(session, str(tool))
    profiles = source / DEVICE_PROFILES
    assert [(Path(r["ntff"]).name, Path(r["dir"]).name, r["status"]) for r in rows] == [
        ("profile_nc_0_session_0.ntff", FUSED_NEFF, "written"),
        ("profile_nc_0_session_1.ntff", f"{FUSED_NEFF}__profile_nc_0_session_1", "written"),
    ]
    assert [a[a.index("-s") + 1] for a in _argvs(log)] == [r["ntff"] for r in rows]
    assert sorted(p.name for p in profiles.iterdir()) == [FUSED_NEFF, f"{FUSED_NEFF}__profile_nc_0_session_1"]


def test_without_the_tool_each_row_gives_a_command_that_does_it(fake_tool: MakeTool, tmp_path: Path) -> None:
    session = _copy_session("fused", tmp_path / "it's my run")  # a quote and a space: the command must be quoted
    (row,) = explorer.process_session(session, None)
    (job,) = explorer.profile_jobs(session)
    command = explorer.command_for(job)
    assert row["status"] == "not run" and not row["ok"]
    assert row["problem"] == f"neuron-explorer not found: to process {job.neff} with {job.ntff} run: {command}"
    assert not (session.dir / DEVICE_PROFILES).exists()

    tool, log = fake_tool()  # now installed: run the printed command as a user would
    argv = shlex.split(command)
    assert argv == ["neuron-explorer", "view", "-n", str(job.neff), "-s", str(job.ntff), "--output-format", "parquet", "--output-file", str(job.out)]
    subprocess.run(argv, check=True, timeout=120)
    assert _argvs(log) == [[str(tool), *argv[1:]]]
    assert sorted(p.name for p in job.out.iterdir()) == ["Metadata.parquet", "Summary.parquet"]


# --- wiring through capture_study (fake torch_neuronx, CPU tensors) -------------------------------


@pytest.fixture
def neuronx(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The fake torch_neuronx of tests/capture/fake_neuronx, imported fresh; yields rmsnorm and backends."""
    pytest.importorskip("torch")
    for name in [m for m in sys.modules if m == "torch_neuronx" or m.startswith("torch_neuronx.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(FAKE_NEURONX))
    import torch_neuronx.profiling  # noqa: F401

    from ntrace.capture import backends, rmsnorm

    yield rmsnorm, backends
    for name in [m for m in sys.modules if m == "torch_neuronx" or m.startswith("torch_neuronx.")]:
        del sys.modules[name]


def _neuron_capture(neuronx: Any, out: Path, **kwargs: Any) -> tuple[pl.DataFrame, list[str]]:
    rmsnorm, backends = neuronx
    lines: list[str] = []
    backend = backends.neuron_backend(backends.ProfileSchedule(), "0", tensor_device="cpu")
    frame = rmsnorm.capture_study(out, variants=("naive", "fused"), backend=backend, shape=SMALL, progress=lines.append, **kwargs)
    return frame, lines


def test_capture_processes_each_session_and_records_tool_version_and_profiles(neuronx: Any, fake_tool: MakeTool, tmp_path: Path) -> None:
    tool, log = fake_tool()
    frame, lines = _neuron_capture(neuronx, tmp_path / "out")
    assert f"neuron-explorer: {tool} ({VERSION})" in lines
    views = [a for a in _argvs(log) if a[1] == "view"]
    assert len(views) == 2
    for variant, traces in zip(("naive", "fused"), frame["traces"].to_list()):
        vdir = tmp_path / "out" / variant
        (trace,) = traces  # the device profile's Parquet tables are not counted as traces
        session = Path(trace).parent.as_posix()
        doc = orjson.loads((vdir / CAPTURE_FILE).read_bytes())["device_profiles"]
        assert doc == {
            "tool": str(tool),
            "version": VERSION,
            "profiles": [
                {
                    "neff": f"{session}/{FUSED_NEFF}.neff",
                    "ntff": f"{session}/profile_nc_0_session_0.ntff",
                    "dir": f"{session}/device_profiles/{FUSED_NEFF}",
                    "ok": True,
                    "status": "written",
                    "problem": None,
                }
            ],
        }
        out = vdir / session / "device_profiles" / FUSED_NEFF
        assert sorted(p.name for p in out.iterdir()) == ["Metadata.parquet", "Summary.parquet"]
        assert f"{variant}: device profile {out.absolute()}" in lines
        assert any(line.startswith(f"{variant}: {tool} view -n ") for line in lines)


def test_capture_without_the_tool_prints_the_commands(neuronx: Any, no_tool: None, tmp_path: Path) -> None:
    _, lines = _neuron_capture(neuronx, tmp_path / "out")
    assert "neuron-explorer: not found on PATH (nor $NTRACE_NEURON_EXPLORER)" in lines
    missing = [line for line in lines if line.startswith("neuron-explorer not found: to process ")]
    assert len(missing) == 2
    for variant, line in zip(("naive", "fused"), missing):
        doc = orjson.loads((tmp_path / "out" / variant / CAPTURE_FILE).read_bytes())["device_profiles"]
        assert doc["tool"] is None and doc["version"] is None
        (profile,) = doc["profiles"]
        assert (profile["status"], profile["ok"]) == ("not run", False)
        vdir = (tmp_path / "out" / variant).absolute()
        neff, ntff, out = (vdir / profile[k] for k in ("neff", "ntff", "dir"))
        assert line == profile["problem"]
        assert line.startswith(f"neuron-explorer not found: to process {neff} with {ntff} run: ")
        assert shlex.split(line.split(" run: ", 1)[1]) == ["neuron-explorer", "view", "-n", str(neff), "-s", str(ntff), "--output-format", "parquet", "--output-file", str(out)]


def test_capture_a_failed_profile_is_a_warning_not_an_error(neuronx: Any, fake_tool: MakeTool, tmp_path: Path) -> None:
    fake_tool("fail")
    frame, lines = _neuron_capture(neuronx, tmp_path / "out")
    assert frame.height == 2
    warnings = [line for line in lines if line.startswith("warning: neuron-explorer failed on ")]
    assert len(warnings) == 2 and all(w.endswith("exited 1: ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch") for w in warnings)
    for variant in ("naive", "fused"):
        (profile,) = orjson.loads((tmp_path / "out" / variant / CAPTURE_FILE).read_bytes())["device_profiles"]["profiles"]
        assert (profile["ok"], profile["status"]) == (False, "failed")
        assert not list((tmp_path / "out" / variant).rglob(DEVICE_PROFILES))


def test_cli_no_device_profiles_skips_the_step(neuronx: Any, fake_tool: MakeTool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rmsnorm, backends = neuronx
    _, log = fake_tool()
    monkeypatch.setattr(rmsnorm, "make_backend", lambda device, schedule, cores: backends.neuron_backend(schedule, cores, tensor_device="cpu"))
    args = ["capture", "-o", str(tmp_path / "out"), "--device", "neuron", "--variants", "fused", "--shape", "4,64", "--no-device-profiles"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "device_profiles" not in orjson.loads((tmp_path / "out" / "fused" / CAPTURE_FILE).read_bytes())
    assert _argvs(log) == [] and "neuron-explorer" not in result.stderr
    assert not list((tmp_path / "out").rglob(DEVICE_PROFILES))


def test_cli_timeout_default_is_the_library_default() -> None:
    (option,) = [p for p in main.commands["capture"].params if p.name == "explorer_timeout"]  # the CLI keeps ntrace.capture unimported
    assert option.default == explorer.TIMEOUT_S


def test_cpu_capture_never_runs_the_tool(fake_tool: MakeTool, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from ntrace.capture import backends, rmsnorm

    _, log = fake_tool()
    lines: list[str] = []
    rmsnorm.capture_study(tmp_path / "out", variants=("fused",), backend=backends.torch_backend("cpu", backends.ProfileSchedule()), shape=SMALL, progress=lines.append)
    assert _argvs(log) == [] and not any("neuron-explorer" in line for line in lines)
    assert "device_profiles" not in orjson.loads((tmp_path / "out" / "fused" / CAPTURE_FILE).read_bytes())
