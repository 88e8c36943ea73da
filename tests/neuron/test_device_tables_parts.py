"""A device-profile table split into numbered parts: a missing part is named, and a part number near 2**62 (a hostile file name) is counted, not listed."""

from __future__ import annotations

from pathlib import Path

from ntrace.neuron.device.tables import read_table
from ntrace.units import first_missing


def test_a_huge_part_number_is_counted_not_listed(tmp_path: Path) -> None:
    warnings: list[str] = []
    files = [(0, tmp_path / "Instruction_0.parquet"), (2**62, tmp_path / f"Instruction_{2**62}.parquet")]
    assert read_table("Instruction", files, warnings) is None
    shown = ", ".join(f"Instruction_{n}.parquet" for n in range(1, 21))
    assert warnings == [f"{tmp_path}: Instruction is split into numbered parts and {shown}, … ({2**62 - 1:,} in all) is missing; the table was left out"]


def test_first_missing() -> None:
    assert first_missing([0, 2, 5], 6) == [1, 3, 4]
    assert first_missing([], 3) == [0, 1, 2] and first_missing(range(10), 10) == []
    assert first_missing([0], 2**62, shown=3) == [1, 2, 3]
