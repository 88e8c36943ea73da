#!/usr/bin/env python3
"""Generate the bad-input corpus: damaged profiles and hostile files, each a named case with the outcome ntrace must give.

    .venv/bin/python scripts/make_bad_inputs.py OUT_DIR

Writes one file or directory per case under OUT_DIR and OUT_DIR/cases.json, a list of
{name, path, args, env, exit, outcome, pattern, why}: run `ntrace <args>` (with "{path}"
replaced by OUT_DIR/path, "{out}" by a new output directory outside OUT_DIR, and `env`
added) and expect exit code `exit` and
- outcome "ok": nothing on stderr;
- outcome "warning": stderr lines all start "warning: " and one matches `pattern` (a regex);
- outcome "error": exactly one stderr line, "error: <path>: ..." matching `pattern`;
- outcome "report": exit 0 and `pattern` (multi-line regex) found in stdout (artifact problems shown in the listing, escaped names);
and in every case no raw control character (but newlines) on stdout or stderr.
`needs` names a condition the case depends on ("non-root": permissions bind only non-root users);
`heavy` marks a case (multi-GB sparse files, bombs) that gives its outcome only under a 4 GiB RLIMIT_AS.
Deterministic: the same bytes on every run. tests/test_bad_inputs.py runs every case.
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import sys
from pathlib import Path
from typing import Any, Callable

CASES: list[dict[str, Any]] = []


def case(
    name: str, exit: int, outcome: str, pattern: str = "", *, args: tuple[str, ...] = ("analyze", "{path}"), env: dict[str, str] | None = None, needs: str | None = None, why: str = "", heavy: bool = False
) -> Callable:
    """Register the decorated writer as a case; the writer creates OUT_DIR/<its return value> and returns that name.

    `heavy` cases (multi-GB sparse files, bombs) give their outcome only within an address-space
    limit: they run in a child process under RLIMIT_AS (tests/test_hostile_corpus.py), never in-process.
    """

    def register(write: Callable[[Path], str]) -> Callable[[Path], str]:
        CASES.append({"name": name, "write": write, "args": list(args), "env": env or {}, "exit": exit, "outcome": outcome, "pattern": pattern, "needs": needs, "heavy": heavy, "why": why or (write.__doc__ or "").strip()})
        return write

    return register


# ---------------------------------------------------------------- a sound trace to damage


def x(name: str, cat: str, ts: float, dur: float, pid: Any = 100, tid: Any = 100, **args: Any) -> dict[str, Any]:
    """A complete event in Kineto's key order (ph first), times in µs."""
    ev: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def sound_events(steps: int = 3) -> list[dict[str, Any]]:
    """A small, valid Kineto-style trace: steps of a CPU op, its runtime call, the device execution and their flow."""
    evs: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python"}}]
    t = 1_000.0
    for i in range(steps):
        corr = 10 + i
        evs.append(x(f"ProfilerStep#{i}", "user_annotation", t, 90.0))
        evs.append(x("aten::mm", "cpu_op", t + 1, 40.0, **{"External id": corr, "Input Dims": [[4, 4], [4, 4]], "Sequence number": i}))
        evs.append(x("nrt_execute", "privateuse1_runtime", t + 5, 20.0, **{"External id": corr, "correlation": corr}))
        evs.append(x("nc_exec_running", "kernel", t + 12.5, 30.25, pid=0, tid=0, correlation=corr, device=0, stream=0))
        evs.append({"ph": "s", "id": corr, "pid": 100, "tid": 100, "ts": t + 5, "cat": "ac2g", "name": "ac2g"})
        evs.append({"ph": "f", "id": corr, "pid": 0, "tid": 0, "ts": t + 12.5, "cat": "ac2g", "name": "ac2g", "bp": "e"})
        t += 100.0
    return evs


def doc_bytes(events: Any, **top: Any) -> bytes:
    """A trace document as Kineto lays it out: metadata first, one event per line, traceEvents last but for traceName."""
    head = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NeuronCore-v2"}], **top}
    body = ",\n  ".join(json.dumps(e) for e in events) if isinstance(events, list) else json.dumps(events)
    lead = json.dumps(head)[:-1]
    return f'{lead}, "traceEvents": [\n  {body}\n], "traceName": "bad_inputs"}}\n'.encode() if isinstance(events, list) else f'{lead}, "traceEvents": {body}}}\n'.encode()


SOUND = doc_bytes(sound_events())


def put(out: Path, name: str, data: bytes) -> str:
    """Write `data` to OUT_DIR/name (parents made) and return `name`."""
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return name


def put_dir(out: Path, name: str, files: dict[str, bytes]) -> str:
    """Write each of `files` (names relative to the directory) under OUT_DIR/name and return `name`."""
    for file, data in files.items():
        put(out, f"{name}/{file}", data)
    return name


def gz(data: bytes) -> bytes:
    """Deterministic gzip (mtime 0)."""
    return gzip.compress(data, mtime=0)


# ---------------------------------------------------------------- controls and tolerated forms


@case("sound_trace", 0, "ok")
def _(out: Path) -> str:
    """Control: the undamaged trace every other case starts from."""
    return put(out, "sound_trace.pt.trace.json", SOUND)


@case("sound_trace_gzip", 0, "ok")
def _(out: Path) -> str:
    """Control: the same trace gzipped."""
    return put(out, "sound_trace_gzip.pt.trace.json.gz", gz(SOUND))


@case("top_level_array", 0, "ok")
def _(out: Path) -> str:
    """The JSON Array Format Chrome also accepts: a bare list of events."""
    return put(out, "top_level_array.json", json.dumps(sound_events()).encode())


@case("traceevents_missing", 2, "error", r"has no traceEvents array")
def _(out: Path) -> str:
    """A JSON object without traceEvents is not a trace: error."""
    return put(out, "traceevents_missing.pt.trace.json", b'{"schemaVersion": 1, "deviceProperties": []}')


@case("traceevents_not_a_list", 2, "error", r"has no traceEvents array")
def _(out: Path) -> str:
    """traceEvents holding a string instead of an array: error."""
    return put(out, "traceevents_not_a_list.pt.trace.json", b'{"traceEvents": "none"}')


@case("traceevents_empty", 0, "warning", r"holds no trace events")
def _(out: Path) -> str:
    """An empty traceEvents array (profiler stopped before any step): analyzed as empty, with a warning."""
    return put(out, "traceevents_empty.pt.trace.json", doc_bytes([]))


@case("events_without_ts_dur_cat", 0, "warning", r"complete events have no usable ts")
def _(out: Path) -> str:
    """Complete events lacking ts, dur or cat: those without ts left out, missing dur counted as 0, missing cat → lane other."""
    evs = sound_events()
    evs.append({"ph": "X", "name": "no_ts", "pid": 100, "tid": 100, "dur": 3})
    evs.append({"ph": "X", "name": "no_dur", "cat": "cpu_op", "pid": 100, "tid": 100, "ts": 1500})
    evs.append({"ph": "X", "name": "no_cat", "pid": 100, "tid": 100, "ts": 1600, "dur": 2})
    return put(out, "events_without_ts_dur_cat.pt.trace.json", doc_bytes(evs))


@case("ts_dur_as_strings", 0, "ok")
def _(out: Path) -> str:
    """ts/dur written as numeric strings ("1000.5"): read as numbers, silently (values are exact)."""
    evs = [{**e, "ts": str(e["ts"]), "dur": str(e["dur"])} if e.get("ph") == "X" else e for e in sound_events()]
    return put(out, "ts_dur_as_strings.pt.trace.json", doc_bytes(evs))


@case("ts_not_numeric_strings", 0, "warning", r"no usable ts")
def _(out: Path) -> str:
    """ts as text that is no number ("soon"): the event is left out with a warning."""
    evs = sound_events() + [x("odd", "cpu_op", 0, 1) | {"ts": "soon"}]
    return put(out, "ts_not_numeric_strings.pt.trace.json", doc_bytes(evs))


@case("negative_durations", 0, "warning", r"negative")
def _(out: Path) -> str:
    """A negative dur: counted as 0 with a warning."""
    evs = sound_events() + [x("backwards", "cpu_op", 1200, -5)]
    return put(out, "negative_durations.pt.trace.json", doc_bytes(evs))


@case("nan_infinity_literals", 0, "warning", r"non-standard JSON numbers")
def _(out: Path) -> str:
    """NaN / Infinity / -Infinity literals (Python's json writes them; strict parsers refuse): read, values dropped with warnings."""
    body = SOUND.replace(b'"dur": 90.0', b'"dur": NaN', 1).replace(b'"dur": 40.0', b'"dur": Infinity', 1).replace(b'"ts": 1001.0', b'"ts": -Infinity', 1)
    return put(out, "nan_infinity_literals.pt.trace.json", body)


@case("numbers_too_large", 0, "warning", r"do not fit in int64")
def _(out: Path) -> str:
    """ts of 1e300 and 10**30, a dur of 1e400 (beyond double), a correlation id of 2**70: dropped with warnings, nothing overflows."""
    evs = sound_events()
    evs.append(x("far_future", "cpu_op", 1e300, 1))
    evs.append(x("huge_int", "cpu_op", 10**30, 1, **{"External id": 2**70}))
    body = doc_bytes(evs).replace(b'"dur": 90.0', b'"dur": 1e400', 1)
    return put(out, "numbers_too_large.pt.trace.json", body)


@case("unknown_ph", 0, "warning", r"ph the trace format does not define")
def _(out: Path) -> str:
    """Events with a ph no trace viewer defines ("Z", ""): kept, not analyzed, counted in a warning."""
    evs = sound_events() + [{"ph": "Z", "name": "zeta", "ts": 1, "pid": 1, "tid": 1}, {"ph": "", "name": "blank", "ts": 2, "pid": 1, "tid": 1}]
    return put(out, "unknown_ph.pt.trace.json", doc_bytes(evs))


@case("flow_starts_without_ends", 0, "ok")
def _(out: Path) -> str:
    """Flow starts whose ends fall outside the capture (normal at window edges): ignored silently."""
    evs = [e for e in sound_events() if e.get("ph") != "f"]
    return put(out, "flow_starts_without_ends.pt.trace.json", doc_bytes(evs))


@case("flow_ends_without_starts", 0, "ok")
def _(out: Path) -> str:
    """Flow ends without starts (seen in 4 of the 8 real public traces): ignored silently."""
    evs = [e for e in sound_events() if e.get("ph") != "s"]
    return put(out, "flow_ends_without_starts.pt.trace.json", doc_bytes(evs))


@case("duplicate_events", 0, "warning", r"exact duplicates")
def _(out: Path) -> str:
    """Every complete event written twice (a writer that flushed twice): copies dropped so no time is counted twice."""
    evs = sound_events()
    evs += [e for e in evs if e.get("ph") == "X"]
    return put(out, "duplicate_events.pt.trace.json", doc_bytes(evs))


@case("non_utf8_names", 0, "warning", r"not UTF-8")
def _(out: Path) -> str:
    """Latin-1 and stray bytes inside event names: replaced by U+FFFD with a warning."""
    body = SOUND.replace(b'"aten::mm"', b'"aten::mm_\xe9\xff\xfe"', 1)
    return put(out, "non_utf8_names.pt.trace.json", body)


@case("non_utf8_in_metadata", 0, "ok")
def _(out: Path) -> str:
    """A byte that is not UTF-8 inside deviceProperties (found by fuzzing: the lazily decoded metadata crashed): replaced by U+FFFD."""
    return put(out, "non_utf8_in_metadata.pt.trace.json", SOUND.replace(b'"id": 0', b'"\x80id": 0', 1))


@case("utf8_bom", 0, "ok")
def _(out: Path) -> str:
    """A UTF-8 byte order mark before the JSON (Windows editors write one): dropped silently."""
    return put(out, "utf8_bom.pt.trace.json", b"\xef\xbb\xbf" + SOUND)


@case("wrong_value_types", 0, "ok")
def _(out: Path) -> str:
    """name as a number, pid as a list, args as a string, ids as floats: coerced per value, nothing fails."""
    evs = sound_events() + [{"ph": "X", "cat": "cpu_op", "name": 7, "pid": [1], "tid": {"a": 1}, "ts": 1300, "dur": 1, "args": "x"}, x("f", "cpu_op", 1301, 1, **{"External id": 3.0})]
    return put(out, "wrong_value_types.pt.trace.json", doc_bytes(evs))


@case("events_not_objects", 0, "warning", r"not JSON objects")
def _(out: Path) -> str:
    """traceEvents entries that are numbers, strings, null or lists: left out with a count."""
    evs: list[Any] = sound_events() + [1, "event", None, [1, 2]]
    return put(out, "events_not_objects.pt.trace.json", doc_bytes(evs))


@case("gzip_with_json_name", 0, "ok")
def _(out: Path) -> str:
    """gzip content under a plain .json name: recognised by its magic bytes."""
    return put(out, "gzip_with_json_name.pt.trace.json", gz(SOUND))


@case("plain_with_gz_name", 0, "ok")
def _(out: Path) -> str:
    """Plain JSON under a .json.gz name: read as plain."""
    return put(out, "plain_with_gz_name.pt.trace.json.gz", SOUND)


@case("gzip_multi_member", 0, "ok")
def _(out: Path) -> str:
    """A gzip file of two concatenated members (what `cat a.gz b.gz` or some writers produce): both read."""
    half = len(SOUND) // 2
    return put(out, "gzip_multi_member.pt.trace.json.gz", gz(SOUND[:half]) + gz(SOUND[half:]))


# ---------------------------------------------------------------- cut off and corrupt


def _cut_mid_event(data: bytes) -> bytes:
    """`data` cut in the middle of its last-but-one event (as a killed profiler leaves it)."""
    return data[: data.rindex(b'"name"', 0, data.rindex(b'{"ph"')) + 3]


@case("truncated_mid_event", 0, "warning", r"cut off at byte [\d,]+ .*analyzed the \d+ complete events")
def _(out: Path) -> str:
    """A trace cut off mid-write: analyzed up to its last complete event, with a warning naming the byte offset."""
    return put(out, "truncated_mid_event.pt.trace.json", _cut_mid_event(SOUND))


@case("truncated_inside_args", 0, "warning", r"cut off at byte")
def _(out: Path) -> str:
    """Cut inside a nested args object (closing braces of inner objects must not be taken for an event's end)."""
    return put(out, "truncated_inside_args.pt.trace.json", SOUND[: SOUND.rindex(b'"Input Dims": [[4, 4]') + 18])


@case("truncated_top_level_array", 0, "warning", r"cut off at byte")
def _(out: Path) -> str:
    """A bare event array cut off mid-event."""
    data = json.dumps(sound_events()).encode()
    return put(out, "truncated_top_level_array.json", data[: len(data) - 40])


@case("truncated_before_first_event", 2, "error", r"cut off at byte \d+ before its first complete event")
def _(out: Path) -> str:
    """Cut before any event was complete: nothing to salvage, error."""
    return put(out, "truncated_before_first_event.pt.trace.json", SOUND[: SOUND.index(b'{"ph"') + 30])


@case("truncated_gzip", 0, "warning", r"gzip stream is cut off")
def _(out: Path) -> str:
    """A gzip file cut off (copy not finished): the bytes it holds are decompressed, then the JSON salvaged."""
    data = gz(SOUND * 1)
    return put(out, "truncated_gzip.pt.trace.json.gz", data[: len(data) * 3 // 4])


@case("corrupt_gzip", 2, "error", r"corrupt gzip")
def _(out: Path) -> str:
    """A gzip header followed by garbage: error."""
    data = bytearray(gz(SOUND))
    data[12:40] = bytes(range(100, 128))
    return put(out, "corrupt_gzip.pt.trace.json.gz", bytes(data))


@case("gzip_bad_crc", 2, "error", r"corrupt gzip")
def _(out: Path) -> str:
    """A complete gzip stream whose CRC does not match its content: error."""
    data = bytearray(gz(SOUND))
    data[-8] ^= 0xFF
    return put(out, "gzip_bad_crc.pt.trace.json.gz", bytes(data))


@case("empty_file", 2, "error", r"is empty")
def _(out: Path) -> str:
    """A zero-byte trace (disk full before the first write): error."""
    return put(out, "empty_file.pt.trace.json", b"")


@case("empty_gzip", 2, "error", r"is empty")
def _(out: Path) -> str:
    """A gzip stream of zero bytes of content: error."""
    return put(out, "empty_gzip.pt.trace.json.gz", gz(b""))


@case("whitespace_only", 2, "error", r"is empty")
def _(out: Path) -> str:
    """Only whitespace and NUL-free newlines: error."""
    return put(out, "whitespace_only.pt.trace.json", b"  \n\t\n")


@case("binary_garbage", 2, "error", r"is not valid JSON")
def _(out: Path) -> str:
    """Random-looking bytes under a trace name: error."""
    return put(out, "binary_garbage.pt.trace.json", bytes((i * 97 + 13) % 256 for i in range(4096)))


@case("zero_filled", 2, "error", r"is not valid JSON")
def _(out: Path) -> str:
    """A file of NUL bytes (preallocated, never written: what a crash on some file systems leaves)."""
    return put(out, "zero_filled.pt.trace.json", bytes(8192))


@case("trailing_garbage", 2, "error", r"is not valid JSON")
def _(out: Path) -> str:
    """A complete trace followed by unrelated bytes: error (which data to believe is not clear)."""
    return put(out, "trailing_garbage.pt.trace.json", SOUND + b"\x00garbage{")


@case("json_scalar", 2, "error", r"top level is a JSON int")
def _(out: Path) -> str:
    """A JSON document that is a number: error."""
    return put(out, "json_scalar.pt.trace.json", b"42")


@case("deeply_nested", 0, "warning", r"1 value nested deeper than 64 levels .* replaced by null")
def _(out: Path) -> str:
    """100 000 nested arrays (a parser stack bomb, but valid JSON): the too-deep value becomes null with a warning, no recursion crash."""
    return put(out, "deeply_nested.pt.trace.json", b'{"traceEvents": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


@case("html_error_page", 2, "error", r"is not valid JSON")
def _(out: Path) -> str:
    """An HTML error page saved under the trace's name (a failed download)."""
    return put(out, "html_error_page.pt.trace.json", b"<html><body>502 Bad Gateway</body></html>\n")


@case("parquet_garbage", 2, "error", r"is not a readable Parquet file")
def _(out: Path) -> str:
    """A Neuron Explorer .parquet export that is not Parquet (magic bytes at both ends, garbage between): error."""
    return put(out, "parquet_garbage.parquet", b"PAR1" + bytes(range(64)) + b"PAR1")


# ---------------------------------------------------------------- directories, links, special files


@case("empty_directory", 2, "error", r"holds no framework trace")
def _(out: Path) -> str:
    """A directory with nothing in it."""
    (out / "empty_directory").mkdir(parents=True)
    return "empty_directory"


@case("directory_without_traces", 2, "error", r"holds no framework trace")
def _(out: Path) -> str:
    """A directory of logs and unrelated JSON: error naming the directory."""
    return put_dir(out, "directory_without_traces", {"log.txt": b"step 1 loss 0.3\n", "config.json": b'{"lr": 0.1}'})


@case("one_broken_among_many", 0, "warning", r"skipped .*corrupt gzip")
def _(out: Path) -> str:
    """Two good traces and one corrupt: the good ones are analyzed, the bad one becomes a warning."""
    data = bytearray(gz(SOUND))
    data[12:40] = bytes(28)
    return put_dir(out, "one_broken_among_many", {"rank0.pt.trace.json": SOUND, "rank1.pt.trace.json.gz": gz(SOUND), "rank2.pt.trace.json.gz": bytes(data)})


@case("one_broken_among_many_parallel", 0, "warning", r"skipped .*rank1.*is empty", args=("analyze", "{path}", "--jobs", "2"))
def _(out: Path) -> str:
    """The same with --jobs 2: the error crosses the process boundary (it must pickle) and becomes the same warning."""
    return put_dir(out, "one_broken_among_many_parallel", {"rank0.pt.trace.json": SOUND, "rank1.pt.trace.json": b"", "rank2.pt.trace.json.gz": gz(SOUND)})


@case("control_characters_in_names", 0, "warning", r"skipped .*bad\\nname\\x1b\[31m\.pt\.trace\.json: is empty")
def _(out: Path) -> str:
    """A broken trace whose file name holds a newline and a terminal escape: its warning stays one line, the escape inert."""
    return put_dir(out, "control_characters_in_names", {"trace.json": SOUND, "bad\nname\x1b[31m.pt.trace.json": b""})


@case("control_characters_in_path", 2, "error", r"is empty")
def _(out: Path) -> str:
    """The same file given directly: a one-line error."""
    return put(out, "control\nchars.pt.trace.json", b"")


@case("all_broken", 2, "error", r"none of its 2 trace files could be analyzed")
def _(out: Path) -> str:
    """A directory whose every trace is broken: error saying so, naming the first problem."""
    return put_dir(out, "all_broken", {"rank0.pt.trace.json": b"", "rank1.pt.trace.json": b"{nope"})


@case("symlink_loop_file", 2, "error", r"symbolic link loop")
def _(out: Path) -> str:
    """A trace path that is a symbolic link loop (a → b → a)."""
    os.symlink("symlink_loop_b.pt.trace.json", out / "symlink_loop_file.pt.trace.json")
    os.symlink("symlink_loop_file.pt.trace.json", out / "symlink_loop_b.pt.trace.json")
    return "symlink_loop_file.pt.trace.json"


@case("broken_symlink", 2, "error", r"broken symbolic link")
def _(out: Path) -> str:
    """A trace path that is a link to nothing."""
    os.symlink("nowhere/trace.json", out / "broken_symlink.pt.trace.json")
    return "broken_symlink.pt.trace.json"


@case("directory_with_link_loops", 0, "warning", r"skipped .*symbolic link loop")
def _(out: Path) -> str:
    """A directory linking to itself and holding a looping file link beside a good trace: no endless walk, the good trace analyzed."""
    put(out, "directory_with_link_loops/run/trace.json", SOUND)
    os.symlink("..", out / "directory_with_link_loops/run/parent")
    os.symlink(".", out / "directory_with_link_loops/self")
    os.symlink("loop.pt.trace.json", out / "directory_with_link_loops/loop.pt.trace.json")
    return "directory_with_link_loops"


@case("fifo_as_trace", 2, "error", r"is not a regular file")
def _(out: Path) -> str:
    """A named pipe with a trace's name: refused without opening it (reading would block forever)."""
    os.mkfifo(out / "fifo_as_trace.pt.trace.json")
    return "fifo_as_trace.pt.trace.json"


@case("directory_with_fifo", 0, "warning", r"skipped .*is not a regular file")
def _(out: Path) -> str:
    """A pipe beside a good trace in a directory: skipped with a warning, never opened."""
    put(out, "directory_with_fifo/trace.json", SOUND)
    os.mkfifo(out / "directory_with_fifo/rank1.pt.trace.json")
    return "directory_with_fifo"


@case("unreadable_file", 2, "error", r"cannot be read \(Permission denied\)", needs="non-root")
def _(out: Path) -> str:
    """A trace without read permission (chmod 000). Root reads it anyway; the error path is also tested by monkeypatching."""
    name = put(out, "unreadable_file.pt.trace.json", SOUND)
    os.chmod(out / name, 0)
    return name


@case("unreadable_file_in_directory", 0, "warning", r"skipped .*Permission denied", needs="non-root")
def _(out: Path) -> str:
    """An unreadable trace beside a good one: the good one analyzed, the other a warning."""
    put(out, "unreadable_file_in_directory/trace.json", SOUND)
    put(out, "unreadable_file_in_directory/rank1.pt.trace.json", SOUND)
    os.chmod(out / "unreadable_file_in_directory/rank1.pt.trace.json", 0)
    return "unreadable_file_in_directory"


# ---------------------------------------------------------------- limits


@case("too_large_for_memory", 2, "error", r"too large to analyze here: .* of JSON needs about .* of memory", env={"NTRACE_MEMORY_LIMIT": "4K"})
def _(out: Path) -> str:
    """A trace whose decoding would need more memory than is available (limit lowered to 4 KiB): fails before decoding, naming the sizes."""
    return put(out, "too_large_for_memory.pt.trace.json", SOUND)


@case("gzip_bomb", 2, "error", r"inflate to more than", env={"NTRACE_MEMORY_LIMIT": "64M"})
def _(out: Path) -> str:
    """A 50 KiB gzip that inflates to 48 MiB (limit 64 MiB → at most 16 MiB of JSON): stops at the cap, names the sizes."""
    return put(out, "gzip_bomb.pt.trace.json.gz", gzip.compress(b'{"traceEvents": [' + b" " * (48 << 20) + b"]}", compresslevel=9, mtime=0))


@case("max_events_caps", 0, "warning", r"--max-events 5: analyzed the first 5 of about 19 events", args=("analyze", "{path}", "--max-events", "5"))
def _(out: Path) -> str:
    """--max-events keeps only the first events (the rest is never decoded)."""
    return put(out, "max_events_caps.pt.trace.json", SOUND)


@case("max_events_rescues_large_trace", 0, "warning", r"--max-events 3", args=("analyze", "{path}", "--max-events", "3"), env={"NTRACE_MEMORY_LIMIT": "6K"})
def _(out: Path) -> str:
    """A trace too large to decode whole within the limit is analyzed with --max-events."""
    return put(out, "max_events_rescues_large_trace.pt.trace.json", SOUND)


# ---------------------------------------------------------------- Neuron artifacts (issue 3's checks, run through `ntrace artifacts`)

def _neff(header_size: int = 1024, data_size: int | None = None, payload: bytes = b"") -> bytes:
    """A NEFF-shaped file: a 1024-byte header (u64 package, u64 header_size, u64 data_size, zeros) then `payload`."""
    head = struct.pack("<Q", 1) + struct.pack("<QQ", header_size, len(payload) if data_size is None else data_size)
    return head + bytes(1024 - len(head)) + payload


@case("neff_zero_bytes", 0, "report", r"truncated: 0 bytes", args=("artifacts", "{path}"))
def _(out: Path) -> str:
    """A NEFF of zero bytes (a copy that never started): reported as invalid in the listing."""
    return put_dir(out, "neff_zero_bytes", {"neff_100000000000001_vnc_0.neff": b""})


@case("neff_wrong_header_size", 0, "report", r"header_size is 512", args=("artifacts", "{path}"))
def _(out: Path) -> str:
    """A NEFF whose header says it is 512 bytes long: reported as invalid."""
    return put_dir(out, "neff_wrong_header_size", {"neff_100000000000002_vnc_0.neff": _neff(header_size=512)})


@case("neff_data_size_mismatch", 0, "report", r"data_size says 10240 bytes", args=("artifacts", "{path}"))
def _(out: Path) -> str:
    """A NEFF whose data_size disagrees with the bytes that follow the header: reported as invalid."""
    return put_dir(out, "neff_data_size_mismatch", {"neff_100000000000003_vnc_0.neff": _neff(data_size=10240, payload=bytes(600))})


@case("ntff_unknown_hash", 0, "report", r"NTFF with no NEFF of hash 999999999999999", args=("artifacts", "{path}"))
def _(out: Path) -> str:
    """An NTFF named for a hash no NEFF in the session has: listed as unpaired."""
    return put_dir(out, "ntff_unknown_hash", {"999999999999999_instid_0_vnc_0.ntff": b"NTFF placeholder\n"})


for _name, _pattern in (
    ("neff_zero_bytes", r"neff_100000000000001_vnc_0.neff: truncated: 0 bytes"),
    ("neff_wrong_header_size", r"header_size is 512, expected 1024"),
    ("neff_data_size_mismatch", r"data_size says 10240 bytes but 600 follow the header"),
    ("ntff_unknown_hash", r"NTFF with no NEFF of hash 999999999999999"),
):
    _writer = next(c["write"] for c in CASES if c["name"] == _name)
    case(f"{_name}_analyze", 0, "warning", _pattern, args=("analyze", "{path}"), why=f"`ntrace analyze` on the {_name} session: the problem is a warning")(
        lambda out, w=_writer, n=_name: _copy_case(out, w, n)
    )


def _copy_case(out: Path, write: Callable[[Path], str], name: str) -> str:
    """Write another case's files under OUT/<name>_analyze/ (same content, its own directory)."""
    write(out / f"{name}_analyze")
    return f"{name}_analyze/{name}"


# ---------------------------------------------------------------- hostile names, output names, damaged NEFF headers (issue 20)


def _hostile_events(name: str) -> list[dict[str, Any]]:
    """The sound trace with `name` inside its op and device activity names."""
    return [{**e, "name": e["name"] + name} if e.get("name") in ("aten::mm", "nc_exec_running") else e for e in sound_events()]


@case("event_name_clears_screen", 0, "report", r"aten::mm\\x1b\[2J\\x1b\[H", why="An op named with ESC[2J ESC[H (clear screen, cursor home): shown escaped in the table, never acted on.")
def _(out: Path) -> str:
    return put(out, "event_name_clears_screen.pt.trace.json", doc_bytes(_hostile_events("\x1b[2J\x1b[H")))


@case("event_name_carriage_return", 0, "report", r"aten::mm\\rfake", args=("analyze", "{path}", "--format", "markdown"), why="A carriage return in an op name (it would overwrite the line): escaped in Markdown.")
def _(out: Path) -> str:
    return put(out, "event_name_carriage_return.pt.trace.json", doc_bytes(_hostile_events("\rfake")))


@case("event_name_c1_and_del", 0, "report", r"nc_exec_running\\x9b31m\\x7f", why="C1 CSI (U+009B) and DEL in a device activity name: escaped in the kernel table.")
def _(out: Path) -> str:
    return put(out, "event_name_c1_and_del.pt.trace.json", doc_bytes(_hostile_events("\x9b31m\x7f")))


@case("event_name_escapes_in_json", 0, "report", r'"aten::mm\\u001b\[2J\\r\\u009b"', args=("analyze", "{path}", "--format", "json"), why="The same names in JSON: JSON escapes, DEL and C1 included (orjson leaves those raw).")
def _(out: Path) -> str:
    return put(out, "event_name_escapes_in_json.pt.trace.json", doc_bytes(_hostile_events("\x1b[2J\r\x9b")))


@case("file_name_with_escape_analyzed", 0, "report", r"rank\\x1b\]0;pwned\\x07\\n0\.pt\.trace\.json", why="A sound trace whose file name holds an OSC title escape and a newline: its name is shown escaped in the report.")
def _(out: Path) -> str:
    return put_dir(out, "file_name_with_escape_analyzed", {"rank\x1b]0;pwned\x07\n0.pt.trace.json": SOUND})


@case("file_name_with_escape_converted", 0, "report", r"^wrote .*rank\\x1b\[31m\\n0\.pt\.trace\.json\.parquet$", args=("convert", "{path}", "-o", "{out}"), why="convert prints the Parquet name it wrote escaped, one line.")
def _(out: Path) -> str:
    return put_dir(out, "file_name_with_escape_converted", {"rank\x1b[31m\n0.pt.trace.json": SOUND})


@case("neff_file_name_with_escape", 0, "report", r"neff_1\\x1b\[2J\.neff", args=("artifacts", "{path}"), why="A NEFF whose file name holds ESC[2J: listed escaped.")
def _(out: Path) -> str:
    return put_dir(out, "neff_file_name_with_escape", {"neff_1\x1b[2J.neff": b""})


@case("convert_same_stem_gz_and_plain", 0, "report", r"x\.json\.gz\.parquet", args=("convert", "{path}", "-o", "{out}"), why="x.json and x.json.gz in one folder: two distinct Parquet files (x.json.parquet, x.json.gz.parquet), not one replacing the other.")
def _(out: Path) -> str:
    return put_dir(out, "convert_same_stem_gz_and_plain", {"x.json": SOUND, "x.json.gz": gz(SOUND)})


@case("convert_same_name_two_folders", 0, "report", r"b/trace\.json\.parquet", args=("convert", "{path}", "-o", "{out}"), why="The same file name in two folders: each keeps its relative folder.")
def _(out: Path) -> str:
    return put_dir(out, "convert_same_name_two_folders", {"a/trace.json": SOUND, "b/trace.json": SOUND})


@case("convert_name_near_255_bytes", 0, "report", r"~[0-9a-f]{12}\.parquet", args=("convert", "{path}", "-o", "{out}"), why="A 254-byte trace name: its Parquet name would be 262 bytes, so it is shortened with a hash suffix instead of failing.")
def _(out: Path) -> str:
    return put_dir(out, "convert_name_near_255_bytes", {"r" * 239 + ".pt.trace.json": SOUND})


@case("convert_multibyte_name_near_255_bytes", 0, "report", r"~[0-9a-f]{12}\.parquet", args=("convert", "{path}", "-o", "{out}"), why="A 251-byte name of two-byte characters: shortened at a character boundary.")
def _(out: Path) -> str:
    return put_dir(out, "convert_multibyte_name_near_255_bytes", {"é" * 123 + ".json": SOUND})


def _tar(compress: str) -> bytes:
    """A one-member tar compressed with `compress` ("bz2" or "xz")."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=f"w:{compress}") as tar:
        info = tarfile.TarInfo("sg00/def.json")
        info.size, info.mtime = 2, 0
        tar.addfile(info, io.BytesIO(b"{}"))
    return buf.getvalue()


@case("neff_header_all_ff", 0, "report", r"data_size is 18446744073709551615, beyond int64", args=("artifacts", "{path}"), why="A NEFF header of 0xFF bytes: every u64 is 2**64-1, beyond the int64 columns; reported invalid naming the fields, never a traceback.")
def _(out: Path) -> str:
    return put_dir(out, "neff_header_all_ff", {"neff_100000000000004_vnc_0.neff": b"\xff" * 1024})


@case("neff_data_size_2_63", 0, "report", r"data_size is 9223372036854775808, beyond int64", args=("artifacts", "{path}", "--format", "json"), why="data_size exactly 2**63: invalid, the JSON listing names the field.")
def _(out: Path) -> str:
    return put_dir(out, "neff_data_size_2_63", {"neff_100000000000005_vnc_0.neff": _neff(data_size=1 << 63)})


@case("neff_pkg_version_huge", 0, "warning", r"pkg_version is 18446744073709551615, beyond int64", why="pkg_version 2**64-1 seen by `ntrace analyze`: a warning, the trace analyzed.")
def _(out: Path) -> str:
    head = bytearray(_neff())
    head[0:8] = b"\xff" * 8
    return put_dir(out, "neff_pkg_version_huge", {"trace.json": SOUND, "neff_100000000000006_vnc_0.neff": bytes(head)})


@case("neff_bzip2_tar_not_listed", 0, "report", r"bzip2-compressed tar, not listed", args=("artifacts", "{path}"), why="A NEFF whose payload is a bzip2 tar: not inflated to list it (a 41 KB one can hold a 32 GiB member), said so.")
def _(out: Path) -> str:
    payload = _tar("bz2")
    return put_dir(out, "neff_bzip2_tar_not_listed", {"neff_100000000000007_vnc_0.neff": _neff(payload=payload)})


@case("neff_xz_tar_not_listed", 0, "report", r"xz-compressed tar, not listed", args=("artifacts", "{path}", "--format", "markdown"), why="The same with xz.")
def _(out: Path) -> str:
    return put_dir(out, "neff_xz_tar_not_listed", {"neff_100000000000008_vnc_0.neff": _neff(payload=_tar("xz"))})


@case("neff_name_number_beyond_int64", 0, "report", r"neff_99999999999999999999999_vnc_99999999999999999999\.neff", args=("artifacts", "{path}"), why="NEFF and NTFF names whose numbers exceed int64: listed (the numbers as null), no overflow.")
def _(out: Path) -> str:
    return put_dir(out, "neff_name_number_beyond_int64", {
        "neff_99999999999999999999999_vnc_99999999999999999999.neff": _neff(),
        "99999999999999999999999_instid_99999999999999999999_vnc_0.ntff": b"NTFF\n",
        "profile_rank_99999999999999999999.ntff": b"NTFF\n",
    })


@case("session_pid_beyond_int64", 0, "report", r"99999999999999999999", args=("artifacts", "{path}", "--format", "csv"), why="A session directory whose pid exceeds int64.")
def _(out: Path) -> str:
    return put_dir(out, "session_pid_beyond_int64/i-0abc_pid_99999999999999999999", {"neff_100000000000009_vnc_0.neff": _neff()}).split("/")[0]


# ---------------------------------------------------------------- round two (issue 20): sizes, bombs, numbers, steps, caches, names, formats

GIB = 1 << 30


def put_sparse(out: Path, name: str, head: bytes, size: int) -> str:
    """Write `head` then a hole up to `size` bytes (a sparse file: no disk used, every byte after `head` reads as 0)."""
    path = out / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        fh.write(head)
        fh.truncate(size)
    return name


def _repeated_gzip(chunk: bytes, times: int) -> bytes:
    """`times` gzip members of `chunk`: one gzip stream inflating to len(chunk) * times bytes, built by compressing `chunk` once."""
    return gz(chunk) * times


@case("neff_sparse_10_gib", 0, "report", r"neff_100000000000010_vnc_0\.neff", args=("artifacts", "{path}"), heavy=True)
def _(out: Path) -> str:
    """A 10 GiB sparse NEFF (header, then zeros): only its header and tar headers are read, never the file whole."""
    return put_sparse(out, "neff_sparse_10_gib/neff_100000000000010_vnc_0.neff", _neff(data_size=10 * GIB - 1024), 10 * GIB).split("/")[0]


@case("neff_gzip_tar_member_of_1_gib", 0, "report", r"inflates past 256 MiB while being listed", args=("artifacts", "{path}"))
def _(out: Path) -> str:
    """A NEFF whose gzip tar holds a 1 GiB member of zeros (1 MB of gzip): listing stops at the 256 MiB ceiling, in about a second, and says so."""
    import tarfile

    info = tarfile.TarInfo("sg00/weights.bin")
    info.size, info.mtime = GIB, 0
    member = gz(info.tobuf(format=tarfile.USTAR_FORMAT)) + _repeated_gzip(bytes(16 << 20), 64)
    return put_dir(out, "neff_gzip_tar_member_of_1_gib", {"neff_100000000000011_vnc_0.neff": _neff(payload=member)})


@case("neff_plain_tar_sparse_member", 0, "report", r"neff_100000000000012_vnc_0\.neff", args=("artifacts", "{path}", "--format", "json"), heavy=True)
def _(out: Path) -> str:
    """A NEFF whose plain tar holds an 8 GiB member (sparse): the listing seeks past it, reading 1 KB."""
    import tarfile

    info = tarfile.TarInfo("sg00/weights.bin")
    info.size, info.mtime = 8 * GIB, 0
    head = info.tobuf(format=tarfile.GNU_FORMAT)
    total = 1024 + len(head) + 8 * GIB + 1024
    return put_sparse(out, "neff_plain_tar_sparse_member/neff_100000000000012_vnc_0.neff", _neff(data_size=total - 1024) + head, total).split("/")[0]


@case("gzip_of_20_gib_of_spaces", 2, "error", r"too large to analyze here: its .* of gzip inflate to more than", heavy=True)
def _(out: Path) -> str:
    """A 20 MB gzip of 20 GiB of spaces inside a trace: under a 4 GiB address-space limit inflating stops at the ceiling (a quarter of the room left) with both sizes named."""
    return put(out, "gzip_of_20_gib_of_spaces.pt.trace.json.gz", gz(b'{"traceEvents": [') + _repeated_gzip(b" " * (64 << 20), 320) + gz(b"]}"))


@case("sparse_trace_1_5_gib", 2, "error", r"too large to analyze here: 1\.5 GiB of JSON needs about", heavy=True)
def _(out: Path) -> str:
    """A 1.5 GiB sparse trace (a JSON head, then a hole): refused before decoding, since 4x its size does not fit a 4 GiB address space."""
    return put_sparse(out, "sparse_trace_1_5_gib.pt.trace.json", b'{"traceEvents": [', 3 * GIB // 2)


@case("sparse_trace_all_zeros", 2, "error", r"starts with NUL bytes")
def _(out: Path) -> str:
    """A 1.5 GiB sparse file of zeros named as a trace: refused from its first bytes, whatever the memory."""
    return put_sparse(out, "sparse_trace_all_zeros.pt.trace.json", b"", 3 * GIB // 2)


@case("capture_json_sparse_3_gib", 0, "ok")
def _(out: Path) -> str:
    """A 3 GiB sparse capture.json beside a sound trace: ignored without being read (a manifest is a few KB)."""
    put(out, "capture_json_sparse_3_gib/trace.json", SOUND)
    put_sparse(out, "capture_json_sparse_3_gib/capture.json", b'{"variant": "', 3 * GIB)
    return "capture_json_sparse_3_gib"


@case("capture_json_not_an_object", 0, "ok", why="capture.json holding a list, then one nested 10,000 deep: ignored, the folder's name is the variant.")
def _(out: Path) -> str:
    put(out, "capture_json_not_an_object/a/trace.json", SOUND)
    put(out, "capture_json_not_an_object/a/capture.json", b"[1, 2]")
    put(out, "capture_json_not_an_object/b/trace.json", SOUND)
    put(out, "capture_json_not_an_object/b/capture.json", b"[" * 10_000 + b"]" * 10_000)
    return "capture_json_not_an_object"


@case("json_nested_10000_in_args", 0, "report", r"^13 complete events over")
def _(out: Path) -> str:
    """Valid JSON: one event's args hold a list nested 10,000 deep: analyzed, every event kept. Past the decoders' depth (1,000 at Python's default recursion limit) that value is read as null, with a warning; under a raised limit it is read whole."""
    deep = x("deep", "cpu_op", 5000.0, 1.0)
    deep["args"] = {"v": "@DEEP@"}
    return put(out, "json_nested_10000_in_args.pt.trace.json", doc_bytes([*sound_events(), deep]).replace(b'"@DEEP@"', b"[" * 10_000 + b"]" * 10_000))


@case("ts_plus_dur_overflows_int64", 0, "warning", r"1 complete events end \(ts \+ dur\) beyond what int64 ns hold; they were left out")
def _(out: Path) -> str:
    """ts just under int64's limit in ns and a dur that carries it past: the sum would wrap; the event is dropped with a warning counting it."""
    return put(out, "ts_plus_dur_overflows_int64.pt.trace.json", doc_bytes([*sound_events(), x("wraps", "cpu_op", 9223372036854774.0, 5000.0)]))


@case("window_extremes", 0, "ok", why="Events at ts 0 and near int64's limit (a 292-year window): every command renders it, nothing overflows.")
def _(out: Path) -> str:
    return put(out, "window_extremes.pt.trace.json", doc_bytes([*sound_events(), x("first", "cpu_op", 0.0, 1.0), x("last", "cpu_op", 9223372036854.0, 1.0)]))


@case("durations_sum_past_int64", 0, "warning", r"2 complete events lie so far apart, or last so long, that their sums would pass what int64 ns hold")
def _(out: Path) -> str:
    """Three ops of 146 years each and a short one, on one thread: each fits int64 ns, their sum does not; the longest two are left out with a warning, never summed into a negative total."""
    long = [x(f"long{i}", "cpu_op", 0, 4611686018427387) for i in range(3)]
    return put(out, "durations_sum_past_int64.pt.trace.json", doc_bytes([*long, x("short", "cpu_op", 1, 2)]))


@case("memory_bytes_sum_past_int64", 0, "warning", r"2 allocator records move so many bytes that their sums would pass what int64 holds; they were left out")
def _(out: Path) -> str:
    """Three [memory] allocations of 5e18 bytes: each fits int64, any two do not; the largest two left out with a warning, never a negative total."""
    records = [
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 100, "tid": 100, "ts": 1000.0 + i,
         "args": {"Bytes": 5 * 10**18, "Total Allocated": 0, "Total Reserved": 0, "Device Type": 0, "Device Id": -1}}
        for i in range(3)
    ]  # fmt: skip
    return put(out, "memory_bytes_sum_past_int64.pt.trace.json", doc_bytes([*sound_events(), *records]))


@case("explorer_spans_past_int64", 0, "warning", r"their sums would pass what int64 ns hold",
      why="A Neuron Explorer export whose hardware rows span all of int64 and whose framework rows start at its minimum (found by the explorer fuzz target: `report` divided by a wrapped, negative span): the far rows left out with a warning.")  # fmt: skip
def _(out: Path) -> str:
    import io

    import polars as pl

    big = 2**63 - 1
    rows = {
        "id": [1, 2, 3, 4, 5],
        "name": ["aten::mm", "nrt_execute", "exec", "exec", "far"],
        "start_ts": [1000, 2000, 0, 1, -(2**63)],
        "end_ts": [2000, 3000, big, 10**18, -1],
        "trace_event_source": ["framework", "neuron_rt", "neuron_hw", "neuron_hw", "framework"],
        "nc_idx": [None, 0, 0, 1, None],
    }
    buf = io.BytesIO()
    pl.DataFrame(rows).write_parquet(buf)
    return put(out, "explorer_spans_past_int64.parquet", buf.getvalue())


@case("trace_sums_past_int64", 0, "warning", r"left out of base: with it, sums over base's traces would pass what int64 ns hold", args=("diff", "{path}", "{path}"))
def _(out: Path) -> str:
    """Three traces of one kernel of 107 years each: every trace fits int64 ns, two of them summed do not; diff (and compare) keep the first two sides' sums within int64 and name the trace left out, never a wrapped, negative total."""
    kernel = x("gemm", "kernel", 20, 3_500_000_000_000_000, pid=0, tid=7, device=0, stream=7)
    return put_dir(out, "trace_sums_past_int64", {f"t{i}.pt.trace.json": doc_bytes([x("aten::mm", "cpu_op", 0, 10), kernel]) for i in range(3)})


@case("rank_clocks_past_int64", 0, "warning", r"rank 2: its clock lies further from rank 0's than int64 ns reach", args=("ranks", "{path}"))
def _(out: Path) -> str:
    """Three ranks whose clocks read −4.7e18, 0 and +4.7e18 ns at the same collectives: rank 2's offset from rank 0 passes int64 ns, so it is left out of the matching with a warning instead of printing a wrapped, negative offset."""
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
    files = {}
    for rank, base in enumerate((-4_700_000_000_000_000, 0, 4_700_000_000_000_000)):
        kernels = [x(nccl, "kernel", base + 100 * k, 10, pid=0, tid=7, device=0, stream=7) for k in range(3)]
        files[f"rank{rank}.pt.trace.json"] = doc_bytes(kernels, distributedInfo={"rank": rank, "world_size": 3})
    return put_dir(out, "rank_clocks_past_int64", files)


@case("steps_overlapping", 0, "warning", r"profiler steps start before the previous one ends")
def _(out: Path) -> str:
    """ProfilerStep#1 starts before ProfilerStep#0 ends: a warning, each event counted in the last step started."""
    evs = sound_events()
    evs[1] = x("ProfilerStep#0", "user_annotation", 1000.0, 150.0)
    return put(out, "steps_overlapping.pt.trace.json", doc_bytes(evs))


@case("steps_nested", 0, "warning", r"profiler steps start before the previous one ends")
def _(out: Path) -> str:
    """A ProfilerStep#9 nested inside ProfilerStep#0: a warning, no traceback."""
    return put(out, "steps_nested.pt.trace.json", doc_bytes([*sound_events(), x("ProfilerStep#9", "user_annotation", 1010.0, 20.0)]))


@case("steps_same_number_twice", 0, "ok", why="Two annotations named ProfilerStep#1 (a restarted schedule): both kept as steps.")
def _(out: Path) -> str:
    evs = sound_events()
    evs[-6] = x("ProfilerStep#1", "user_annotation", 1200.0, 90.0)
    return put(out, "steps_same_number_twice.pt.trace.json", doc_bytes(evs))


def _cache_bytes(tweak: Callable[[Any, dict[str, str]], Any]) -> bytes:
    """An ntrace Parquet cache of the sound trace, its events frame and metadata passed through `tweak(frame, metadata)` (which returns the frame)."""
    import io
    import tempfile

    import polars as pl

    from ntrace.io.cache import write_cache
    from ntrace.io.kineto import read_kineto

    with tempfile.TemporaryDirectory() as tmp:
        trace = read_kineto(Path(tmp) / put(Path(tmp), "t.pt.trace.json", SOUND))
        cache = write_cache(trace, Path(tmp) / "t.parquet")
        metadata = pl.read_parquet_metadata(cache)
        frame = tweak(pl.read_parquet(cache), metadata)
    buf = io.BytesIO()
    frame.write_parquet(buf, metadata={k: v for k, v in metadata.items() if k.startswith("ntrace.")})
    return buf.getvalue()


@case("cache_wrong_column_types", 2, "error", r"is not an ntrace events file of this version \(ts is String")
def _(out: Path) -> str:
    """An ntrace Parquet cache whose ts column holds text: refused in one line naming the column."""
    import polars as pl

    return put(out, "cache_wrong_column_types.pt.trace.json.parquet", _cache_bytes(lambda f, m: f.with_columns(pl.col("ts").cast(pl.String))))


@case("cache_unknown_lane", 2, "error", r"damaged ntrace events file")
def _(out: Path) -> str:
    """An ntrace cache whose lane column names a lane ntrace has no such lane: refused, not cast to garbage."""
    import polars as pl

    return put(out, "cache_unknown_lane.pt.trace.json.parquet", _cache_bytes(lambda f, m: f.with_columns(lane=pl.lit("warp_drive"))))


@case("cache_forged_provenance", 2, "error", r"damaged ntrace\.events record")
def _(out: Path) -> str:
    """An ntrace cache whose provenance says meta is a list and warnings a number: refused in one line."""

    return put(out, "cache_forged_provenance.pt.trace.json.parquet", _cache_bytes(_forged_provenance))


def _forged_provenance(frame: Any, metadata: dict[str, str]) -> Any:
    """A _cache_bytes tweak: the provenance of this format's version, with meta a list and warnings a number."""
    version = json.loads(metadata["ntrace.events"])["version"]  # this format's, so only the forged fields are wrong
    metadata["ntrace.events"] = json.dumps({"version": version, "source": "t.json", "meta": [1], "warnings": 7, "variant": None})
    return frame


@case("cache_forged_summary", 0, "ok", why="An ntrace cache whose stored summary is garbage under the right key: recomputed from the events.")
def _(out: Path) -> str:
    def forge(frame: Any, metadata: dict[str, str]) -> Any:
        metadata["ntrace.summary"] = '{"code": "0", "values": 5}'
        return frame

    return put(out, "cache_forged_summary.pt.trace.json.parquet", _cache_bytes(forge))


@case("explorer_extreme_values", 0, "warning", r"end beyond what int64 ns hold", why="A Neuron Explorer export with start_ts at int64's limits, a negative and a huge duration: rows that cannot be held dropped with a warning; report and export render the rest.")
def _(out: Path) -> str:
    import io

    import polars as pl

    big = 2**63 - 1
    rows = {
        "id": [1, 2, 3, 4],
        "name": ["aten::mm", "nrt_execute", "exec", "far"],
        "start_ts": [1000, 2000, 3000, big - 10],
        "end_ts": [2000, 3000, 4000, big],
        "duration_ns": [1000, -5, 1000, 1000],
        "trace_event_source": ["framework", "neuron_rt", "neuron_hw", "neuron_hw"],
    }
    buf = io.BytesIO()
    pl.DataFrame(rows).write_parquet(buf)
    return put(out, "explorer_extreme_values.parquet", buf.getvalue())


@case("explorer_too_many_rows_for_memory", 2, "error", r"too large to read here: 20,000 rows", env={"NTRACE_MEMORY_LIMIT": "64K"})
def _(out: Path) -> str:
    """A Neuron Explorer export of 20,000 rows when 64 KiB of memory is available: refused from its footer's row count, before any row is read."""
    import io

    import polars as pl

    n = 20_000
    buf = io.BytesIO()
    pl.DataFrame({"name": ["k"] * n, "start_ts": list(range(n)), "duration_ns": [1] * n, "trace_event_source": ["neuron_hw"] * n}).write_parquet(buf)
    return put(out, "explorer_too_many_rows_for_memory.parquet", buf.getvalue())


@case("file_name_invalid_utf8", 0, "report", r"r\\xff\\xfe\.pt\.trace\.json", args=("analyze", "{path}", "--format", "csv"), why="A trace whose file name holds bytes that are not UTF-8: analyzed, its name shown with \\xff escapes.")
def _(out: Path) -> str:
    return put_dir(out, "file_name_invalid_utf8", {os.fsdecode(b"r\xff\xfe.pt.trace.json"): SOUND})


@case("file_name_encoded_surrogate", 0, "report", r"s\\\\xed\\\\xa0\\\\x80\.pt\.trace\.json", args=("analyze", "{path}", "--format", "json"), why="A file name holding an encoded lone surrogate (ED A0 80, which Python reads as lone surrogates): analyzed, escaped in the JSON.")
def _(out: Path) -> str:
    return put_dir(out, "file_name_encoded_surrogate", {os.fsdecode(b"s\xed\xa0\x80.pt.trace.json"): SOUND, "b.pt.trace.json": SOUND})


@case("directory_name_invalid_utf8", 0, "report", r"wrote .*run\\xff/t\.pt\.trace\.json\.parquet", args=("convert", "{path}", "-o", "{out}"), why="A folder whose name is not UTF-8: converted (the Parquet file keeps the real name), the printed name escaped.")
def _(out: Path) -> str:
    return put_dir(out, "directory_name_invalid_utf8", {os.fsdecode(b"run\xff/t.pt.trace.json"): SOUND})


@case("neff_name_invalid_utf8", 0, "report", r"neff_1\\\\xff\.neff", args=("artifacts", "{path}", "--format", "json"), why="A NEFF whose file name is not UTF-8: listed with the byte escaped.")
def _(out: Path) -> str:
    return put_dir(out, "neff_name_invalid_utf8", {os.fsdecode(b"neff_1\xff.neff"): _neff(), "trace.json": SOUND})


for _kind, _module, _hint in (("bzip2", "bz2", "bunzip2"), ("xz", "lzma", "unxz")):
    case(f"trace_is_{_kind}", 2, "error", rf"is {_kind}-compressed; decompress it first \({_hint}", why=f"A trace compressed with {_kind} (named .json.gz): refused by its magic bytes, not reported as bad JSON or bad gzip.")(
        lambda out, k=_kind, m=_module: put(out, f"trace_is_{k}.pt.trace.json.gz", __import__(m).compress(SOUND))
    )


@case("trace_is_zstd", 2, "error", r"is zstd-compressed")
def _(out: Path) -> str:
    """A trace that is a zstd frame (magic 28 B5 2F FD; a header-only frame): refused by its magic bytes."""
    return put(out, "trace_is_zstd.pt.trace.json", b"\x28\xb5\x2f\xfd" + bytes(16))


@case("trace_is_zip", 2, "error", r"is a zip archive; extract the trace")
def _(out: Path) -> str:
    """A trace in a zip archive, named .json: refused by its magic bytes."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("trace.json", (1980, 1, 1, 0, 0, 0)), SOUND)
    return put(out, "trace_is_zip.pt.trace.json", buf.getvalue())


@case("trace_is_parquet_named_json", 2, "error", r"is a Parquet file; name it \*\.parquet")
def _(out: Path) -> str:
    """A Parquet file named .json: refused, saying how to read it."""
    return put(out, "trace_is_parquet_named_json.pt.trace.json", b"PAR1" + bytes(64) + b"PAR1")


_FORMULAS = ("=HYPERLINK(\"http://x\",\"y\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)")


@case("csv_formula_injection", 0, "report", r"'=HYPERLINK", args=("diff", "{path}", "{path}", "--format", "csv"), why="Op names starting with = + - @ (spreadsheet formulas): CSV cells start with ' so a spreadsheet shows text, never runs them.")
def _(out: Path) -> str:
    evs = sound_events()
    for i, name in enumerate(_FORMULAS):
        evs.append(x(name, "cpu_op", 2000.0 + 10 * i, 1.0))
    return put(out, "csv_formula_injection.pt.trace.json", doc_bytes(evs))


@case("csv_control_characters", 0, "report", r"aten::mm\\x1b\[31m\\r,", args=("diff", "{path}", "{path}", "--format", "csv"), why="An op name holding ESC[31m and a carriage return: escaped in CSV cells, one row per line.")
def _(out: Path) -> str:
    return put(out, "csv_control_characters.pt.trace.json", doc_bytes(_hostile_events("\x1b[31m\r")))


@case("directory_of_12_tiny_traces", 0, "ok")
def _(out: Path) -> str:
    """12 tiny traces in one folder: every command handles them within the case's time limit (per-file cost paid once per run)."""
    return put_dir(out, "directory_of_12_tiny_traces", {f"rank{i}.pt.trace.json": SOUND for i in range(12)})


@case("ph_beyond_int64", 0, "warning", r"events have a ph the trace format does not define", why="A ph written as the integer -2**63 - 1 (found by the trace fuzz target: the plain decoder's JSON text of it overflowed orjson): kept as text, not analyzed, a warning.")
def _(out: Path) -> str:
    events = sound_events()
    events[2]["ph"] = -(2**63) - 1
    return put(out, "ph_beyond_int64.pt.trace.json", doc_bytes(events))


@case("metadata_numbers_orjson_refuses", 0, "ok", why="deviceProperties holding 1e999 and 2**70 (found by the trace fuzz target: orjson refuses both): read, as null and as text.")
def _(out: Path) -> str:
    text = SOUND.replace(b'"name": "NeuronCore-v2"}', b'"name": "NeuronCore-v2", "totalGlobalMem": 1e999, "clock": ' + str(2**70).encode() + b"}", 1)
    assert text != SOUND
    return put(out, "metadata_numbers_orjson_refuses.pt.trace.json", text)


@case("rank_near_2_62", 0, "warning", r"ranks missing from 0\.\.4611686018427387899: 1, 2, .*, 20, … \(4,611,686,018,427,387,898 in all\)", args=("ranks", "{path}"),
      why="A rank 2**62 - 5 beside rank 0 (the fuzzer's explorer target found report listing every missing rank: 23 GB, then the OOM killer): 20 listed, the rest counted.")
def _(out: Path) -> str:
    far = doc_bytes(sound_events(), distributedInfo={"rank": 2**62 - 5})
    return put_dir(out, "rank_near_2_62", {"rank0.pt.trace.json": SOUND, "far.pt.trace.json": far})


@case("directory_with_cut_trace_compare", 0, "warning", r"is cut off at byte", args=("compare", "{path}"), why="compare on a folder with a trace cut off mid-write: the salvage warning is printed, as analyze prints it.")
def _(out: Path) -> str:
    return put_dir(out, "directory_with_cut_trace_compare", {"a.pt.trace.json": _cut_mid_event(SOUND), "b.pt.trace.json": SOUND})


@case("diff_of_cut_trace_warns", 0, "warning", r"is cut off at byte", args=("diff", "{path}", "{path}"), why="diff of a trace cut off mid-write: warns (it did not, before), numbers from the complete events.")
def _(out: Path) -> str:
    return put(out, "diff_of_cut_trace_warns.pt.trace.json", _cut_mid_event(SOUND))


@case("export_names_skipped_files", 0, "warning", r"skipped .*b\.pt\.trace\.json: is a broken symbolic link", args=("export", "{path}", "--perfetto", "{out}.json"), why="export of a folder with one trace and a broken link named as a trace: exports the trace and says which file it skipped.")
def _(out: Path) -> str:
    name = put_dir(out, "export_names_skipped_files", {"a.pt.trace.json": SOUND})
    os.symlink("gone.json", out / name / "b.pt.trace.json")
    return name


@case("event_names_lone_surrogate_escapes", 0, "warning", r"2 escaped lone surrogates \(in names\?\) were replaced by U\+FFFD",
      why="Event names written as \\udc80 and \\ud800 escapes (lone surrogates, which json.dumps writes and no text can hold): Polars refused them with a traceback; now U+FFFD with a warning.")
def _(out: Path) -> str:
    text = SOUND.replace(b'"aten::mm"', b'"aten::mm\\udc80"', 1).replace(b'"nrt_execute"', b'"nrt\\ud800_execute"', 1)
    assert text.count(b"\\ud") == 2
    return put(out, "event_names_lone_surrogate_escapes.pt.trace.json", text)


@case("metadata_nested_300_deep", 0, "ok", why="distributedInfo nested 300 deep: past orjson's 255-level writer, so storing the summary (convert, the memo) raised a traceback; now written by the stdlib.")
def _(out: Path) -> str:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(300):
        inner["k"] = {}
        inner = inner["k"]
    return put(out, "metadata_nested_300_deep.pt.trace.json", doc_bytes(sound_events(), distributedInfo={"rank": 0, "deep": deep}))


@case("forged_cache_among_many_traces", 0, "warning", r"skipped .*forged\.parquet: has a damaged ntrace\.events record", args=("analyze", "{path}", "-j", "2"),
      why="A forged ntrace Parquet cache among 16 traces, with workers: reading stored summaries before the workers start stopped the whole run (exit 2); now it is one skipped file.")
def _(out: Path) -> str:
    files = {f"rank{i}.pt.trace.json": SOUND for i in range(16)} | {"forged.parquet": _cache_bytes(_forged_provenance)}
    return put_dir(out, "forged_cache_among_many_traces", files)


def write_corpus(out: Path) -> list[dict[str, Any]]:
    """Write every case under `out` (which must not exist or be empty) and its manifest; returns the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for spec in CASES:
        path = spec["write"](out)
        manifest.append({k: v for k, v in spec.items() if k != "write"} | {"path": path})
    (out / "cases.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    cases = write_corpus(Path(sys.argv[1]))
    print(f"{len(cases)} cases written to {sys.argv[1]}")
