#!/usr/bin/env python3
"""Fuzz the analyzer with hypothesis over mutated real traces and fixtures: any exception other than NtraceError is a crash.

    .venv/bin/python scripts/fuzz.py [--target trace|neff|names|explorer|cache|device|all] [--seconds 300] [--seed 0] [--out fuzz_crashes] [SEED_FILE ...]

Seeds default to the real public traces in tests/data/kineto (each cut to its first 400 events,
so one run is fast) and the synthetic fixtures' trace.json files. Each input is a seed mutated
at the byte level (flips, inserted/deleted/duplicated ranges, truncation, gzip wrapping and
truncated gzip) or at the event level (a field set to a value of another JSON type, a huge or
non-finite number, events shuffled or duplicated). It is read by the native parser and by the
msgspec decoder (NTRACE_NATIVE=0), which must give the same events, warnings and metadata (or
the same error); then analyzed, rendered in every format, and every 10th input also runs
through the CLI, where any traceback is a crash.
A crash's minimal input (after hypothesis shrinks it) is written to OUT/crash_<n>.bin.
The other targets (scripts/fuzz_targets.py) draw NEFF headers and tar members, file and
directory names, Explorer and ntrace Parquet files and device-profile tables, and run each
through the CLI commands that read them, in every format; a crash's traceback goes to
OUT/<target>_crash_<n>.txt and its input files to OUT/<target>_crash_<n>_input/. `--target all`
shares the time between every target. Prints the number of inputs tried and crashes found, per target. tests/test_bad_inputs.py runs a short bounded
version (`fuzz(max_examples=...)`) in the default suite.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner
import hypothesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ntrace import analyze
from ntrace.cli import main
from ntrace.errors import NtraceError
from ntrace.io.kineto import read_kineto
from ntrace.render import csv, json as json_render, markdown, text

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / "tests" / "data" / "kineto"
SEED_EVENTS = 400


def default_seeds() -> list[bytes]:
    """The real traces (first SEED_EVENTS events each) and the fixtures' framework traces, as JSON bytes."""
    seeds = []
    for path in sorted(SHARED.glob("*.json.gz")) if SHARED.is_dir() else []:
        seeds.append(_cut(json.loads(gzip.decompress(path.read_bytes()))))
    for path in sorted((REPO / "fixtures").rglob("trace.json")):
        seeds.append(_cut(json.loads(path.read_bytes())))
    return seeds


def _cut(doc: Any) -> bytes:
    """The document with at most SEED_EVENTS events, laid out one event per line as Kineto writes."""
    if isinstance(doc, dict):
        doc = {**doc, "traceEvents": doc.get("traceEvents", [])[:SEED_EVENTS]}
    return json.dumps(doc, indent=1).encode()


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.sampled_from(["a", "correlation", "External id"]), st.integers(-3, 3), max_size=2),
    st.sampled_from(["X", "s", "f", "M", "B", "E", "i", "", "1e400", "NaN", "-0", " 12 "]),
)
FIELDS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "bp", "args"]
ARG_FIELDS = ["External id", "correlation", "stream", "device", "Sequence number", "Input Dims"]


@st.composite
def event_mutation(draw: st.DrawFn, seed: bytes) -> bytes:
    """The seed with some events' fields replaced by values of any JSON type, then events duplicated, dropped or shuffled."""
    doc = json.loads(seed)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    if not events:
        return seed
    for _ in range(draw(st.integers(1, 6))):
        ev = events[draw(st.integers(0, len(events) - 1))]
        if not isinstance(ev, dict):
            continue
        if draw(st.booleans()) or not isinstance(ev.get("args"), dict):
            ev[draw(st.sampled_from(FIELDS))] = draw(JSON_VALUES)
        else:
            ev["args"][draw(st.sampled_from(ARG_FIELDS))] = draw(JSON_VALUES)
    action = draw(st.sampled_from(["none", "duplicate", "drop", "shuffle", "reverse"]))
    if action == "duplicate":
        events.extend(events[: draw(st.integers(1, len(events)))])
    elif action == "drop":
        del events[draw(st.integers(0, len(events) - 1)) :]
    elif action == "shuffle":
        draw(st.randoms(use_true_random=False)).shuffle(events)
    elif action == "reverse":
        events.reverse()
    return json.dumps(doc, allow_nan=True).encode()


@st.composite
def byte_mutation(draw: st.DrawFn, seed: bytes) -> bytes:
    """The seed with bytes flipped, inserted, deleted or duplicated, and perhaps truncated."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "insert", "delete", "duplicate", "token"]))
        if op == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif op == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 256))]
        else:
            data[at:at] = draw(st.sampled_from([b"NaN", b"Infinity", b"-1e999", b"99999999999999999999999", b"\xff\xfe", b"\\udc80", b"\\ud800", b"\x00", b'"', b"}", b"]", b"{", b"["]))
    if draw(st.booleans()):
        del data[draw(st.integers(0, len(data))) :]
    return bytes(data)


@st.composite
def inputs(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """One fuzz input: a seed mutated, maybe gzipped, maybe with the gzip stream truncated."""
    seed = draw(st.sampled_from(seeds))
    data = draw(st.one_of(event_mutation(seed), byte_mutation(seed)))
    wrap = draw(st.sampled_from(["plain", "plain", "gzip", "gzip_cut", "bom"]))
    if wrap == "gzip":
        data = gzip.compress(data, mtime=0)
    elif wrap == "gzip_cut":
        zipped = gzip.compress(data, mtime=0)
        data = zipped[: draw(st.integers(0, len(zipped)))]
    elif wrap == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


@dataclass
class Stats:
    """What a fuzz run did: inputs tried, inputs ntrace refused with an NtraceError, crashes (minimal inputs and tracebacks)."""

    tried: int = 0
    refused: int = 0
    crashes: list[tuple[bytes, str]] = field(default_factory=list)


def decoders_disagree(path: Path) -> str | None:
    """Where the native parser and the msgspec decoder (NTRACE_NATIVE=0) read `path` differently (events, warnings, metadata or error), or None."""
    outcomes: list[Any] = []
    before = os.environ.get("NTRACE_NATIVE")
    try:
        for native in ("1", "0"):
            os.environ["NTRACE_NATIVE"] = native
            try:
                trace = read_kineto(path)
                outcomes.append((trace.events, trace.warnings, trace.meta))
            except NtraceError as exc:
                outcomes.append(str(exc))
    finally:
        os.environ.pop("NTRACE_NATIVE", None) if before is None else os.environ.__setitem__("NTRACE_NATIVE", before)
    native, windowed = outcomes
    if isinstance(native, str) or isinstance(windowed, str):
        return None if native == windowed else f"decoders disagree: native {native!r:.300}, msgspec {windowed!r:.300}"
    if native[0].equals(windowed[0]) and native[1:] == windowed[1:]:
        return None
    return f"decoders disagree: native {native[0]!r:.1500} {native[1]!r:.300}, msgspec {windowed[0]!r:.1500} {windowed[1]!r:.300}"


def run_one(data: bytes, directory: Path, cli: bool) -> str | None:
    """Analyze `data` as a trace file and render it in every format; the traceback of a crash (or of the two decoders disagreeing), or None."""
    path = directory / "trace.json"
    path.write_bytes(data)
    try:
        if disagreement := decoders_disagree(path):
            return disagreement
        result = analyze(path)
        for renderer in (json_render, text, csv, markdown):
            renderer.analysis(result)
    except NtraceError:
        return ""
    except Exception:  # noqa: BLE001 - finding these is the point
        return traceback.format_exc()
    if cli:
        got = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", "-q"])
        if got.exception is not None and not isinstance(got.exception, SystemExit):
            return "".join(traceback.format_exception(got.exception))
        if "Traceback" in got.output or got.exit_code not in (0, 2):
            return f"CLI exit {got.exit_code}: {got.output[-2000:]}"
    return None


def fuzz(seeds: list[bytes], max_examples: int, stats: Stats, seed: int = 0) -> None:
    """Run hypothesis for `max_examples` inputs from random seed `seed`, counting into `stats`; a crash is recorded (its minimal input), not raised."""
    last: list[tuple[bytes, str]] = []

    @hypothesis.seed(seed)
    @settings(max_examples=max_examples, deadline=None, database=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])
    @given(inputs(seeds))
    def check(data: bytes) -> None:
        stats.tried += 1
        with tempfile.TemporaryDirectory() as tmp:
            crash = run_one(data, Path(tmp), cli=stats.tried % 10 == 0)
        if crash == "":
            stats.refused += 1
        elif crash:
            last.append((data, crash))
            raise AssertionError(crash)

    try:
        check()
    except AssertionError:
        stats.crashes.append(last[-1])


def run_target_input(write: Any, keep: Path | None = None) -> str | None:
    """Write one input of a non-trace target and run its commands through the CLI; the crash it causes, or None. The input of a crash is copied to `keep`, so it can be run again."""
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "in"
        where.mkdir()
        try:
            path, commands = write(where)
        except NtraceError:
            return None  # the writer itself read the input through ntrace (the cache target): refusing it is fine
        for command in commands:
            args = [a.replace("{path}", str(path)) for a in command]
            got = CliRunner().invoke(main, args)
            crash = None
            if got.exception is not None and not isinstance(got.exception, SystemExit):
                crash = f"ntrace {' '.join(args)}\n" + "".join(traceback.format_exception(got.exception))
            elif "Traceback" in got.output or got.exit_code not in (0, 1, 2):
                crash = f"ntrace {' '.join(args)}: exit {got.exit_code}: {got.output[-2000:]}"
            if crash:
                if keep is not None:
                    shutil.copytree(where, keep, symlinks=True, dirs_exist_ok=True)
                    crash = f"input kept in {keep} (it stood at {where})\n{crash}"
                return crash
    return None


def fuzz_target(target: str, max_examples: int, stats: Stats, seed: int = 0, out: Path | None = None) -> None:
    """Run hypothesis for `max_examples` inputs of a scripts/fuzz_targets.py target, counting into `stats`; a crash is recorded, not raised, its input kept under `out`."""
    from fuzz_targets import TARGETS

    last: list[tuple[bytes, str]] = []

    @hypothesis.seed(seed)
    @settings(max_examples=max_examples, deadline=None, database=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(TARGETS[target]())
    def check(write: Any) -> None:
        stats.tried += 1
        crash = run_target_input(write, None if out is None else out / f"{target}_crash_{len(stats.crashes)}_input")
        if crash:
            last.append((repr(write).encode(), crash))
            raise AssertionError(crash)

    try:
        check()
    except AssertionError:
        stats.crashes.append(last[-1])


def main_cli() -> None:
    os.environ.setdefault("NTRACE_CACHE", "0")  # every input analyzed, and thousands of them not left in the user's summary memo
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="*", type=Path, help="seed trace files (default: tests/data/kineto and fixtures)")
    parser.add_argument("--seconds", type=float, default=300, help="keep fuzzing for this long (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="first hypothesis seed; batch i uses seed + i (default 0)")
    parser.add_argument("--out", type=Path, default=Path("fuzz_crashes"), help="where minimal crashing inputs are written")
    parser.add_argument("--target", default="trace", help="trace (default), neff, names, explorer, cache, device, sets, or all")
    args = parser.parse_args()
    if args.target != "trace":
        sys.path.insert(0, str(Path(__file__).parent))
        from fuzz_targets import TARGETS

        targets = list(TARGETS) if args.target == "all" else [args.target]
        failed = False
        for target in targets:
            stats, start, batch = Stats(), time.monotonic(), 0
            while time.monotonic() - start < args.seconds / len(targets):
                fuzz_target(target, 20, stats, seed=args.seed + batch, out=args.out)
                batch += 1
            for i, (data, crash) in enumerate(stats.crashes):
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / f"{target}_crash_{i}.txt").write_text(crash)
            print(f"target {target}: {stats.tried} inputs in {time.monotonic() - start:.0f}s, {len(stats.crashes)} crashes", flush=True)
            failed = failed or bool(stats.crashes)
        sys.exit(1 if failed else 0)
    seeds = [_cut(json.loads(gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b)) for b in (p.read_bytes() for p in args.seeds)] or default_seeds()
    stats = Stats()
    start = time.monotonic()
    batch = 0
    while time.monotonic() - start < args.seconds:
        fuzz(seeds, 200, stats, seed=args.seed + batch)
        batch += 1
        print(f"{time.monotonic() - start:7.1f}s  tried {stats.tried}  refused {stats.refused}  crashes {len(stats.crashes)}", flush=True)
        for i, (data, crash) in enumerate(stats.crashes):  # written as found, so a killed run keeps them
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"crash_{i}.bin").write_bytes(data)
            (args.out / f"crash_{i}.txt").write_text(crash)
    print(f"fuzzed {stats.tried} inputs from {len(seeds)} seeds in {time.monotonic() - start:.0f}s: {stats.refused} refused with an NtraceError, {len(stats.crashes)} crashes")
    sys.exit(1 if stats.crashes else 0)


if __name__ == "__main__":
    main_cli()
