"""Where processed device profiles live: one directory per profile, one `<Table>.parquet` per table, large tables split as `<Table>_0.parquet`, `<Table>_1.parquet`, … (how-to-analyze-profile-output.rst).

A table with no rows is not written, so a profile is recognised by any one of its tables. The
system-profile tables Neuron Explorer writes beside them are named here too, so a directory walk
can tell every Parquet file it meets apart: an Explorer system trace (`SystemProfileEvents`), a
device-profile table, or a system side table that is neither.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: The device-profile tables of profile-schema-reference.rst (schema 7.4.0).
DEVICE_TABLES = frozenset(
    {
        "ActiveTime", "AssemblyInstruction", "BirInstruction", "CcInstruction", "CcOp", "CcStream", "CoreBarriers", "DeviceProfileList",
        "DmaPacket", "DmaPacketAggregated", "DmaQueuesInfo", "DmaUsage", "DmaUsageSummary", "Error", "ExecutionInfo", "Flow",
        "FrameworkInstruction", "FrameworkNode", "HbmUsage", "HbmUsageSummaryByType", "HloInstruction", "Instruction",
        "KernelInstructions", "KernelIterationVariables", "KernelStackFrames", "MemoryBandwidthResponse", "Metadata", "NeffHeader",
        "OpcodeSummary", "PendingDma", "PenguinInstruction", "PsumUsage", "SbufAllocation", "SbufUsage", "SchemaFields",
        "SemaphoreUpdate", "StackFrame", "StackFrameFileLocation", "StackFrameFileName", "StackFrameFunctionName", "Summary",
        "TensorInfo", "Throttle", "ThrottleSummary", "Warning",
    }
)  # fmt: skip

#: System-profile tables other than the events (samples and metadata): no framework trace, no device profile.
SYSTEM_SIDE_TABLES = frozenset({"CpuUsage", "HostMemUsage", "SystemProfileMetadata", "SystemProfileHbmUsage"})

#: The directory beside a session's files where processed profiles go, one `<neff stem>/` each (the fixtures' layout, and ntrace capture's).
DEVICE_PROFILES = "device_profiles"

_FILE = re.compile(r"^(?P<table>[A-Za-z]+)(?:_(?P<part>\d+))?\.parquet$")


def table_of(name: str) -> tuple[str, int | None] | None:
    """(table, part number or None) a file name holds, when it names a device-profile table; else None."""
    m = _FILE.match(name)
    if not m or m["table"] not in DEVICE_TABLES:
        return None
    return m["table"], int(m["part"]) if m["part"] is not None else None


def is_profile_part(path: Path) -> bool:
    """Whether a file is a table of a processed profile (device or system side table), which no trace reader should open."""
    m = _FILE.match(path.name)
    return m is not None and (m["table"] in DEVICE_TABLES or m["table"] in SYSTEM_SIDE_TABLES)


def table_files(directory: Path) -> dict[str, list[tuple[int | None, Path]]]:
    """Per table found in `directory`: its files as (part number or None, path), parts in order."""
    found: dict[str, list[tuple[int | None, Path]]] = {}
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return found
    for name in names:
        if (hit := table_of(name)) is not None and (directory / name).is_file():
            found.setdefault(hit[0], []).append((hit[1], directory / name))
    for parts in found.values():
        parts.sort(key=lambda p: -1 if p[0] is None else p[0])
    return found


def is_profile_dir(directory: Path) -> bool:
    """Whether `directory` holds any device-profile table."""
    return bool(table_files(directory))


def find_profiles(root: str | Path, depth: int | None = None) -> list[Path]:
    """Every processed device-profile directory at or under `root` (at most `depth` levels down; a table file given directly: its directory), sorted; links to directories are not followed."""
    root = Path(root)
    if root.is_file():
        return [root.parent] if table_of(root.name) else []
    found = []
    top = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(dirnames) if depth is None or len(Path(dirpath).parts) - top < depth else []
        if any(table_of(n) for n in filenames):
            found.append(Path(dirpath))
    return sorted(found)
