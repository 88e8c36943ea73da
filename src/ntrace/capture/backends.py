"""Capture backends: how each device is driven under torch's profiler — Neuron through torch_neuronx's documented API, CUDA and CPU through torch.profiler.

torch (and torch_neuronx) are imported only inside the functions that drive a capture, so the
analysis side of ntrace imports without them.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ntrace.errors import CaptureError

DEVICES = ("auto", "neuron", "cuda", "cpu")

INSTALL_TORCH = "torch is not installed: pip install 'ntrace[capture]'"
INSTALL_NEURON = (
    "torch_neuronx is not importable: capture on Neuron needs a Trainium (trn1/trn2) host with the Neuron SDK; "
    "install it there as the AWS Neuron setup guide says (a Neuron DLAMI has it, or "
    "pip install torch-neuronx --extra-index-url https://pip.repos.neuron.amazonaws.com), or use --device cpu/cuda"
)


@dataclass(frozen=True)
class ProfileSchedule:
    """torch.profiler.schedule(wait, warmup, active, repeat=1): one cycle, `steps` = wait + warmup + active; later steps are not recorded."""

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


def torch_module() -> Any:
    """The torch module, or a CaptureError that says how to install it."""
    try:
        with warnings.catch_warnings():
            # torch's CPU wheel does not need NumPy, but warns on import when it is missing (torch/_subclasses/functional_tensor.py)
            warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
            import torch
    except ImportError as exc:
        raise CaptureError(None, INSTALL_TORCH) from exc
    return torch


def neuronx_module() -> Any | None:
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
    torch = torch_module()
    neuronx = neuronx_module()
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
            "schedule": torch.profiler.schedule(wait=schedule.wait, warmup=schedule.warmup, active=schedule.active, repeat=1),
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
    torch = torch_module()
    if device == "cuda" and not torch.cuda.is_available():
        raise CaptureError(None, "--device cuda: torch.cuda.is_available() is False on this host (use --device cpu)")
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)

    def profiler_args(out: Path) -> tuple[dict[str, Any], bool | None]:
        trace = out / "trace.json"
        args = {
            "activities": activities,
            "schedule": torch.profiler.schedule(wait=schedule.wait, warmup=schedule.warmup, active=schedule.active, repeat=1),
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
    torch = torch_module()
    if device != "auto":
        return device
    if neuronx_module() is not None:
        return "neuron"
    return "cuda" if torch.cuda.is_available() else "cpu"


def make_backend(device: str, schedule: ProfileSchedule, cores: str) -> Backend:
    """The Backend for a resolved device name."""
    return neuron_backend(schedule, cores) if device == "neuron" else torch_backend(device, schedule)
