"""How the op table is shown (sort key, top rows, grouping by shape): a plain value, without Polars, so the CLI can name its choices before the analysis is imported."""

from __future__ import annotations

from dataclasses import dataclass

#: torch's sort keys (key_averages().table(sort_by=...)) → the op table column they sort on.
SORT_KEYS: dict[str, str] = {
    "self_cpu_time_total": "self_cpu",
    "cpu_time_total": "cpu_total",
    "cpu_time": "cpu_avg",
    "self_device_time_total": "self_device",
    "self_cuda_time_total": "self_device",
    "self_privateuse1_time_total": "self_device",
    "device_time_total": "device_total",
    "cuda_time_total": "device_total",
    "privateuse1_time_total": "device_total",
    "device_time": "device_avg",
    "count": "calls",
}


@dataclass(frozen=True)
class OpView:
    """How the op table is shown: sorted by a torch sort key (SORT_KEYS), its first `top` rows (all when None), one row per (name, input shapes) when `group_by_shape`."""

    sort_by: str = "self_cpu_time_total"
    top: int | None = None
    group_by_shape: bool = False

    def __post_init__(self) -> None:
        if self.sort_by not in SORT_KEYS:
            raise ValueError(f"unknown sort key {self.sort_by!r}; use one of {', '.join(SORT_KEYS)}")
