"""Memory limits: the available figure honours NTRACE_MEMORY_LIMIT, and a trace that would not fit fails early naming sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ntrace.errors import InputError
from ntrace.limits import DECODE_FACTOR, available_memory, check_fits, size


def test_size_is_readable() -> None:
    assert [size(n) for n in (12, 2048, 5 << 20, 3 << 30)] == ["12 bytes", "2.0 KiB", "5.0 MiB", "3.0 GiB"]


@pytest.mark.parametrize(("value", "expected"), [("4096", 4096), ("4K", 4096), ("64M", 64 << 20), ("2GiB", 2 << 30), ("1g", 1 << 30)])
def test_env_limit_caps_available_memory(value: str, expected: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NTRACE_MEMORY_LIMIT", value)
    assert available_memory() == expected


def test_unset_or_unreadable_env_means_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NTRACE_MEMORY_LIMIT", raising=False)
    machine = available_memory()
    monkeypatch.setenv("NTRACE_MEMORY_LIMIT", "lots")
    assert available_memory() == machine > 0


def test_check_fits_names_both_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NTRACE_MEMORY_LIMIT", "1M")
    check_fits(Path("t.json"), (1 << 20) // DECODE_FACTOR)  # exactly fits
    with pytest.raises(InputError, match=r"^t.json: is too large to analyze here: 512.0 KiB of JSON needs about 2.0 MiB of memory, only 1.0 MiB is available"):
        check_fits(Path("t.json"), 512 << 10)
