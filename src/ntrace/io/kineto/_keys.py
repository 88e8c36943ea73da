"""Names the decoders share, kept apart from Polars so the native parse can start before Polars is imported (_ahead)."""

from __future__ import annotations

#: The events frame's columns for a `[memory]` instant's args → the arg each is read from.
MEMORY_KEYS = {
    "mem_bytes": "Bytes",
    "mem_allocated": "Total Allocated",
    "mem_reserved": "Total Reserved",
    "mem_addr": "Addr",
    "mem_device_type": "Device Type",
    "mem_device_id": "Device Id",
}
