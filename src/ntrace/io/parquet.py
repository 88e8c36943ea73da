"""Open Parquet files without trusting them: regular files only, opened by Python (any file name, undecodable bytes too), frames checked to fit in memory first.

Polars is handed an open file rather than a path: it cannot take a path whose name is not valid
UTF-8. Before rows are read, the row count from the footer times the columns read times
PARQUET_BYTES_PER_VALUE is checked against the memory available, so a Parquet file whose
footer promises billions of rows fails with both sizes named instead of being killed half-way.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Sequence, TypeVar

import polars as pl

from ntrace.errors import InputError, TraceFormatError
from ntrace.io.files import available_memory, regular_file_error
from ntrace.units import size

#: Memory per value read, an estimate for a column of numbers or short names with its validity and offsets.
PARQUET_BYTES_PER_VALUE = 24
#: The magic bytes a Parquet file starts and ends with.
MAGIC = b"PAR1"

T = TypeVar("T")


def looks_like_parquet(path: Path) -> bool:
    """True when `path` is a regular file starting with Parquet's magic bytes (never raises)."""
    if regular_file_error(path) is not None:
        return False
    try:
        with path.open("rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


def metadata(path: Path) -> dict[str, str]:
    """The file's key-value metadata."""
    return _with_file(path, pl.read_parquet_metadata)


def schema(path: Path) -> pl.Schema:
    """The file's column names and types, from its footer."""
    return _with_file(path, lambda fh: pl.Schema(pl.read_parquet_schema(fh)))


def read(path: Path, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """The file's rows (only `columns` when given), once the memory they need is known to be available."""

    def rows(fh: BinaryIO) -> pl.DataFrame:
        count = pl.scan_parquet(fh).select(pl.len()).collect().item()
        width = len(columns) if columns is not None else len(pl.read_parquet_schema(fh))
        need = count * max(width, 1) * PARQUET_BYTES_PER_VALUE
        if need > (have := available_memory()):
            raise InputError(path, f"is too large to read here: {count:,} rows of {width} columns need about {size(need)} of memory, only {size(have)} is available")
        fh.seek(0)
        return pl.read_parquet(fh, columns=list(columns) if columns is not None else None)

    return _with_file(path, rows)


def _with_file(path: Path, use: Callable[[BinaryIO], T]) -> T:
    """`use` on the open file, with a missing, irregular or unreadable file as the one-line error naming it."""
    if error := regular_file_error(path):
        raise error
    try:
        with _opened(path) as fh:
            return use(fh)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise TraceFormatError(path, f"is not a readable Parquet file ({first_line(exc)})") from None


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[BinaryIO]:
    """The file open for reading, as InputError when it cannot be opened."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    with fh:
        yield fh


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
