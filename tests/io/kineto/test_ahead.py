"""Reading ahead (ntrace.io.read_ahead, ntrace.io.kineto._ahead): a trace parsed on a thread before the reader asks gives the reader exactly what reading it then gives, and is used only for the very file it was started on.

AHEAD_MIN is made 0 so the real traces (small once gunzipped) are read ahead; the reader's own
mapping of the file is made to fail, so a read that passes took the read-ahead.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal

from helpers import shared_trace_files, write_trace, x
from ntrace.cli import main
from ntrace.io import read_ahead, read_trace
from ntrace.io.kineto import _ahead, _columnar, _read, read_kineto
from ntrace.trace import Trace


@pytest.fixture(autouse=True)
def _small_files_read_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ahead, "AHEAD_MIN", 0)
    monkeypatch.setattr(_ahead, "_PENDING", [])


def _no_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the reader's own mapping of a file fail: only a read-ahead lets a read pass."""

    def refuse(path: Path, warnings: list[str], **_: object) -> bytes:
        raise AssertionError(f"{path} was mapped again, not taken from its read-ahead")

    monkeypatch.setattr(_read, "map_json", refuse)


def _unzipped(tmp_path: Path) -> list[Path]:
    out = []
    for source in shared_trace_files():
        target = tmp_path / source.name.removesuffix(".gz")
        target.write_bytes(gzip.decompress(source.read_bytes()) if source.name.endswith(".gz") else source.read_bytes())
        out.append(target)
    return out


def _same(got: Trace, want: Trace) -> None:
    assert_frame_equal(got.events, want.events, check_exact=True)
    assert got.meta == want.meta
    assert got.warnings == want.warnings


def test_a_read_ahead_gives_what_reading_then_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On every real trace: the events frame, metadata and warnings equal exactly, and the file was not read again."""
    traces = _unzipped(tmp_path)
    assert len(traces) >= 11
    wanted = {path: read_kineto(path) for path in traces}
    _no_mapping(monkeypatch)
    parsed: list[Path] = []
    parse = _columnar.parts
    monkeypatch.setattr(_columnar, "parts", lambda text, *rest: parsed.append(text) or parse(text, *rest))
    built: list[str] = []
    decoded = _read.decoded_ahead
    monkeypatch.setattr(_read, "decoded_ahead", lambda *a: built.append(threading.current_thread().name) or decoded(*a))
    for path in traces:
        read_ahead(path)
        assert _ahead._PENDING, f"{path.name}: not read ahead"
        _same(read_kineto(path), wanted[path])
        assert not _ahead._PENDING
    assert len(parsed) == len(traces)  # each parsed once, ahead
    assert built == ["ntrace-read-ahead"] * len(traces)  # and made into its events there


def test_raw_parts_are_taken_when_nothing_was_handed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-ahead started without `build` (the private starter alone) keeps the parser's parts, and the reader makes them the same events."""
    path = max(_unzipped(tmp_path), key=lambda p: p.stat().st_size)
    want = read_kineto(path)
    _no_mapping(monkeypatch)
    assert _ahead.read_ahead(path)
    _same(read_kineto(path), want)


def test_lanes_given_to_the_reader_classify_the_events_made_ahead_again(tmp_path: Path) -> None:
    """The thread classifies by the default lane table; a reader given other lanes gets them, as it does without reading ahead."""
    path = max(_unzipped(tmp_path), key=lambda p: p.stat().st_size)
    lanes = {"cpu_op": "runtime_api", "new_category": "hardware"}
    want = read_kineto(path, lanes=lanes)
    read_ahead(path)
    got = read_kineto(path, lanes=lanes)
    _same(got, want)
    assert got.events.filter(pl.col("cat") == "cpu_op")["lane"].unique().to_list() == ["runtime_api"]


def test_a_read_of_the_file_by_another_spelling_reads_it_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Warnings made ahead name the path the read-ahead was started with: a read of the same file by another path reads it again and names its own."""
    path = write_trace(tmp_path / "t.json", [x("aten::mm", "cpu_op", 0, 10), x("aten::add", "cpu_op", 20, -5)])
    want = read_kineto(path)
    assert want.warnings and all(w.startswith(f"{path}: ") for w in want.warnings)
    monkeypatch.chdir(tmp_path)
    read_ahead(Path("t.json"))
    _same(read_kineto(path), want)
    read_ahead(Path("t.json"))
    relative = read_kineto(Path("t.json"))
    assert relative.warnings == tuple(w.replace(f"{path}: ", "t.json: ") for w in want.warnings)


def test_a_build_that_fails_leaves_the_file_to_the_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever goes wrong on the thread, the reader reads the file from the start and gets what it always gets."""
    path = max(_unzipped(tmp_path), key=lambda p: p.stat().st_size)
    want = read_kineto(path)

    def broken(*_: object) -> None:
        raise MemoryError("no room for the frame")

    monkeypatch.setattr(_read, "decoded_ahead", broken)
    mapped: list[Path] = []
    mapping = _read.map_json
    monkeypatch.setattr(_read, "map_json", lambda p, warnings, **kw: mapped.append(p) or mapping(p, warnings, **kw))
    read_ahead(path)
    _same(read_kineto(path), want)
    assert mapped == [path]


def test_a_read_ahead_dropped_for_another_ends(tmp_path: Path) -> None:
    """A read-ahead that no read takes, because another was started after it, does not wait on: its thread ends."""
    first = write_trace(tmp_path / "a.json", [x("aten::mm", "cpu_op", 0, 10)])
    second = write_trace(tmp_path / "b.json", [x("aten::add", "cpu_op", 0, 10)])
    assert _ahead.read_ahead(first)  # no `build` handed over: the thread would wait for one
    ((_, thread),) = _ahead._PENDING
    read_ahead(second)
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert read_kineto(second).events["name"].to_list() == ["aten::add"]


def test_the_thread_imports_nothing_while_the_caller_imports(tmp_path: Path) -> None:
    """The thread makes the events while the CLI imports the analysis: every module it runs is imported before, so two threads never import at once (which can fail where imports are circular)."""
    (path,) = [p for p in _unzipped(tmp_path) if p.name.startswith("nccl_parser_config")]
    code = f"""
import builtins, importlib.util, sys, threading
from pathlib import Path
from ntrace.io.kineto import _ahead
_ahead.AHEAD_MIN = 0
late, original = [], builtins.__import__
def spy(name, globals=None, locals=None, fromlist=(), level=0):
    if threading.current_thread().name == "ntrace-read-ahead":
        full = importlib.util.resolve_name("." * level + name, (globals or {{}}).get("__package__")) if level else name
        module = sys.modules.get(full)
        if module is None or getattr(module.__spec__, "_initializing", False) or any(not hasattr(module, f) for f in fromlist or ()):
            late.append(full)
    return original(name, globals, locals, fromlist, level)
builtins.__import__ = spy
from ntrace.io import read_ahead
read_ahead(Path({str(path)!r}))
import ntrace.render.text, ntrace.workflows.analyze, ntrace.render.json
from ntrace.io.kineto import read_kineto
trace = read_kineto(Path({str(path)!r}))
print(len(trace.events), late)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, late = out.stdout.split(" ", 1)
    assert int(count) > 0 and late.strip() == "[]"


def test_a_split_parse_is_taken_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace parsed in two halves on two threads ahead (the split made small) reads as it does without reading ahead."""
    monkeypatch.setattr(_columnar, "SPLIT_MIN", 0)
    monkeypatch.setattr(_columnar, "second_core", lambda: True)
    path = max(_unzipped(tmp_path), key=lambda p: p.stat().st_size)
    want = read_kineto(path)
    _no_mapping(monkeypatch)
    read_ahead(path)
    _same(read_kineto(path), want)


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    """A file rewritten after its read-ahead started is read as it is now."""
    path = write_trace(tmp_path / "t.json", [x("aten::mm", "cpu_op", 0, 10)])
    read_ahead(path)
    assert _ahead._PENDING
    _ahead._PENDING[0][1].join()
    write_trace(path, [x("aten::add", "cpu_op", 0, 10), x("aten::mul", "cpu_op", 20, 5)])
    os.utime(path, ns=(1, 1))  # a new mtime even on a file system with coarse times
    trace = read_kineto(path)
    assert trace.events["name"].to_list() == ["aten::add", "aten::mul"]


def test_another_file_read_first_drops_the_read_ahead(tmp_path: Path) -> None:
    """A read-ahead goes to the next read only: read first, another file is read from its own bytes, and the read-ahead is gone."""
    first = write_trace(tmp_path / "a.json", [x("aten::mm", "cpu_op", 0, 10)])
    other = write_trace(tmp_path / "b.json", [x("aten::add", "cpu_op", 0, 10)])
    read_ahead(first)
    assert read_kineto(other).events["name"].to_list() == ["aten::add"]
    assert not _ahead._PENDING
    assert read_kineto(first).events["name"].to_list() == ["aten::mm"]


@pytest.mark.parametrize(
    "text",
    [b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1}, {"ph": "X", "na', b"not json at all", b"", b'{"traceEvents": {}}'],
    ids=["cut off", "not json", "empty", "no array"],
)
def test_a_bad_file_reads_as_without_reading_ahead(tmp_path: Path, text: bytes) -> None:
    """Text the read-ahead cannot use is left to the reader: the same warnings and events, or the same error."""
    path = tmp_path / "t.json"
    path.write_bytes(text)

    def outcome() -> object:
        try:
            trace = read_kineto(path)
        except Exception as exc:  # noqa: BLE001 - the error itself is compared
            return (type(exc), str(exc))
        return (trace.events.to_dicts(), trace.warnings)

    want = outcome()
    read_ahead(path)
    assert outcome() == want
    assert not _ahead._PENDING


def test_gzip_and_non_json_names_are_not_read_ahead(tmp_path: Path) -> None:
    zipped = write_trace(tmp_path / "t.json.gz", [x("aten::mm", "cpu_op", 0, 10)], gz=True)
    other = write_trace(tmp_path / "t.trace", [x("aten::mm", "cpu_op", 0, 10)])
    read_ahead(zipped)
    read_ahead(other)
    read_ahead(tmp_path / "missing.json")
    read_ahead(tmp_path)
    assert not _ahead._PENDING


def test_a_remembered_trace_is_not_read_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the memo holds what the command reads instead of the trace (analyze: the summary; report: the summary with its timeline), nothing is parsed ahead."""
    from ntrace.workflows.analyze import summarize

    monkeypatch.setenv("NTRACE_CACHE", "1")
    monkeypatch.setenv("NTRACE_CACHE_DIR", str(tmp_path / "memo"))
    path = write_trace(tmp_path / "t.json", [x("aten::mm", "cpu_op", 0, 10)])
    read_ahead(path)
    assert _ahead._PENDING  # not remembered yet
    summarize(path)  # takes the read-ahead, remembers the summary
    assert not _ahead._PENDING
    read_ahead(path)
    assert not _ahead._PENDING
    read_ahead(path, remembered="timeline")  # what report reads: not remembered yet
    assert _ahead._PENDING
    _ahead._PENDING.clear()
    read_ahead(path, remembered=None)  # export reads the trace whatever the memo holds
    assert _ahead._PENDING


@pytest.mark.parametrize("command", ["analyze", "report", "export"])
def test_commands_write_the_same_with_and_without_reading_ahead(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """analyze, report and export read a trace ahead, and print and write byte for byte what they do when they do not."""
    (path,) = [p for p in _unzipped(tmp_path) if p.name.startswith("nccl_parser_config")]
    taken: list[bool] = []
    original = _ahead.taken

    def spy(path: Path, stage: str) -> _ahead.Parsed | None:
        got = original(path, stage)
        taken.append(got is not None)
        return got

    def run(out: Path) -> tuple[str, bytes]:
        args = {"analyze": ["--format", "json"], "report": ["-o", str(out)], "export": ["--perfetto", str(out)]}[command]
        result = CliRunner().invoke(main, [command, str(path), "-q", *args])
        assert result.exit_code == 0, result.output
        return result.output.replace(str(out), "OUT"), out.read_bytes() if command != "analyze" else b""

    monkeypatch.setattr(_read._ahead, "taken", spy)
    ahead = run(tmp_path / "ahead.out")
    assert taken == [True]
    monkeypatch.setattr("ntrace.io.read_ahead", lambda path, remembered=None: None)
    assert run(tmp_path / "plain.out") == ahead
    assert taken == [True, False]


def test_the_cli_starts_without_polars() -> None:
    """The read-ahead can start only before Polars is imported: the CLI's module and the reader's package import none of it."""
    code = "import sys, ntrace.cli, ntrace.io.kineto, ntrace.io.memo; print('polars' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_read_trace_takes_it_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The library's read_trace is the reader: it takes a read-ahead as read_kineto does."""
    (path,) = [p for p in _unzipped(tmp_path) if p.name.startswith("trace_compare__base")]
    want = read_trace(path)
    _no_mapping(monkeypatch)
    read_ahead(path)
    _same(read_trace(path), want)
