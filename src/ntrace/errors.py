"""The one exception hierarchy of ntrace: every error a user can meet, each naming its file."""

from __future__ import annotations

from pathlib import Path


def one_line(text: str) -> str:
    """`text` with control characters (a newline in a file name, say) written as escapes, so a message stays one line."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


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
