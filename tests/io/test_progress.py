"""ntrace.io.progress.polled: work that cannot report itself (C code that released the GIL) is reported from a helper thread while it runs."""

from __future__ import annotations

import threading
import time

import pytest

from ntrace.io import progress


def test_polled_reports_what_it_reads_rising_and_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "POLL_SECONDS", 0.001)
    values = iter([5, 5, 3, 40, 200, 200])  # repeats and a step back are not reported; past the total is the total
    reads: list[int] = []

    def done() -> int:
        reads.append(value := next(values, 200))
        return value

    seen: list[tuple[object, ...]] = []
    with progress.reporting(lambda *a: seen.append((threading.current_thread().name, *a))):
        with progress.polled("parsing x", 100, done):
            deadline = time.monotonic() + 10
            while len(reads) < 6 and time.monotonic() < deadline:
                time.sleep(0.001)
        after = len(reads)
    time.sleep(0.01)
    assert len(reads) == after  # the helper stopped with the block
    assert [s[2] for s in seen] == [5, 40, 100]
    assert all(s[0] == "ntrace-progress" and s[1] == "parsing x" and s[3] == 100 and s[4] == "bytes" for s in seen)


def test_polled_does_nothing_when_nobody_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "POLL_SECONDS", 0.001)
    reads: list[int] = []
    before = threading.active_count()
    with progress.polled("parsing x", 100, lambda: reads.append(1) or 1):
        assert threading.active_count() == before
        time.sleep(0.02)
    assert reads == []


def test_an_error_in_the_block_stops_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "POLL_SECONDS", 0.001)
    with progress.reporting(lambda *a: None):
        with pytest.raises(KeyError):
            with progress.polled("parsing x", 100, lambda: 1):
                raise KeyError("x")
    assert not any(t.name == "ntrace-progress" for t in threading.enumerate())


def test_a_sink_that_fails_in_the_helper_fails_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error of the sink is raised where the work was started once it ends, not printed from the helper thread."""
    monkeypatch.setattr(progress, "POLL_SECONDS", 0.001)
    hooked: list[object] = []
    monkeypatch.setattr(threading, "excepthook", hooked.append)

    def broken(*_: object) -> None:
        raise BrokenPipeError("stderr went away")

    with progress.reporting(broken):
        with pytest.raises(BrokenPipeError):
            with progress.polled("parsing x", 100, lambda: 1):
                deadline = time.monotonic() + 10
                while any(t.name == "ntrace-progress" for t in threading.enumerate()) and time.monotonic() < deadline:
                    time.sleep(0.001)  # until the helper has failed and ended
    assert hooked == []
