"""`ntrace capture --script train.py -- ARGS…`: run a Python script in this process, as `python train.py ARGS…` would, under a profiling session.

The script's `ntrace.step()` calls advance the schedule; a script that never calls it is profiled
as a whole (one step). Its exit status and exceptions are returned, never raised, so the profile
written so far is kept and the caller can pass the status on.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ntrace.capture.backends import ProfileSchedule, make_backend, resolve_device
from ntrace.capture.manifest import check_output
from ntrace.capture.profiling import Progress, Session, stderr_progress, check_schedule
from ntrace.errors import CaptureError, one_line


@dataclass(frozen=True)
class ScriptRun:
    """How a profiled script ended: its exit status, the one-line failure (None when it succeeded), its ntrace.step() calls, and whether a trace was written."""

    script: Path
    out: Path
    exit_code: int
    failure: str | None
    steps: int
    traced: bool


def _exit_status(exc: SystemExit) -> tuple[int, str | None]:
    """What `python script.py` would exit with for this SystemExit, and the failure line for a non-zero one."""
    code = exc.code
    if code is None or code == 0:
        return 0, None
    if isinstance(code, int):
        return code, f"exited with status {code}"
    return 1, f"exited with status 1: {code}"  # sys.exit("message") prints the message, exits 1


def _describe(exc: BaseException, script: Path) -> str:
    """`<script>:<line>: <Type>: <message>` for the deepest frame of the script itself, else without the line."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == script.resolve()]
    where = f":{lines[-1]}" if lines else ""
    message = f": {exc}" if str(exc) else ""
    return one_line(f"{script.name}{where}: raised {type(exc).__name__}{message}")


def run_script(
    script: str | Path,
    args: Sequence[str] = (),
    out: str | Path = "ntrace-capture",
    *,
    device: str = "auto",
    schedule: ProfileSchedule = ProfileSchedule(1, 1, 2),
    name: str | None = None,
    cores: str = "0",
    force: bool = False,
    progress: Progress = stderr_progress,
) -> ScriptRun:
    """Run `script` with `__name__ == "__main__"` and sys.argv = [script, *args] under a profiling session writing to `out`; sys.argv and sys.path are restored after."""
    script, out = Path(script), Path(out)
    if not script.is_file():
        raise CaptureError(script, "no such script")
    check_schedule(schedule)
    check_output(out, force)
    backend = make_backend(resolve_device(device), schedule, cores)
    session = Session(out, backend, schedule, name=name or script.stem, record_shapes=False, with_stack=False, cores=cores, whole=True, progress=progress)
    exit_code, failure = 0, None
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    with session:
        sys.argv = [str(script), *args]
        sys.path.insert(0, str(script.resolve().parent))  # as `python script.py` does, so its sibling modules import
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exc:
            exit_code, failure = _exit_status(exc)
            failure = failure and f"{script.name}: {failure}"
        except Exception as exc:  # the script's own failure: reported, not ntrace's
            exit_code, failure = 1, _describe(exc, script)
        finally:
            sys.argv, sys.path[:] = saved_argv, saved_path
    return ScriptRun(script, out, exit_code, failure, session.steps, session.exported)
