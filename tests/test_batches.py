"""The batched typed decoder (ntrace.batches)."""

from __future__ import annotations

import mmap
from pathlib import Path

import pytest

import ntrace.batches as batches
import ntrace.windows as windows
from ntrace import decode_trace
from ntrace.columns import ids_text
from ntrace.decode import _OUTLINE, _RAW
from ntrace.readfile import map_json

from conftest import write_trace, x


def _events(n: int) -> list[dict]:
    """Events whose keys change type between batches: integer pids, then names; shapes on some."""
    return [
        x(f"op{i % 7}", "cpu_op" if i % 2 else "kernel", 1000.5 + i, 1.25, pid=i if i < 10 else "Spans", tid=i % 3,
          **{"External id": i, "Input Dims": [[i, 2], []]} if i % 3 else {"correlation": str(i)})
        for i in range(n)
    ]


@pytest.mark.parametrize("group", [1, 2, 3, 100])
def test_many_small_windows_equal_the_plain_decoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: int) -> None:
    path = write_trace(tmp_path / "t.json", _events(25))
    monkeypatch.setattr(windows, "WINDOW", 300)  # a few events per window
    monkeypatch.setattr(batches, "GROUP", group)  # groups of integer pids, of names, and of both
    fast, plain = decode_trace(path), decode_trace(path, fast=False)
    assert fast.events.height == 25
    assert fast.events.equals(plain.events)
    assert fast.events["pid"].to_list()[9:11] == ["9", "Spans"]
    assert fast.events["correlation"].to_list()[:4] == [0, None, None, 3]
    chunks = _chunk_count(path, monkeypatch)
    assert chunks["windows"] > 3 and chunks["chunks"] == -(-chunks["windows"] // group)


def _chunk_count(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many windows decoding `path` took, and how many chunks each column was left in."""
    seen = {"windows": 0}
    real = batches._Chunks.add

    def add(self, events):  # type: ignore[no-untyped-def]
        seen["windows"] += 1
        return real(self, events)

    monkeypatch.setattr(batches._Chunks, "add", add)
    found = windows.outline(path.read_bytes(), _OUTLINE)
    cols = batches.window_columns(path.read_bytes(), found)
    assert cols is not None and len({c.n_chunks() for c in cols.values()}) == 1
    return {**seen, "chunks": cols["ph"].n_chunks()}


def test_many_small_raw_batches_equal_the_plain_decoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_trace(tmp_path / "t.json", _events(25))
    monkeypatch.setattr(batches, "BATCH", 4)  # 7 batches, the last one short
    monkeypatch.setattr(batches, "GROUP", 3)
    cols = batches.typed_columns(_RAW.decode(path.read_bytes()).traceEvents)
    assert cols is not None and cols["ph"].n_chunks() == 3
    plain = decode_trace(path, fast=False).events
    assert cols["correlation"].to_list() == plain["correlation"].to_list()
    assert ids_text(cols["pid"]).to_list() == plain["pid"].to_list()


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


def test_a_shape_that_is_not_utf8_declines() -> None:
    text = b'{"traceEvents": [{"ph": "X", "args": {"Input Dims": ["\xff"]}}]}'
    assert batches.typed_columns(_RAW.decode(text).traceEvents) is None  # the caller repairs the text
    assert batches.window_columns(text, windows.outline(text, _OUTLINE)) is None
