"""Shared fixtures: each real public trace in turn; `alone`, for tests of the pool-thread analysis; the summary memo off, so no test reads what another computed (tests/io/test_memo.py turns it on)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import shared_trace_files

os.environ["NTRACE_CACHE"] = "0"  # inherited by every CLI the tests start


@pytest.fixture(params=shared_trace_files(), ids=lambda p: p.name.split("__")[0])
def shared_trace(request: pytest.FixtureRequest) -> Path:
    """Each real trace in turn."""
    return request.param


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the test's thread were the only Python thread (ntrace.exprs.on_polars_thread): earlier tests leave some running (servers, pools), which keep fn on the caller's thread."""
    monkeypatch.setattr("ntrace.exprs._alone", lambda: True)
