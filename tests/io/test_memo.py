"""The summary memo (ntrace.io.memo): what a later run reads instead of recomputing, when it must recompute, and that it never changes an output or fails a command."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import ntrace.render.html as html
import ntrace.workflows.analyze as analyze_mod
from ntrace.cli import main
from ntrace.io import memo
from ntrace.io.cache import META_KEY, stored_summary
from ntrace.io.manifest import CAPTURE_FILE
from ntrace.io.remote import COPIES_PREFIX

from helpers import shared_trace_files, write_trace, x


@pytest.fixture
def memo_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The memo turned on, in a directory of its own."""
    where = tmp_path / "memo"
    monkeypatch.setenv("NTRACE_CACHE", "1")
    monkeypatch.setenv("NTRACE_CACHE_DIR", str(where))
    monkeypatch.setattr(memo, "_writes", 0)
    return where


def _rank(path: Path, rank: int, mm: int = 40) -> Path:
    """A small rank trace: one step, one op launching one kernel of `mm` µs."""
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("aten::mm", "cpu_op", 1, mm, **{"External id": 1}),
        x("cudaLaunchKernel", "cuda_runtime", 5, 4, correlation=7, **{"External id": 1}),
        x("gemm", "kernel", 12, mm, pid=0, tid=7, correlation=7, stream=7, device=0),
    ]
    return write_trace(path, events, distributedInfo={"rank": rank})


def _traces(root: Path) -> Path:
    """A directory of two hand-made ranks and the real traces."""
    root.mkdir()
    _rank(root / "rank_0.pt.trace.json", 0)
    _rank(root / "rank_1.pt.trace.json", 1, mm=55)
    for real in shared_trace_files():
        shutil.copy(real, root / real.name)
    return root


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _entries(where: Path, suffix: str = "") -> list[Path]:
    return sorted(p for p in where.glob("summaries-*/*") if p.name.endswith(suffix))


def _no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading any trace fail: what still runs can only come from the memo."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a trace was read although its summary is remembered")

    monkeypatch.setattr(analyze_mod, "load", refuse)


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_a_later_run_reads_the_memo_and_prints_the_same_bytes(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    root = _traces(tmp_path / "in")
    before = sorted(os.listdir(root))
    monkeypatch.setenv("NTRACE_CACHE", "0")
    off = _run("analyze", str(root), "--format", fmt, "--quiet")
    assert not memo_dir.exists()  # off means off
    monkeypatch.setenv("NTRACE_CACHE", "1")
    cold = _run("analyze", str(root), "--format", fmt, "--quiet")
    assert len(_entries(memo_dir, ".summary")) == len(before)
    _no_analysis(monkeypatch)
    warm = _run("analyze", str(root), "--format", fmt, "--quiet")
    assert off == cold == warm
    assert sorted(os.listdir(root)) == before  # nothing written beside the inputs


def test_compare_and_diff_read_the_memo_too(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    _rank(a / "rank_0.pt.trace.json", 0)
    _rank(b / "rank_0.pt.trace.json", 0, mm=70)
    first = (_run("compare", str(a), str(b), "--format", "json"), _run("diff", str(a), str(b), "--format", "json"))
    _no_analysis(monkeypatch)
    assert (_run("compare", str(a), str(b), "--format", "json"), _run("diff", str(a), str(b), "--format", "json")) == first


def test_ranks_keeps_its_own_entries_and_reads_a_whole_summary(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "in"
    root.mkdir()
    for rank in range(3):
        _rank(root / f"rank_{rank}.pt.trace.json", rank, mm=30 + rank)
    monkeypatch.setenv("NTRACE_CACHE", "0")
    off = _run("ranks", str(root), "--format", "json")
    monkeypatch.setenv("NTRACE_CACHE", "1")
    assert _run("ranks", str(root), "--format", "json") == off
    assert len(_entries(memo_dir, ".rank")) == 3 and not _entries(memo_dir, ".summary")
    with monkeypatch.context() as m:
        _no_analysis(m)
        assert _run("ranks", str(root), "--format", "json") == off
    for entry in _entries(memo_dir, ".rank"):
        entry.unlink()
    _run("analyze", str(root), "--format", "json")  # whole summaries, which ranks reads as well
    _no_analysis(monkeypatch)
    assert _run("ranks", str(root), "--format", "json") == off


def test_a_changed_trace_or_manifest_is_recomputed(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "in"
    root.mkdir()
    trace = _rank(root / "rank_0.pt.trace.json", 0, mm=40)

    def fresh() -> str:
        with monkeypatch.context() as m:
            m.setenv("NTRACE_CACHE", "0")
            return _run("analyze", str(trace), "--format", "json")

    first = _run("analyze", str(trace), "--format", "json")
    size = trace.stat().st_size
    _rank(trace, 0, mm=50)  # same size, other content
    assert trace.stat().st_size == size
    second = _run("analyze", str(trace), "--format", "json")
    assert second != first and second == fresh()
    (root / CAPTURE_FILE).write_text('{"variant": "naive"}')  # the variant a summary names comes from here
    third = _run("analyze", str(trace), "--format", "json")
    assert '"variant": "naive"' in third and third == fresh()


def test_the_path_as_given_is_part_of_the_key(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0)
    _run("analyze", str(trace), "--format", "json")
    monkeypatch.chdir(tmp_path)
    out = _run("analyze", "rank_0.pt.trace.json", "--format", "json")
    assert '"rank_0.pt.trace.json"' in out and str(tmp_path) not in out  # printed as given, not as the first run named it
    assert len(_entries(memo_dir, ".summary")) == 2


def test_a_damaged_entry_is_recomputed_and_replaced(tmp_path: Path, memo_dir: Path) -> None:
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0)
    good = _run("analyze", str(trace), "--format", "json")
    (entry,) = _entries(memo_dir)
    for damage in (b"", b"garbage", entry.read_bytes()[:-40], b"\x00" * 5000):
        entry.write_bytes(damage)
        assert _run("analyze", str(trace), "--format", "json") == good
        assert entry.read_bytes() != damage


def test_other_options_neither_read_nor_write_it(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0)
    for args in (["--max-events", "3"], ["--steps", "1"], ["--window", "0:50"]):
        _run("analyze", str(trace), "--format", "json", *args)
    assert not _entries(memo_dir)
    _run("analyze", str(trace), "--format", "json")
    calls: list[object] = []
    real = analyze_mod.load
    monkeypatch.setattr(analyze_mod, "load", lambda *a, **k: calls.append(a) or real(*a, **k))
    _run("analyze", str(trace), "--format", "json", "--max-events", "3")
    assert calls  # computed, not the remembered whole-trace summary


def test_an_unusable_memo_never_fails_a_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0)
    monkeypatch.setenv("NTRACE_CACHE", "0")
    off = _run("analyze", str(trace), "--format", "json")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("NTRACE_CACHE", "1")
    for where in (blocker, blocker / "below"):
        monkeypatch.setenv("NTRACE_CACHE_DIR", str(where))
        assert _run("analyze", str(trace), "--format", "json") == off
    assert blocker.read_text() == "not a directory"


def test_workers_start_only_for_what_is_not_remembered(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "in"
    root.mkdir()
    for rank in range(analyze_mod.AUTO_MIN_TRACES):
        _rank(root / f"rank_{rank}.pt.trace.json", rank)
    first = _run("analyze", str(root), "--format", "json", "--jobs", "1")

    def no_pool(workers: int) -> None:
        raise AssertionError("workers started although every summary is remembered")

    monkeypatch.setattr(analyze_mod, "worker_pool", no_pool)
    assert _run("analyze", str(root), "--format", "json", "--jobs", "2") == first


def test_prune_drops_other_code_then_the_least_recently_used(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    current = memo_dir / memo._code_dir()
    current.mkdir(parents=True)
    other = memo_dir / "summaries-0123456789abcdef01234567"
    other.mkdir()
    (other / "x.summary").write_bytes(b"old code")
    unrelated = memo_dir / "notes.txt"
    unrelated.write_text("kept")
    for age in range(8):
        entry = current / f"{age}.summary"
        entry.write_bytes(b"x" * 1000)
        os.utime(entry, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))  # 0 newest, 7 oldest
    monkeypatch.setattr(memo, "_ceiling", lambda: 8000)
    memo.prune(memo_dir)
    assert not other.exists() and unrelated.exists() and len(list(current.iterdir())) == 8  # at the ceiling: nothing dropped
    monkeypatch.setattr(memo, "_ceiling", lambda: 7999)
    memo.prune(memo_dir)
    assert sorted(p.name for p in current.iterdir()) == [f"{age}.summary" for age in range(5)]  # down to 3/4 of it, oldest first


def test_the_ceiling_holds_over_a_run(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "in"
    root.mkdir()
    for rank in range(4):
        _rank(root / f"rank_{rank}.pt.trace.json", rank)
    monkeypatch.setenv("NTRACE_CACHE_MB", "0")
    monkeypatch.setattr(memo, "_CHECK_EVERY", 1)
    _run("analyze", str(root), "--format", "json")
    assert not _entries(memo_dir)


def test_downloaded_copies_are_never_kept(tmp_path: Path, memo_dir: Path) -> None:
    copies = Path(tempfile.gettempdir()) / f"{COPIES_PREFIX}test{os.getpid()}"
    copies.mkdir()
    try:
        trace = _rank(copies / "rank_0.pt.trace.json", 0)
        _run("analyze", str(trace), "--format", "json")
        assert not _entries(memo_dir)
        assert memo._is_copy(trace) and not memo._is_copy(tmp_path / "rank_0.pt.trace.json")
    finally:
        shutil.rmtree(copies)


def test_the_cache_command_shows_and_clears_only_entries(tmp_path: Path, memo_dir: Path) -> None:
    _run("analyze", str(_rank(tmp_path / "rank_0.pt.trace.json", 0)), "--format", "json")
    _run("ranks", str(_rank(tmp_path / "rank_1.pt.trace.json", 1)), "--format", "json")
    assert len(_entries(memo_dir, ".summary")) == len(_entries(memo_dir, ".rank")) == 1
    shown = json.loads(_run("cache", "--format", "json"))
    assert shown["directory"] == str(memo_dir) and shown["enabled"] is True and shown["entries"] == 2
    assert shown["bytes"] == sum(p.stat().st_size for p in _entries(memo_dir))
    keep = memo_dir / "mine.txt"
    keep.write_text("not ours")
    result = CliRunner().invoke(main, ["cache", "--clear"])
    assert result.exit_code == 0 and "removed 2 remembered summaries" in result.output and "0 summaries" in result.output
    assert not _entries(memo_dir) and keep.read_text() == "not ours"


@pytest.mark.parametrize("name", [b"rank_\xff\xfe.pt.trace.json", b"r" * 230 + b".pt.trace.json", b"rank \x1b[31m0.pt.trace.json"], ids=["not-utf8", "long", "escape"])
def test_hostile_names_are_remembered_or_skipped_never_a_failure(tmp_path: Path, memo_dir: Path, name: bytes) -> None:
    root = tmp_path / "in"
    root.mkdir()
    trace = Path(os.fsdecode(bytes(root) + b"/" + name))
    _rank(trace, 0)
    _rank(root / "rank_1.pt.trace.json", 1)
    first = _run("analyze", str(root), "--format", "json")
    assert _run("analyze", str(root), "--format", "json") == first
    assert len(_entries(memo_dir, ".summary")) == 2  # written for both (a name that is not UTF-8 is shown escaped, so its entry is recomputed)
    page = _report(root, tmp_path / "cold.html")
    assert _report(root, tmp_path / "warm.html") == page  # its section too, from the memo or drawn again


def test_a_symlinked_trace_follows_its_target(tmp_path: Path, memo_dir: Path) -> None:
    a, b = _rank(tmp_path / "a.json", 0, mm=40), _rank(tmp_path / "b.json", 0, mm=60)
    link = tmp_path / "rank_0.pt.trace.json"
    link.symlink_to(a)
    first = _run("analyze", str(link), "--format", "json")
    link.unlink()
    link.symlink_to(b)
    second = _run("analyze", str(link), "--format", "json")
    assert second != first and second == _run("analyze", str(b), "--format", "json").replace(str(b), str(link))


def test_a_report_fills_it_for_the_next_command(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0)
    monkeypatch.setenv("NTRACE_CACHE", "0")
    off = _run("analyze", str(trace), "--format", "json")
    monkeypatch.setenv("NTRACE_CACHE", "1")
    CliRunner().invoke(main, ["report", str(trace), "-o", str(tmp_path / "r.html")], catch_exceptions=False)
    assert (tmp_path / "r.html").is_file() and len(_entries(memo_dir, ".summary")) == 1
    _no_analysis(monkeypatch)
    assert _run("analyze", str(trace), "--format", "json") == off


def test_a_damaged_stored_summary_among_many_is_one_skipped_trace(tmp_path: Path, memo_dir: Path) -> None:
    root = tmp_path / "in"
    root.mkdir()
    for rank in range(analyze_mod.AUTO_MIN_TRACES):
        _rank(root / f"rank_{rank}.pt.trace.json", rank)
    forged = root / "forged.parquet"
    pl.DataFrame({"a": [1]}).write_parquet(forged, metadata={META_KEY: "{not json"})
    _run("analyze", str(root), "--format", "json", "--jobs", "1")  # every JSON trace remembered: the next run reads them before any worker
    result = CliRunner().invoke(main, ["analyze", str(root), "--format", "json", "--jobs", "2"])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert f"skipped {forged}: is not an ntrace events file" in result.output


def test_metadata_nested_past_orjsons_writer_is_kept_and_read_back(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson writes at most 255 levels: a trace whose distributedInfo is nested 300 deep still gets an entry (and a convert a stored summary)."""
    deep: dict[str, object] = {}
    inner = deep
    for _ in range(300):
        inner["k"] = {}
        inner = inner["k"]  # type: ignore[assignment]
    trace = write_trace(tmp_path / "rank_0.pt.trace.json", [x("aten::mm", "cpu_op", 1, 20)], distributedInfo={"rank": 0, "deep": deep})
    ranks = _run("ranks", str(trace), "--format", "json")
    first = _run("analyze", str(trace), "--format", "json")
    assert len(_entries(memo_dir, ".rank")) == len(_entries(memo_dir, ".summary")) == 1
    _run("convert", str(trace), "-o", str(tmp_path / "out"))
    (converted,) = (tmp_path / "out").rglob("*.parquet")
    assert stored_summary(converted) is not None
    _no_analysis(monkeypatch)
    assert _run("analyze", str(trace), "--format", "json") == first
    assert _run("ranks", str(trace), "--format", "json") == ranks


def test_a_trace_that_changes_while_analyzed_never_keeps_the_old_summary(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The entry is keyed by the file as it was before it was read: rewritten meanwhile (a profiler still writing it), the next run recomputes it."""
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0, mm=40)
    real = analyze_mod.load

    def load_then_rewrite(*args: object, **kwargs: object) -> object:
        profile = real(*args, **kwargs)  # type: ignore[arg-type]
        _rank(trace, 0, mm=70)  # the file changes after it was read
        return profile

    with monkeypatch.context() as m:
        m.setattr(analyze_mod, "load", load_then_rewrite)
        _run("analyze", str(trace), "--format", "json")
    monkeypatch.setenv("NTRACE_CACHE", "0")
    fresh = _run("analyze", str(trace), "--format", "json")
    monkeypatch.setenv("NTRACE_CACHE", "1")
    assert _run("analyze", str(trace), "--format", "json") == fresh


def _report(root: Path, out: Path, *args: str) -> str:
    """The HTML page `ntrace report` writes for `root`."""
    result = CliRunner().invoke(main, ["report", str(root), "-o", str(out), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out.read_text()


def test_a_later_report_reads_every_timeline_and_writes_the_same_page(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report keeps each trace's summary with its timeline: the next one reads no trace, and its page is the one the memo's absence gives."""
    root = _traces(tmp_path / "in")
    before = sorted(os.listdir(root))
    monkeypatch.setenv("NTRACE_CACHE", "0")
    off = _report(root, tmp_path / "off.html")
    monkeypatch.setenv("NTRACE_CACHE", "1")
    cold = _report(root, tmp_path / "cold.html")
    assert len(_entries(memo_dir, ".timeline")) == len(_entries(memo_dir, ".summary")) == len(before)
    assert len(_entries(memo_dir, ".section")) == len(before)
    _no_analysis(monkeypatch)
    _no_drawing(monkeypatch)
    assert _report(root, tmp_path / "warm.html") == cold == off
    assert _report(root, tmp_path / "warm2.html", "--jobs", "2") == off  # read in the parent: no worker started, none needed
    assert sorted(os.listdir(root)) == before


def _no_drawing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make drawing any report section fail: a page can then only be made of remembered sections."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a section was drawn although it is remembered")

    monkeypatch.setattr(html, "profile_section", refuse)


def _drawn(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the sections drawn from now on (in this process)."""
    names: list[str] = []
    real = html.profile_section
    monkeypatch.setattr(html, "profile_section", lambda summary, name, *a, **k: names.append(name) or real(summary, name, *a, **k))
    return names


def test_a_section_is_drawn_again_when_what_it_shows_changes(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A remembered section is keyed by its summary, name, time scale and place: a longer trace added beside it changes the shared scale, so every section is drawn again."""
    root = tmp_path / "in"
    root.mkdir()
    _rank(root / "rank_0.pt.trace.json", 0)
    _report(root, tmp_path / "one.html", "--jobs", "1")
    _rank(root / "rank_1.pt.trace.json", 1, mm=5000)  # its window is the longest: the scale changes
    drawn = _drawn(monkeypatch)
    page = _report(root, tmp_path / "two.html", "--jobs", "1")
    assert len(drawn) == 2
    drawn.clear()
    assert _report(root, tmp_path / "three.html", "--jobs", "1") == page and not drawn
    monkeypatch.setenv("NTRACE_CACHE", "0")
    assert _report(root, tmp_path / "off.html", "--jobs", "1") == page


def test_a_damaged_section_entry_is_drawn_again(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A section entry holds its text's digest: any other bytes (emptied, cut short, one byte changed, not text) are drawn again and replaced."""
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0)
    good = _report(trace, tmp_path / "good.html")
    (entry,) = _entries(memo_dir, ".section")
    whole = entry.read_bytes()
    drawn = _drawn(monkeypatch)
    changed = whole[:-5] + (b"X" if whole[-5:-4] != b"X" else b"Y") + whole[-4:]
    for damage in (b"", whole[:-40], changed, b"\xff\xfe" + whole[2:]):
        entry.write_bytes(damage)
        drawn.clear()
        assert _report(trace, tmp_path / "again.html") == good
        assert drawn and entry.read_bytes() == whole


def test_remembered_and_fresh_sections_keep_their_places(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With some sections remembered and one drawn again, each lands in its own place: the page is the one drawn from nothing."""
    root = tmp_path / "in"
    root.mkdir()
    for rank, mm in ((0, 40), (1, 60), (2, 80)):
        _rank(root / f"rank_{rank}.pt.trace.json", rank, mm=mm)
    cold = _report(root, tmp_path / "cold.html", "--jobs", "1")
    entries = _entries(memo_dir, ".section")
    assert len(entries) == 3
    drawn = _drawn(monkeypatch)
    for lost in entries:
        kept = {e: e.read_bytes() for e in entries if e != lost}
        lost.unlink()
        drawn.clear()
        assert _report(root, tmp_path / "mixed.html", "--jobs", "1") == cold
        assert len(drawn) == 1 and lost.exists()
        assert all(e.read_bytes() == b for e, b in kept.items())


def test_a_timeline_entry_round_trips_every_frame(tmp_path: Path, memo_dir: Path) -> None:
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0)
    drawn = analyze_mod.summarize(trace, timeline=True)
    assert drawn.timeline is not None
    (entry,) = _entries(memo_dir, ".timeline")
    kept = memo.recall(entry, trace)
    assert isinstance(kept, type(drawn)) and kept.timeline is not None
    for part in ("events", "idle"):
        assert getattr(kept.timeline, part).equals(getattr(drawn.timeline, part))
        assert getattr(kept.timeline, part).schema == getattr(drawn.timeline, part).schema
    assert kept.lanes.equals(drawn.lanes) and kept.op_groups.equals(drawn.op_groups)


def test_a_damaged_or_timeless_timeline_entry_is_recomputed(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A timeline entry is used only whole: damaged bytes, or a summary without its timeline (a forged entry), make the report read the trace again."""
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0)
    good = _report(trace, tmp_path / "good.html")
    (entry,) = _entries(memo_dir, ".timeline")
    (summary_only,) = _entries(memo_dir, ".summary")
    reads: list[object] = []
    real = analyze_mod.load
    monkeypatch.setattr(analyze_mod, "load", lambda *a, **k: reads.append(a) or real(*a, **k))
    for damage in (b"garbage", entry.read_bytes()[:-40], summary_only.read_bytes()):
        entry.write_bytes(damage)
        reads.clear()
        assert _report(trace, tmp_path / "again.html") == good
        assert reads and entry.read_bytes() != damage  # read again, and the entry written whole again


def test_a_timeline_too_large_to_keep_is_not_serialized(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _rank(tmp_path / "rank_0.pt.trace.json", 0)
    monkeypatch.setattr(memo, "ENTRY_LIMIT", 64)
    serialized: list[object] = []
    summary_type = type(analyze_mod.summarize(trace))
    real = summary_type.to_bytes
    monkeypatch.setattr(summary_type, "to_bytes", lambda self: serialized.append(self.timeline) or real(self))
    analyze_mod.summarize(trace, timeline=True)
    assert not _entries(memo_dir, ".timeline")
    assert serialized and all(t is None for t in serialized)  # only the summary alone was serialized (and found too large)


def _same(a: object, b: object) -> bool:
    """Whether two summaries hold the same values, frames and series compared by value."""
    from dataclasses import fields

    assert a is not None and b is not None
    for f in fields(a):  # type: ignore[arg-type]
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, (pl.DataFrame, pl.Series)):
            if not x.equals(y):
                return False
        elif f.compare and x != y:
            return False
    return True


def test_convert_reads_the_memo_and_stores_what_it_would_compute(tmp_path: Path, memo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """convert after analyze stores the memo's summaries instead of computing them again: the converted files hold the same events and summaries as a conversion with the memo off."""
    from ntrace.io.cache import read_cache_summary
    from ntrace.profile import Profile

    root = _traces(tmp_path / "in")
    _run("analyze", str(root), "--format", "json", "--jobs", "1")
    computed: list[object] = []
    real = Profile.summary
    monkeypatch.setattr(Profile, "summary", lambda self: computed.append(self) or real(self))
    _run("convert", str(root), "-o", str(tmp_path / "warm"), "--jobs", "1")
    assert computed == []  # every summary came from the memo
    monkeypatch.setenv("NTRACE_CACHE", "0")
    _run("convert", str(root), "-o", str(tmp_path / "cold"), "--jobs", "1")
    assert computed  # computed this time
    warm = sorted(p.relative_to(tmp_path / "warm") for p in (tmp_path / "warm").rglob("*.parquet"))
    assert len(warm) >= 8 and warm == sorted(p.relative_to(tmp_path / "cold") for p in (tmp_path / "cold").rglob("*.parquet"))
    for rel in warm:
        a, b = tmp_path / "warm" / rel, tmp_path / "cold" / rel
        assert pl.read_parquet(a).equals(pl.read_parquet(b)), rel
        assert _same(read_cache_summary(a), read_cache_summary(b)), rel
    outputs = [_run("analyze", str(tmp_path / side), "--format", "json").replace(str(tmp_path / side), "OUT") for side in ("warm", "cold")]
    assert outputs[0] == outputs[1]


def test_a_read_summary_gives_back_its_bytes_and_a_changed_one_new_ones() -> None:
    from dataclasses import replace

    from ntrace.summary import Summary
    from ntrace.workflows.analyze import summarize

    computed = summarize(shared_trace_files()[0])
    data = computed.to_bytes()
    read = Summary.from_bytes(data)
    assert read is not None and _same(read, computed) and read.to_bytes() is data
    moved = replace(read, source="s3://bucket/trace.json")
    assert not _same(moved, read) and not _same(replace(read, lanes=read.lanes.head(1)), read)  # the check tells summaries apart
    assert Summary.from_bytes(moved.to_bytes()).source == "s3://bucket/trace.json"  # type: ignore[union-attr]
    assert Summary.from_bytes(data.decode()).to_bytes() == data  # read from text (a Parquet file's metadata)
