"""The analyze JSON's `steps` array, written as text a column at a time (ntrace.render.json._steps): byte for byte what orjson writes for the same steps built as Python dicts.

The oracle builds each step as the dict the JSON contract describes (docs/formats.md), with µs
written from plain integers here, and lets orjson indent the whole document; the text under test
is placed in the same document as a fragment. Names are any text (quotes, backslashes, controls,
non-ASCII), times any Int64 or null.
"""

from __future__ import annotations

from types import SimpleNamespace
from unittest.mock import patch
from typing import Any

import orjson
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from ntrace.render import json as json_render
from ntrace.render.json import steps_texts

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
NS = st.one_of(st.none(), INT64, st.integers(-5000, 5000))
LANES = ["framework", "device", "runtime_api", "other"]


def us(ns: int | None) -> orjson.Fragment | None:
    """Exact µs from integer ns, by integer arithmetic alone (the oracle's own)."""
    if ns is None:
        return None
    sign, mag = ("-" if ns < 0 else ""), abs(ns)
    return orjson.Fragment(f"{sign}{mag // 1000}.{mag % 1000:03d}".encode())


def oracle(steps: list[dict[str, Any]], lanes: list[str], devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for s in steps:
        mine = [d for d in devices if d["step"] == s["step"]]
        out.append(
            {
                "step": s["step"],
                "name": s["name"],
                "start_us": us(s["start"]),
                "dur_us": us(s["dur"]),
                "host_busy_us": {lane: us(s[f"{lane}_busy"]) for lane in lanes},
                "devices": [{"device": d["device"], "events": d["events"], "busy_us": us(d["busy"]), "idle_us": us(d["idle"]), "span_us": us(d["span"])} for d in mine],
            }
        )
    return out


def document(steps: Any) -> bytes:
    """The analyze document around a summary's steps: its keys 6 spaces in, as analysis() writes them."""
    return orjson.dumps({"schema": "x", "profiles": [{"trace": "t", "steps": steps, "after": 1}], "warnings": []}, option=orjson.OPT_INDENT_2)


@st.composite
def step_frames(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    lanes = draw(st.lists(st.sampled_from(LANES), unique=True, max_size=4))
    numbers = draw(st.lists(st.one_of(st.none(), st.integers(-3, 40)), min_size=1, max_size=8))
    steps = [
        {"step": n, "name": draw(st.one_of(st.none(), st.text(max_size=12))), "start": draw(NS), "end": draw(NS), "dur": draw(NS), **{f"{lane}_busy": draw(NS) for lane in lanes}}
        for n in numbers
    ]
    devices = draw(
        st.lists(
            st.fixed_dictionaries(
                {"step": st.sampled_from(numbers + [99]), "device": st.one_of(st.none(), st.text(max_size=8)), "events": st.one_of(st.none(), INT64), "busy": NS, "idle": NS, "span": NS}
            ),
            max_size=10,
        )
    )
    return steps, lanes, devices


@settings(max_examples=300, deadline=None)
@given(step_frames())
def test_steps_text_is_what_orjson_writes(case: tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]) -> None:
    steps, lanes, devices = case
    steps_schema = {"step": pl.Int64, "name": pl.String, "start": pl.Int64, "end": pl.Int64, "dur": pl.Int64, **{f"{lane}_busy": pl.Int64 for lane in lanes}}
    device_schema = {"step": pl.Int64, "device": pl.String, "events": pl.Int64, "busy": pl.Int64, "idle": pl.Int64, "span": pl.Int64}
    summary = SimpleNamespace(steps=pl.DataFrame(steps, schema=steps_schema), step_devices=pl.DataFrame(devices, schema=device_schema))
    assert document(steps_texts([summary])[0]) == document(oracle(steps, lanes, devices))  # type: ignore[arg-type]


def case_summary(case: tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]) -> SimpleNamespace:
    """The summary-like object of one drawn case: its steps and step devices as frames."""
    steps, lanes, devices = case
    steps_schema = {"step": pl.Int64, "name": pl.String, "start": pl.Int64, "end": pl.Int64, "dur": pl.Int64, **{f"{lane}_busy": pl.Int64 for lane in lanes}}
    device_schema = {"step": pl.Int64, "device": pl.String, "events": pl.Int64, "busy": pl.Int64, "idle": pl.Int64, "span": pl.Int64}
    return SimpleNamespace(steps=pl.DataFrame(steps, schema=steps_schema), step_devices=pl.DataFrame(devices, schema=device_schema))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(step_frames(), st.just(([], [], []))), max_size=6))
def test_many_summaries_at_once_are_each_what_orjson_writes(cases: list[tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]]) -> None:
    """Steps written for several summaries by one query per frame (as analysis() does for a directory): each summary's text is the one orjson writes for its own steps alone, whatever lanes the others have or whether they have steps at all."""
    expected = [document(oracle(*case)) for case in cases]
    texts = steps_texts([case_summary(case) for case in cases])  # type: ignore[misc]
    assert [document(t) for t in texts] == expected
    with patch.object(json_render, "STEPS_PER_QUERY", 5):  # many queries of a few steps each, a trace with more cut in slices
        texts = steps_texts([case_summary(case) for case in cases])  # type: ignore[misc]
    assert [document(t) for t in texts] == expected


def test_no_steps_is_an_empty_array() -> None:
    summary = SimpleNamespace(steps=pl.DataFrame(schema={"step": pl.Int64, "name": pl.String}), step_devices=pl.DataFrame(schema={"step": pl.Int64}))
    assert document(steps_texts([summary])[0]) == document([])  # type: ignore[arg-type]


def test_a_step_number_in_two_slices_lists_its_devices_in_both() -> None:
    """Steps cut in slices of five: a number held by a step of each slice (and a null one in each) gets its device rows in both, as orjson writes them."""
    steps = [{"step": n, "name": f"s{i}", "start": i * 10, "end": i * 10 + 5, "dur": 5, "device_busy": i} for i, n in enumerate([1, None, 2, 3, 4, 5, 1, None])]
    devices = [
        {"step": 1, "device": "a", "events": 1, "busy": 1, "idle": 0, "span": 1},
        {"step": None, "device": "b", "events": 2, "busy": 2, "idle": 1, "span": 3},
        {"step": 1, "device": "c\n", "events": 3, "busy": 3, "idle": 0, "span": 3},
    ]
    case = (steps, ["device"], devices)
    with patch.object(json_render, "STEPS_PER_QUERY", 5):
        text = steps_texts([case_summary(case)])[0]  # type: ignore[list-item]
    assert document(text) == document(oracle(*case))
