"""Reading trace JSON (ntrace.readfile): memory maps for plain and gzip files, streamed gzip with its repairs, empty files."""

from __future__ import annotations

import gzip
import mmap
from pathlib import Path

import pytest

from ntrace.errors import InputError, TraceFormatError
from ntrace.readfile import map_json, read_json

from conftest import write_trace, x

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
    import ntrace.readfile as readfile

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
    import ntrace.readfile as readfile

    class NoMap:
        ACCESS_READ = mmap.ACCESS_READ

        @staticmethod
        def mmap(*args: object, **kwargs: object) -> None:
            raise OSError(19, "No such device")

    monkeypatch.setattr(readfile, "mmap", NoMap)
    assert map_json(plain, []) == plain.read_bytes()
