"""Shared fixtures: each real public trace in turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import shared_trace_files


@pytest.fixture(params=shared_trace_files(), ids=lambda p: p.name.split("__")[0])
def shared_trace(request: pytest.FixtureRequest) -> Path:
    """Each real trace in turn."""
    return request.param
