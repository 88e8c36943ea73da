"""The batched typed decoder (ntrace.batches)."""

from __future__ import annotations

import mmap
from pathlib import Path

import pytest

import ntrace.batches as batches
from ntrace import decode_trace
from ntrace.decode import _RAW
from ntrace.readfile import map_json

from conftest import write_trace, x


def _events(n: int) -> list[dict]:
    """Events whose keys change type between batches: integer pids, then names; shapes on some."""
    return [
        x(f"op{i % 7}", "cpu_op" if i % 2 else "kernel", 1000.5 + i, 1.25, pid=i if i < 10 else "Spans", tid=i % 3,
          **{"External id": i, "Input Dims": [[i, 2], []]} if i % 3 else {"correlation": str(i)})
        for i in range(n)
    ]


def test_many_small_batches_equal_the_plain_decoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_trace(tmp_path / "t.json", _events(25))
    monkeypatch.setattr(batches, "BATCH", 4)  # 7 batches, the last one short
    fast, plain = decode_trace(path), decode_trace(path, fast=False)
    assert fast.events.height == 25
    assert fast.events.equals(plain.events)
    assert fast.events["pid"].to_list()[9:11] == ["9", "Spans"]
    assert fast.events["correlation"].to_list()[:4] == [0, None, None, 3]


def test_columns_from_a_memory_map_equal_those_from_bytes(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", _events(30))
    mapped = map_json(path, [])
    assert isinstance(mapped, mmap.mmap)
    from_map = batches.typed_columns(_RAW.decode(mapped).traceEvents, mapped)  # pages released after each batch
    from_bytes = batches.typed_columns(_RAW.decode(path.read_bytes()).traceEvents)
    assert from_map is not None and from_bytes is not None
    assert all(from_map[k].equals(from_bytes[k]) for k in from_bytes)


def test_a_value_of_another_type_declines() -> None:
    raws = _RAW.decode(b'[{"ph": "X", "ts": "12.5"}]')
    assert batches.typed_columns(raws) is None  # the caller falls back to the coercing decoders
