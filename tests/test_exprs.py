"""ntrace.exprs: fmt gives what pl.format gives (text of every type, nulls, several placeholders); matches gives what re.search gives row by row; lookup and nulls give what plain list indexing gives; json_string quotes as orjson does; on_polars_thread runs a function on a pool thread and hands back what it returned or raised."""

from __future__ import annotations

import contextvars
import os
import re
import subprocess
import sys
import threading

import orjson
import polars as pl
import pytest

from hypothesis import given
from hypothesis import strategies as st

from ntrace.exprs import fmt, json_string, lookup, matches, nulls, on_polars_thread, stacked


def test_fmt_equals_polars_format() -> None:
    frame = pl.DataFrame({"a": ["x", None, "z"], "n": [1, 2, None], "f": [True, False, True]})
    for template, args in (("device {}", ("a",)), ("{}:{} end", ("a", "n")), ("{}{}{}", ("n", "a", "f"))):
        assert frame.select(got=fmt(template, *args))["got"].to_list() == frame.select(want=pl.format(template, *args))["want"].to_list()


@given(st.lists(st.one_of(st.none(), st.sampled_from(["ProfilerStep#1", "ProfilerStep#x", "aten::mm", "ncclKernel_AllReduce", "RCCL", "", "a\nb"])), max_size=40))
def test_matches_is_a_regex_search_per_row_of_text_and_categorical(values: list[str | None]) -> None:
    """Each row's answer is re.search's on that row (null for null), whatever the order distinct values come in, the column's type or the repeats."""
    for pattern in (r"^ProfilerStep#(\d+)$", "(?i-u)nccl|rccl", "^$"):
        want = [None if v is None else bool(re.search(pattern.replace("(?i-u)", "(?i)"), v)) for v in values]
        for dtype in (pl.String, pl.Categorical):
            frame = pl.DataFrame({"name": values}, schema={"name": pl.String}).with_columns(pl.col("name").cast(dtype))
            assert frame.select(matches("name", pattern)).to_series().to_list() == want


@given(st.lists(st.one_of(st.none(), st.text()), max_size=30))
def test_json_string_is_what_orjson_writes(values: list[str | None]) -> None:
    """Each value quoted and escaped as orjson writes it (null as null): every character below U+0300 and DEL/C1, plus any drawn text."""
    column = [*values, "".join(map(chr, range(0x300))), "\x7f\x9b", None]
    got = pl.select(json_string(pl.lit(pl.Series(column, dtype=pl.String)))).to_series().to_list()
    assert got == [orjson.dumps(v).decode() for v in column]


def test_fmt_counts_its_placeholders() -> None:
    with pytest.raises(ValueError):
        fmt("{} and {}", "a")


@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=30), st.data())
def test_lookup_is_list_indexing_with_null_positions(values: list[int | None], data: st.DataObject) -> None:
    """Every mix of positions, all null and none included, against indexing a Python list."""
    positions = data.draw(st.lists(st.one_of(st.none(), st.integers(0, len(values) - 1)), max_size=40))
    got = lookup(pl.Series(values, dtype=pl.Int64), pl.Series(positions, dtype=pl.Int64))
    assert got.dtype == pl.Int64 and got.to_list() == [None if i is None else values[i] for i in positions]


@pytest.mark.parametrize("position", [-1, -(2**31), 3, 2**31, 2**32 - 1])
def test_lookup_refuses_a_position_out_of_range(position: int) -> None:
    """Positions are cast to row numbers without a range check: one out of range, negative ones (which wrap past every row) included, is still refused by the lookup."""
    with pytest.raises(pl.exceptions.OutOfBoundsError):
        lookup(pl.Series([10, 20, 30]), pl.Series([0, position], dtype=pl.Int64))


def test_lookup_keeps_the_type_and_nulls_has_the_length() -> None:
    names = pl.Series(["a", None, "c"], dtype=pl.String)
    assert lookup(names, pl.Series([2, None, 1, 0], dtype=pl.Int64)).to_list() == ["c", None, None, "a"]
    assert lookup(names, pl.Series([None, None], dtype=pl.Int64)).to_list() == [None, None]  # all null: Series indexing alone refuses this
    for n in (0, 1, 7):
        made = nulls(n)
        assert made.dtype == pl.Int64 and made.to_list() == [None] * n


@given(st.lists(st.lists(st.tuples(st.text(max_size=3), st.integers(-(2**63), 2**63 - 1)), max_size=4), max_size=6))
def test_stacked_is_the_rows_in_order_each_keyed_by_its_frame(frames: list[list[tuple[str, int]]]) -> None:
    schema = pl.Schema({"name": pl.String(), "n": pl.Int64()})
    given_frames = [pl.DataFrame(rows, schema=schema, orient="row") for rows in frames]
    out = stacked(given_frames, schema, key="k").collect()
    assert out.columns == ["name", "n", "k"] and out.schema["k"] == pl.Int64
    assert out.rows() == [(name, n, k) for k, rows in enumerate(frames) for name, n in rows]  # the oracle: plain list concatenation


def test_on_polars_thread_returns_what_fn_returned_from_a_pool_thread(alone: None) -> None:
    caller = threading.get_native_id()
    ran: list[int] = []

    def fn() -> pl.DataFrame:
        ran.append(threading.get_native_id())
        return pl.DataFrame({"a": [3, 1, 2]}).sort("a").filter(pl.col("a") > 1)  # queries inside run there too

    got = on_polars_thread(fn)
    assert got["a"].to_list() == [2, 3]
    assert len(ran) == 1  # called once
    assert ran[0] != caller  # on a thread of Polars' pool, where the queries it starts are not handed over
    assert on_polars_thread(lambda: None) is None  # a None result is a result
    assert on_polars_thread(lambda: on_polars_thread(lambda: 7) + 1) == 8  # nested: the inner call runs on the same pool


def test_on_polars_thread_raises_what_fn_raised(alone: None) -> None:
    class Odd(BaseException):  # not an Exception: still handed back, not swallowed by Polars
        pass

    error = ValueError("from the pool thread")
    with pytest.raises(ValueError) as caught:
        on_polars_thread(lambda: (_ for _ in ()).throw(error))
    assert caught.value is error  # the very exception, not a Polars ComputeError wrapping it

    def odd() -> None:
        raise Odd()

    with pytest.raises(Odd):
        on_polars_thread(odd)
    assert on_polars_thread(lambda: 5) == 5  # the pool is still usable afterwards


def test_on_polars_thread_sees_the_callers_context(alone: None) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("test_var", default="unset")
    token = var.set("the caller's")
    try:
        assert on_polars_thread(var.get) == "the caller's"
    finally:
        var.reset(token)


def test_on_polars_thread_with_a_one_thread_pool_finishes() -> None:
    """A pool of one thread (a --jobs worker's): the queries fn starts run on that thread, nothing waits for another."""
    code = (
        "import polars as pl; from ntrace.exprs import on_polars_thread; "
        "f = lambda: sum(pl.DataFrame({'a': list(range(50))}).group_by(k=pl.col('a') % 3).agg(pl.col('a').sum())['a'].to_list()); "
        "print(on_polars_thread(f), pl.thread_pool_size())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ, "POLARS_MAX_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(sum(range(50))), "1"]


def test_on_polars_thread_runs_here_while_another_python_thread_runs() -> None:
    """In a fresh interpreter (no thread of other tests): on the caller's thread while another Python thread runs, on the pool once it has ended, and Polars' own threads, listed once they ran Python code, do not count."""
    code = """
import threading
from ntrace.exprs import on_polars_thread
me = threading.get_native_id()
release = threading.Event()
other = threading.Thread(target=release.wait)
other.start()
print(on_polars_thread(threading.get_native_id) == me)
release.set()
other.join()
print(on_polars_thread(threading.get_native_id) == me)
print(type(on_polars_thread(threading.current_thread)).__name__)  # a pool thread, now listed by threading
print(on_polars_thread(threading.get_native_id) == me)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "_DummyThread", "False"]


def test_on_polars_thread_never_waits_on_a_lock_held_by_a_thread_waiting_for_the_pool() -> None:
    """A one-thread pool (a --jobs worker's): another thread holds a lock fn needs and runs a query before releasing it; fn must not sit on the pool thread that query needs."""
    code = """
import threading, polars as pl
from ntrace.exprs import on_polars_thread
lock, held, occupied = threading.Lock(), threading.Event(), threading.Event()
def other():
    with lock:
        held.set()
        occupied.wait(5)  # fn has started (on the pool thread, were it taken)
        pl.DataFrame({"a": [1, 2]}).group_by("a").agg(pl.len())  # needs a pool thread
worker = threading.Thread(target=other)
worker.start()
held.wait()
def fn():
    occupied.set()
    with lock:
        return 1
print(on_polars_thread(fn))
worker.join()
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ, "POLARS_MAX_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]


def test_each_on_polars_thread_maps_in_order_a_chunk_per_pool_call(alone: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import ntrace.exprs as exprs

    calls: list[int] = []
    real = exprs.on_polars_thread

    def counted(fn):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(fn)

    monkeypatch.setattr(exprs, "on_polars_thread", counted)
    caller = threading.get_native_id()
    items = list(range(2 * exprs.CHUNK + 5))
    got = exprs.each_on_polars_thread(lambda i: (i * i, threading.get_native_id()), iter(items))  # any iterable
    assert [v for v, _ in got] == [i * i for i in items]
    assert caller not in {t for _, t in got}  # every item ran on a pool thread
    assert len(calls) == 3  # two whole chunks and the rest: a signal waits for one chunk at most
    assert exprs.each_on_polars_thread(lambda i: i, []) == []
    with pytest.raises(KeyError):
        exprs.each_on_polars_thread(lambda i: {}[i], [1])
