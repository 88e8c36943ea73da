"""Fuzz targets beyond trace JSON, for scripts/fuzz.py --target: NEFF headers and tar members, file and directory names, Explorer and ntrace Parquet files, device-profile tables, sets of traces (variants and ranks).

Each target is a hypothesis strategy drawing a `Writer`: a function that writes one input under
a fresh directory and returns the path to give ntrace, with the commands to run on it. Every
command runs through the CLI in every output format; a crash is an exception escaping the CLI,
a traceback in its output, or an exit code other than 0, 1 and 2.
"""

from __future__ import annotations

import io
import os
import shutil
import struct
import tarfile
from pathlib import Path
from typing import Any, Callable

import polars as pl
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
FORMATS = ("table", "json", "csv", "markdown")
#: (path to give ntrace, the commands to run on it, each a list of arguments with "{path}").
Writer = Callable[[Path], tuple[Path, list[list[str]]]]

SOUND_TRACE = REPO / "fixtures" / "rmsnorm" / "naive"
_ANALYZE = [["analyze", "{path}", "--format", f, "-q"] for f in FORMATS]
_ARTIFACTS = [["artifacts", "{path}", "--format", f] for f in FORMATS]
_DEVICE = [["device", "{path}", "--format", f] for f in FORMATS]
_EXTREME_INTS = st.sampled_from([0, 1, -1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 10**15])


def _sound_trace() -> bytes:
    """The bundled fixture's first framework trace: a small valid Kineto trace."""
    return next(SOUND_TRACE.rglob("trace.json")).read_bytes()


# ---------------------------------------------------------------- NEFF headers and tar members

_NEFF_U64 = st.sampled_from([0, 1, 1024, 512, 2**32, 2**63 - 1, 2**63, 2**64 - 1])


@st.composite
def neff_inputs(draw: st.DrawFn) -> Writer:
    """A NEFF with fuzzed u64 header fields and text fields, and a payload that is a plain, gzip or broken tar of fuzzed members (or random bytes)."""
    header = bytearray(1024)
    for offset in (0, 8, 16, 24, 32):
        struct.pack_into("<Q", header, offset, draw(_NEFF_U64))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, 1023))
        header[at : at + 8] = draw(st.binary(min_size=1, max_size=8))
    header = header[:1024].ljust(1024, b"\0")
    kind = draw(st.sampled_from(["tar", "gz", "random", "none", "cut"]))
    buf = io.BytesIO()
    if kind in ("tar", "gz", "cut"):
        with tarfile.open(fileobj=buf, mode="w:gz" if kind == "gz" else "w") as tar:
            for _ in range(draw(st.integers(0, 4))):
                info = tarfile.TarInfo(draw(st.text(min_size=1, max_size=40)).replace("\0", "_") or "m")
                data = draw(st.binary(max_size=64))
                info.size, info.mtime = len(data), 0
                tar.addfile(info, io.BytesIO(data))
    payload = buf.getvalue() if kind in ("tar", "gz") else buf.getvalue()[: draw(st.integers(0, 600))] if kind == "cut" else draw(st.binary(max_size=2048)) if kind == "random" else b""
    if draw(st.booleans()):
        struct.pack_into("<Q", header, 16, len(payload))
    name = draw(st.sampled_from(["neff_123456789012345_vnc_0.neff", "neff_99999999999999999999_vnc_1.neff", "model.neff"]))

    def write(tmp: Path) -> tuple[Path, list[list[str]]]:
        (tmp / name).write_bytes(bytes(header) + payload)
        (tmp / "trace.json").write_bytes(_sound_trace())
        return tmp, [*_ARTIFACTS, ["analyze", "{path}", "-q"]]

    return write


# ---------------------------------------------------------------- file and directory names

_NAME_BYTES = st.lists(st.sampled_from([b"a", b"\x1b[2J", b"\r", b"\n", b"\t", b"\xff", b"\xed\xa0\x80", b"\xc3\xa9", b" ", b"-", b"=", b"%s", b"..", b"\x7f", b"\xc2\x9b"]), min_size=1, max_size=12)


@st.composite
def name_inputs(draw: st.DrawFn) -> Writer:
    """A sound trace whose file and folder names are drawn from control characters, bytes that are not UTF-8, formula starts and long runs, up to the 255-byte limit."""
    stem = b"".join(draw(_NAME_BYTES)).replace(b"/", b"_").replace(b"\0", b"_")
    stem = stem * draw(st.integers(1, 20))
    folder = b"".join(draw(_NAME_BYTES)).replace(b"/", b"_").replace(b"\0", b"_")[:200]
    suffix = draw(st.sampled_from([b".pt.trace.json", b".json", b"trace.json"]))
    file_name = (stem[: 255 - len(suffix)] + suffix)
    if folder in (b".", b".."):
        folder = b"f"

    def write(tmp: Path) -> tuple[Path, list[list[str]]]:
        directory = tmp / os.fsdecode(folder)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / os.fsdecode(file_name)).write_bytes(_sound_trace())
        return tmp, [*_ANALYZE, ["compare", "{path}", "--format", "json"], ["convert", "{path}", "-o", str(tmp.parent / (tmp.name + "-out"))], ["report", "{path}", "-o", str(tmp.parent / (tmp.name + ".html")), "-q"], ["ranks", "{path}", "--format", "csv", "-q"]]

    return write


# ---------------------------------------------------------------- Explorer and ntrace Parquet files

_EXPLORER_COLUMNS = ["id", "name", "start_ts", "end_ts", "duration_ns", "trace_event_source", "process_id", "thread_id", "nc_idx", "pcore_idx", "worker_gid", "flow_id", "framework_stream_id", "instance_id", "extra_attributes_json"]


@st.composite
def explorer_inputs(draw: st.DrawFn) -> Writer:
    """A Neuron Explorer SystemProfileEvents table with columns left out, of the wrong type, or holding extreme, null or hostile values."""
    n = draw(st.integers(0, 12))
    columns: dict[str, Any] = {}
    for column in _EXPLORER_COLUMNS:
        kind = draw(st.sampled_from(["int", "int", "text", "null", "absent"]))
        if kind == "absent":
            continue
        if kind == "int":
            columns[column] = pl.Series(column, [draw(_EXTREME_INTS) for _ in range(n)], dtype=pl.Int64)
        elif kind == "text":
            columns[column] = pl.Series(column, [draw(st.sampled_from(["framework", "neuron_rt", "neuron_hw", "ProfilerStep#1", "\x1b[2J", "=1+1", "", "9" * 30])) for _ in range(n)], dtype=pl.String)
        else:
            columns[column] = pl.Series(column, [None] * n, dtype=pl.Null)
    frame = pl.DataFrame(columns)

    def write(tmp: Path) -> tuple[Path, list[list[str]]]:
        path = tmp / "events.parquet"
        frame.write_parquet(path)
        return path, [*_ANALYZE, ["report", "{path}", "-o", str(tmp / "r.html"), "-q"], ["export", "{path}", "--perfetto", str(tmp / "p.json"), "-q"], ["diff", "{path}", "{path}", "--format", "csv"]]

    return write


@st.composite
def cache_inputs(draw: st.DrawFn) -> Writer:
    """An ntrace Parquet cache of the sound trace whose metadata records or column types are damaged, or whose bytes are cut."""
    damage = draw(st.sampled_from(["provenance", "summary", "column_type", "drop_column", "cut", "rows"]))
    junk = draw(st.sampled_from(['{"version": 2}', '{"version": 2, "source": 1, "meta": {}, "warnings": []}', "[]", "{", '{"code": "x"}', '{"version": 2, "source": "s", "meta": {}, "warnings": [], "variant": 5}', "null"]))
    column = draw(st.sampled_from(["ts", "dur", "lane", "name", "idx", "pid"]))
    cut = draw(st.integers(0, 4000))

    def write(tmp: Path) -> tuple[Path, list[list[str]]]:
        from ntrace.io.cache import write_cache
        from ntrace.io.kineto import read_kineto
        from ntrace.profile import Profile

        source = tmp / "t.pt.trace.json"
        source.write_bytes(_sound_trace())
        trace = read_kineto(source)
        path = write_cache(trace, tmp / "t.pt.trace.json.parquet", Profile(trace).summary())
        source.unlink()
        metadata = pl.read_parquet_metadata(path)
        frame = pl.read_parquet(path)
        if damage == "provenance":
            metadata["ntrace.events"] = junk
        elif damage == "summary":
            metadata["ntrace.summary"] = junk
        elif damage == "column_type":
            frame = frame.with_columns(pl.col(column).cast(pl.String))
        elif damage == "drop_column":
            frame = frame.drop(column)
        elif damage == "rows":
            frame = frame.with_columns(pl.lit(None).alias(column))
        if damage == "cut":
            path.write_bytes(path.read_bytes()[:cut])
        else:
            frame.write_parquet(path, metadata={k: v for k, v in metadata.items() if k.startswith("ntrace.")})
        return path, [*_ANALYZE, ["compare", "{path}"], ["export", "{path}", "--perfetto", str(tmp / "p.json"), "-q"]]

    return write


# ---------------------------------------------------------------- device-profile tables

DEVICE_SEED = REPO / "fixtures" / "device" / "compute_bound"


@st.composite
def device_inputs(draw: st.DrawFn) -> Writer:
    """A copy of a synthetic processed device profile with one table's column set to extreme, null or negative values, cast to text, dropped, or its file cut."""
    tables = sorted(p.name for p in DEVICE_SEED.glob("*.parquet"))
    table = draw(st.sampled_from(tables))
    damage = draw(st.sampled_from(["values", "null", "text", "drop", "cut", "empty"]))
    pick = draw(st.integers(0, 1000))
    value = draw(_EXTREME_INTS)
    cut = draw(st.integers(0, 2000))

    def write(tmp: Path) -> tuple[Path, list[list[str]]]:
        profile = tmp / "profile"
        shutil.copytree(DEVICE_SEED, profile)
        path = profile / table
        frame = pl.read_parquet(path)
        column = frame.columns[pick % len(frame.columns)]
        dtype = frame.schema[column]
        if damage == "values":
            one = pl.lit(value).cast(dtype.inner, strict=False) if isinstance(dtype, pl.List) else pl.lit(value)  # a list column gets one-element lists
            frame = frame.with_columns((pl.concat_list(one) if isinstance(dtype, pl.List) else one).cast(dtype, strict=False).alias(column))
        elif damage == "null":
            frame = frame.with_columns(pl.lit(None, dtype).alias(column))
        elif damage == "text":
            nested = isinstance(dtype, (pl.List, pl.Array, pl.Struct))  # as JSON text: a cast to String refuses nested types
            text = pl.struct(pl.col(column)).struct.json_encode() if nested else pl.col(column).cast(pl.String)
            frame = frame.with_columns(text.fill_null("\x1b[2J").alias(column))
        elif damage == "drop":
            frame = frame.drop(column)
        elif damage == "empty":
            frame = frame.clear()
        if damage == "cut":
            path.write_bytes(path.read_bytes()[:cut])
        else:
            frame.write_parquet(path)
        return profile, [*_DEVICE, ["compare", "{path}", "--format", "json"]]

    return write


# ---------------------------------------------------------------- sets of traces: variants and ranks

#: Times in µs that fit int64 ns alone but not summed or subtracted across traces, and ordinary ones.
_SET_US = st.sampled_from([0, 1, 10, 1000, 10**6, 10**12, 10**15, 3 * 10**15, 4 * 10**15, 4_700_000_000_000_000, 9_223_372_036_854_775, -(10**15), -4_700_000_000_000_000, -9_223_372_036_854_775])
_NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


@st.composite
def _set_trace(draw: st.DrawFn) -> bytes:
    """One small trace of a set: CPU ops, kernels, collectives and profiler steps at extreme or ordinary times, a rank (or none)."""
    import json

    events: list[dict[str, Any]] = []
    for i in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["cpu_op", "kernel", "nccl", "step"]))
        ts, dur = draw(_SET_US), abs(draw(_SET_US))
        event: dict[str, Any] = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts, "dur": dur}
        if kind in ("kernel", "nccl"):
            args: dict[str, Any] = {"device": 0, "stream": 7, "correlation": i}
            if kind == "nccl" and draw(st.booleans()):
                args["Sequence number"] = draw(st.sampled_from([0, 1, i, 2**62]))
            event.update(cat="kernel", name=_NCCL if kind == "nccl" else "gemm", pid=0, tid=7, args=args)
        elif kind == "step":
            event.update(cat="user_annotation", name=f"ProfilerStep#{draw(st.integers(0, 3))}")
        events.append(event)
    top: dict[str, Any] = {"traceEvents": events}
    if draw(st.booleans()):
        top["distributedInfo"] = {"rank": draw(st.sampled_from([0, 1, 2, 3, 2**62])), "world_size": draw(st.sampled_from([1, 4, 2**31]))}
    return json.dumps(top).encode()


@st.composite
def _rank_trace(draw: st.DrawFn, count: int) -> bytes:
    """One rank of a job: `count` all-reduce kernels at this rank's clock base plus extreme or ordinary offsets."""
    import json

    base = draw(_SET_US)
    kernels = [
        {"ph": "X", "cat": "kernel", "name": _NCCL, "pid": 0, "tid": 7, "ts": base + draw(_SET_US), "dur": abs(draw(_SET_US)), "args": {"device": 0, "stream": 7}}
        for _ in range(count)
    ]  # fmt: skip
    return json.dumps({"traceEvents": kernels}).encode()


@st.composite
def set_inputs(draw: st.DrawFn) -> Writer:
    """A directory of two variants (and a second directory as diff's other side) of up to four small traces each, whose times fit int64 ns one by one but not summed or aligned across traces."""
    sides = [[draw(_set_trace()) for _ in range(draw(st.integers(1, 4)))] for _ in range(3)]
    if draw(st.booleans()):  # the other side as ranks of one job: the same collectives on every rank, each rank on a clock of its own
        count = draw(st.integers(1, 3))
        sides[2] = [draw(_rank_trace(count)) for _ in range(draw(st.integers(2, 4)))]

    def write(tmp: Path) -> tuple[Path, list[list[str]]]:
        for side, traces in zip(("run/a", "run/b", "other"), sides):
            for i, data in enumerate(traces):
                (tmp / side).mkdir(parents=True, exist_ok=True)
                (tmp / side / f"rank{i}.pt.trace.json").write_bytes(data)
        run, other = tmp / "run", str(tmp / "other")
        return run, [
            ["compare", "{path}", "--format", "table"], ["compare", "{path}", "--format", "json"],
            ["diff", "{path}", other, "--format", "markdown"], ["diff", other, "{path}", "--format", "csv"],
            ["ranks", other, "--format", "table", "-q"], ["ranks", other, "--format", "json", "-q"],
            ["report", "{path}", "-o", str(tmp / "r.html"), "-q"], ["analyze", "{path}", "--format", "json", "-q"],
        ]  # fmt: skip

    return write


TARGETS: dict[str, Callable[[], st.SearchStrategy[Writer]]] = {
    "neff": neff_inputs,
    "names": name_inputs,
    "explorer": explorer_inputs,
    "cache": cache_inputs,
    "device": device_inputs,
    "sets": set_inputs,
}
