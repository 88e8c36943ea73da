"""`ntrace capture --inspect -o DIR -- COMMAND…`: run any command with the Neuron runtime's profiling switched on through its environment variables.

The variables and their values are the ones tools/neuron-explorer/environment-variables.rst of the
Neuron SDK documents: NEURON_RT_INSPECT_ENABLE=1 (the master switch), NEURON_RT_INSPECT_OUTPUT_DIR,
NEURON_RT_INSPECT_SYSTEM_PROFILE=1 and NEURON_RT_INSPECT_DEVICE_PROFILE=model|session. The runtime,
not ntrace, writes the profile (model mode: `<instance>_pid_<pid>/<hash>_instid_0_vnc_0.ntff` beside
`neff_<hash>.neff`), so this works for any framework on the Neuron runtime, and only there.
"""

from __future__ import annotations

import os
import platform
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from ntrace.capture.backends import neuronx_module
from ntrace.capture.manifest import check_output, write_json
from ntrace.capture.profiling import Progress, stderr_progress
from ntrace.errors import CaptureError
from ntrace.io.manifest import CAPTURE_FILE, CAPTURE_SCHEMA

#: NEURON_RT_INSPECT_DEVICE_PROFILE values: model captures the first execution per NEFF per core; session all device activity in one NTFF.
DEVICE_PROFILES = ("model", "session")


@dataclass(frozen=True)
class InspectRun:
    """How a command run with runtime profiling ended: its exit status, the failure line (None on success), the variables it was given."""

    command: tuple[str, ...]
    out: Path
    exit_code: int
    failure: str | None
    environment: dict[str, str]


def inspect_environment(out: Path, device_profile: str = "model") -> dict[str, str]:
    """The NEURON_RT_INSPECT_* variables that make the Neuron runtime write a system and a device profile into `out`."""
    if device_profile not in DEVICE_PROFILES:
        raise CaptureError(None, f"--device-profile {device_profile}: expected one of {', '.join(DEVICE_PROFILES)}")
    return {
        "NEURON_RT_INSPECT_ENABLE": "1",
        "NEURON_RT_INSPECT_OUTPUT_DIR": str(out.resolve()),
        "NEURON_RT_INSPECT_SYSTEM_PROFILE": "1",
        "NEURON_RT_INSPECT_DEVICE_PROFILE": device_profile,
    }


def neuron_missing(dev: Path = Path("/dev")) -> str | None:
    """Why this host has no Neuron runtime to honour the variables (no /dev/neuron* device, no torch_neuronx), or None when it has Neuron devices."""
    if any(dev.glob("neuron[0-9]*")):
        return None
    sdk = "torch_neuronx imports" if neuronx_module() is not None else "torch_neuronx does not import"
    return (
        f"no Neuron device here ({dev}/neuron* absent; {sdk}): the NEURON_RT_INSPECT_* variables are read by the Neuron runtime, "
        "which runs only on Trainium/Inferentia hosts, so the command will most likely write no profile"
    )


def _status(returncode: int, program: str) -> tuple[int, str | None]:
    """The exit status to pass on (128 + N for a signal, as shells do) and the failure line."""
    if returncode == 0:
        return 0, None
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        return 128 - returncode, f"{program}: killed by signal {name}"
    return returncode, f"{program}: exited with status {returncode}"


def run_inspect(
    command: Sequence[str],
    out: str | Path = "ntrace-capture",
    *,
    device_profile: str = "model",
    name: str | None = None,
    force: bool = False,
    dev: Path = Path("/dev"),
    progress: Progress = stderr_progress,
) -> InspectRun:
    """Run `command` (no shell) with runtime profiling into `out` and write `out/capture.json`; off Neuron it refuses unless `force`, which only warns."""
    out, command = Path(out), tuple(command)
    if not command:
        raise CaptureError(None, "--inspect needs a command after --, e.g. ntrace capture --inspect -o DIR -- python train.py")
    env = inspect_environment(out, device_profile)
    check_output(out, force)
    missing = neuron_missing(dev)
    if missing is not None and not force:
        raise CaptureError(None, f"{missing}; pass --force to run it anyway")
    if missing is not None:
        progress(f"warning: {missing}")
    out.mkdir(parents=True, exist_ok=True)
    progress(f"running {shlex.join(command)} with {' '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())}")
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    began = time.perf_counter()
    try:
        done = subprocess.run(command, env={**os.environ, **env}, check=False)
    except OSError as exc:
        raise CaptureError(command[0], f"cannot run: {exc.strerror or exc}") from exc
    exit_code, failure = _status(done.returncode, Path(command[0]).name)
    write_json(
        out / CAPTURE_FILE,
        {
            "schema": CAPTURE_SCHEMA,
            "variant": name or out.resolve().name,
            "command": list(command),
            "device": "neuron",
            "mode": "inspect",
            "environment": env,
            "exit_code": exit_code,
            "host": platform.node(),
            "start_time": started,
            "seconds": round(time.perf_counter() - began, 3),
        },
    )
    progress(f"wrote {out}; look at it with: ntrace artifacts {shlex.quote(str(out))} (and ntrace analyze {shlex.quote(str(out))})")
    return InspectRun(command, out, exit_code, failure, env)
