"""Decode a NEFF's documented 1024-byte header and list its tarball's members; a damaged NEFF is reported, never raised.

Layout (little-endian, packed) from aws-neuron-sdk neuron-runtime/explore/work-with-neff-files.rst;
see docs/formats.md. Which bytes the header hash covers is not
documented, so the hash is reported as read and never checked.
"""

from __future__ import annotations

import stat
import struct
import tarfile
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ntrace.errors import valid_text
from ntrace.units import plural

#: The header: pkg_version, header_size, data_size, version major, minor, build version,
#: num_tpb, hash, uuid, name, requested_tpb_count, tpb_per_node, feature_bits, lnc_size, pad.
HEADER = struct.Struct("<QQQQQ128sI32s16s256sI64sQI468s")
HEADER_SIZE = 1024
assert HEADER.size == HEADER_SIZE
#: u64 header fields at or above this do not fit the int64 columns of `ntrace artifacts` (nor any real file).
INT64_LIMIT = 1 << 63
#: Magic bytes of the compressions tarfile would have to inflate whole to list a member (bzip2 and xz are not seekable).
UNLISTED_COMPRESSIONS = ((b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))
#: The most bytes a gzip payload is inflated to while its members are listed.
LIST_CEILING = 256 << 20
#: The most members listed.
MAX_MEMBERS = 100_000


@dataclass(frozen=True)
class Neff:
    """What one NEFF file says about itself; `valid` is False (with `problem`) when it is truncated or inconsistent."""

    path: Path
    size: int
    valid: bool
    problem: str | None = None
    pkg_version: int | None = None
    header_size: int | None = None
    data_size: int | None = None
    neff_version: str | None = None  # "major.minor"
    build_version: str | None = None
    num_tpb: int | None = None
    header_hash: str | None = None  # hex of the 32 hash bytes, as stored
    uuid: str | None = None
    name: str | None = None
    requested_tpb_count: int | None = None
    feature_bits: int | None = None
    lnc_size: int | None = None
    members: tuple[str, ...] = field(default_factory=tuple)

    @property
    def subgraphs(self) -> tuple[str, ...]:
        """The `sgNN` subgraph directories of the tarball, in order."""
        tops = (m.strip("./").split("/", 1)[0] for m in self.members)
        return tuple(sorted({t for t in tops if t.startswith("sg") and t[2:].isdigit()}))


def _text(raw: bytes) -> str:
    """A NUL-padded text field as str (undecodable bytes replaced, never raised)."""
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def read_neff(path: str | Path) -> Neff:
    """Decode `path`'s header and list its tarball's members without extracting anything."""
    path = Path(path)
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            return Neff(path, 0, False, "is not a regular file")
        size = st.st_size
        with path.open("rb") as fh:
            head = fh.read(HEADER_SIZE)
            members, tar_problem = _members(_Window(fh, HEADER_SIZE, size)) if len(head) == HEADER_SIZE else ((), None)
    except OSError as exc:
        return Neff(path, 0, False, f"cannot be read ({exc.strerror or exc})")
    if len(head) < HEADER_SIZE:
        return Neff(path, size, False, f"truncated: {size} bytes, shorter than the {HEADER_SIZE}-byte NEFF header")
    (pkg, header_size, data_size, major, minor, build, num_tpb, digest, raw_uuid, name, requested, _per_node, features, lnc, _pad) = HEADER.unpack(head)
    problems: list[str] = []
    if header_size != HEADER_SIZE:
        problems.append(f"header_size is {header_size}, expected {HEADER_SIZE}")
    for field_name, value in (("pkg_version", pkg), ("data_size", data_size)):
        if value >= INT64_LIMIT:
            problems.append(f"{field_name} is {value}, beyond int64 (a damaged header)")
    pkg, data_size = (v if v < INT64_LIMIT else None for v in (pkg, data_size))
    payload = size - HEADER_SIZE
    if data_size is not None and data_size != payload:
        what = "truncated" if data_size > payload else "trailing bytes"
        problems.append(f"data_size says {data_size} bytes but {payload} follow the header ({what})")
    if tar_problem:
        problems.append(tar_problem)
    return Neff(
        path,
        size,
        valid=not problems,
        problem="; ".join(problems) or None,
        pkg_version=pkg,
        header_size=header_size,
        data_size=data_size,
        neff_version=f"{major}.{minor}",
        build_version=_text(build),
        num_tpb=num_tpb,
        header_hash=digest.hex(),
        uuid=str(uuid.UUID(bytes=raw_uuid)),
        name=_text(name),
        requested_tpb_count=requested,
        feature_bits=features,
        lnc_size=lnc,
        members=members,
    )


class _Window:
    """The bytes of `fh` from `start` to `end` as a file of their own (offset 0 at `start`), so the payload is read in place, never copied whole."""

    def __init__(self, fh: BinaryIO, start: int, end: int) -> None:
        self.fh, self.start, self.end = fh, start, end
        self.pos = 0

    def read(self, n: int = -1) -> bytes:
        """Up to `n` bytes from the current position (all that is left when n < 0)."""
        left = self.end - self.start - self.pos
        n = left if n < 0 else min(n, left)
        self.fh.seek(self.start + self.pos)
        data = self.fh.read(max(n, 0))
        self.pos += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        """Move as io does (whence 0, 1 or 2); nothing is read."""
        base = (0, self.pos, self.end - self.start)[whence]
        self.pos = max(base + offset, 0)
        return self.pos

    def tell(self) -> int:
        """The current position within the window."""
        return self.pos


class _Inflated:
    """A gzip stream inflated as it is read, at most LIST_CEILING bytes (a few KB of gzip can hold gigabytes of zeros); past that, read raises _TooLarge."""

    def __init__(self, src: _Window) -> None:
        self.src, self.out = src, 0
        self.inflater = zlib.decompressobj(wbits=31)
        self.pending = b""

    def read(self, n: int = -1) -> bytes:
        """Up to `n` inflated bytes (b"" at the end), across concatenated gzip members."""
        chunks, want = [], n if n >= 0 else LIST_CEILING + 1
        while want > 0:
            if self.inflater.eof:  # concatenated gzip members: another one follows, or the stream ends
                while len(self.pending) < 2 and (more := self.src.read(1 << 20)):
                    self.pending += more
                if self.pending[:2] != b"\x1f\x8b":
                    break
                self.inflater = zlib.decompressobj(wbits=31)
            fed = self.pending or self.src.read(1 << 20)
            chunk = self.inflater.decompress(fed, min(want, 1 << 20))
            # zlib keeps what it did not take in unconsumed_tail, and past a member's end in unused_data (then in both)
            self.pending = self.inflater.unused_data if self.inflater.eof else self.inflater.unconsumed_tail
            if not fed and not chunk:
                break  # the file ends (a cut stream: tarfile reports it)
            chunks.append(chunk)
            want -= len(chunk)
            self.out += len(chunk)
            if self.out > LIST_CEILING:
                raise _TooLarge
        return b"".join(chunks)


class _TooLarge(Exception):
    """A compressed tar inflated past LIST_CEILING while being listed."""


def _members(payload: _Window) -> tuple[tuple[str, ...], str | None]:
    """The tarball's member names (plain tar read in place, gzip tar inflated as a stream up to LIST_CEILING) and why it could not be read (whole).

    tarfile only reports a bad first header when the archive starts at offset 0 of its file object:
    hence the window. A bzip2 or xz payload is not listed: listing inflates it whole (a 41 KB
    bzip2 tar can hold 32 GiB). At most MAX_MEMBERS names are listed.
    """
    magic = payload.read(6)
    payload.seek(0)
    for prefix, kind in UNLISTED_COMPRESSIONS:
        if magic.startswith(prefix):
            return (), f"payload is a {kind}-compressed tar, not listed (its members cannot be read without inflating all of it)"
    names: list[str] = []
    try:
        if magic.startswith(b"\x1f\x8b"):
            tar = tarfile.open(fileobj=_Inflated(payload), mode="r|")  # type: ignore[call-overload]  # any object with read() is a stream to tarfile
        else:
            tar = tarfile.open(fileobj=payload, mode="r:")  # type: ignore[call-overload]  # read, seek and tell are all tarfile uses
        with tar:
            for member in tar:
                names.append(valid_text(member.name))  # tarfile keeps bytes that are not UTF-8 as lone surrogates
                if len(names) == MAX_MEMBERS:
                    return tuple(names), f"payload lists more than {MAX_MEMBERS:,} members; only the first {MAX_MEMBERS:,} listed"
    except _TooLarge:
        return tuple(names), f"payload's gzip tar inflates past {LIST_CEILING >> 20} MiB while being listed; only the first {plural(len(names), 'member')} listed"
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        reason = "not a tar, gzip, bz2 or xz archive" if "could not be opened" in str(exc) else " ".join(str(exc).split())
        return (), f"payload is not a readable tar ({reason})"
    return tuple(names), None
