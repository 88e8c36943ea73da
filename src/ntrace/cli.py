"""The `ntrace` command line: a thin click shell that parses flags, calls the library and prints a renderer's output.

Every command maps ntrace's own errors to one line on stderr and exit code 2 (`--debug` shows the traceback).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, NoReturn, TextIO

import click

if TYPE_CHECKING:  # imported where used: concurrent.futures where a pool is made, Polars (under Part and Jobs) once a command runs
    from concurrent.futures import Executor
    from ntrace.analyses.part import Part
    from ntrace.workflows.analyze import Jobs

# Polars' allocator (jemalloc) holds freed pages 0.5 s, then 1 s more, before returning them; the analysis
# frees large frames stage after stage, so returning them after 0.1 s lowers peak RSS (94 MiB trace:
# 347 -> 315 MiB, time within noise; 1 GB trace: 11% less memory, 5% more time). Allocations of 64 KiB and
# more (column buffers) go to jemalloc's oversize arena, which returns pages as soon as they are freed:
# 240 -> 224 MiB peak on the 94 MiB trace, time within noise (five interleaved runs each; 0 decay for
# everything gives 212 MiB but costs 0.3 s). Polars reads this when first imported (just below); a
# value the user set wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:100,muzzy_decay_ms:0,oversize_threshold:65536")


def _fixed_mmap_threshold(size: int = 1 << 17) -> None:
    """glibc's malloc (the native parser's columns) maps a block of `size` bytes or more that its heap has no free room for on its own, returned whole when freed, rather than growing the heap.

    Left to itself glibc raises that threshold each time such a block is freed, so the parser's
    later columns grew its heap, whose freed pages it keeps. Set for this process only (its
    worker processes import this module too), not in the environment a captured workload
    inherits; a value the user set wins, and elsewhere than glibc nothing happens.
    """
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(-3, size)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


_fixed_mmap_threshold()

from ntrace.analyses.opview import SORT_KEYS, OpView  # noqa: E402
from ntrace.errors import NtraceError, Terminated, one_line  # noqa: E402
from ntrace.io.atomic import remove_partial_files  # noqa: E402
from ntrace.io.progress import reporting  # noqa: E402
from ntrace.render.columns import CSV_TABLES  # noqa: E402
from ntrace.units import parse_time, plural, size  # noqa: E402


def _fail_cleanly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn an NtraceError into `error: <file>: <problem>` on stderr and exit 2, unless --debug is on."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NtraceError as exc:
            if click.get_current_context().find_root().params.get("debug"):
                raise
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            _stop(130, "interrupted")
        except Terminated:
            _stop(143, "interrupted (SIGTERM)")
        except Exception:
            if not _SIGNALLED:
                raise
            # the interrupt was raised inside a call from Polars back into Python (a write to an
            # output file, say), and Polars reported it as its own error
            _stop(*((130, "interrupted") if isinstance(_SIGNALLED[-1], KeyboardInterrupt) else (143, "interrupted (SIGTERM)")))

    return wrapper


def _stop(code: int, line: str) -> None:
    """End an interrupted run: no more signals, the temporary files of unfinished writes removed, `line` on stderr, exit `code`."""
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:  # the console entry's handlers (never a test runner's)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    remove_partial_files()
    click.echo(line, err=True)
    sys.exit(code)


#: The interrupts the console entry's signal handlers raised, so one that a library turned into an error of its own still ends the run as an interrupt.
_SIGNALLED: list[BaseException] = []


def _on_sigint(signum: int, frame: object) -> None:
    """SIGINT handler: raise KeyboardInterrupt, as Python's own does, and remember it."""
    _SIGNALLED.append(KeyboardInterrupt())
    raise _SIGNALLED[-1]


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM handler: unwind the run like Ctrl-C does, with a `Terminated` exception (remembered)."""
    _SIGNALLED.append(Terminated())
    raise _SIGNALLED[-1]


def _on_unraisable(unraisable: Any, default: Callable[[Any], None] = sys.unraisablehook) -> None:
    """sys.unraisablehook: an interrupt raised where it cannot propagate (a finalizer, a callback from native code) is raised again in the next Python function the run calls."""
    interrupt = unraisable.exc_value
    if not isinstance(interrupt, (KeyboardInterrupt, Terminated)):
        default(unraisable)
        return
    tracer = sys.gettrace()

    def deliver(frame: object, event: str, arg: object) -> None:
        sys.settrace(tracer)
        raise interrupt

    sys.settrace(deliver)


#: Output formats of the commands that print results: aligned text, JSON, one CSV table, Markdown for pull requests.
FORMATS = ["table", "json", "csv", "markdown"]


def _renderer(fmt: str) -> ModuleType:
    """The render module for an output format: each has analysis(), compare(), diff(), artifacts(), device() and ranks()."""
    from ntrace.render import csv, json, markdown, text

    return {"table": text, "json": json, "csv": csv, "markdown": markdown}[fmt]


def _table_option(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--table NAME: which of the command's tables --format csv writes (docs/formats.md, "Column names")."""
    tables = CSV_TABLES[command]
    return click.option(
        "--table", "csv_table", type=click.Choice(tables), default=None, help=f"--format csv: which table to write, one of {', '.join(tables)} [default: {tables[0]}]."
    )


def _part_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--window and --steps: the part of each trace a command reads (ntrace.analyses.part)."""
    window = click.option(
        "--window", "window", default=None, metavar="START:END",
        help="Only this time window of each trace, from its first event start: µs, or with a unit (250:1.5ms, 2s:, :800us); host events starting in it, and the device work they launched.",
    )  # fmt: skip
    steps = click.option("--steps", "steps", default=None, metavar="N-M", help="Only profiler steps N to M (ProfilerStep#N…#M, or one step N): from step N's start to step M's end, cut as --window.")
    return window(steps(command))


def _rendered(fmt: str, csv_table: str | None, what: str, *args: Any) -> str:
    """The renderer's `what` output of `args`; with --format csv, the table --table names (refused with another format)."""
    if fmt != "csv":
        if csv_table is not None:
            raise click.UsageError(f"--table {csv_table}: only --format csv writes one table at a time (the {fmt} format has them all)")
        return str(getattr(_renderer(fmt), what)(*args))
    from ntrace.render import csv

    return str(getattr(csv, what)(*args, **({"table": csv_table} if csv_table else {})))


def _warn(warnings: Iterable[str]) -> None:
    """Warnings go to stderr too, so they are seen whatever the output format."""
    for w in warnings:
        click.echo(f"warning: {one_line(w)}", err=True)


class _Progress:
    """A progress line for long reads (click's bar) on `stream`, shown only once a run has taken `delay` seconds."""

    def __init__(self, stream: TextIO, delay: float = 1.0) -> None:
        self.stream = stream
        self.began = time.monotonic() + delay
        self.bar: Any = None
        self.stage: str | None = None
        self.done = 0

    def __call__(self, stage: str, done: int, total: int | None, unit: str) -> None:
        """A report from a reader (ntrace.io.progress): redraw, starting a new line per stage."""
        if time.monotonic() < self.began:
            return
        if stage != self.stage:
            self.close()
            self.bar = click.progressbar(
                length=max(total or done, 1), label=stage, file=self.stream, show_percent=total is not None, show_pos=False, show_eta=False,
                item_show_func=lambda item: item,
            )  # fmt: skip
            self.bar.__enter__()
            self.stage, self.done = stage, 0
        shown = size(done) if unit == "bytes" else f"{done:,} {unit}".strip()
        self.bar.update(done - self.done, shown)
        self.done = done

    def close(self) -> None:
        """Finish the line and erase it, so what follows starts on a clean line."""
        if self.bar is not None:
            self.bar.finished = True  # no final newline: the line is erased instead
            self.bar.__exit__(None, None, None)
            self.stream.write("\r\033[K")
            self.bar = None


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator[None]:
    """Report the reads of the block on a progress line when enabled and stderr is a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield
        return
    sink = _Progress(sys.stderr)
    try:
        with reporting(sink):
            yield
    finally:
        sink.close()


class _Jobs(click.ParamType["int | str"]):
    """--jobs: a count of worker processes (1 or more), or `auto`."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        """The count, or "auto"; a usage error (exit 2) for anything else."""
        if value == "auto":
            return "auto"
        try:
            count = int(value)
        except (TypeError, ValueError):
            count = 0
        if count < 1:
            self.fail(f"{value!r} is neither a count of 1 or more nor 'auto'", param, ctx)
        return count


def _jobs_option(verb: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--jobs/-j: `verb` this many traces at once in worker processes; auto (the default) gives one per core to many small traces only (ntrace.workflows.analyze.workers_for)."""
    text = f"{verb} this many traces in parallel; auto: one worker per core for 16 or more traces of up to 64 MiB each, else one process."
    return click.option("--jobs", "-j", type=_Jobs(), default="auto", show_default=True, help=text)


#: --executor, on the commands that analyze many traces.
_EXECUTOR_HELP = "Analyze the traces on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://scheduler:8786); its workers must see the same files (URLs are downloaded here, so use a local cluster for those)."


@contextlib.contextmanager
def _executor(address: str | None) -> Iterator[Executor | None]:
    """The Dask executor for --executor ADDRESS while the block runs, or None without it."""
    if address is None:
        yield None
        return
    from ntrace.workflows.distributed import dask_executor

    with dask_executor(address) as executor:
        yield executor


def _absolute(path: str, address: str | None) -> str:
    """`path` made absolute when a cluster's workers read it (their working directory may differ); URLs and local runs keep it as given."""
    from ntrace.io.remote import is_url

    return path if address is None or is_url(path) else os.path.abspath(path)


#: What every exit status means, for `ntrace --help` (README.md lists the same).
EXIT_CODES = """\b
Exit codes:
  0    done (warnings, if any, went to stderr)
  1    a gate failed (diff --fail-above, artifacts --fail-on-damage), or a
       capture --script raised an exception
  2    bad input or bad usage: one line "error: <file>: <problem>" on stderr
  130  interrupted (Ctrl-C); files being written are removed
  143  terminated (SIGTERM); files being written are removed
  N    capture --script or --inspect: the script's or command's own status
"""


def _examples(*lines: str) -> str:
    """A command's help epilog: example command lines, each with what it does, kept as written."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES)
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.version_option(package_name="ntrace")
def main(debug: bool) -> None:
    """Capture and analyze PyTorch profiles of AWS Trainium (Neuron) workloads."""


@main.command(
    short_help="Analyze traces: lanes, gaps, steps, ops and findings.",
    epilog=_examples(
        "ntrace analyze trace.json                 one trace, the op table's top 20 rows",
        "ntrace analyze profile_output/ -j 4       every trace under a directory, 4 at once",
        "ntrace analyze trace.json --steps 3-5     only profiler steps 3 to 5",
        "ntrace analyze trace.json --window 2ms:   from 2 ms after the trace's start",
        "ntrace analyze run/ --format json         the stable JSON contract",
    ),
)
@click.argument("path", type=click.Path(path_type=str))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="csv: one table (--table; default one row per trace); markdown: tables to paste into a pull request.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar on stderr.")
@_jobs_option("Analyze")
@click.option("--executor", "address", default=None, metavar="ADDRESS", help=_EXECUTOR_HELP)
@click.option("--plain", is_flag=True, help="Use the plain orjson decoder instead of the typed fast path.")
@_part_options
@click.option("--max-events", type=click.IntRange(1), default=None, help="Read only each trace's first N events in file order (for traces too large for memory; --window and --steps cut by time).")
@click.option("--sort-by", type=click.Choice(list(SORT_KEYS)), default="self_cpu_time_total", show_default=True, help="Sort the op table by this torch key.")
@click.option("--top", type=click.IntRange(1), default=None, help="Show only the first N rows of the op table (--format table: 20 unless --all).")
@click.option("--all", "all_rows", is_flag=True, help="--format table: show every row of the op table, not the top 20 (json, csv and markdown always keep every row).")
@click.option("--group-by-shape", is_flag=True, help="One op table row per (name, input shapes), where the trace recorded shapes.")
@click.option("--recompute", is_flag=True, help="For `ntrace convert` Parquet files: recompute the analysis from the stored events instead of reusing the stored results.")
@_table_option("analyze")
@_fail_cleanly
def analyze(
    path: str, fmt: str, quiet: bool, jobs: Jobs, address: str | None, plain: bool, window: str | None, steps: str | None, max_events: int | None, sort_by: str,
    top: int | None, all_rows: bool, group_by_shape: bool, recompute: bool, csv_table: str | None,
) -> None:  # fmt: skip
    """Analyze a trace file, or every trace under a directory or an fsspec URL (s3://bucket/prefix): lanes, tracks, dispatch gaps, steps, the op and kernel tables, findings."""
    if not plain and max_events is None and address is None:  # decode a large trace file while the analysis is imported
        from ntrace.io import read_ahead

        read_ahead(path)
    from ntrace.render.text import TABLE_TOP
    from ntrace.workflows.analyze import analyze as run

    if top is None and fmt == "table" and not all_rows:
        top = TABLE_TOP
    view = OpView(sort_by=sort_by, top=top, group_by_shape=group_by_shape)
    part = _part(window, steps)
    with _progress(enabled=not quiet), _executor(address) as executor:
        result = run(_absolute(path, address), jobs=jobs, executor=executor, fast=not plain, max_events=max_events, recompute=recompute, part=part)
    text = _rendered(fmt, csv_table, "analysis", result, view)
    _warn(result.all_warnings)
    click.echo(text, nl=fmt == "json")


def _part(window: str | None, steps: str | None) -> Part | None:
    """--window START:END or --steps N-M as a Part (None without either); a click usage error (exit 2) when malformed or both are given."""
    from ntrace.analyses.part import Part

    if window is not None and steps is not None:
        raise click.UsageError("--window and --steps: give one of them")
    if steps is not None:
        first, _, last = steps.partition("-")
        try:
            low, high = int(first), int(last or first)
        except ValueError:
            raise click.BadParameter(f"{steps!r}: expected N-M or N (profiler step numbers)", param_hint="--steps") from None
        if low > high:
            raise click.BadParameter(f"{steps!r}: the first step comes after the last", param_hint="--steps")
        return Part(steps=(low, high))
    if window is not None:
        start, colon, end = window.partition(":")
        try:
            if not colon:
                raise ValueError(f"{window!r}: expected START:END (either may be left out)")
            lo, hi = parse_time(start) if start.strip() else 0, parse_time(end) if end.strip() else None
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--window") from None
        if hi is not None and hi <= lo:
            raise click.BadParameter(f"{window!r}: the end must come after the start", param_hint="--window")
        return Part(window=(lo, hi))
    return None


@main.command(short_help="Print the table that puts each event category in a lane.", epilog=_examples("ntrace lanes"))
@_fail_cleanly
def lanes() -> None:
    """Print the category → lane table that classifies every event, then the name rules for categories that mix compute and data movement."""
    from ntrace.lanes import lane_table, name_rule_table
    from ntrace.render.text import table

    frame = lane_table()
    click.echo(table(["category", "lane", "side", "why"], [list(r) for r in frame.iter_rows()], left=4))
    click.echo("\nName rules (applied first, inside the categories that mix compute and data movement)")
    rules = name_rule_table()
    click.echo(table(list(rules.columns), [[str(v) for v in r] for r in rules.iter_rows()], left=rules.width))


@main.command(short_help="Show or clear the summary memo that later runs read.", epilog=_examples("ntrace cache", "ntrace cache --clear", "NTRACE_CACHE=0 ntrace analyze run/   one run without it"))
@click.option("--clear", is_flag=True, help="Remove every remembered summary (only those: nothing else in the directory).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@_fail_cleanly
def cache(clear: bool, fmt: str) -> None:
    """Where the summary memo is and what it holds. analyze, compare, diff and ranks remember each trace's summary there, keyed by the file's path and identity and by ntrace's code, and read it instead of the trace while the file is unchanged.

    NTRACE_CACHE=0 turns it off, NTRACE_CACHE_DIR moves it, NTRACE_CACHE_MB caps it (least recently used dropped first).
    """
    from dataclasses import asdict

    import orjson

    from ntrace.io import memo

    if clear:
        removed = memo.clear()
        click.echo(f"removed {plural(removed, 'remembered summary', 'remembered summaries')} from {one_line(str(memo.location()))}", err=fmt == "json")
    state = memo.usage()
    if fmt == "json":
        click.echo(orjson.dumps(asdict(state), option=orjson.OPT_INDENT_2).decode())
        return
    click.echo(f"directory  {one_line(state.directory)}")
    click.echo(f"state      {'on' if state.enabled else 'off (NTRACE_CACHE=0)'}")
    click.echo(f"entries    {plural(state.entries, 'summary', 'summaries')} of this ntrace, {size(state.bytes)} of {size(state.ceiling_bytes)}")


def _ints(text: str, what: str, count: int | None = None) -> tuple[int, ...]:
    """Parse "4,512" into (4, 512), or raise a click error naming the option."""
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected comma-separated integers", param_hint=what) from None
    if count is not None and len(values) != count:
        raise click.BadParameter(f"{text!r}: expected {count} integers", param_hint=what)
    return values


#: Options of `ntrace capture` that only the RMSNorm study reads, and those --inspect does not take.
_STUDY_ONLY = ("variants", "shape", "dtype")
_NOT_INSPECT = ("device", "sched", "steps", "cores")


def _explicit(ctx: click.Context, names: Iterable[str]) -> list[str]:
    """The options among `names` given on the command line (not defaults), as --flags."""
    source = click.core.ParameterSource.COMMANDLINE
    return ["--" + {"sched": "schedule"}.get(n, n) for n in names if ctx.get_parameter_source(n) == source]


def _capture_mode(ctx: click.Context, study: str | None, script: Path | None, inspect: bool, args: tuple[str, ...]) -> str:
    """Which capture runs: "study", "script" or "inspect"; options that do not apply to it are refused."""
    modes = [m for m, on in (("--study", study is not None), ("--script", script is not None), ("--inspect", inspect)) if on]
    if len(modes) > 1:
        raise click.UsageError(f"{' and '.join(modes)}: give one of them")
    mode = "script" if script is not None else "inspect" if inspect else "study"
    wrong = _explicit(ctx, _STUDY_ONLY) if mode != "study" else []
    wrong += _explicit(ctx, _NOT_INSPECT) if mode == "inspect" else []
    wrong += _explicit(ctx, ("steps", "name")) if mode == "study" else []
    wrong += _explicit(ctx, ("device_profile",)) if mode != "inspect" else []
    if wrong:
        raise click.UsageError(f"{', '.join(sorted(set(wrong)))}: not an option of {modes[0] if modes else '--study'} capture")
    if mode == "study" and args:
        raise click.UsageError(f"unexpected arguments {' '.join(args)!r}: they go to --script or --inspect")
    return mode


def _pass_on(failure: str | None, exit_code: int, out: Path) -> NoReturn:
    """Print a --script/--inspect failure in one line, then exit with the status it ended with."""
    if failure is not None:
        click.echo(f"error: {one_line(failure)} (what was profiled so far is kept in {out})", err=True)
    sys.exit(exit_code)


@main.command(
    short_help="Profile a bundled study, your script or any command.",
    epilog=_examples(
        "ntrace capture -o rmsnorm                              the RMSNorm study, three variants",
        "ntrace capture -o run --script train.py -- --epochs 1  your script; ntrace.step() per step",
        "ntrace capture -o run --inspect -- python serve.py     any command on the Neuron runtime",
    ),
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), default=Path("ntrace-capture"), show_default=True, help="Directory to write into (the study: one subdirectory per variant).")
@click.option("--study", type=click.Choice(["rmsnorm"]), default=None, help="A bundled study (the default when neither --script nor --inspect is given): rmsnorm.")
@click.option("--script", type=click.Path(path_type=Path, dir_okay=False), default=None, help="Run this Python script (with ARGS after --) in-process under the profiler; its ntrace.step() calls advance the schedule.")
@click.option("--inspect", is_flag=True, help="Run COMMAND (after --) with the Neuron runtime's NEURON_RT_INSPECT_* profiling variables set, writing into -o.")
@click.option("--name", default=None, help="--script/--inspect: the capture's name in analyze and compare (default: the script's or folder's name).")
@click.option("--device", type=click.Choice(["auto", "neuron", "cuda", "cpu"]), default="auto", show_default=True, help="auto: neuron if torch_neuronx imports, else cuda if available, else cpu.")
@click.option("--variants", default="naive,fused,compiled", show_default=True, help="Which RMSNorm variants to capture.")
@click.option("--shape", default="4,512", show_default=True, help="Input shape (4,512 is the published RMSNorm case study's).")
@click.option("--dtype", default="bfloat16", show_default=True, help="Input dtype, a torch dtype name.")
@click.option("--schedule", "sched", default=None, help="Profiler schedule wait,warmup,active, run once [study: 2,1,1; --script: 1,1,2].")
@click.option("--steps", type=click.IntRange(1), default=None, help="--script: capture this many steps (the schedule's active count).")
@click.option("--device-profile", type=click.Choice(["model", "session"]), default="model", show_default=True, help="--inspect: NEURON_RT_INSPECT_DEVICE_PROFILE (model: first execution per NEFF per core; session: all device activity).")
@click.option("--cores", default="0", show_default=True, help="Neuron: NeuronCores to trace (capture_enabled_for_nc, e.g. 0,1,2-5); the work runs on the default neuron device.")
@click.option("--force", is_flag=True, help="Write into a non-empty directory, overwriting only the files capture writes; with --inspect, also run off Neuron.")
@click.option("--no-device-profiles", "no_device_profiles", is_flag=True, help="Neuron: do not run neuron-explorer on the NEFF/NTFF pairs (nor print the commands to).")
@click.option("--device-profile-timeout", "explorer_timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True, help="Neuron: seconds one neuron-explorer view may run before it is killed.")
@click.pass_context
@_fail_cleanly
def capture(
    ctx: click.Context, args: tuple[str, ...], out: Path, study: str | None, script: Path | None, inspect: bool, name: str | None, device: str,
    variants: str, shape: str, dtype: str, sched: str | None, steps: int | None, device_profile: str, cores: str, force: bool,
    no_device_profiles: bool, explorer_timeout: float,
) -> None:  # fmt: skip
    """Profile a workload: the RMSNorm study (--study rmsnorm, the default), your script (--script train.py -- ARGS), or any command on the Neuron runtime (--inspect -- COMMAND)."""
    from ntrace.capture.backends import ProfileSchedule

    mode = _capture_mode(ctx, study, script, inspect, args)
    if mode == "inspect":
        from ntrace.capture.neuron_inspect import run_inspect

        command = run_inspect(args, out, device_profile=device_profile, name=name, force=force, progress=lambda line: click.echo(line, err=True))
        _pass_on(command.failure, command.exit_code, out)
    if script is not None:
        from ntrace.capture.script import run_script

        wait, warmup, active = _ints(sched, "--schedule", 3) if sched is not None else (1, 1, 2)
        schedule = ProfileSchedule(wait, warmup, steps if steps is not None else active)
        ran = run_script(script, args, out, device=device, schedule=schedule, name=name, cores=cores, force=force, progress=lambda line: click.echo(line, err=True))
        _pass_on(ran.failure, ran.exit_code, out)

    from ntrace.capture.rmsnorm import capture_study

    sched = sched or "2,1,1"
    frame = capture_study(
        out,
        device=device,
        variants=tuple(v.strip() for v in variants.split(",") if v.strip()),
        shape=_ints(shape, "--shape"),
        dtype=dtype,
        schedule=ProfileSchedule(*_ints(sched, "--schedule", 3)),
        cores=cores,
        force=force,
        device_profiles=not no_device_profiles,
        explorer_timeout=explorer_timeout,
        progress=lambda line: click.echo(line, err=True),
    )
    for row in frame.iter_rows(named=True):
        traces = ", ".join(row["traces"]) or "no trace found"
        click.echo(f"{row['dir']}: {traces}, capture.json, key_averages.json ({row['seconds']:.1f} s)", err=True)
    click.echo(f"wrote {plural(frame.height, 'variant')} under {out}; next: ntrace analyze {out}", err=True)


@main.command(
    short_help="Export one trace for Perfetto or chrome://tracing.",
    epilog=_examples("ntrace export trace.json --perfetto out.json.gz   then open out.json.gz in https://ui.perfetto.dev"),
)
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--perfetto", "out", type=click.Path(path_type=Path, dir_okay=False), required=True, help="Write a Chrome-trace JSON that Perfetto (ui.perfetto.dev) and chrome://tracing open.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@_part_options
@_fail_cleanly
def export(path: Path, out: Path, quiet: bool, window: str | None, steps: str | None) -> None:
    """Export one trace (or Neuron Explorer .parquet) with lanes as named processes, one track per stream, launch flows and hardware idle gaps."""
    from ntrace.io import read_ahead

    read_ahead(path, remembered=None)  # decoded while the exporter is imported
    from ntrace.errors import InputError
    from ntrace.io.discover import find_traces
    from ntrace.render.perfetto import export_perfetto
    from ntrace.workflows.analyze import load

    skipped: list[str] = []
    traces = find_traces(path, skipped)
    if len(traces) != 1:
        listed = ", ".join(str(t) for t in traces[:3]) + (", …" if len(traces) > 3 else "")
        raise InputError(path, f"holds {plural(len(traces), 'trace')} ({listed or 'none'}); export one file at a time")
    part = _part(window, steps)
    with _progress(enabled=not quiet):
        profile = load(traces[0], part=part)
        written = export_perfetto(profile, out)
    _warn([*skipped, *profile.trace.warnings])
    click.echo(f"wrote {one_line(str(written))}: {plural(profile.complete_count, 'slice')}, {plural(profile.links.height, 'flow')}, {plural(profile.hardware_idle.height, 'hardware idle gap')}; open it in https://ui.perfetto.dev or chrome://tracing")


@main.command(
    short_help="Read Neuron Explorer's processed device profiles.",
    epilog=_examples("ntrace device profile_output/                 every profile directory under it", "ntrace device my-profile@latest --format json"),
)
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="csv and markdown: one row per profile.")
@_fail_cleanly
def device(path: Path, fmt: str) -> None:
    """Read Neuron Explorer's processed device profiles (Parquet tables) under PATH: engines, DMA, HBM, FLOPs, MFU, the compute- or memory-bound verdict, collectives, throttling, recommendations."""
    from ntrace.workflows.device import device as run

    result = run(path)
    text = _renderer(fmt).device(result)
    _warn(result.warnings)
    click.echo(text, nl=fmt == "json")


@main.command(
    short_help="List a Neuron profile's NEFF, NTFF and .pb files and pairs.",
    epilog=_examples("ntrace artifacts profile_output/                    sessions, NEFF headers, pairs", "ntrace artifacts profile_output/ --fail-on-damage   exit 1 on an invalid NEFF (CI)"),
)
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="csv: one row per file; markdown: one table per session.")
@click.option("--fail-on-damage", is_flag=True, help="Exit 1 when any NEFF is invalid or any file is unpaired (for CI).")
@_fail_cleanly
def artifacts(path: Path, fmt: str, fail_on_damage: bool) -> None:
    """List a profile directory's sessions, decoded NEFF headers, NTFF and .pb files, NEFF↔NTFF pairs and unpaired files."""
    from ntrace.errors import InputError
    from ntrace.neuron.artifacts import find_sessions

    sessions = [s for s in find_sessions(path) if s.has_artifacts]
    if not sessions:
        raise InputError(path, "holds no Neuron profile artifacts (.neff, .ntff, .pb)")
    click.echo(_renderer(fmt).artifacts(sessions), nl=fmt == "json")
    invalid = sum(int((~s.neffs["valid"]).sum()) for s in sessions)
    lone = sum(s.unpaired.height for s in sessions)
    if fail_on_damage and (invalid or lone):
        click.echo(f"fail: damaged artifacts: {plural(invalid, 'invalid NEFF')}, {plural(lone, 'unpaired file')}", err=True)
        sys.exit(1)


@main.command(
    short_help="Write a self-contained HTML report that opens offline.",
    epilog=_examples("ntrace report fixtures/rmsnorm -o report.html   three variants compared, one timeline each"),
)
@click.argument("path", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path, dir_okay=False), default=Path("ntrace-report.html"), show_default=True, help="The HTML file to write (atomically).")
@click.option("--title", default=None, help="Page title (default: the analyzed path).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar on stderr.")
@_jobs_option("Load")
@_part_options
@_fail_cleanly
def report(path: Path, out: Path, title: str | None, quiet: bool, jobs: Jobs, window: str | None, steps: str | None) -> None:
    """Write one self-contained HTML report that opens offline: the verdict, steps, operators, kernels, findings, device and ranks views, and a timeline that redraws exact events at every zoom."""
    from ntrace.io import read_ahead

    read_ahead(path, remembered="timeline")  # decoded while the report is imported
    from ntrace.render.html import report as run

    part = _part(window, steps)
    with _progress(enabled=not quiet):
        result, written = run(path, out, title=title, jobs=jobs, part=part)
    _warn(result.all_warnings)
    click.echo(f"wrote {one_line(str(written))} ({written.stat().st_size / 1024:.0f} KiB, {plural(len(result.summaries), 'trace')}); open it in any browser, no network needed")


@main.command(
    short_help="Convert JSON traces to Parquet that analyze reads fast.",
    epilog=_examples("ntrace convert traces/ -o parquet/ -j 4   then: ntrace analyze parquet/"),
)
@click.argument("path", type=click.Path(path_type=str))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path, file_okay=False), required=True, help="Directory for the .parquet files (one per trace, same relative paths).")
@_jobs_option("Convert")
@click.option("--plain", is_flag=True, help="Use the plain orjson decoder instead of the fast path.")
@click.option("--by-rank", is_flag=True, help="Write a rank-partitioned dataset (rank=N/ directories, each rank's summary beside its events) for `ntrace ranks`.")
@_fail_cleanly
def convert(path: str, out: Path, jobs: Jobs, plain: bool, by_rank: bool) -> None:
    """Decode and lane-classify every JSON trace under PATH once, as Parquet that `ntrace analyze`, `ntrace ranks`, Polars, DuckDB or Spark read directly.

    PATH may be an fsspec URL (s3://bucket/prefix), downloaded first; the Parquet files name the URL.
    """
    from ntrace.errors import InputError
    from ntrace.workflows.convert import convert as run

    with _progress(enabled=True):  # shown only on a terminal, once a run takes a second
        done = run(path, out, jobs=jobs, fast=not plain, by_rank=by_rank)
    for row in done.iter_rows(named=True):
        if row["error"]:
            click.echo(f"warning: skipped {row['error']}", err=True)
        else:
            click.echo(f"wrote {one_line(row['parquet'])}")
    if done["error"].is_not_null().all():
        raise InputError(path, f"none of its {plural(done.height, 'trace')} could be converted")


@main.command(
    short_help="Compare variants side by side, with the speed-up of each.",
    epilog=_examples("ntrace compare fixtures/rmsnorm                   each variant under one directory", "ntrace compare base/ fused/ --baseline base      one directory per variant"),
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--baseline", default=None, help="Variant (name or path) the speed-up is measured against; default: the first.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="csv: one row per variant; markdown: a table for pull requests.")
@_jobs_option("Analyze")
@_part_options
@_fail_cleanly
def compare(paths: tuple[Path, ...], baseline: str | None, fmt: str, jobs: Jobs, window: str | None, steps: str | None) -> None:
    """Compare variants side by side: device time, self CPU, device op calls, hardware idle, speed-up.

    Give one directory per variant, or one directory holding several (each entry under it with
    traces is a variant). Names come from capture.json where there is one, else the directory.
    """
    from ntrace.workflows.compare import compare as run

    part = _part(window, steps)
    with _progress(enabled=True):  # shown only on a terminal, once a run takes a second
        result = run(paths, baseline=baseline, part=part, jobs=jobs)
    text = _renderer(fmt).compare(result)
    _warn(result.warnings)
    click.echo(text, nl=fmt == "json")


@main.command(
    short_help="Diff two traces op by op, with a CI gate on device time.",
    epilog=_examples("ntrace diff base.json test.json                  what got slower, faster, added, removed", "ntrace diff base.json test.json --fail-above 5   exit 1 when device time grows over 5%"),
)
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("test", type=click.Path(path_type=Path))
@click.option("--threshold", type=click.FloatRange(0), default=5.0, show_default=True, help="Percent change below which an op counts as unchanged.")
@click.option("--fail-above", type=float, default=None, help="Exit 1 when total device time grows by more than this percent (a CI gate).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="csv: one table (--table); markdown: tables for pull requests.")
@_table_option("diff")
@_jobs_option("Analyze")
@_part_options
@_fail_cleanly
def diff(
    base: Path, test: Path, threshold: float, fail_above: float | None, fmt: str, csv_table: str | None, jobs: Jobs, window: str | None, steps: str | None
) -> None:  # fmt: skip
    """Diff TEST against BASE: per-op added/removed/slower/faster/unchanged, lane totals and gaps before and after."""
    from ntrace.units import fmt_time
    from ntrace.workflows.diff import diff as run

    part = _part(window, steps)
    with _progress(enabled=True):  # shown only on a terminal, once a run takes a second
        result = run(base, test, threshold=threshold, part=part, jobs=jobs)
    text = _rendered(fmt, csv_table, "diff", result)
    _warn(result.warnings)
    click.echo(text, nl=fmt == "json")
    if fail_above is not None and result.fails(fail_above):
        change = result.device_change_pct
        click.echo(
            f"fail: device time grew {change:+.1f}% ({fmt_time(result.base_device)} -> {fmt_time(result.test_device)}), above {fail_above:g}%",
            err=True,
        )
        sys.exit(1)


@main.command(
    short_help="Analyze the ranks of one job: skew, stragglers, outliers.",
    epilog=_examples("ntrace ranks job/                        every rank trace under a directory", "ntrace ranks rank_*.json -j 8 --format json"),
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="csv: one table (--table); markdown: tables for pull requests.")
@_jobs_option("Analyze")
@click.option("--executor", "address", default=None, metavar="ADDRESS", help=_EXECUTOR_HELP)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar on stderr.")
@_table_option("ranks")
@_fail_cleanly
def ranks(paths: tuple[str, ...], fmt: str, jobs: Jobs, address: str | None, quiet: bool, csv_table: str | None) -> None:
    """Analyze the traces of many ranks of one job together: a row per rank, statistics over ranks, clock offsets, collective skew, stragglers.

    Give the rank traces, directories holding them, or a dataset `ntrace convert --by-rank` wrote
    (only its per-rank summaries are read). A trace's rank comes from its distributedInfo.rank,
    else a number in its file name (rank_3, rank-3, rank3), else Neuron's worker_gid. A path may
    be an fsspec URL (s3://bucket/prefix), downloaded first.
    """
    from ntrace.workflows.ranks import ranks as run

    with _progress(enabled=not quiet), _executor(address) as executor:
        result = run([_absolute(p, address) for p in paths], jobs=jobs, executor=executor)
    text = _rendered(fmt, csv_table, "ranks", result)
    _warn(result.warnings)
    click.echo(text, nl=fmt == "json")


def run() -> None:
    """The console entry point: the CLI, then an exit that skips freeing every object one by one (about 50 ms after a 94 MiB trace).

    Output is flushed and atexit handlers run as on a normal exit; only the interpreter's teardown
    (module and frame deallocation, which a process about to end does not need) is skipped.
    """
    import atexit

    signal.signal(signal.SIGINT, _on_sigint)  # before a command imports Polars, which leaves these in place (tests/test_signals.py)
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.unraisablehook = _on_unraisable
    try:
        try:
            main()
            code: Any = 0
        except Terminated:  # outside a command (Ctrl-C there is click's "Aborted!", exit 1)
            _stop(143, "interrupted (SIGTERM)")
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):  # sys.exit("message"): printed, status 1, as Python does
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # `ntrace … | head`: the reader left; nothing more to say
        pass
    atexit._run_exitfuncs()
    os._exit(code or 0)
