"""The bad-input corpus (scripts/make_bad_inputs.py) through the CLI: expected exit code, one-line errors, warnings, no traceback, inputs unchanged."""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from helpers import REPO, write_trace, x
from ntrace import analyze
from ntrace.io.kineto import read_kineto
from ntrace.cli import main
from ntrace.errors import CaptureError, InputError, NtraceError, OutputError, TraceFormatError, one_line

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _script(name: str) -> Any:
    """Import scripts/<name>.py as a module."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _script("make_bad_inputs")
CASE_NAMES = [c["name"] for c in GENERATOR.CASES]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    """The corpus written once into a temporary directory, with its manifest by case name."""
    out = tmp_path_factory.mktemp("bad_inputs")
    manifest = GENERATOR.write_corpus(out)
    return out, {c["name"]: c for c in manifest}


def digest(path: Path) -> str:
    """sha256 of a file's bytes, reading only its data segments (with their offsets) so a sparse multi-GB file hashes in an instant; any change to its bytes changes the digest."""
    h = hashlib.sha256()
    size = path.stat().st_size
    with path.open("rb") as fh:
        fd, pos = fh.fileno(), 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
                end = os.lseek(fd, start, os.SEEK_HOLE)
            except OSError:  # no data after pos (ENXIO), or a file system without SEEK_DATA: hash the rest plainly
                start, end = (size, size) if pos else (0, size)
            fh.seek(start)
            h.update(f"@{start}:".encode())
            for done in range(start, end, 1 << 24):
                h.update(fh.read(min(1 << 24, end - done)))
            pos = max(end, pos + 1)
    return f"{h.hexdigest()}:{size}"


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under `root`: digest of regular files, link targets, and the kind of anything else (never opened)."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                found[rel] = "link:" + os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                found[rel] = digest(path) + f":{stat.S_IMODE(st.st_mode):o}:{st.st_mtime_ns}"
            else:
                found[rel] = f"kind:{stat.S_IFMT(st.st_mode):o}"
    return found


def _args(spec: dict[str, Any], path: Path, tmp_path: Path) -> list[str]:
    """The case's CLI arguments with "{path}" as its input and "{out}" as a fresh output directory outside the corpus."""
    return [a.replace("{path}", str(path)).replace("{out}", str(tmp_path / "out")) for a in spec["args"]]


#: A control character a terminal acts on (all but the newline between lines): never printed raw, whatever the input.
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def check_outcome(spec: dict[str, Any], exit_code: int, stdout: str, stderr: str, path: Path) -> None:
    """Assert one run's result matches the case's expected outcome."""
    where = f"case {spec['name']}: exit {exit_code}\nstdout: {stdout[-2000:]}\nstderr: {stderr}"
    assert "Traceback" not in stdout + stderr, where
    assert not RAW_CONTROL.search(stdout + stderr), where
    assert exit_code == spec["exit"], where
    lines = stderr.splitlines()
    pattern = re.compile(spec["pattern"], re.MULTILINE) if spec["pattern"] else None
    if spec["outcome"] == "ok":
        assert stderr == "", where
    elif spec["outcome"] == "error":
        assert len(lines) == 1, where
        assert lines[0].startswith(f"error: {one_line(str(path))}:"), where
        assert pattern is not None and pattern.search(lines[0]), where
        assert stdout == "", where
    elif spec["outcome"] == "warning":
        assert lines and all(line.startswith("warning: ") for line in lines), where
        assert pattern is not None and any(pattern.search(line) for line in lines), where
        assert stdout, where
    else:
        assert spec["outcome"] == "report" and pattern is not None and pattern.search(stdout), where


def test_corpus_has_at_least_30_named_cases_with_outcomes(corpus: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    out, cases = corpus
    assert len(cases) >= 30
    assert json.loads((out / "cases.json").read_text()) == list(cases.values())
    for spec in cases.values():
        assert spec["outcome"] in {"ok", "warning", "error", "report"} and spec["exit"] in {0, 2} and spec["why"]
        assert os.path.lexists(out / spec["path"]), spec["name"]
    kinds = {spec["outcome"] for spec in cases.values()}
    assert kinds == {"ok", "warning", "error", "report"}


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_gives_expected_outcome_and_changes_nothing(name: str, corpus: tuple[Path, dict[str, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out, cases = corpus
    spec = cases[name]
    if spec["needs"] == "non-root" and IS_ROOT:
        pytest.skip("runs as root, where chmod 000 does not stop reading; the error path is tested by test_unreadable_file_error_path")
    if spec["heavy"]:
        pytest.skip("gives its outcome only under RLIMIT_AS: run in a child process by tests/test_hostile_corpus.py")
    for key, value in spec["env"].items():
        monkeypatch.setenv(key, value)
    path = out / spec["path"]
    before = snapshot(out)
    args = _args(spec, path, tmp_path)
    result = CliRunner().invoke(main, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"case {name} raised {result.exception!r}") from result.exception
    check_outcome(spec, result.exit_code, result.stdout, result.stderr, path)
    assert snapshot(out) == before, f"case {name} changed the input directory"


SUBPROCESS_CASES = ["event_name_clears_screen", "convert_same_stem_gz_and_plain", "neff_header_all_ff", "sound_trace", "truncated_mid_event", "corrupt_gzip", "nan_infinity_literals", "fifo_as_trace", "gzip_bomb", "one_broken_among_many", "one_broken_among_many_parallel", "deeply_nested"]


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_case_as_a_real_process(name: str, corpus: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path) -> None:
    out, cases = corpus
    spec = cases[name]
    path = out / spec["path"]
    before = snapshot(out)
    args = _args(spec, path, tmp_path)
    proc = subprocess.run([sys.executable, "-m", "ntrace", *args], capture_output=True, text=True, timeout=120, env={**os.environ, **spec["env"]})
    check_outcome(spec, proc.returncode, proc.stdout, proc.stderr, path)
    assert snapshot(out) == before


def test_warnings_reach_the_json_output(corpus: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    out, cases = corpus
    path = out / cases["truncated_mid_event"]["path"]
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert any("cut off at byte" in w for w in doc["warnings"])
    assert doc["warnings"] == [line.removeprefix("warning: ") for line in result.stderr.splitlines()]


def test_salvaged_trace_equals_the_complete_events_before_the_cut(corpus: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    out, cases = corpus
    sound = read_kineto(out / cases["sound_trace"]["path"]).events
    cut_path = out / cases["truncated_mid_event"]["path"]
    cut = read_kineto(cut_path)
    raw = cut_path.read_bytes()
    complete = raw[: raw.rindex(b"}") + 1] + b"]}"  # the cut falls inside an event's name, so this is the last whole event
    expected = len(json.loads(complete)["traceEvents"])
    assert cut.events.height == expected == sound.height - 2
    assert cut.events.equals(sound.head(expected))
    assert f"cut off at byte {len(raw):,}" in cut.warnings[0] and f"the {expected:,} complete events" in cut.warnings[0]


def test_truncated_gzip_salvages_the_same_events_as_plain(tmp_path: Path) -> None:
    import gzip

    events = [x(f"op{i}", "cpu_op", i * 10, 5) for i in range(200)]
    path = write_trace(tmp_path / "t.json", events)
    data = path.read_bytes()
    zipped = tmp_path / "t.json.gz"
    zipped.write_bytes(gzip.compress(data)[:-200])
    got = read_kineto(zipped)
    assert 0 < got.events.height < 200
    assert got.events["name"].to_list() == [f"op{i}" for i in range(got.events.height)]
    assert any("gzip stream is cut off" in w for w in got.warnings) and any("cut off at byte" in w for w in got.warnings)


def test_one_broken_file_does_not_stop_the_others(corpus: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    out, cases = corpus
    result = analyze(out / cases["one_broken_among_many"]["path"])
    assert [p.path.name for p in result.summaries] == ["rank0.pt.trace.json", "rank1.pt.trace.json.gz"]
    assert len(result.warnings) == 1 and "rank2" in result.warnings[0]
    first, second = result.summaries
    assert first.lanes.equals(second.lanes) and first.op_groups.equals(second.op_groups)


def test_unreadable_file_error_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission denied, simulated (tests may run as root, where chmod 000 does not stop reading)."""
    path = write_trace(tmp_path / "trace.json", [x("a", "cpu_op", 0, 1)])
    good = write_trace(tmp_path / "rank1.pt.trace.json", [x("b", "cpu_op", 0, 1)])
    real_open = Path.open

    def deny(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == path.name:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)
    result = CliRunner().invoke(main, ["analyze", str(path)])
    assert result.exit_code == 2 and result.stderr == f"error: {path}: cannot be read (Permission denied)\n"
    found = analyze(tmp_path)
    assert [p.path for p in found.summaries] == [good]
    assert list(found.warnings) == [f"skipped {path}: cannot be read (Permission denied)"]


def test_unlistable_directory_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_trace(tmp_path / "trace.json", [x("a", "cpu_op", 0, 1)])
    (tmp_path / "locked").mkdir()
    real_scandir = os.scandir

    def deny(path: Any) -> Any:
        if str(path).endswith("locked"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", deny)
    found = analyze(tmp_path)
    assert len(found.summaries) == 1
    assert list(found.warnings) == [f"skipped {tmp_path / 'locked'}: cannot be listed (Permission denied)"]


def test_debug_shows_a_traceback(corpus: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    out, cases = corpus
    path = out / cases["corrupt_gzip"]["path"]
    proc = subprocess.run([sys.executable, "-m", "ntrace", "--debug", "analyze", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "TraceFormatError" in proc.stderr and "corrupt gzip" in proc.stderr


def test_memory_check_names_the_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_trace(tmp_path / "trace.json", [x(f"op{i}", "cpu_op", i, 1) for i in range(100)])
    size = path.stat().st_size
    monkeypatch.setattr("ntrace.io.files.available_memory", lambda: size * 5 // 2)  # holds the file, cannot decode it all
    with pytest.raises(InputError, match=r"too large to analyze here: .* of JSON needs about .* of memory, only .* is available"):
        read_kineto(path)
    got = read_kineto(path, max_events=10)  # held once, decoded only the first 10 events
    assert got.events["name"].to_list() == [f"op{i}" for i in range(10)]


def test_max_events_on_a_layout_it_cannot_cut_still_caps(tmp_path: Path) -> None:
    """Events whose first key is not "ph" cannot be cut before decoding; the cap is applied after."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [{"name": f"op{i}", "ph": "X", "cat": "cpu_op", "ts": i, "dur": 1, "pid": 1, "tid": 1} for i in range(20)]}))
    got = read_kineto(path, max_events=7)
    assert got.events.height == 7 and list(got.warnings) == [f"{path}: --max-events 7: analyzed the first 7 of 20 events"]


@pytest.mark.slow
def test_short_fuzz_run_finds_no_crash() -> None:
    """A bounded run of scripts/fuzz.py (the full run is minutes long and not part of the suite)."""
    fuzz = _script("fuzz")
    stats = fuzz.Stats()
    fuzz.fuzz(fuzz.default_seeds(), 30, stats, seed=1)
    assert stats.tried >= 30 and stats.crashes == [], stats.crashes[:1]


@pytest.mark.slow
def test_short_fuzz_run_of_trace_sets_finds_no_crash() -> None:
    """A bounded run of scripts/fuzz.py --target sets: variants and ranks whose times fit int64 ns one by one but not summed or aligned, through compare, diff, ranks, report and analyze."""
    fuzz, _ = _script("fuzz"), _script("fuzz_targets")  # fuzz_target imports fuzz_targets by name
    stats = fuzz.Stats()
    fuzz.fuzz_target("sets", 6, stats, seed=19)
    assert stats.tried >= 6 and stats.crashes == [], stats.crashes[:1]


def test_a_fuzz_targets_crash_keeps_its_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """scripts/fuzz.py --target: the files of an input that crashed are copied out before its temporary directory goes, so the crash can be run again."""
    import click

    fuzz = _script("fuzz")

    @click.command()
    @click.argument("path")
    def crashes(path: str) -> None:
        raise RuntimeError(f"boom on {Path(path).read_text()}")

    def write(where: Path) -> tuple[Path, list[list[str]]]:
        (where / "profile").mkdir()
        (where / "profile" / "Instruction.parquet").write_text("the input")
        return where / "profile" / "Instruction.parquet", [["{path}"]]

    monkeypatch.setattr(fuzz, "main", crashes)
    keep = tmp_path / "device_crash_0_input"
    crash = fuzz.run_target_input(write, keep)
    assert crash is not None and "boom on the input" in crash and str(keep) in crash
    assert (keep / "profile" / "Instruction.parquet").read_text() == "the input"
    assert fuzz.run_target_input(lambda where: (where, []), tmp_path / "not_kept") is None and not (tmp_path / "not_kept").exists()


@pytest.mark.parametrize("cls", [NtraceError, InputError, TraceFormatError, CaptureError, OutputError])
def test_errors_survive_pickling(cls: type[NtraceError]) -> None:
    """analyze --jobs sends a worker's error back to the parent: it must pickle with its path and problem."""
    import pickle

    back = pickle.loads(pickle.dumps(cls("t.json", "is broken")))
    assert type(back) is cls and back.path == "t.json" and back.problem == "is broken" and str(back) == "t.json: is broken"


OTHER_COMMANDS = {
    "export": lambda p, out: ["export", p, "--perfetto", str(out / "p.json"), "-q"],
    "report": lambda p, out: ["report", p, "-o", str(out / "r.html"), "-q"],
    "diff": lambda p, out: ["diff", p, p],
    "compare": lambda p, out: ["compare", p],
    "convert": lambda p, out: ["convert", p, "-o", str(out / "parquet")],
    "artifacts": lambda p, out: ["artifacts", p],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(OTHER_COMMANDS))
def test_every_command_survives_every_case(command: str, corpus: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only analyze: each command on each bad input ends with 0, 1 or 2, errors in one line, no traceback, input unchanged."""
    out, cases = corpus
    before = snapshot(out)
    for spec in cases.values():
        if spec["heavy"]:
            continue  # run under RLIMIT_AS by tests/test_hostile_corpus.py
        with monkeypatch.context() as m:
            for key, value in spec["env"].items():
                m.setenv(key, value)
            result = CliRunner().invoke(main, OTHER_COMMANDS[command](str(out / spec["path"]), tmp_path))
        where = f"{command} on {spec['name']}: exit {result.exit_code}\n{result.stderr[-1000:]}"
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(where) from result.exception
        assert "Traceback" not in result.output and result.exit_code in (0, 1, 2), where
        lines = result.stderr.splitlines()
        assert all(line.startswith(("error: ", "warning: ")) for line in lines), where
        assert (result.exit_code == 2) == (sum(line.startswith("error: ") for line in lines) == 1), where
    assert snapshot(out) == before


def test_fuzz_reproducer_non_utf8_in_metadata(tmp_path: Path) -> None:
    """Found by scripts/fuzz.py (seed 1003): a non-UTF-8 byte in deviceProperties crashed the lazy metadata decode."""
    path = tmp_path / "t.json"
    path.write_bytes(b'{"deviceProperties": [{"\x80id": 0, "name": "dev\xff"}], "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 1, "dur": 2}]}')
    for fast in (True, False):
        got = read_kineto(path, fast=fast)
        assert got.events.height == 1
        assert got.meta["deviceProperties"] == [{"\ufffdid": 0, "name": "dev\ufffd"}]
