"""Reading input files (ntrace.io.files): memory maps for plain and gzip files, streamed gzip with its repairs, empty files, the memory limits."""

from __future__ import annotations

import gzip
import mmap
from pathlib import Path

import pytest

from helpers import write_trace, x
from ntrace.errors import InputError, TraceFormatError
from ntrace.io.files import DECODE_FACTOR, available_memory, check_fits, map_json, read_json
from ntrace.units import size

BOM = b"\xef\xbb\xbf"


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "t.json", [x(f"op{i}", "cpu_op", i, 1) for i in range(50)])


def _both(path: Path) -> tuple[bytes, bytes, list[str], list[str]]:
    """What map_json and read_json give for `path`, with their warnings."""
    w_map: list[str] = []
    w_read: list[str] = []
    return bytes(map_json(path, w_map)), read_json(path, w_read), w_map, w_read


def test_plain_and_gzip_files_are_memory_maps_of_the_json(tmp_path: Path, plain: Path) -> None:
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, gz):
        mapped = map_json(path, [])
        assert isinstance(mapped, mmap.mmap) and mapped[:] == plain.read_bytes()
    assert _both(gz) == (plain.read_bytes(), plain.read_bytes(), [], [])


def test_bom_dropped_or_blanked(tmp_path: Path, plain: Path) -> None:
    bom = tmp_path / "bom.json"
    bom.write_bytes(BOM + plain.read_bytes())
    bom_gz = tmp_path / "bom.json.gz"
    bom_gz.write_bytes(gzip.compress(BOM + plain.read_bytes()))
    assert map_json(bom, []) == read_json(bom, []) == read_json(bom_gz, []) == plain.read_bytes()
    assert map_json(bom_gz, [])[:] == b"   " + plain.read_bytes()  # mapped from offset 0: the BOM becomes JSON whitespace


def test_gzip_members_padding_trailing_data_and_truncation(tmp_path: Path, plain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ntrace.io.files as readfile

    monkeypatch.setattr(readfile, "_IN_CHUNK", 7)  # members, padding and trailers straddle reads
    monkeypatch.setattr(readfile, "_OUT_CHUNK", 100)
    data = plain.read_bytes()
    half = len(data) // 2
    cases = {
        "members.gz": (gzip.compress(data[:half]) + gzip.compress(data[half:]) + b"\0" * 20, None),
        "trailing.gz": (gzip.compress(data) + b"\0\0garbage", "7 bytes of trailing data"),
        "cut.gz": (gzip.compress(data)[:-30], "the gzip stream is cut off at byte"),
    }
    for name, (blob, warning) in cases.items():
        path = tmp_path / name
        path.write_bytes(blob)
        got_map, got_read, w_map, w_read = _both(path)
        assert got_map == got_read and w_map == w_read
        if warning is None:
            assert got_map == data and not w_map
        else:
            assert len(w_map) == 1 and warning in w_map[0]
    assert _both(tmp_path / "trailing.gz")[0] == data
    assert data.startswith(_both(tmp_path / "cut.gz")[0])


def test_gzip_bomb_stops_at_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b" " * (8 << 20)))
    monkeypatch.setenv("NTRACE_MEMORY_LIMIT", "8M")
    for read in (map_json, read_json):
        with pytest.raises(InputError, match="inflate to more than"):
            read(path, [])


@pytest.mark.parametrize("text", [b"", b"  \n\t ", gzip.compress(b""), gzip.compress(b" \n ")])
def test_empty_files(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(text)
    for read in (map_json, read_json):
        with pytest.raises(TraceFormatError, match="is empty"):
            read(path, [])


def test_gzip_inflates_into_memory_when_no_temporary_file_can_be_written(tmp_path: Path, plain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes())[:-30])  # cut off: its warning is given once

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    warnings: list[str] = []
    got = map_json(gz, warnings)
    assert isinstance(got, bytes) and plain.read_bytes().startswith(got)
    assert len(warnings) == 1 and "cut off" in warnings[0]


def test_file_that_cannot_be_mapped_is_read(plain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ntrace.io.files as readfile

    class NoMap:
        ACCESS_READ = mmap.ACCESS_READ

        @staticmethod
        def mmap(*args: object, **kwargs: object) -> None:
            raise OSError(19, "No such device")

    monkeypatch.setattr(readfile, "mmap", NoMap)
    assert map_json(plain, []) == plain.read_bytes()


def test_size_is_readable() -> None:
    assert [size(n) for n in (12, 2048, 5 << 20, 3 << 30)] == ["12 bytes", "2.0 KiB", "5.0 MiB", "3.0 GiB"]


@pytest.mark.parametrize(("value", "expected"), [("4096", 4096), ("4K", 4096), ("64M", 64 << 20), ("2GiB", 2 << 30), ("1g", 1 << 30)])
def test_env_limit_caps_available_memory(value: str, expected: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NTRACE_MEMORY_LIMIT", value)
    assert available_memory() == expected


def test_unset_or_unreadable_env_means_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    import ntrace.io.files as files

    monkeypatch.setattr(files, "_meminfo_available", lambda: 3 << 30)  # the machine's figure, held still (other processes move it)
    monkeypatch.setattr(files, "_cgroup_headroom", lambda: None)
    monkeypatch.delenv("NTRACE_MEMORY_LIMIT", raising=False)
    machine = available_memory()
    monkeypatch.setenv("NTRACE_MEMORY_LIMIT", "lots")
    assert available_memory() == machine > 0


def test_check_fits_names_both_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NTRACE_MEMORY_LIMIT", "1M")
    check_fits(Path("t.json"), (1 << 20) // DECODE_FACTOR)  # exactly fits
    with pytest.raises(InputError, match=r"^t.json: is too large to analyze here: 512.0 KiB of JSON needs about 2.0 MiB of memory, only 1.0 MiB is available"):
        check_fits(Path("t.json"), 512 << 10)
