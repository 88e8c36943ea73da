"""NEFF header decoding, against NEFFs built byte by byte here from the documented layout (formats.md section 4)."""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import uuid
from pathlib import Path

from ntrace.neuron.neff import read_neff

UUID = uuid.UUID("0123456789abcdef0123456789abcdef")
DIGEST = bytes(range(32))


def _tarball(members: dict[str, bytes], gz: bool = False) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    return gzip.compress(raw, mtime=0) if gz else raw


def _header(data_size: int, *, pkg: int = 1, header_size: int = 1024) -> bytes:
    """The 1024-byte header, field by field at the documented offsets (not via ntrace's struct)."""
    h = bytearray(1024)
    struct.pack_into("<Q", h, 0, pkg)
    struct.pack_into("<Q", h, 8, header_size)
    struct.pack_into("<Q", h, 16, data_size)
    struct.pack_into("<Q", h, 24, 2)  # neff_version_major
    struct.pack_into("<Q", h, 32, 7)  # neff_version_minor
    h[40:40 + 128] = b"2.21.33363.0+82cfd3b1".ljust(128, b"\0")
    struct.pack_into("<I", h, 168, 1)  # num_tpb
    h[172:204] = DIGEST
    h[204:220] = UUID.bytes
    h[220:220 + 256] = b"rmsnorm_fused".ljust(256, b"\0")
    struct.pack_into("<I", h, 476, 1)  # requested_tpb_count
    struct.pack_into("<Q", h, 544, 0b101)  # feature_bits
    struct.pack_into("<I", h, 552, 2)  # lnc_size
    return bytes(h)


def _write(tmp_path: Path, payload: bytes, **kw: int) -> Path:
    path = tmp_path / "neff_42.neff"
    path.write_bytes(_header(kw.pop("data_size", len(payload)), **kw) + payload)
    return path


MEMBERS = {"neff.json": b"{}", "sg00/def.json": b'{"name": "sg00"}', "sg01/def.json": b"{}"}


def test_valid_header_fields_and_members(tmp_path: Path) -> None:
    neff = read_neff(_write(tmp_path, _tarball(MEMBERS)))
    assert neff.valid and neff.problem is None
    assert (neff.pkg_version, neff.header_size, neff.neff_version) == (1, 1024, "2.7")
    assert neff.build_version == "2.21.33363.0+82cfd3b1"
    assert neff.name == "rmsnorm_fused"
    assert neff.uuid == str(UUID)
    assert neff.header_hash == DIGEST.hex()
    assert (neff.num_tpb, neff.requested_tpb_count, neff.feature_bits, neff.lnc_size) == (1, 1, 5, 2)
    assert neff.data_size == neff.size - 1024
    assert set(neff.members) == set(MEMBERS)
    assert neff.subgraphs == ("sg00", "sg01")


def test_gzip_payload_is_listed(tmp_path: Path) -> None:
    neff = read_neff(_write(tmp_path, _tarball(MEMBERS, gz=True), pkg=2))
    assert neff.valid, neff.problem
    assert neff.pkg_version == 2 and set(neff.members) == set(MEMBERS)


def test_nothing_is_extracted(tmp_path: Path) -> None:
    path = _write(tmp_path, _tarball(MEMBERS))
    read_neff(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_shorter_than_header(tmp_path: Path) -> None:
    path = tmp_path / "neff_1.neff"
    path.write_bytes(_header(10)[:500])
    neff = read_neff(path)
    assert not neff.valid and "shorter than the 1024-byte" in neff.problem
    assert neff.size == 500


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "neff_1.neff"
    path.write_bytes(b"")
    neff = read_neff(path)
    assert not neff.valid and "truncated: 0 bytes" in neff.problem


def test_truncated_payload(tmp_path: Path) -> None:
    payload = _tarball(MEMBERS)
    path = tmp_path / "neff_7.neff"
    path.write_bytes(_header(len(payload)) + payload[:700])
    neff = read_neff(path)
    assert not neff.valid
    assert f"data_size says {len(payload)} bytes but 700 follow the header (truncated)" in neff.problem


def test_trailing_bytes(tmp_path: Path) -> None:
    payload = _tarball(MEMBERS)
    neff = read_neff(_write(tmp_path, payload + b"\0" * 512, data_size=len(payload)))
    assert not neff.valid and "(trailing bytes)" in neff.problem


def test_wrong_header_size(tmp_path: Path) -> None:
    neff = read_neff(_write(tmp_path, _tarball(MEMBERS), header_size=512))
    assert not neff.valid and "header_size is 512, expected 1024" in neff.problem


def test_payload_not_a_tar(tmp_path: Path) -> None:
    neff = read_neff(_write(tmp_path, b"\x01" * 2048))
    assert not neff.valid and "payload is not a readable tar" in neff.problem
    assert neff.name == "rmsnorm_fused"  # the header is still reported


def test_unreadable_path_is_reported(tmp_path: Path) -> None:
    neff = read_neff(tmp_path / "missing.neff")
    assert not neff.valid and "cannot be read" in neff.problem
