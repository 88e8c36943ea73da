"""The `ntrace` command line: a thin click shell that parses flags, calls the library and prints a renderer's output.

Every command maps ntrace's own errors to one line on stderr and exit code 2 (`--debug` shows the traceback).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Callable

import click

from ntrace.errors import NtraceError


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

    return wrapper


def _warn(warnings: list[str]) -> None:
    """Warnings go to stderr too, so they are seen whatever the output format."""
    for w in warnings:
        click.echo(f"warning: {w}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.version_option(package_name="ntrace")
def main(debug: bool) -> None:
    """Capture and analyze PyTorch profiles of AWS Trainium (Neuron) workloads."""


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--jobs", "-j", type=click.IntRange(1), default=1, show_default=True, help="Analyze this many traces in parallel.")
@click.option("--plain", is_flag=True, help="Use the plain orjson decoder instead of the typed fast path.")
@_fail_cleanly
def analyze(path: Path, fmt: str, jobs: int, plain: bool) -> None:
    """Analyze a trace file, or every trace under a directory: lanes, tracks, dispatch gaps, steps."""
    from ntrace.analysis import analyze as run
    from ntrace.render import json as json_renderer, text as text_renderer

    result = run(path, jobs=jobs, fast=not plain)
    _warn(result.all_warnings)
    click.echo((json_renderer if fmt == "json" else text_renderer).render(result), nl=fmt == "json")


@main.command()
def lanes() -> None:
    """Print the category → lane table that classifies every event."""
    from ntrace.lanes import lane_table
    from ntrace.render.units import table

    frame = lane_table()
    click.echo(table(["category", "lane", "side", "why"], [list(r) for r in frame.iter_rows()], left=4))
