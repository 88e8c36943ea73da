#!/usr/bin/env python3
"""Benchmark `ntrace analyze` against the bare orjson floor and HolisticTraceAnalysis, as whole processes, interleaved.

Every figure is a ratio against the floor measured in the same run: a bare Python process that
reads the file (gunzipping it when gzip) and `orjson.loads` it. Each tool runs as its own
process, rounds interleaved (floor, ntrace, Parquet re-analysis, HTA, floor, …); medians are
reported with peak RSS from the OS (`os.wait4`'s rusage: the largest of that child and the
decoding helper it may fork, ntrace.io.kineto._fork; the child is forked from a small launcher,
since a child's ru_maxrss starts from its parent's, which is the benchmark's own peak when
subprocess vforks it), and, sampled in a separate run, the peak of their
summed proportional set size (PSS: shared pages split between them), which is what the machine
gives the two together. ntrace's bytecode is compiled first and the children may use it, as for
any installed package. "no decoding helper" runs with NTRACE_FORK=0, "msgspec decoder" with
NTRACE_NATIVE=0 (the decoder the native parser replaced, for a before/after in one run); "start-up" only imports
the CLI, the cost every ntrace process pays before reading anything. "Parquet" is `ntrace
analyze` on the `ntrace convert` output, reusing the analysis stored there; "Parquet --recompute"
recomputes every number from the stored events.

    scripts/bench.py TRACE [TRACE…]              # real traces
    scripts/bench.py --events 330000             # a synthetic trace (scripts/synth_trace.py) under --workdir
    scripts/bench.py --events 100000 --scaling   # 1x, 2x, 4x, 8x events: time and RSS growth per doubling
    scripts/bench.py --events 100000 --ranks 4   # a 4-rank directory: --jobs 1 vs --jobs 2, and a directory per rank
    scripts/bench.py --tiles 35,90,350,1000      # every real trace tiled (scripts/tile_trace.py) + synthetic: one table
    scripts/bench.py --ranks-dataset 256 --rank-mb 50   # convert --by-rank of 256 synthetic ranks, then ranks on the dataset
    HTA_PYTHON=/tmp/hta-venv/bin/python scripts/bench.py …   # or --hta-python: adds HolisticTraceAnalysis

HTA is never a dependency of ntrace: it runs from its own interpreter when one is given.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

FLOOR = (
    "import gzip, sys, orjson\n"
    "data = open(sys.argv[1], 'rb').read()\n"
    "orjson.loads(gzip.decompress(data) if data[:2] == b'\\x1f\\x8b' else data)\n"
)

LOAD = "import sys\nfrom ntrace import load\nload(sys.argv[1])\n"

STARTUP = "import ntrace.cli\n"

HTA = (
    "import logging, sys\n"
    "logging.disable(logging.CRITICAL)\n"
    "from hta.trace_analysis import TraceAnalysis\n"
    "TraceAnalysis(trace_dir=sys.argv[1]).get_temporal_breakdown(visualize=False)\n"
)


@dataclass
class Run:
    """One process run: wall seconds, CPU seconds (user + system, steadier on a busy machine) and peak RSS in MiB."""

    seconds: float
    rss_mib: float
    cpu: float = 0.0
    pss_mib: float | None = None  # peak PSS of the process and its helper together, where sampled


#: The children's environment: bytecode written and read, as for an installed package (pip compiles it at install;
#: a PYTHONDONTWRITEBYTECODE=1 environment would otherwise recompile ntrace's modules in every process, ~40 ms).
#: The summary memo off (NTRACE_CACHE=0): every round analyzes the trace, none reads what an earlier round remembered.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "NTRACE_CACHE": "0"}


def compile_ntrace() -> None:
    """Compile ntrace's bytecode once, as installing it does, so no measured process pays for it."""
    import compileall
    import ntrace

    compileall.compile_dir(Path(ntrace.__file__).parent, quiet=1)


#: Runs argv[2:] and writes its wall seconds, peak RSS (KiB) and CPU seconds to the pipe whose fd is argv[1]. A child's ru_maxrss starts from
#: the RSS of the process it was forked from (its peak, when forked with vfork, as subprocess and posix_spawn do), so the
#: measured command is forked from this small, fresh process, never from the benchmark, which grows as it reads tiles.
LAUNCH = (
    "import os, sys, time\n"
    "start = time.perf_counter()\n"
    "out = int(sys.argv[1])\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.close(out)\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "seconds = time.perf_counter() - start\n"
    "os.write(out, f'{seconds} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}'.encode())\n"
    "sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)\n"
)


def run(cmd: list[str]) -> Run:
    """Run `cmd` to completion with output discarded; its wall time, CPU time and its own peak RSS (with its decoding helper's, the larger), forked from LAUNCH."""
    read, write = os.pipe()
    proc = subprocess.Popen([PY, "-c", LAUNCH, str(write), *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, pass_fds=(write,))
    os.close(write)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.wait()
    with os.fdopen(read, "rb") as fh:
        figures = fh.read().split()
    if proc.returncode != 0 or len(figures) != 3:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-2000:]}")
    seconds, rss_kib, cpu = float(figures[0]), int(figures[1]), float(figures[2])
    return Run(seconds, rss_kib / 1024, cpu)


def json_size(path: Path) -> int:
    """Uncompressed JSON bytes of a trace."""
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as fh:
            return sum(len(b) for b in iter(lambda: fh.read(1 << 24), b""))
    return path.stat().st_size


def synth(events: int, workdir: Path, name: str | None = None, seed: int = 0) -> Path:
    """A synthetic trace of `events` events (reused when already written)."""
    out = workdir / (name or f"synth_{events}.json")
    if not out.exists():
        subprocess.run([PY, str(ROOT / "scripts" / "synth_trace.py"), str(out), "--events", str(events), "--seed", str(seed)], check=True)
    return out


def ntrace(*args: str) -> list[str]:
    return [PY, "-m", "ntrace", *args]


def medians(samples: dict[str, list[Run]]) -> dict[str, Run]:
    return {
        k: Run(statistics.median(r.seconds for r in v), max(r.rss_mib for r in v), statistics.median(r.cpu for r in v))
        for k, v in samples.items()
        if v
    }


def bench_trace(trace: Path, workdir: Path, repeat: int, hta_python: str | None, plain: bool = True) -> dict[str, Run]:
    """Floor, ntrace (fast, and plain unless `plain` is false), Parquet re-analysis and HTA on one trace, `repeat` interleaved rounds."""
    cache = workdir / "parquet" / trace.name
    subprocess.run(ntrace("convert", str(trace), "-o", str(cache)), check=True, stdout=subprocess.DEVNULL)
    parquet = next(cache.rglob("*.parquet"))
    hta_dir = workdir / "hta" / trace.name
    if hta_python:
        hta_dir.mkdir(parents=True, exist_ok=True)
        link = hta_dir / trace.name
        if not link.exists():
            link.symlink_to(trace.resolve())
    cmds = {
        "floor (orjson.loads)": [PY, "-c", FLOOR, str(trace)],
        "ntrace analyze": ntrace("analyze", "--format", "json", "-q", str(trace)),
        "ntrace analyze, no decoding helper": ["env", "NTRACE_FORK=0", *ntrace("analyze", "--format", "json", "-q", str(trace))],
        "ntrace start-up (import only)": [PY, "-c", STARTUP],
        "ntrace load (decode + lanes only)": [PY, "-c", LOAD, str(trace)],
        "ntrace analyze --plain": ntrace("analyze", "--format", "json", "-q", "--plain", str(trace)),
        "ntrace analyze (Parquet)": ntrace("analyze", "--format", "json", "-q", str(parquet)),
        "ntrace analyze (Parquet --recompute)": ntrace("analyze", "--format", "json", "-q", "--recompute", str(parquet)),
    }
    if not plain:
        del cmds["ntrace analyze --plain"]
    if hta_python:
        cmds["HTA load + temporal breakdown"] = [hta_python, "-c", HTA, str(hta_dir)]
    samples: dict[str, list[Run]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for name, cmd in cmds.items():
            samples[name].append(run(cmd))
    result = medians(samples)
    result["ntrace analyze"].pss_mib = tree_pss(cmds["ntrace analyze"])
    return result


def tree_pss(cmd: list[str]) -> float:
    """Peak summed PSS (MiB) of `cmd`'s process and its children, sampled every 2 ms in a run of its own."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    peak = 0
    while proc.poll() is None:
        pids = [proc.pid]
        with contextlib.suppress(OSError):
            pids += [int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        peak = max(peak, sum(_pss_kib(pid) for pid in pids))
        time.sleep(0.002)
    return peak / 1024


def _pss_kib(pid: int) -> int:
    """A process's proportional set size in KiB (0 once it is gone)."""
    with contextlib.suppress(OSError, StopIteration):
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
        return int(next(line for line in rollup if line.startswith("Pss:")).split()[1])
    return 0


def report_trace(trace: Path, result: dict[str, Run]) -> None:
    size = json_size(trace) / 2**20
    floor = result["floor (orjson.loads)"]
    print(f"\n{trace} — {size:.1f} MiB JSON")
    print(f"{'process':34s} {'median s':>9s} {'÷ floor':>8s} {'cpu s':>7s} {'÷ floor':>8s} {'peak MiB':>9s} {'RSS ÷ JSON':>10s}")
    for name, r in result.items():
        print(
            f"{name:34s} {r.seconds:9.2f} {r.seconds / floor.seconds:8.2f} {r.cpu:7.2f} {r.cpu / floor.cpu:8.2f}"
            f" {r.rss_mib:9.0f} {r.rss_mib / size:10.2f}"
        )
    fast = result["ntrace analyze"]
    stored, recomputed = result["ntrace analyze (Parquet)"], result["ntrace analyze (Parquet --recompute)"]
    print(f"ntrace analyze with its decoding helper: peak PSS of both together {fast.pss_mib:.0f} MiB = {fast.pss_mib / size:.2f}x the JSON")
    print(f"Parquet re-analysis speedup over JSON: {fast.seconds / stored.seconds:.1f}x (stored analysis),"
          f" {fast.seconds / recomputed.seconds:.1f}x (recomputed from the stored events)")
    start = result["ntrace start-up (import only)"].seconds
    print(f"  beyond start-up ({start:.2f} s): {(fast.seconds - start) / max(stored.seconds - start, 1e-3):.1f}x (stored),"
          f" {(fast.seconds - start) / (recomputed.seconds - start):.1f}x (recomputed)")
    if "HTA load + temporal breakdown" in result:
        print(f"ntrace speedup over HTA: {result['HTA load + temporal breakdown'].seconds / fast.seconds:.1f}x")


def bench_scaling(events: int, workdir: Path, repeat: int) -> None:
    """ntrace and the floor at 1x, 2x, 4x, 8x events; the growth factor of each doubling."""
    print(f"\nScaling from {events} events (median of {repeat})")
    print(f"{'events':>9s} {'MiB':>7s} {'floor s':>8s} {'ntrace s':>9s} {'÷ floor':>8s} {'growth':>7s} {'cpu s':>6s} {'cpu growth':>10s} {'peak MiB':>9s} {'RSS ÷ JSON':>10s}")
    previous = previous_cpu = None
    for factor in (1, 2, 4, 8):
        trace = synth(events * factor, workdir)
        floor, ours = [], []
        for _ in range(repeat):
            floor.append(run([PY, "-c", FLOOR, str(trace)]))
            ours.append(run(ntrace("analyze", "--format", "json", "-q", str(trace))))
        f, o = medians({"f": floor, "o": ours}).values()
        size = trace.stat().st_size / 2**20
        growth = f"{o.seconds / previous:.2f}x" if previous else "-"
        cpu_growth = f"{o.cpu / previous_cpu:.2f}x" if previous_cpu else "-"
        print(
            f"{events * factor:9d} {size:7.1f} {f.seconds:8.2f} {o.seconds:9.2f} {o.seconds / f.seconds:8.2f} {growth:>7s}"
            f" {o.cpu:6.2f} {cpu_growth:>10s} {o.rss_mib:9.0f} {o.rss_mib / size:10.2f}"
        )
        previous, previous_cpu = o.seconds, o.cpu


def bench_ranks(events: int, ranks: int, workdir: Path, repeat: int) -> None:
    """A directory of `ranks` traces analyzed with --jobs 1 and --jobs N (N = cores, at most ranks), and the same traces one per directory (as a job writing a directory per rank lays them out) with --jobs N."""
    folder = workdir / f"ranks_{ranks}x{events}"
    nested = workdir / f"ranks_{ranks}x{events}_dirs"
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        trace = synth(events, folder, f"rank_{rank}.pt.trace.json", seed=rank)
        (nested / f"rank_{rank}").mkdir(parents=True, exist_ok=True)
        if not (copy := nested / f"rank_{rank}" / trace.name).exists():
            os.link(trace, copy)
    jobs = min(ranks, os.cpu_count() or 1)
    layouts = {"--jobs 1": folder, f"--jobs {jobs}": folder, "a directory per rank": nested}
    samples: dict[str, list[Run]] = {name: [] for name in layouts}
    for _ in range(repeat):
        for name, where in layouts.items():
            flags = ["--jobs", "1"] if name == "--jobs 1" else ["--jobs", str(jobs)]
            samples[name].append(run(ntrace("analyze", "--format", "json", "-q", *flags, str(where))))
    result = medians(samples)
    one, many, spread = result["--jobs 1"].seconds, result[f"--jobs {jobs}"].seconds, result["a directory per rank"].seconds
    print(f"\n{ranks} traces of {events} events: --jobs 1 {one:.2f} s, --jobs {jobs} {many:.2f} s ({one / many:.2f}x faster)")
    print(f"  one per directory, --jobs {jobs}: {spread:.2f} s ({spread / many:.2f}x the one directory)")


#: Bytes of JSON per synthetic event (scripts/synth_trace.py), to size a synthetic trace like a tile.
SYNTH_BYTES_PER_EVENT = 299


@dataclass
class Tile:
    """One benchmarked file of the tile table: its source, size, events and measurements."""

    source: str
    path: Path
    events: int
    repeat: int
    size_mib: float = 0.0
    floor: Run | None = None
    ours: Run | None = None
    hta: Run | None = None
    hta_note: str = ""
    msgspec: Run | None = None  # ntrace with the native parser off (NTRACE_NATIVE=0): the decoder it replaced


def make_tile(source: Path, mb: int, workdir: Path) -> tuple[Path, int]:
    """`source` tiled (scripts/tile_trace.py) to about `mb` MB of JSON under workdir (reused when there); the tile and its event count."""
    out = workdir / "tiles" / f"{source.name.split('.')[0]}_{mb}MB.json"
    counted = out.with_suffix(".events")
    if not out.exists() or not counted.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([PY, str(ROOT / "scripts" / "tile_trace.py"), str(source), str(out), "--size", f"{mb}MB"],
                              check=True, capture_output=True, text=True, env=ENV).stdout
        counted.write_text(re.search(r"= ([\d,]+) events", done).group(1).replace(",", ""))  # type: ignore[union-attr]
    return out, int(counted.read_text())


def count_events(path: Path) -> int:
    """The number of events in a trace's traceEvents (a synthetic one, whose generator rounds up to whole steps)."""
    import orjson

    return len(orjson.loads(path.read_bytes())["traceEvents"])


def bench_tiles(sizes: list[int], sources: list[Path], workdir: Path, hta_python: str | None, large_only: list[str],
                hta_max_mb: int, repeat_small: int, repeat_large: int, synthetic: bool, hta_runs: int,
                hta_only: list[str] | None = None) -> list[Tile]:
    """Floor, `ntrace analyze --format json` and HTA on tiles of every source at every size (MB), rounds interleaved per tile.

    Tiles above 90 MB are run `repeat_large` times (else `repeat_small`), and only for sources whose
    name holds one of `large_only` when that is given; HTA only up to `hta_max_mb`, in the first
    `hta_runs` rounds, and only on sources whose name holds one of `hta_only` when given. A source whose tile at a size is the one it had at a smaller size (one
    copy is already larger) is not measured again. A tile is made,
    measured and deleted before the next, so the disk holds one tile at a time.
    """
    tiles: list[Tile] = []
    seen: set[tuple[str, int]] = set()
    for mb in sizes:
        picked = sources if mb <= 90 or not large_only else [s for s in sources if any(k in s.name for k in large_only)]
        jobs: list[tuple[str, Path | None]] = [(s.name.split(".")[0], s) for s in picked]
        if synthetic:
            jobs.append(("synthetic (scripts/synth_trace.py)", None))
        for name, source in jobs:
            if source is None:
                path = workdir / f"synth_{mb}MB.json"
                if not path.exists():
                    subprocess.run([PY, str(ROOT / "scripts" / "synth_trace.py"), str(path), "--events", str(mb * 10**6 // SYNTH_BYTES_PER_EVENT)],
                                   check=True, stdout=subprocess.DEVNULL)
                events = count_events(path)
            else:
                path, events = make_tile(source, mb, workdir)
                if (name, events) in seen:
                    continue
                seen.add((name, events))
            size = json_size(path) / 2**20
            tile = Tile(name, path, events, repeat_small if mb <= 90 else repeat_large, size)
            chosen = not hta_only or any(k in name for k in hta_only)
            hta = bool(hta_python) and chosen and size * 2**20 / 10**6 <= hta_max_mb * 1.05
            tile.hta_note = "" if hta else ("not run: no --hta-python" if not hta_python else "not run (time)" if not chosen else f"not run above {hta_max_mb} MB")
            cmds = {"floor": [PY, "-c", FLOOR, str(path)], "ours": ntrace("analyze", "--format", "json", "-q", str(path)),
                    "msgspec": ["env", "NTRACE_NATIVE=0", *ntrace("analyze", "--format", "json", "-q", str(path))]}
            if hta:
                hta_dir = workdir / "hta" / path.stem
                hta_dir.mkdir(parents=True, exist_ok=True)
                link = hta_dir / path.name
                if not link.exists():
                    link.symlink_to(path.resolve())
                cmds["hta"] = [hta_python, "-c", HTA, str(hta_dir)]  # type: ignore[list-item]
            samples: dict[str, list[Run]] = {k: [] for k in cmds}
            for round_ in range(tile.repeat):
                for key, cmd in cmds.items():
                    if key == "hta" and round_ >= hta_runs:
                        continue
                    try:
                        samples[key].append(run(cmd))
                    except SystemExit as failed:
                        if key != "hta":
                            raise
                        tile.hta_note = "fails: " + str(failed).strip().splitlines()[-1][:60]
                        cmds = {k: v for k, v in cmds.items() if k != "hta"}
                        break
            result = medians({k: v for k, v in samples.items() if k in cmds})
            tile.floor, tile.ours, tile.hta, tile.msgspec = result["floor"], result["ours"], result.get("hta"), result["msgspec"]
            print(f"  {name} {size:.1f} MiB, {events:,} events, {tile.repeat} runs: floor {tile.floor.seconds:.2f} s, ntrace {tile.ours.seconds:.2f} s"
                  f" ({tile.ours.seconds / tile.floor.seconds:.2f}x; cpu {tile.floor.cpu:.2f} / {tile.ours.cpu:.2f} s = {tile.ours.cpu / tile.floor.cpu:.2f}x), {tile.ours.rss_mib:.0f} MiB ({tile.ours.rss_mib / size:.2f}x)"
                  + (f", HTA {tile.hta.seconds:.2f} s ({tile.hta.seconds / tile.ours.seconds:.1f}x; cpu {tile.hta.cpu / tile.ours.cpu:.1f}x)" if tile.hta else f", HTA {tile.hta_note}"),
                  file=sys.stderr, flush=True)
            tiles.append(tile)
            if source is not None and mb > 90:
                path.unlink()
    return tiles


def report_tiles(tiles: list[Tile]) -> None:
    """The tile table (Markdown): times, ratios, peak RSS / JSON size and the time growth per doubling of size against the same source's previous tile."""
    print("\n| trace | JSON MiB | events | runs | floor s | ntrace s | ÷ floor | CPU ÷ floor's | msgspec decoder ÷ floor | HTA s | ntrace faster than HTA (CPU) | peak RSS MiB | RSS ÷ JSON | time growth per doubling |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    previous: dict[str, tuple[float, float]] = {}
    for t in sorted(tiles, key=lambda t: (t.source.startswith("synthetic"), t.source, t.size_mib)):
        assert t.floor and t.ours and t.msgspec
        size = t.size_mib
        growth = "-"
        if t.source in previous:
            last_size, last_s = previous[t.source]
            doublings = math.log2(size / last_size)
            if doublings > 0.5:
                growth = f"{(t.ours.seconds / last_s) ** (1 / doublings):.2f}×"
        previous[t.source] = (size, t.ours.seconds)
        hta = f"{t.hta.seconds:.2f}" if t.hta else t.hta_note
        faster = f"{t.hta.seconds / t.ours.seconds:.1f}× ({t.hta.cpu / t.ours.cpu:.1f}×)" if t.hta else "-"
        print(f"| {t.source} | {size:.1f} | {t.events:,} | {t.repeat} | {t.floor.seconds:.2f} | {t.ours.seconds:.2f} |"
              f" {t.ours.seconds / t.floor.seconds:.2f}× | {t.ours.cpu / t.floor.cpu:.2f}× | {t.msgspec.seconds / t.floor.seconds:.2f}× | {hta} | {faster} | {t.ours.rss_mib:.0f} | {t.ours.rss_mib / size:.2f}× | {growth} |")


def bench_startup(repeat: int) -> None:
    """Python alone, `import polars`, `import ntrace` and `import ntrace.cli` (what every CLI run pays before reading a byte), medians."""
    cmds = {
        "python -c pass": [PY, "-c", "pass"],
        "import polars": [PY, "-c", "import polars"],
        "import ntrace": [PY, "-c", "import ntrace"],
        "import ntrace.cli": [PY, "-c", STARTUP],
        "ntrace --help": ntrace("--help"),
    }
    samples: dict[str, list[Run]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for key, cmd in cmds.items():
            samples[key].append(run(cmd))
    print(f"\nStart-up (median of {repeat}): " + ", ".join(f"{k} {r.seconds:.3f} s" for k, r in medians(samples).items()))


def bench_ranks_dataset(ranks: int, rank_mb: int, workdir: Path) -> None:
    """`ntrace convert --by-rank` of `ranks` SYNTHETIC rank traces of about `rank_mb` MB of JSON each, then `ntrace ranks` on the dataset: time and peak RSS of each, once.

    The ranks are scripts/make_ranks.py copies (clocks shifted, rank 1 late before each all-reduce)
    of the real NCCL trace in tests/data, first tiled to `rank_mb` MB by scripts/tile_trace.py.
    Peak RSS is the largest single process (convert's workers included); the traces are kept in
    `workdir` for another run, the dataset is written again.
    """
    tiled = workdir / f"nccl_{rank_mb}mb.json"
    if not tiled.exists():
        subprocess.run([PY, str(ROOT / "scripts" / "tile_trace.py"), str(ROOT / "tests" / "data" / "kineto" / "nccl_parser_config__nccl_data.json.gz"), str(tiled), "--size", f"{rank_mb}MB"], check=True)
    traces = workdir / f"ranks_{ranks}x{rank_mb}mb"
    if not (workdir / f"{traces.name}.manifest.json").exists():
        subprocess.run(
            [PY, str(ROOT / "scripts" / "make_ranks.py"), str(tiled), str(traces), "--ranks", str(ranks), "--offsets-seed", "1", "--delay-rank", "1",
             "--delay-us", "250", "--collectives", "AllReduce", "--manifest", str(workdir / f"{traces.name}.manifest.json")],
            check=True,
        )  # fmt: skip
    dataset = workdir / f"dataset_{ranks}x{rank_mb}mb"
    shutil.rmtree(dataset, ignore_errors=True)
    jobs = min(ranks, os.cpu_count() or 1)
    total = sum(p.stat().st_size for p in traces.glob("rank-*.trace.json"))
    converted = run(ntrace("convert", "--by-rank", "--jobs", str(jobs), str(traces), "-o", str(dataset)))
    analyzed = run(ntrace("ranks", "--format", "json", "-q", str(dataset)))
    stored = sum(p.stat().st_size for p in dataset.rglob("*") if p.is_file())
    summaries = sum(p.stat().st_size for p in dataset.rglob("_*.summary.json"))
    print(f"\n{ranks} ranks, {total / 1e6:,.0f} MB of JSON ({total / ranks / 1e6:.1f} MB each); dataset {stored / 1e6:,.0f} MB, of which summaries {summaries / 1e6:.1f} MB")
    print(f"  convert --by-rank --jobs {jobs}: {converted.seconds:.1f} s, CPU {converted.cpu:.1f} s, peak RSS {converted.rss_mib:,.0f} MiB (largest process)")
    print(f"  ranks on the dataset:           {analyzed.seconds:.1f} s, CPU {analyzed.cpu:.1f} s, peak RSS {analyzed.rss_mib:,.0f} MiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path, help="real trace files to benchmark")
    parser.add_argument("--events", type=int, help="also benchmark a synthetic trace of this many events")
    parser.add_argument("--scaling", action="store_true", help="with --events: run the 1x/2x/4x/8x scaling series")
    parser.add_argument("--ranks", type=int, default=0, help="with --events: time a directory of this many traces, --jobs 1 vs --jobs N")
    parser.add_argument("--ranks-dataset", type=int, default=0, metavar="N", help="convert --by-rank N synthetic ranks (--rank-mb each), then ranks on the dataset")
    parser.add_argument("--rank-mb", type=int, default=50, help="with --ranks-dataset: MB of JSON per rank")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per measurement (median reported)")
    parser.add_argument("--hta-python", default=os.environ.get("HTA_PYTHON"), help="python of a venv with holistictraceanalysis installed")
    parser.add_argument("--no-plain", action="store_true", help="skip the plain orjson path (slow on gigabyte traces)")
    parser.add_argument("--workdir", type=Path, help="where synthetic traces and caches go (default: a temporary directory)")
    parser.add_argument("--tiles", help="sizes in MB, e.g. 35,90,350,1000: tile every --tile-source to each and print one table")
    parser.add_argument("--tile-source", type=Path, action="append", help="real trace to tile (default: every tests/data/kineto/*.json.gz)")
    parser.add_argument("--large-only", default="", help="comma-separated name parts: only these sources are tiled above 90 MB")
    parser.add_argument("--hta-max-mb", type=int, default=350, help="HTA runs on tiles up to this size (MB)")
    parser.add_argument("--repeat-large", type=int, default=1, help="rounds per tile above 90 MB")
    parser.add_argument("--hta-only", default="", help="comma-separated name parts: HTA runs only on these sources ('synthetic' for the synthetic ones)")
    parser.add_argument("--hta-runs", type=int, default=3, help="with --tiles: HTA runs in this many of each tile's rounds (it takes longest)")
    parser.add_argument("--no-synthetic", action="store_true", help="with --tiles: no synthetic trace of each size")
    parser.add_argument("--startup", action="store_true", help="measure Python, Polars and ntrace import / CLI start-up")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ntrace-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, workdir {workdir}")
    compile_ntrace()
    try:
        if args.startup:
            bench_startup(max(args.repeat, 5))
        if args.tiles:
            sources = args.tile_source or sorted((ROOT / "tests" / "data" / "kineto").glob("*.json.gz"))
            sizes = [int(x) for x in args.tiles.split(",")]
            large = [k for k in args.large_only.split(",") if k]
            print(f"tiles of {len(sources)} real traces at {sizes} MB; {args.repeat} runs at <= 90 MB, {args.repeat_large} above;"
                  f" HTA up to {args.hta_max_mb} MB in {min(args.hta_runs, args.repeat)} of the rounds" + (f"; above 90 MB only {large}" if large else ""))
            report_tiles(bench_tiles(sizes, sources, workdir, args.hta_python, large, args.hta_max_mb, args.repeat,
                                     args.repeat_large, not args.no_synthetic, args.hta_runs, [k for k in args.hta_only.split(",") if k]))
        traces = list(args.traces)
        if args.events and not args.scaling and not args.ranks:
            traces.append(synth(args.events, workdir))
        for trace in traces:
            report_trace(trace, bench_trace(trace, workdir, args.repeat, args.hta_python, plain=not args.no_plain))
        if args.events and args.scaling:
            bench_scaling(args.events, workdir, args.repeat)
        if args.events and args.ranks:
            bench_ranks(args.events, args.ranks, workdir, args.repeat)
        if args.ranks_dataset:
            bench_ranks_dataset(args.ranks_dataset, args.rank_mb, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
