"""Read one processed device profile: the columns ntrace uses from each table, type-checked against profile-schema-reference.rst, into typed Polars frames.

Each table's files (one, or its numbered parts) are read together. A table that cannot be used —
a file that is not Parquet or is cut off, a part missing from the numbering, a required column
missing, a column of the wrong kind — is left out with a warning naming the file and the problem,
and the analyses compute what the other tables allow. A schema MAJOR version ntrace does not know
is warned about: columns are still read by name, and any that changed meaning would be misread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import polars as pl

from ntrace.errors import InputError, NtraceError
from ntrace.io import parquet
from ntrace.neuron.device.layout import table_files
from ntrace.units import first_missing

#: The schema MAJOR versions the Neuron documents describe (7.4.0 in the SDK 2.31 sources, 12.0.1 on the SDK 2.33 page).
KNOWN_MAJORS = (7, 12)

#: Column kinds and the Polars type each is read as.
KINDS: dict[str, pl.DataType] = {"int": pl.Int64(), "float": pl.Float64(), "str": pl.String(), "bool": pl.Boolean()}

_ENGINE_SUMMARY = {
    f"{engine}_engine_{what}": "float" if what != "instruction_count" else "int"
    for engine in ("tensor", "vector", "scalar", "gpsimd", "sync")
    for what in ("instruction_time", "active_time", "instruction_count")
}

#: The tables of one row, whose required names are read as given (a missing schema version is warned about as such).
SINGLE_ROW = frozenset({"Metadata", "NeffHeader", "Summary"})

#: Per table: the columns ntrace reads, {name: (kind, required)}; required as profile-schema-reference.rst marks them.
COLUMNS: dict[str, dict[str, tuple[str, bool]]] = {
    "Metadata": {
        "profile_schema_version": ("str", True), "ntff_version": ("int", True), "num_physical_cores": ("int", True),
        "first_hw_timestamp": ("int", True), "last_hw_timestamp": ("int", True), "first_ts": ("str", True),
        "dma_ddr_bandwidth": ("float", True), "hbm_ddr_bandwidth": ("float", True), "tensor_engine_num_rows": ("int", True),
        "tensor_engine_num_cols": ("int", True), "tensor_engine_clock_freq": ("float", True), "instance_type": ("str", False),
        "runtime_version": ("str", False), "compiler_version": ("str", False), "driver_version": ("str", False),
        "explorer_version": ("str", False), "profile_name": ("str", False), "is_simulation": ("bool", False),
    },
    "NeffHeader": {
        "network_name": ("str", False), "uuid": ("str", False), "hash": ("str", False), "build_version": ("str", False),
        "neuroncore_count": ("int", False), "logical_neuroncore_count": ("int", False), "pcore_count_per_lnc": ("int", False),
    },
    "ExecutionInfo": {
        "execution_index": ("int", True), "neff_name": ("str", False), "execution_start_ts": ("int", False), "execution_end_ts": ("int", False),
    },
    "Instruction": {
        "start_ts": ("int", True), "end_ts": ("int", True), "duration_ns": ("int", True), "engine": ("str", True), "opcode": ("str", True),
        "pcore_idx": ("int", False), "raw_framework_id": ("int", False), "hlo_name": ("str", False), "hbm_read_bytes": ("int", False),
        "hbm_write_bytes": ("int", False), "spill_save_bytes": ("int", False), "spill_reload_bytes": ("int", False), "raw_flops": ("int", False),
        "flops_transpose": ("int", False), "adjusted_flops": ("int", False), "adjusted_flops_transpose": ("int", False),
    },
    "ActiveTime": {"start_ts": ("int", True), "end_ts": ("int", True), "engine": ("str", True), "pcore_idx": ("int", True), "duration_ns": ("int", True)},
    "OpcodeSummary": {
        "engine": ("str", True), "opcode": ("str", True), "instruction_count": ("int", True), "instruction_time_ns": ("int", True),
        "active_time_ns": ("int", True),
    },
    "DmaPacket": {
        "start_ts": ("int", True), "end_ts": ("int", True), "duration_ns": ("int", True), "pcore_idx": ("int", False),
        "transfer_bytes": ("int", True), "queue_type": ("str", True), "packet_aggregation_id": ("int", True),
    },
    "DmaPacketAggregated": {"id": ("int", True), "transfer_bytes": ("int", True), "source": ("str", True), "dest": ("str", True), "queue_type": ("str", False)},
    "CcOp": {
        "start_ts": ("int", True), "end_ts": ("int", True), "duration_ns": ("int", True), "operation": ("str", True), "algorithm": ("str", True),
        "op_id": ("int", True), "input_size": ("int", False), "output_size": ("int", False), "algorithm_bandwidth": ("float", False),
        "bus_bandwidth": ("float", False), "cc_trigger_start_delay": ("int", False), "replica_group": ("str", False),
    },
    "Throttle": {"duration": ("int", True), "k": ("int", True), "n": ("int", True), "timestamp": ("int", True), "type": ("str", True), "pcore_idx": ("int", False)},
    "ThrottleSummary": {
        "nc_idx": ("int", True), "throttle_type": ("str", False), "throttle_active_time_ns": ("int", False),
        "max_achievable_util_with_throttling_percent": ("float", False),
    },
    "FrameworkInstruction": {"raw_framework_id": ("int", True), "framework_name": ("str", False), "hbm_read_bytes": ("int", True), "hbm_write_bytes": ("int", True)},
    "HloInstruction": {"hlo_name": ("str", True), "hbm_read_bytes": ("int", True), "hbm_write_bytes": ("int", True)},
    "HbmUsage": {"timestamp": ("int", True), "total_transfer_bytes": ("int", True), "pcore_idx": ("int", False)},
    "Summary": {
        "total_time": ("float", False), "model_flops": ("int", False), "hardware_flops": ("int", False), "transpose_flops": ("int", False),
        "mm_arithmetic_intensity": ("float", False), "peak_flops_bandwidth_ratio": ("float", False), "hbm_read_bytes": ("int", False),
        "hbm_write_bytes": ("int", False), "spill_reload_bytes": ("int", False), "mfu_estimated_percent": ("float", False),
        "hfu_estimated_percent": ("float", False), "mbu_estimated_percent": ("float", False), "dma_transfer_total_bytes": ("int", False),
        **{name: (kind, False) for name, kind in _ENGINE_SUMMARY.items()},
    },
    "Warning": {"message": ("str", True), "category": ("str", True)},
}


@dataclass(frozen=True)
class DeviceTables:
    """One processed profile as read: its directory, the usable tables (typed frames of COLUMNS' columns), the schema version and what reading had to warn about."""

    path: Path
    tables: Mapping[str, pl.DataFrame]
    schema_version: str | None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def get(self, table: str) -> pl.DataFrame | None:
        """The table's frame, or None when the profile has no usable such table."""
        return self.tables.get(table)


def _kind_of(dtype: pl.DataType) -> str | None:
    """The kind (KINDS) a stored Parquet column type can be read as, or None."""
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    if dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum):
        return "str"
    if dtype == pl.Boolean:
        return "bool"
    if dtype == pl.Null:
        return "null"
    return None


def _accepts(want: str, have: str | None) -> bool:
    """Whether a column stored as kind `have` reads as `want` without changing its meaning (an int column is a valid float; all-null fits any)."""
    return have == want or have == "null" or (want == "float" and have == "int")


def read_table(table: str, files: list[tuple[int | None, Path]], warnings: list[str]) -> pl.DataFrame | None:
    """The table's frame from its files (COLUMNS' columns, typed, absent optional ones null), or None with a warning when it cannot be used."""
    numbers = [n for n, _ in files if n is not None]
    if numbers and len(numbers) < len(files):
        warnings.append(f"{files[0][1].parent}: {table} is written both whole and in numbered parts; the table was left out")
        return None
    if numbers != list(range(len(numbers))):
        end = max(numbers) + 1
        missing = first_missing(numbers, end)
        shown = ", ".join(f"{table}_{n}.parquet" for n in missing) + (f", … ({end - len(set(numbers)):,} in all)" if end - len(set(numbers)) > len(missing) else "")
        warnings.append(f"{files[0][1].parent}: {table} is split into numbered parts and {shown} is missing; the table was left out")
        return None
    spec = COLUMNS[table]
    frames = []
    for _, path in files:
        try:
            stored = parquet.schema(path)
        except NtraceError as exc:
            warnings.append(f"{exc}; {table} was left out")
            return None
        problems = []
        for name, (kind, required) in spec.items():
            if name not in stored:
                if required:
                    problems.append(f"required column {name} is missing")
            elif not _accepts(kind, _kind_of(stored[name])):
                problems.append(f"column {name} is {stored[name]}, the schema says {kind}")
        if problems:
            warnings.append(f"{path}: {'; '.join(problems)}; {table} was left out")
            return None
        present = [name for name in spec if name in stored]
        try:
            part = parquet.read(path, present)
        except NtraceError as exc:
            warnings.append(f"{exc}; {table} was left out")
            return None
        frames.append(part.select(pl.col(name).cast(KINDS[kind]) if name in present else pl.lit(None, KINDS[kind]).alias(name) for name, (kind, _) in spec.items()))
    where = files[0][1] if len(files) == 1 else files[0][1].parent
    return _named_rows(table, pl.concat(frames), where, warnings) if frames else None


def _named_rows(table: str, frame: pl.DataFrame, path: Path, warnings: list[str]) -> pl.DataFrame:
    """The rows of a many-row table that have every required name (an engine, an opcode, a queue type): a row without one cannot be grouped or shown, so it is left out with a warning."""
    names = [name for name, (kind, required) in COLUMNS[table].items() if kind == "str" and required]
    if table in SINGLE_ROW or not names:
        return frame
    kept = frame.filter(pl.all_horizontal(pl.col(names).is_not_null()))
    if kept.height < frame.height:
        warnings.append(f"{path}: {frame.height - kept.height:,} of {frame.height:,} {table} rows have no {' or '.join(names)}; they were left out")
    return kept


def schema_version(metadata: pl.DataFrame | None, path: Path, warnings: list[str]) -> str | None:
    """Metadata.profile_schema_version, warning when it is absent or names a MAJOR version ntrace does not know."""
    if metadata is None or metadata.is_empty():
        warnings.append(f"{path}: has no usable Metadata table; the schema version is unknown, and figures needing clocks or bandwidths are left out")
        return None
    version = metadata["profile_schema_version"][0]
    major = str(version or "").split(".")[0]
    if not major.isdigit() or int(major) not in KNOWN_MAJORS:
        known = ", ".join(str(m) for m in KNOWN_MAJORS)
        warnings.append(f"{path}: profile schema {version}: MAJOR version {major or '?'} is not one ntrace knows ({known}); columns are read by name and may have changed meaning")
    return str(version) if version is not None else None


def read_profile(directory: str | Path) -> DeviceTables:
    """Every table ntrace uses of the profile in `directory` (InputError when it holds no device-profile table at all)."""
    directory = Path(directory)
    found = table_files(directory)
    if not found:
        raise InputError(directory, "holds no processed device profile (<Table>.parquet files of Neuron Explorer)")
    warnings: list[str] = []
    tables = {}
    for table in COLUMNS:
        if table in found and (frame := read_table(table, found[table], warnings)) is not None:
            tables[table] = frame
    version = schema_version(tables.get("Metadata"), directory, warnings)
    return DeviceTables(directory, tables, version, tuple(warnings))
