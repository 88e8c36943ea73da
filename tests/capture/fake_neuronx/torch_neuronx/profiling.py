"""The fake `torch_neuronx.profiling`: NeuronConfig, ProfileMode and NeuronProfiler with the documented signatures, recording calls."""

from __future__ import annotations

import enum
import os
import re
import shutil
from pathlib import Path
from typing import Any

from torch._C._profiler import _ExperimentalConfig

from torch_neuronx import CALLS

#: capture_enabled_for_nc takes a core list such as "0,1,2-5" (formats.md §1).
_CORES = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")

#: A fixture session (fixtures/README.md) whose NEFF and session-mode NTFF the exporter copies in DEVICE mode.
_DEVICE_FILES = Path(__file__).resolve().parents[4] / "fixtures" / "rmsnorm" / "fused" / "i-0123456789abcdef0_pid_48377" / "20260115_093012"


class ProfileMode(enum.Enum):
    """The documented profile modes and what each writes."""

    DEVICE = "device"
    RUNTIME = "runtime"
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


class _Config(_ExperimentalConfig):
    """Validates the documented fields; subclasses torch's _ExperimentalConfig so the real torch.profiler accepts it."""

    def _setup(self, modes: list[ProfileMode], profile_output_dir: str, capture_enabled_for_nc: str, kwargs: dict[str, Any]) -> None:
        super().__init__()
        if not modes or not all(isinstance(m, ProfileMode) for m in modes):
            raise ValueError(f"modes must be ProfileMode members, got {modes!r}")
        if not isinstance(capture_enabled_for_nc, str) or not _CORES.match(capture_enabled_for_nc):
            raise ValueError(f"capture_enabled_for_nc must be a core list like '0,1,2-5', got {capture_enabled_for_nc!r}")
        self.modes = list(modes)
        self.profile_output_dir = profile_output_dir
        self.capture_enabled_for_nc = capture_enabled_for_nc
        CALLS.append(("NeuronConfig", {"modes": list(modes), "profile_output_dir": profile_output_dir, "capture_enabled_for_nc": capture_enabled_for_nc, **kwargs}))


class NeuronConfig(_Config):
    """A version that accepts correlate_device_time (as the seed uses it)."""

    def __init__(
        self,
        modes: list[ProfileMode] | None = None,
        profile_output_dir: str = "./profile_output",
        capture_enabled_for_nc: str = "0",
        max_events_per_nc: int | None = None,
        neff_cache_dir: str | None = None,
        correlate_device_time: bool = False,
    ) -> None:
        self._setup(modes or [ProfileMode.DEVICE, ProfileMode.RUNTIME], profile_output_dir, capture_enabled_for_nc, {"correlate_device_time": correlate_device_time})


class NeuronConfigWithoutCorrelate(_Config):
    """A version whose parameter list is exactly the one NEURON-DOCS lists (no correlate_device_time)."""

    def __init__(
        self,
        modes: list[ProfileMode] | None = None,
        profile_output_dir: str = "./profile_output",
        capture_enabled_for_nc: str = "0",
        max_events_per_nc: int | None = None,
        neff_cache_dir: str | None = None,
    ) -> None:
        self._setup(modes or [ProfileMode.DEVICE, ProfileMode.RUNTIME], profile_output_dir, capture_enabled_for_nc, {})


class NeuronProfiler:
    """Exports the framework trace as trace.json under <dir>/<instance>_pid_<pid>/<timestamp>/, like the documented layout.

    With ProfileMode.DEVICE it also writes the .neff and .ntff that mode produces (copies of a fixture's
    neff_<hash>_vnc_0.neff and profile_nc_0_session_0.ntff), so the pair can be post-processed.
    """

    def __init__(self, config: _Config) -> None:
        if not isinstance(config, _Config):
            raise TypeError(f"NeuronProfiler takes a NeuronConfig, got {type(config).__name__}")
        self.config = config
        CALLS.append(("NeuronProfiler", config))

    def export_trace(self, prof: Any) -> None:
        """The on_trace_ready callback: write the framework trace beside (fake) Neuron system traces."""
        folder = Path(self.config.profile_output_dir) / f"i-0fake_pid_{os.getpid()}" / "1700000000"
        folder.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(folder / "trace.json"))
        (folder / "ntrace.pb").write_bytes(b"")
        if ProfileMode.DEVICE in self.config.modes:
            for source in sorted([*_DEVICE_FILES.glob("*.neff"), *_DEVICE_FILES.glob("*.ntff")]):
                shutil.copyfile(source, folder / source.name)
        CALLS.append(("export_trace", str(folder / "trace.json")))
