"""The one exception hierarchy of ntrace: every error a user can meet, each naming its file."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Callable, ParamSpec

P = ParamSpec("P")

#: DEL and the C1 controls (U+0080-U+009F, CSI among them), which JSON allows raw, as JSON escapes.
_JSON_CONTROLS = {c: f"\\u{c:04x}" for c in range(0x7F, 0xA0)}


#: A lone surrogate: what Python makes of a file name's bytes that are not UTF-8, which no UTF-8 writer (Polars, orjson) accepts.
_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with each lone surrogate written as an escape (\\xff for an undecodable byte of a file name, \\ud800 otherwise), so it can be stored and printed as UTF-8."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\x{ord(m[0]) - 0xDC00:02x}" if "\udc80" <= m[0] <= "\udcff" else f"\\u{ord(m[0]):04x}", text)


def valid_path(path: Path) -> Path:
    """`path` as a name that can be stored and printed (valid_text); unchanged when it already is. The file is opened by its real path, never by this one."""
    text = str(path)
    safe = valid_text(text)
    return path if safe == text else Path(safe)


def one_line(text: str) -> str:
    """`text` with control characters (a newline in a file name, say) written as escapes, so a message stays one line."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def terminal_safe(text: str) -> str:
    """Multi-line `text` with every control character but the newline (C0, DEL, C1, so ANSI escape sequences too) written as an escape: names from an input cannot drive a terminal."""
    return text if text.isprintable() else "\n".join(one_line(line) for line in text.split("\n"))


def terminal_text(render: Callable[P, str]) -> Callable[P, str]:
    """Decorate a renderer of text for people so what it returns goes through `terminal_safe`."""

    @functools.wraps(render)
    def safe(*args: P.args, **kwargs: P.kwargs) -> str:
        return terminal_safe(render(*args, **kwargs))

    return safe


def json_safe(text: str) -> str:
    """JSON text with DEL and the C1 controls written as \\u escapes too (orjson escapes only C0), so it is safe to print."""
    if text.isascii() and "\x7f" not in text:  # the C1 controls are not ASCII; isascii is a flag Python keeps
        return text
    return text.translate(_JSON_CONTROLS)


class Terminated(BaseException):
    """SIGTERM arrived: raised by the CLI's signal handler, so the run unwinds (removing its temporary files) as on Ctrl-C."""


class NtraceError(Exception):
    """Base of every error ntrace raises on purpose; `str()` is the one-line message the CLI prints."""

    def __init__(self, path: str | Path | None, problem: str) -> None:
        self.path = str(path) if path is not None else None
        self.problem = problem
        super().__init__(one_line(f"{self.path}: {problem}" if self.path else problem))

    def __reduce__(self) -> tuple[type, tuple[str | None, str]]:
        """Pickle as (class, (path, problem)), so errors cross process boundaries (analyze --jobs)."""
        return self.__class__, (self.path, self.problem)


class InputError(NtraceError):
    """The input path is missing, unreadable, or holds nothing ntrace can analyze."""


class TraceFormatError(NtraceError):
    """A trace file is not a Kineto/Chrome trace ntrace can decode."""


class CaptureError(NtraceError):
    """`ntrace capture` cannot run here (missing torch, missing torch-neuronx, bad output dir)."""


class OutputError(NtraceError):
    """An output file could not be written."""


class SchedulerError(InputError):
    """A Dask scheduler given with --executor cannot be reached (or distributed is not installed)."""
