"""Stage 1 of the data's way — find and read: trace files under a path, each read within limits into an immutable Trace.

- `discover`: which files under a path are framework traces;
- `files`: reading a file without trusting it (regular files, memory limits, gzip with a ceiling);
- `kineto` (private package): the Kineto/Chrome trace JSON decoder;
- `explorer`: Neuron Explorer's Parquet export of a system profile;
- `cache`: ntrace's own Parquet cache (events plus the Summary computed from them);
- `parquet`: opening any Parquet file without trusting it (any file name, rows checked against memory);
- `dataset`: a rank-partitioned dataset of such files, each rank's summary for `ntrace ranks` beside it;
- `bounds`: leaving out the events whose ns no int64 sum could hold;
- `manifest`: the capture manifest (`capture.json`) beside a capture;
- `atomic` and `progress`: writing files whole, reporting how far a read is.

`source_args` re-reads the `args` a Kineto file wrote, which no Trace keeps, for `ntrace export`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    import polars as pl

    from ntrace.io.memo import Kind
    from ntrace.trace import Trace


def read_trace(path: str | Path, *, fast: bool = True, lanes: Mapping[str, str] | None = None, max_events: int | None = None) -> Trace:
    """The Trace of one file: Kineto JSON (plain or gzip), an ntrace Parquet cache, or a Neuron Explorer Parquet export.

    `fast=False` forces the plain JSON decoder, `lanes` adds category → lane rows, `max_events`
    keeps only a JSON trace's first events. A file name that is not valid UTF-8 is kept with
    escapes (ntrace.errors.valid_path) in the Trace, so outputs can print and store it. The readers are imported here, so importing a module
    of this package (the CLI imports `progress`) does not import the decoders.
    """
    from ntrace.io.bounds import summable
    from ntrace.io.cache import is_cache, read_cache_trace
    from ntrace.io.explorer import read_explorer_trace
    from ntrace.io.kineto import read_kineto

    if Path(path).suffix.lower() == ".parquet":
        trace = read_cache_trace(path, lanes) if is_cache(path) else read_explorer_trace(path)
    else:
        trace = read_kineto(path, fast=fast, max_events=max_events, lanes=lanes)
    return summable(_valid_names(trace))


def read_ahead(path: str | Path, remembered: Kind | None = "summary") -> None:
    """Start decoding the events of the JSON trace file at `path` on a thread, unless the memo holds its entry of the kind `remembered` (what the command reads instead; None: it reads the trace anyway); the next read_trace of that file, by the fast decoder and in full, takes them.

    Called before Polars and the analysis are imported (the CLI's `analyze`, `report` and
    `export` do), the decode and those imports share the cores. Only a large trace file is read
    ahead (ntrace.io.kineto).
    """
    from ntrace.io import memo
    from ntrace.io.kineto import read_ahead as start

    path = Path(path)
    if not path.name.lower().endswith(".json"):
        return
    entry = memo.entry(path, remembered) if remembered else None
    if entry is None or not entry.is_file():
        start(path)


def source_args(path: str | Path) -> pl.DataFrame:
    """idx, name (categorical) and args (the JSON object text as written, or null) of every event of the Kineto JSON file at `path`, in file order, decoded a window at a time.

    Raises NtraceError or OSError where the file cannot be read, msgspec.DecodeError where the
    typed decoder does not read it as it is (JSON that needs repair, a value of another type).
    """
    from ntrace.io.kineto._args import event_args

    return event_args(Path(path))


def _valid_names(trace: Trace) -> Trace:
    """The trace with a file name that is not valid UTF-8 written with escapes in its path and warnings, so every output can hold them."""
    from dataclasses import replace

    from ntrace.errors import valid_path, valid_text

    path = valid_path(trace.path)
    if path is trace.path:
        return trace
    return replace(trace, path=path, warnings=tuple(valid_text(w) for w in trace.warnings))
