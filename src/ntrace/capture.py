"""`ntrace capture`: profile the seed study's three RMSNorm variants — Neuron profiler on Trainium, torch.profiler on CPU/CUDA.

torch (and torch_neuronx) are imported only inside the functions that drive a capture, so the
analysis side of ntrace imports without them. Every variant gets the same input, weights,
schedule and profiler settings, and its own directory holding the trace, `capture.json`
(what was run, where, with which versions) and `key_averages.json` (what torch's own
`key_averages()` reported during the run: the oracle for ntrace's numbers).
"""

from __future__ import annotations

import inspect
import platform
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import orjson
import polars as pl

from ntrace.errors import CaptureError
from ntrace.manifest import CAPTURE_FILE, CAPTURE_SCHEMA, find_manifest
from ntrace.output import write_bytes

VARIANTS = ("naive", "fused", "compiled")
DEVICES = ("auto", "neuron", "cuda", "cpu")
EPS = 1e-6
SEED = 0
KEY_AVERAGES_FILE = "key_averages.json"
#: Schema tag of key_averages.json; neither side file may hold a "traceEvents" or "ph" key (discover.py would take it for a trace).
KEY_AVERAGES_SCHEMA = "ntrace.key_averages/1"

INSTALL_TORCH = "torch is not installed: pip install 'ntrace[capture]'"
INSTALL_NEURON = (
    "torch_neuronx is not importable: capture on Neuron needs a Trainium (trn1/trn2) host with the Neuron SDK; "
    "install it there as the AWS Neuron setup guide says (a Neuron DLAMI has it, or "
    "pip install torch-neuronx --extra-index-url https://pip.repos.neuron.amazonaws.com), or use --device cpu/cuda"
)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ProfileSchedule:
    """torch.profiler.schedule(wait, warmup, active), run once: `steps` = wait + warmup + active."""

    wait: int = 2
    warmup: int = 1
    active: int = 1

    @property
    def steps(self) -> int:
        """How many profiler steps one capture runs."""
        return self.wait + self.warmup + self.active


@dataclass
class Backend:
    """How one device is driven: where tensors live, how to wait for it, how to compile, which profiler arguments."""

    device: str
    tensor_device: str
    compile_backend: str | None  # None: torch.compile's default
    synchronize: Callable[[], None]
    profiler_args: Callable[[Path], tuple[dict[str, Any], bool | None]]  # variant dir -> (kwargs, correlate_device_time)
    versions: dict[str, str | None] = field(default_factory=dict)


def naive_rms_norm(x: Any, weight: Any, eps: float = EPS) -> Any:
    """RMSNorm from single ops, as in the seed: x*x, mean over the last dim, + eps, rsqrt, two multiplies."""
    squared = x * x
    mean = squared.mean(-1, keepdim=True)
    inv = (mean + eps).rsqrt()
    return x * inv * weight


def _torch() -> Any:
    """The torch module, or a CaptureError that says how to install it."""
    try:
        import torch
    except ImportError as exc:
        raise CaptureError(None, INSTALL_TORCH) from exc
    return torch


def _neuronx() -> Any | None:
    """The torch_neuronx module when it imports, else None."""
    try:
        import torch_neuronx
    except ImportError:
        return None
    return torch_neuronx


def _accepts(fn: Any, name: str) -> bool | None:
    """Whether `fn`'s signature accepts keyword `name`; None when the signature cannot be read."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def neuron_backend(schedule: ProfileSchedule, cores: str, tensor_device: str = "neuron") -> Backend:
    """The documented torch_neuronx.profiling path (formats.md §1); `tensor_device` is injectable so a fake runs on CPU."""
    torch = _torch()
    neuronx = _neuronx()
    if neuronx is None:
        raise CaptureError(None, INSTALL_NEURON)
    try:
        from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode
    except ImportError as exc:
        version = getattr(neuronx, "__version__", "unknown version")
        raise CaptureError(None, f"torch_neuronx {version} has no torch_neuronx.profiling (NeuronConfig, ProfileMode, NeuronProfiler): the PyTorch-native profiler needs a newer Neuron SDK") from exc

    def profiler_args(out: Path) -> tuple[dict[str, Any], bool | None]:
        base = {"modes": [ProfileMode.DEVICE, ProfileMode.RUNTIME], "profile_output_dir": str(out), "capture_enabled_for_nc": cores}
        correlated = _accepts(NeuronConfig, "correlate_device_time") is not False
        config = None
        if correlated:
            try:
                config = NeuronConfig(**base, correlate_device_time=True)
            except TypeError:
                correlated = False
        if config is None:
            config = NeuronConfig(**base)
        args = {
            "activities": [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1],
            "schedule": torch.profiler.schedule(wait=schedule.wait, warmup=schedule.warmup, active=schedule.active),
            "on_trace_ready": NeuronProfiler(config).export_trace,
            "experimental_config": config,
            "record_shapes": True,
        }
        return args, correlated

    device_module = getattr(torch, "neuron", None)
    sync = getattr(device_module, "synchronize", None) or getattr(neuronx, "synchronize", None)
    if sync is None:
        raise CaptureError(None, "torch_neuronx offers neither torch.neuron.synchronize nor torch_neuronx.synchronize")
    versions = {"torch": torch.__version__, "torch_neuronx": getattr(neuronx, "__version__", None)}
    return Backend("neuron", tensor_device, "neuron", sync, profiler_args, versions)


def torch_backend(device: str, schedule: ProfileSchedule, tensor_device: str | None = None) -> Backend:
    """Plain torch.profiler on CPU or CUDA: same schedule, device synchronized, trace exported as trace.json.

    `tensor_device` (default: `device`) is injectable so the CUDA wiring can be tested on a CPU-only host.
    """
    torch = _torch()
    if device == "cuda" and not torch.cuda.is_available():
        raise CaptureError(None, "--device cuda: torch.cuda.is_available() is False on this host (use --device cpu)")
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)

    def profiler_args(out: Path) -> tuple[dict[str, Any], bool | None]:
        trace = out / "trace.json"
        args = {
            "activities": activities,
            "schedule": torch.profiler.schedule(wait=schedule.wait, warmup=schedule.warmup, active=schedule.active),
            "on_trace_ready": lambda prof: prof.export_chrome_trace(str(trace)),
            "record_shapes": True,
        }
        return args, None

    sync = torch.cuda.synchronize if device == "cuda" else torch.cpu.synchronize
    return Backend(device, tensor_device or device, None, sync, profiler_args, {"torch": torch.__version__, "torch_neuronx": None})


def resolve_device(device: str) -> str:
    """auto → neuron if torch_neuronx imports, else cuda if available, else cpu; anything else is checked and returned."""
    if device not in DEVICES:
        raise CaptureError(None, f"--device {device}: expected one of {', '.join(DEVICES)}")
    torch = _torch()
    if device != "auto":
        return device
    if _neuronx() is not None:
        return "neuron"
    return "cuda" if torch.cuda.is_available() else "cpu"


def make_backend(device: str, schedule: ProfileSchedule, cores: str) -> Backend:
    """The Backend for a resolved device name."""
    return neuron_backend(schedule, cores) if device == "neuron" else torch_backend(device, schedule)


def prepare_output(out: Path, force: bool) -> None:
    """Create the output directory; refuse one that exists and is not empty unless `force` (which never deletes anything)."""
    if out.exists() and not out.is_dir():
        raise CaptureError(out, "exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise CaptureError(out, "exists and is not empty; pass --force to overwrite the files capture writes (nothing else is deleted)")
    out.mkdir(parents=True, exist_ok=True)


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write a side file atomically (temporary name, then rename), so an interrupted capture leaves no half file."""
    write_bytes(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


def _key_averages(prof: Any) -> list[dict[str, Any]]:
    """Per op, what torch's key_averages() reports (µs, torch's own numbers)."""
    return [
        {
            "name": e.key,
            "count": e.count,
            "self_cpu_time_total": e.self_cpu_time_total,
            "cpu_time_total": e.cpu_time_total,
            "self_device_time_total": e.self_device_time_total,
            "device_time_total": e.device_time_total,
        }
        for e in prof.key_averages()
    ]


def _variant_fn(torch: Any, variant: str, backend: Backend, width: int) -> Callable[[Any, Any], Any]:
    """The function one variant profiles."""
    if variant == "naive":
        return naive_rms_norm
    if variant == "fused":
        return lambda x, w: torch.rms_norm(x, (width,), w, EPS)
    if backend.compile_backend is None:
        return torch.compile(naive_rms_norm, fullgraph=True)
    return torch.compile(naive_rms_norm, backend=backend.compile_backend, fullgraph=True)


def _traces_in(out: Path) -> list[str]:
    """Framework traces written under a variant directory, relative to it."""
    from ntrace.discover import find_traces

    return [str(p.relative_to(out)) for p in find_traces(out)]


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
    _write_json(vdir / KEY_AVERAGES_FILE, {"schema": KEY_AVERAGES_SCHEMA, "variant": variant, "unit": "us", "ops": _key_averages(prof)})
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
    backend: Backend | None = None,
    progress: Progress = lambda line: None,
) -> pl.DataFrame:
    """Capture each variant into `out/<variant>/`; one row per variant: variant, dir, traces, correlate_device_time, seconds.

    `backend` replaces the one `device` selects (tests inject a Neuron backend whose tensors stay on the CPU).
    """
    out = Path(out)
    _check_options(variants, shape, schedule)
    torch = _torch()
    torch_dtype = getattr(torch, dtype, None)
    if not isinstance(torch_dtype, torch.dtype):
        raise CaptureError(None, f"--dtype {dtype}: not a torch dtype (e.g. bfloat16, float32)")
    if backend is None:
        backend = make_backend(resolve_device(device), schedule, cores)
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
        _write_json(vdir / CAPTURE_FILE, info)
        traces = _traces_in(vdir)
        if len(traces) > 1:
            progress(f"{variant}: {vdir} holds {len(traces)} traces; earlier captures are kept (--force deletes nothing)")
        rows.append({"variant": variant, "dir": str(vdir), "traces": traces, "correlate_device_time": correlated, "seconds": time.perf_counter() - began})
    schema = {"variant": pl.String, "dir": pl.String, "traces": pl.List(pl.String), "correlate_device_time": pl.Boolean, "seconds": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def capture_info(trace: str | Path) -> dict[str, Any] | None:
    """The capture.json that `ntrace capture` wrote for a trace (in its folder or a few above, as Neuron nests traces), or None."""
    doc = find_manifest(trace)
    return doc if doc is not None and doc.get("schema") == CAPTURE_SCHEMA else None
