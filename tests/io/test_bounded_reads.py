"""Issue 20's read limits, one by one: address-space headroom, formats refused by magic bytes, JSON nested past the decoders, names that are not UTF-8, NEFF listing in place, manifests and Parquet checked before reading."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import polars as pl
import pytest

from helpers import write_trace, x
from ntrace.errors import InputError, TraceFormatError, valid_path, valid_text
from ntrace.io import parquet, read_trace
from ntrace.io.kineto import read_kineto
from ntrace.io.manifest import MANIFEST_LIMIT, find_manifest
from ntrace.neuron import neff as neff_module
from ntrace.neuron.neff import read_neff


def test_address_space_limit_counts_as_memory_available() -> None:
    """Under ulimit -v the headroom is at most the limit less what is mapped already, not MemAvailable."""
    code = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); from ntrace.io.files import available_memory; print(available_memory())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout
    assert 0 < int(out) < 3 << 30


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"BZh91AY&SY" + bytes(20), "bzip2-compressed"),
        (b"\xfd7zXZ\x00" + bytes(20), "xz-compressed"),
        (b"\x28\xb5\x2f\xfd" + bytes(20), "zstd-compressed"),
        (b"\x04\x22\x4d\x18" + bytes(20), "lz4-compressed"),
        (b"PK\x03\x04" + bytes(20), "a zip archive"),
        (b"PAR1" + bytes(20), "a Parquet file"),
        (bytes(64), "starts with NUL bytes"),
    ],
)
def test_other_formats_are_refused_by_their_first_bytes(tmp_path: Path, data: bytes, what: str) -> None:
    path = tmp_path / "trace.json"
    path.write_bytes(data)
    with pytest.raises(TraceFormatError, match=what):
        read_kineto(path)


def test_nesting_past_the_decoders_reads_the_rest_exactly(tmp_path: Path) -> None:
    """A value nested 5,000 deep in one event's args becomes null; every event is read as in the same trace without it."""
    events = [x(f"op{i}", "cpu_op", i * 10, 5) for i in range(20)]
    plain = write_trace(tmp_path / "plain.json", events)
    deep = tmp_path / "deep.json"
    deep.write_bytes(plain.read_bytes().replace(b'"name": "op3"', b'"name": "op3", "args": {"v": ' + b"[" * 5000 + b"]" * 5000 + b"}", 1))
    for fast in (True, False):
        got = read_kineto(deep, fast=fast)
        assert got.events.drop("idx").equals(read_kineto(plain, fast=fast).events.drop("idx"))
        assert [w.removeprefix(f"{deep}: ") for w in got.warnings] == ["1 value nested deeper than 64 levels (more than the decoders read) were replaced by null"]


def test_unbalanced_deep_nesting_is_not_valid_json(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": ' + b"[" * 3000 + b"]" * 2999 + b"}")
    with pytest.raises(TraceFormatError, match="brackets do not balance"):
        read_kineto(path)


def test_valid_text_escapes_only_lone_surrogates() -> None:
    assert valid_text(os.fsdecode(b"r\xff\xfe.json")) == "r\\xff\\xfe.json"
    assert valid_text("a\ud800b") == "a\\ud800b"
    assert valid_text("é ok") == "é ok"
    same = Path("plain.json")
    assert valid_path(same) is same


def test_trace_named_with_bytes_that_are_not_utf8_is_read_and_named_with_escapes(tmp_path: Path) -> None:
    real = tmp_path / os.fsdecode(b"t\xff.pt.trace.json")
    write_trace(real, [x("a", "cpu_op", 0, 1)])
    trace = read_trace(real)
    assert str(trace.path) == str(tmp_path / "t\\xff.pt.trace.json") and trace.events.height == 1
    pl.DataFrame({"p": [str(trace.path)]})  # storable: Polars refuses lone surrogates


def _gzip_tar(members: list[tuple[str, int]]) -> bytes:
    """A gzip tar of members of zeros of the given sizes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        for name, size in members:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BytesIO(bytes(size)))
    return buf.getvalue()


def _neff(payload: bytes) -> bytes:
    head = (1).to_bytes(8, "little") + (1024).to_bytes(8, "little") + len(payload).to_bytes(8, "little")
    return head + bytes(1024 - len(head)) + payload


def test_gzip_tar_listing_stops_at_its_ceiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(neff_module, "LIST_CEILING", 1 << 20)
    path = tmp_path / "neff_1_vnc_0.neff"
    path.write_bytes(_neff(_gzip_tar([("sg00/a", 10), ("sg00/big", 4 << 20), ("sg01/c", 10)])))
    got = read_neff(path)
    assert got.members == ("sg00/a", "sg00/big") and not got.valid
    assert "inflates past 1 MiB while being listed; only the first 2 members listed" in (got.problem or "")


def test_plain_tar_is_listed_in_place(tmp_path: Path) -> None:
    """The members of an uncompressed tar are listed by seeking past their data (a sparse 4 GiB member costs nothing)."""
    info = tarfile.TarInfo("sg00/weights.bin")
    info.size = 4 << 30
    head = info.tobuf(format=tarfile.GNU_FORMAT)
    tail = tarfile.TarInfo("sg01/def.json")
    tail.size = 0
    rest = tail.tobuf(format=tarfile.GNU_FORMAT) + bytes(1024)
    total = 1024 + len(head) + info.size + len(rest)
    path = tmp_path / "neff_2_vnc_0.neff"
    with path.open("wb") as fh:
        fh.write(_neff(b"")[:16] + (total - 1024).to_bytes(8, "little") + bytes(1000) + head)
        fh.seek(1024 + len(head) + info.size)
        fh.write(rest)
    got = read_neff(path)
    assert got.valid, got.problem
    assert got.members == ("sg00/weights.bin", "sg01/def.json")


def test_oversized_manifest_is_ignored_unread(tmp_path: Path) -> None:
    (tmp_path / "capture.json").write_bytes(b'{"variant": "v", "pad": "' + b" " * MANIFEST_LIMIT + b'"}')
    assert find_manifest(tmp_path) is None
    (tmp_path / "capture.json").write_bytes(b'{"variant": "v"}')
    assert find_manifest(tmp_path) == {"variant": "v"}


def test_parquet_rows_are_checked_against_memory_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.parquet"
    pl.DataFrame({"a": range(1000), "b": ["x"] * 1000}).write_parquet(path)
    monkeypatch.setattr("ntrace.io.parquet.available_memory", lambda: 1000 * 2 * parquet.PARQUET_BYTES_PER_VALUE - 1)
    with pytest.raises(InputError, match=r"too large to read here: 1,000 rows of 2 columns"):
        parquet.read(path)
    assert parquet.read(path, ["a"])["a"].to_list() == list(range(1000))


def test_gzip_json_is_still_read(tmp_path: Path) -> None:
    """The magic-byte check lets gzip through (its own bomb ceiling applies)."""
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": [x("a", "cpu_op", 0, 1)]}).encode()))
    assert read_kineto(path).events.height == 1
