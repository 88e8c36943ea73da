"""A fake `torch_neuronx` for tests only: records every call ntrace makes, so tests can check it against formats.md §1.

Put `tests/fake_neuronx` on sys.path to import it. Nothing here runs on a device: tensors stay on the CPU.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.0.0+fake"

#: Every recorded call, in order: ("synchronize",), ("NeuronConfig", kwargs), ("NeuronProfiler", config), ("export_trace", path).
CALLS: list[tuple[Any, ...]] = []


def synchronize() -> None:
    """Record a device synchronize (the real one waits for the NeuronCore to finish)."""
    CALLS.append(("synchronize",))
