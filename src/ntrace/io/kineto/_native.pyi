"""Type stub of the C module _native.c: Kineto events parsed into Arrow columns."""

from typing import Any

N_COLUMNS: int

class Column:
    """One decoded column, exported once through the Arrow C data interface."""

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]: ...
    def __len__(self) -> int: ...

def decode(buffer: Any, start: int, end: int, stop: int = -1, release: bool = False, progress: Any = ..., /) -> tuple[tuple[Column, ...], tuple[Column | None, ...], int] | None: ...
