"""Run the per-trace analysis on a Dask cluster: a `concurrent.futures.Executor` from a `distributed.Client` connected to a scheduler address."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator

from ntrace.errors import SchedulerError

if TYPE_CHECKING:  # distributed is an optional extra, imported only where a client is made
    from concurrent.futures import Executor

#: Seconds to wait for the scheduler before giving up.
CONNECT_TIMEOUT = 10.0


@contextlib.contextmanager
def dask_executor(address: str, timeout: float | None = None) -> Iterator[Executor]:
    """An Executor running on the Dask scheduler at `address` (e.g. tcp://scheduler:8786), closed afterwards; SchedulerError when it cannot be reached within `timeout` (CONNECT_TIMEOUT) seconds.

    The workers read the trace files themselves, so the paths given must name the same files on them.
    """
    try:
        from distributed import Client
    except ImportError:
        raise SchedulerError(address, "--executor needs Dask distributed: pip install 'ntrace[distributed]'") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT if timeout is None else timeout, set_as_default=False)
    except (OSError, ValueError) as exc:  # TimeoutError and refused connections are OSErrors; a malformed address a ValueError
        raise SchedulerError(address, f"cannot reach the Dask scheduler ({exc})") from None
    try:
        yield client.get_executor()
    finally:
        client.close()
