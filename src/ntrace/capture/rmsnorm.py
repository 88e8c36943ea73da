"""The RMSNorm study of the seed documents: naive ops, torch.rms_norm and naive + torch.compile, each profiled with the same input, weights, schedule and settings.

Every variant gets its own directory holding the trace, `capture.json` and `key_averages.json`
(ntrace.capture.manifest). On Neuron, each session's NEFF/NTFF pairs are then processed into
device profiles with neuron-explorer when it is installed (ntrace.capture.explorer).
"""

from __future__ import annotations

import platform
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import polars as pl

from ntrace.capture.backends import Backend, ProfileSchedule, make_backend, resolve_device, torch_module
from ntrace.capture.explorer import ENV_VAR, TIMEOUT_S, TOOL, explorer_version, find_explorer, process_session
from ntrace.capture.manifest import KEY_AVERAGES_FILE, KEY_AVERAGES_SCHEMA, check_output, key_averages, write_json
from ntrace.errors import CaptureError
from ntrace.io.manifest import CAPTURE_FILE, CAPTURE_SCHEMA

VARIANTS = ("naive", "fused", "compiled")
EPS = 1e-6
SEED = 0

Progress = Callable[[str], None]


def naive_rms_norm(x: Any, weight: Any, eps: float = EPS) -> Any:
    """RMSNorm from single ops, as in the seed: x*x, mean over the last dim, + eps, rsqrt, two multiplies."""
    squared = x * x
    mean = squared.mean(-1, keepdim=True)
    inv = (mean + eps).rsqrt()
    return x * inv * weight


def prepare_output(out: Path, force: bool) -> None:
    """Create the output directory; refuse one that exists and is not empty unless `force` (which never deletes anything)."""
    check_output(out, force)
    out.mkdir(parents=True, exist_ok=True)


def _variant_fn(torch: Any, variant: str, backend: Backend, width: int) -> Callable[[Any, Any], Any]:
    """The function one variant profiles."""
    if variant == "naive":
        return naive_rms_norm
    if variant == "fused":
        return lambda x, w: torch.rms_norm(x, (width,), w, EPS)
    compiled: Callable[[Any, Any], Any]
    if backend.compile_backend is None:
        compiled = torch.compile(naive_rms_norm, fullgraph=True)
    else:
        compiled = torch.compile(naive_rms_norm, backend=backend.compile_backend, fullgraph=True)
    return compiled


def _traces_in(out: Path) -> list[str]:
    """Framework traces written under a variant directory, relative to it."""
    from ntrace.io.discover import find_traces

    return [str(p.relative_to(out)) for p in find_traces(out)]


def _device_profiles(vdir: Path, variant: str, tool: str | None, version: str | None, timeout: float, progress: Progress) -> dict[str, Any]:
    """Process every NEFF/NTFF pair under a Neuron variant directory (or say how to); the `device_profiles` entry of capture.json.

    Paths in the entry are relative to the variant directory, so the capture can be moved; profiles already there are kept.
    """
    from ntrace.neuron.artifacts import find_sessions

    rows = []
    for session in find_sessions(vdir):
        rows += process_session(session, tool, timeout=timeout, progress=lambda line: progress(f"{variant}: {line}"))
    if not rows:
        progress(f"{variant}: no NEFF/NTFF pair under {vdir}, so no device profile to process "
                 "(torch_neuronx copies NEFFs into the profile directory only when neff_cache_dir or TORCH_NEURONX_NEFF_CACHE_DIR is set)")
    for row in rows:
        if row["status"] == "written":
            progress(f"{variant}: device profile {row['dir']}")
        elif row["status"] == "kept":
            progress(f"{variant}: device profile {row['dir']} exists; kept")
        elif row["status"] == "failed":
            progress(f"warning: {row['problem']}")
        else:  # "not run": the line names the command that would do it
            progress(str(row["problem"]))
    base = vdir.absolute()
    profiles = [
        {"neff": str(Path(r["neff"]).relative_to(base)), "ntff": str(Path(r["ntff"]).relative_to(base)), "dir": str(Path(r["dir"]).relative_to(base)),
         "ok": r["ok"], "status": r["status"], "problem": r["problem"]}
        for r in rows
    ]
    return {"tool": tool, "version": version, "profiles": profiles}


def _check_options(variants: tuple[str, ...], shape: tuple[int, ...], schedule: ProfileSchedule) -> None:
    """Reject options that cannot describe a capture, before anything is imported or written."""
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise CaptureError(None, f"--variants: unknown {', '.join(unknown) or '(none given)'}; expected some of {', '.join(VARIANTS)}")
    if not shape or any(n < 1 for n in shape):
        raise CaptureError(None, f"--shape {shape}: expected positive sizes like 4,512")
    if min(schedule.wait, schedule.warmup) < 0 or schedule.active < 1:
        raise CaptureError(None, f"--schedule {schedule.wait},{schedule.warmup},{schedule.active}: wait and warmup ≥ 0, active ≥ 1")


def _profile_variant(torch: Any, variant: str, vdir: Path, inputs: tuple[Any, Any], backend: Backend, schedule: ProfileSchedule, progress: Progress) -> bool | None:
    """Warm up (compile) once, then run the schedule's steps under the profiler, synchronizing in every step.

    Writes key_averages.json; returns whether device time was correlated (None off Neuron).
    """
    fn = _variant_fn(torch, variant, backend, inputs[0].shape[-1])
    first = f"compile (torch.compile fullgraph=True, backend {backend.compile_backend or 'default'})" if variant == "compiled" else "warm-up (1 call)"
    progress(f"{variant}: {first}")
    fn(*inputs)
    backend.synchronize()
    args, correlated = backend.profiler_args(vdir)
    if backend.device == "neuron":
        progress(f"{variant}: correlate_device_time={'passed' if correlated else 'not accepted by this torch_neuronx; device time is not correlated'}")
    progress(f"{variant}: capture on {backend.device} ({schedule.steps} steps: wait {schedule.wait}, warmup {schedule.warmup}, active {schedule.active})")
    with torch.profiler.profile(**args) as prof:
        for _ in range(schedule.steps):
            fn(*inputs)
            backend.synchronize()
            prof.step()
    write_json(vdir / KEY_AVERAGES_FILE, {"schema": KEY_AVERAGES_SCHEMA, "variant": variant, "unit": "us", "ops": key_averages(prof)})
    return correlated


def capture_study(
    out: str | Path,
    *,
    device: str = "auto",
    variants: tuple[str, ...] = VARIANTS,
    shape: tuple[int, ...] = (4, 512),
    dtype: str = "bfloat16",
    schedule: ProfileSchedule = ProfileSchedule(),
    cores: str = "0",
    force: bool = False,
    device_profiles: bool = True,
    explorer_timeout: float = TIMEOUT_S,
    backend: Backend | None = None,
    progress: Progress = lambda line: None,
) -> pl.DataFrame:
    """Capture each variant into `out/<variant>/`; one row per variant: variant, dir, traces, correlate_device_time, seconds.

    On Neuron with `device_profiles`, each session's NEFF/NTFF pairs then go through neuron-explorer
    (at most `explorer_timeout` s per pair), or the commands to do so are printed when it is absent.
    `backend` replaces the one `device` selects (tests inject a Neuron backend whose tensors stay on the CPU).
    """
    out = Path(out)
    _check_options(variants, shape, schedule)
    check_output(out, force)  # before torch is imported (seconds), so a wrong -o fails at once
    torch = torch_module()
    torch_dtype = getattr(torch, dtype, None)
    if not isinstance(torch_dtype, torch.dtype):
        raise CaptureError(None, f"--dtype {dtype}: not a torch dtype (e.g. bfloat16, float32)")
    if backend is None:
        backend = make_backend(resolve_device(device), schedule, cores)
    process = backend.device == "neuron" and device_profiles
    tool = find_explorer() if process else None
    version = explorer_version(tool) if tool is not None else None
    if process:
        found = f"{tool} ({version or '--version said nothing'})" if tool is not None else f"not found on PATH (nor ${ENV_VAR})"
        progress(f"{TOOL}: {found}")
    prepare_output(out, force)

    generator = torch.Generator().manual_seed(SEED)
    x = torch.randn(shape, dtype=torch_dtype, generator=generator)
    w = torch.randn(shape[-1], dtype=torch_dtype, generator=generator)
    inputs = (x.to(backend.tensor_device), w.to(backend.tensor_device))
    rows = []
    for variant in variants:
        began = time.perf_counter()
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        vdir = out / variant
        vdir.mkdir(exist_ok=True)
        correlated = _profile_variant(torch, variant, vdir, inputs, backend, schedule, progress)
        info = {
            "schema": CAPTURE_SCHEMA,
            "variant": variant,
            "device": backend.device,
            **backend.versions,
            "shape": list(shape),
            "dtype": dtype,
            "schedule": {"wait": schedule.wait, "warmup": schedule.warmup, "active": schedule.active, "steps": schedule.steps},
            "cores": cores,
            "compile_backend": (backend.compile_backend or "default") if variant == "compiled" else None,
            "host": platform.node(),
            "start_time": started,
            "correlate_device_time": correlated,
        }
        if process:
            info["device_profiles"] = _device_profiles(vdir, variant, tool, version, explorer_timeout, progress)
        write_json(vdir / CAPTURE_FILE, info)
        traces = _traces_in(vdir)
        if len(traces) > 1:
            progress(f"{variant}: {vdir} holds {len(traces)} traces; earlier captures are kept (--force deletes nothing)")
        rows.append({"variant": variant, "dir": str(vdir), "traces": traces, "correlate_device_time": correlated, "seconds": time.perf_counter() - began})
    schema = pl.Schema({"variant": pl.String(), "dir": pl.String(), "traces": pl.List(pl.String()), "correlate_device_time": pl.Boolean(), "seconds": pl.Float64()})
    return pl.DataFrame(rows, schema=schema)
