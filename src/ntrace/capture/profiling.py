"""Profile your own loop: `with ntrace.profiling(DIR) as prof: ... prof.step()` (or `ntrace.step()` from anywhere inside it), on Neuron, CUDA or the CPU.

The session drives torch's profiler through the Backend of the device (ntrace.capture.backends),
synchronizes the device at every step, and writes the layout `ntrace analyze` reads: the trace
(`DIR/trace.json`, or Neuron's `DIR/<instance>_pid_<pid>/<timestamp>/` files), `capture.json`
and `key_averages.json` (ntrace.capture.manifest). torch is imported only when a session is made.
"""

from __future__ import annotations

import platform
import shlex
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, Callable

from ntrace.capture.backends import Backend, ProfileSchedule, make_backend, resolve_device, torch_module
from ntrace.capture.manifest import KEY_AVERAGES_FILE, KEY_AVERAGES_SCHEMA, check_output, key_averages, write_json
from ntrace.errors import CaptureError
from ntrace.io.manifest import CAPTURE_FILE, CAPTURE_SCHEMA

Progress = Callable[[str], None]

#: The sessions entered and not yet left (at most one: torch runs one profiler at a time).
_ACTIVE: list[Session] = []


def stderr_progress(line: str) -> None:
    """Print a progress line on stderr."""
    print(f"ntrace: {line}", file=sys.stderr, flush=True)


def check_schedule(schedule: ProfileSchedule) -> None:
    """Reject a schedule torch cannot run: wait and warmup ≥ 0, active ≥ 1."""
    if min(schedule.wait, schedule.warmup) < 0 or schedule.active < 1:
        raise CaptureError(None, f"schedule wait={schedule.wait}, warmup={schedule.warmup}, active={schedule.active}: wait and warmup ≥ 0, active ≥ 1")


class Session:
    """One profiling session: torch's profiler on one device, the device synchronized at every `step()`.

    With `whole=True` (ntrace capture --script) everything up to the first `step()` is recorded too and
    kept only when no step follows, so a script that never calls `ntrace.step()` is profiled as one step.
    """

    def __init__(
        self,
        out: Path,
        backend: Backend,
        schedule: ProfileSchedule,
        *,
        name: str,
        record_shapes: bool,
        with_stack: bool,
        cores: str,
        whole: bool = False,
        progress: Progress = stderr_progress,
    ) -> None:
        self.out = out
        self.backend = backend
        self.schedule = schedule
        self.name = name
        self.record_shapes = record_shapes
        self.with_stack = with_stack
        self.cores = cores
        self.whole = whole
        self.progress = progress
        #: How many times step() was called.
        self.steps = 0
        #: Whether torch's profiler handed a recorded cycle to the exporter.
        self.exported = False
        self._prof: Any = None
        self._discard_next = False
        self._correlated: bool | None = None
        self._started = ""
        self._began = 0.0

    @property
    def device(self) -> str:
        """Where to put tensors for this session's device ("neuron", "cuda" or "cpu")."""
        return self.backend.tensor_device

    def _on_trace_ready(self, export: Callable[[Any], None]) -> Callable[[Any], None]:
        """The exporter, skipping the one cycle that `whole` recorded before the first step()."""

        def ready(prof: Any) -> None:
            if self._discard_next:
                self._discard_next = False
                return
            export(prof)
            self.exported = True

        return ready

    def _whole_schedule(self, schedule: Callable[[int], Any]) -> Callable[[int], Any]:
        """Record from the start (torch step 0) and save it at the first step() or the end; then the schedule, one step later."""
        record_and_save = torch_module().profiler.ProfilerAction.RECORD_AND_SAVE
        return lambda n: record_and_save if n == 0 else schedule(n - 1)

    def _phase(self, step: int) -> str:
        """What the schedule does in the user's step `step` (0-based)."""
        s = self.schedule
        if step < s.wait:
            return f"wait ({s.wait} step{'s' * (s.wait != 1)})"
        if step < s.wait + s.warmup:
            return f"warm-up ({s.warmup} step{'s' * (s.warmup != 1)})"
        if step < s.steps:
            return f"capture ({s.active} step{'s' * (s.active != 1)})"
        return "done (later steps are not recorded)"

    def __enter__(self) -> Session:
        if _ACTIVE:
            raise CaptureError(None, f"a profiling session is already active (writing {_ACTIVE[-1].out}); torch runs one profiler at a time")
        torch = torch_module()
        self.out.mkdir(parents=True, exist_ok=True)
        args, self._correlated = self.backend.profiler_args(self.out)
        args["record_shapes"] = self.record_shapes
        args["with_stack"] = self.with_stack
        args["on_trace_ready"] = self._on_trace_ready(args["on_trace_ready"])
        if self.whole:
            args["schedule"] = self._whole_schedule(args["schedule"])
        s = self.schedule
        if self.backend.device == "neuron":
            self.progress(f"correlate_device_time={'passed' if self._correlated else 'not accepted by this torch_neuronx; device time is not correlated'}")
        self.progress(f"profiling on {self.backend.device} into {self.out}: wait {s.wait}, warm-up {s.warmup}, capture {s.active} step(s)")
        self._started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._began = time.perf_counter()
        self._prof = torch.profiler.profile(**args)
        self._prof.start()
        _ACTIVE.append(self)
        self.progress("recording everything until the first ntrace.step(); the schedule starts there" if self.whole else self._phase(0))
        return self

    def step(self) -> None:
        """End the current step: synchronize the device (its work belongs to this step), then advance the profiler's schedule."""
        if self._prof is None or self not in _ACTIVE:
            raise CaptureError(None, "step() outside the profiling session's `with` block")
        self.backend.synchronize()
        if self.whole and self.steps == 0:
            self._discard_next = True  # the first step() ends the whole-run recording: not kept
        with warnings.catch_warnings():
            if self.whole:  # the dropped whole-run recording is a cycle of its own; dropping its events is the point
                warnings.filterwarnings("ignore", message="Warning: Profiler clears events at the end of each cycle")
            self._prof.step()
        self.steps += 1
        index = self.steps - 1 if self.whole else self.steps  # the schedule's step that begins now
        if index == 0 or self._phase(index) != self._phase(index - 1):
            self.progress(self._phase(index))

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        _ACTIVE.remove(self)
        try:
            if exc is None:
                self.backend.synchronize()
            self._prof.stop()
        finally:
            self._discard_next = False
            self._finish()

    def _finish(self) -> None:
        """Write key_averages.json (when a cycle was recorded) and capture.json; say what was written and how to analyze it."""
        s = self.schedule
        if self.whole and self.steps == 0:
            self.progress("ntrace.step() was never called: profiled as a whole (one step)")
        if self.exported:
            write_json(self.out / KEY_AVERAGES_FILE, {"schema": KEY_AVERAGES_SCHEMA, "variant": self.name, "unit": "us", "ops": key_averages(self._prof)})
        info = {
            "schema": CAPTURE_SCHEMA,
            "variant": self.name,
            "command": list(sys.argv),
            "device": self.backend.device,
            **self.backend.versions,
            "schedule": {"wait": s.wait, "warmup": s.warmup, "active": s.active, "steps": s.steps},
            "steps_taken": self.steps,
            "whole_run": self.whole and self.steps == 0,
            "record_shapes": self.record_shapes,
            "with_stack": self.with_stack,
            "cores": self.cores if self.backend.device == "neuron" else None,
            "host": platform.node(),
            "start_time": self._started,
            "seconds": round(time.perf_counter() - self._began, 3),
            "correlate_device_time": self._correlated,
        }
        write_json(self.out / CAPTURE_FILE, info)
        if self.exported:
            self.progress(f"wrote {self.out}; analyze it with: ntrace analyze {shlex.quote(str(self.out))}")
        else:
            self.progress(
                f"no trace written: {self.steps} step(s) taken, but the schedule records only after {s.wait + s.warmup} "
                f"(wait {s.wait}, warm-up {s.warmup}{', counted from the first ntrace.step()' if self.whole else ''}); capture.json is in {self.out}"
            )


def profiling(
    out: str | Path,
    device: str = "auto",
    wait: int = 1,
    warmup: int = 1,
    active: int = 2,
    record_shapes: bool = False,
    with_stack: bool = False,
    name: str | None = None,
    *,
    cores: str = "0",
    force: bool = False,
    progress: Progress = stderr_progress,
) -> Session:
    """A profiling session for `with`: torch's profiler on `device` (auto: neuron, else cuda, else cpu), one cycle of wait, warmup, active steps, written to `out`.

    Call `prof.step()` (or `ntrace.step()`) once per training step. `name` (default: the folder's
    name) labels the capture in analyze and compare; `cores` are the NeuronCores traced on Neuron;
    a non-empty `out` is refused unless `force`. Progress lines and the command to analyze the
    result go to stderr (`progress` replaces that).
    """
    out = Path(out)
    schedule = ProfileSchedule(wait, warmup, active)
    check_schedule(schedule)
    check_output(out, force)
    backend = make_backend(resolve_device(device), schedule, cores)
    return Session(out, backend, schedule, name=name or out.resolve().name, record_shapes=record_shapes, with_stack=with_stack, cores=cores, progress=progress)


def step() -> None:
    """Advance the active profiling session by one step; does nothing when none is active (so a script runs unchanged without ntrace)."""
    if _ACTIVE:
        _ACTIVE[-1].step()
