"""Atomic output files: the target appears whole or not at all, an interrupted write leaves no trace and keeps the old file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ntrace.errors import OutputError
from ntrace.io import atomic
from ntrace.io.atomic import atomic_open, remove_partial_files, write_bytes, write_text


def test_write_creates_the_file_with_normal_permissions(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    assert write_text(target, '{"a": 1}') == target
    assert target.read_text() == '{"a": 1}'
    assert target.stat().st_mode & 0o777 in (0o644, 0o664, 0o666)  # not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_interrupted_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    write_bytes(target, b"old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_open(target) as fh:
            fh.write(b"half of the new")
            assert target.read_bytes() == b"old"  # nothing visible while writing
            raise KeyboardInterrupt
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_replaces_an_existing_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    write_bytes(target, b"x" * 1000)
    write_bytes(target, b"y")
    assert target.read_bytes() == b"y"


def test_missing_directory_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match=r"nope/out.json: cannot be written \(No such file or directory\)"):
        write_text(tmp_path / "nope" / "out.json", "x")


def test_relative_path_in_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_text("plain.txt", "hi")
    assert (tmp_path / "plain.txt").read_text() == "hi"


def test_temporary_file_is_registered_while_writing_and_removed_by_remove_partial_files(tmp_path: Path) -> None:
    """What an interrupt during the cleanup itself would leave: the CLI's remove_partial_files removes it."""
    with pytest.raises(OutputError, match="No such file"):  # the rename then finds no temporary file: an error, never a half file
        with atomic_open(tmp_path / "out.json") as fh:
            fh.write(b"half")
            (tmp,) = atomic._PARTIAL
            assert Path(tmp).parent == tmp_path and Path(tmp).exists()
            remove_partial_files()
            assert not Path(tmp).exists() and not atomic._PARTIAL
    assert list(tmp_path.iterdir()) == []


def test_long_target_name_gets_a_temporary_name_within_255_bytes(tmp_path: Path) -> None:
    target = tmp_path / ("é" * 120 + ".parquet")  # 248 bytes: its temporary name must be shortened
    write_bytes(target, b"x")
    assert target.read_bytes() == b"x" and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_symbolic_link_is_written_through_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "report.html"
    write_text(target, "old")
    link = tmp_path / "latest.html"
    link.symlink_to("real/report.html")
    write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["report.html"]


def test_a_dangling_link_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "out.json"
    link.symlink_to("made.json")
    write_text(link, "x")
    assert link.is_symlink() and (tmp_path / "made.json").read_text() == "x"


@pytest.mark.parametrize("command", ["report", "export"])
def test_cli_output_through_a_link(tmp_path: Path, command: str) -> None:
    from click.testing import CliRunner

    from helpers import write_trace, x
    from ntrace.cli import main

    trace = write_trace(tmp_path / "t.json", [x("a", "cpu_op", 0, 1)])
    target, link = tmp_path / "target.out", tmp_path / "link.out"
    target.write_text("old")
    link.symlink_to(target)
    args = ["report", str(trace), "-o", str(link), "-q"] if command == "report" else ["export", str(trace), "--perfetto", str(link), "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(target) and target.read_text() != "old"
