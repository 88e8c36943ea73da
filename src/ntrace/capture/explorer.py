"""Processed device profiles: run Neuron Explorer's documented CLI on each NEFF/NTFF pair of a capture session.

`neuron-explorer view -n <neff> -s <ntff> --output-format parquet --output-file <dir>` turns one
device profile into a directory of `<Table>.parquet` files (NEURON-DOCS, tools/neuron-explorer).
Each pair's directory is `<session>/device_profiles/<neff stem>/`, as the fixtures lay it out; when
one NEFF pairs with several NTFFs, the first NTFF (in name order) gets `<neff stem>` and each
further one `<neff stem>__<ntff stem>`. The tool writes into a fresh path inside a hidden
temporary directory beside the target, and the result is renamed into place only when the tool
exited 0 and wrote at least one Parquet table, so no half-written profile is ever left; a failure
is a row with the reason, never an exception. The tool is never run through a shell.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypedDict

from ntrace.errors import CaptureError
from ntrace.neuron.device.layout import DEVICE_PROFILES
from ntrace.neuron.artifacts import Session

TOOL = "neuron-explorer"
#: An executable (a path, or a name looked up on PATH) used instead of `neuron-explorer` on PATH.
ENV_VAR = "NTRACE_NEURON_EXPLORER"
#: Seconds one `view` may run before it is killed (a large NTFF takes minutes).
TIMEOUT_S = 600.0
#: Seconds `--version` may take.
VERSION_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ProfileJob:
    """One NEFF/NTFF pair of a session and the directory its processed profile belongs in (absolute paths)."""

    neff: Path
    ntff: Path
    out: Path


class ProfileRow(TypedDict):
    """What became of one pair: status "written", "kept" (already there), "failed" or "not run" (no tool); `ok` when the directory holds a profile."""

    neff: str
    ntff: str
    dir: str
    ok: bool
    status: str
    problem: str | None


def find_explorer() -> str | None:
    """The neuron-explorer to run: $NTRACE_NEURON_EXPLORER when set (an error if it is not an executable), else the one on PATH, else None."""
    override = os.environ.get(ENV_VAR)
    if override:
        found = shutil.which(override)
        if found is None:
            raise CaptureError(None, f"{ENV_VAR}={override}: not an executable file (unset it to use {TOOL} from PATH)")
        return found
    return shutil.which(TOOL)


def explorer_version(tool: str, timeout: float = VERSION_TIMEOUT_S) -> str | None:
    """The first line `<tool> --version` prints, stripped, recorded so a profile says which tool made it; None when it fails."""
    try:
        done = subprocess.run([tool, "--version"], capture_output=True, text=True, errors="replace", timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


def profile_jobs(session: Session) -> list[ProfileJob]:
    """Every pair of the session with its output directory, in the pairs' (neff, ntff) order."""
    jobs: list[ProfileJob] = []
    taken: set[Path] = set()
    base = session.dir.absolute() / DEVICE_PROFILES
    for neff_text, ntff_text in session.pairs.select("neff", "ntff").iter_rows():
        neff, ntff = Path(neff_text).absolute(), Path(ntff_text).absolute()
        out = base / neff.stem
        if out in taken:
            out = base / f"{neff.stem}__{ntff.stem}"
        taken.add(out)
        jobs.append(ProfileJob(neff, ntff, out))
    return jobs


def view_argv(job: ProfileJob, tool: str = TOOL, out: Path | None = None) -> list[str]:
    """The documented command for one pair, writing to `out` (default: the job's own directory)."""
    target = job.out if out is None else out
    return [tool, "view", "-n", str(job.neff), "-s", str(job.ntff), "--output-format", "parquet", "--output-file", str(target)]


def command_for(job: ProfileJob, tool: str = TOOL) -> str:
    """The command for one pair as one shell-quoted line, for the user to run when the tool is not installed here."""
    return shlex.join(view_argv(job, tool))


def process_session(
    session: Session,
    tool: str | None,
    *,
    timeout: float = TIMEOUT_S,
    force: bool = False,
    progress: Callable[[str], None] = lambda line: None,
) -> list[ProfileRow]:
    """Process every pair of the session with `tool` (None: not installed, each row then says the command to run).

    An existing profile directory is kept unless `force`; `progress` hears each command before it runs.
    """
    rows: list[ProfileRow] = []
    for job in profile_jobs(session):
        problem: str | None = None
        if (job.out.exists() or job.out.is_symlink()) and not force:
            status = "kept"
        elif tool is None:
            status, problem = "not run", f"{TOOL} not found: to process {job.neff} with {job.ntff} run: {command_for(job)}"
        else:
            progress(shlex.join(view_argv(job, tool)))
            problem = _run(job, tool, timeout)
            status = "written" if problem is None else "failed"
        rows.append(ProfileRow(neff=str(job.neff), ntff=str(job.ntff), dir=str(job.out), ok=status in ("written", "kept"), status=status, problem=problem))
    return rows


def _run(job: ProfileJob, tool: str, timeout: float) -> str | None:
    """Run `view` for one pair into a temporary directory and rename the result into place; the problem in words, or None."""
    parent = job.out.parent
    made_parent = not parent.exists()
    try:
        parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{job.out.name}.", suffix=".part", dir=parent))
    except OSError as exc:
        return f"{job.out}: cannot be written ({exc.strerror or exc})"
    try:
        fresh = scratch / job.out.name
        problem = _invoke(view_argv(job, tool, fresh), timeout)
        if problem is None and not (fresh.is_dir() and any(fresh.glob("*.parquet"))):
            problem = "exited 0 but wrote no Parquet table into its --output-file directory"
        if problem is not None:
            return f"{TOOL} failed on {job.neff} with {job.ntff}: {problem}"
        if job.out.exists() or job.out.is_symlink():
            os.replace(job.out, scratch / "previous")  # force: the old profile goes away with the scratch directory
        os.replace(fresh, job.out)
        return None
    except OSError as exc:
        return f"{job.out}: cannot be written ({exc.strerror or exc})"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if made_parent:
            with contextlib.suppress(OSError):
                parent.rmdir()  # only when it is still empty: a failed first profile leaves the session as it was


def _invoke(argv: list[str], timeout: float) -> str | None:
    """Run one command without a shell, in its own process group (killed whole on timeout); the problem in words, or None."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    except OSError as exc:
        return f"could not be started ({exc.strerror or exc})"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return _with_last_line(f"timed out after {timeout:g} s and was killed", err, out)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    if proc.returncode == 0:
        return None
    what = f"exited {proc.returncode}" if proc.returncode > 0 else f"was killed by signal {-proc.returncode}"
    return _with_last_line(what, err, out)


def _with_last_line(what: str, err: str, out: str) -> str:
    """`what`, then the last non-blank line the tool wrote to stderr (else stdout), which usually says why."""
    for text in (err, out):
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            return f"{what}: {lines[-1]}"
    return what
