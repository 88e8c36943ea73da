"""lanes.py: the category → lane table and the classifier; every complete event lands in exactly one lane."""

from __future__ import annotations

import re

import polars as pl
import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from ntrace.lanes import LANE_ROWS, LANES, NAME_RULES, classify, lane_table, lower_contains, lower_is, name_rule_table


def _events(cats: list[str | None], names: list[str] | None = None) -> pl.DataFrame:
    names = names or ["op"] * len(cats)
    return pl.DataFrame({"idx": list(range(len(cats))), "ph": ["X"] * len(cats), "cat": cats, "name": names}, schema_overrides={"cat": pl.String})


def test_table_rows_are_unique_and_use_known_lanes() -> None:
    table = lane_table()
    assert table["category"].str.to_lowercase().is_unique().all()
    assert set(table["lane"]) <= set(LANES)
    assert table.height == len(LANE_ROWS)


@pytest.mark.parametrize(
    ("cat", "lane"),
    [
        ("cpu_op", "framework"),
        ("user_annotation", "framework"),
        ("privateuse1_driver", "device"),
        ("gpu_memcpy", "device"),
        ("privateuse1_runtime", "runtime_api"),
        ("cuda_runtime", "runtime_api"),
        ("mtia_runtime", "runtime_api"),
        ("kernel", "hardware"),
        ("Kernel", "hardware"),
        ("mtia_ccp_events", "hardware"),
        ("Trace", "other"),
        ("something_new", "other"),
        (None, "other"),
    ],
)
def test_classify(cat: str | None, lane: str) -> None:
    assert classify(_events([cat]))["lane"].to_list() == [lane]


def test_every_event_in_exactly_one_lane() -> None:
    cats = [row[0] for row in LANE_ROWS] + ["unknown", None, "KERNEL"]
    out = classify(_events(cats))
    assert out.height == len(cats) and out["lane"].null_count() == 0
    assert out["idx"].to_list() == list(range(len(cats)))  # order kept, nothing duplicated


def test_user_extension_overrides_and_adds() -> None:
    table = lane_table({"my_accel_exec": "hardware", "Trace": "framework"})
    out = classify(_events(["my_accel_exec", "Trace"]), table)
    assert out["lane"].to_list() == ["hardware", "framework"]
    assert out["side"].to_list() == ["device", "host"]
    with pytest.raises(ValueError, match="unknown lane"):
        lane_table({"x": "gpu"})


def test_classify_equals_a_lookup_per_event() -> None:
    """Lanes given per distinct category (by code) equal a plain Python lookup of every event's category."""
    rows = {cat.lower(): (lane, side) for cat, lane, side, _ in LANE_ROWS}
    cats = [c for cat, *_ in LANE_ROWS for c in (cat, cat.upper())] + ["new_cat", "", None] * 5
    out = classify(_events(cats * 3, ["dma_request"] * len(cats) * 3))
    ruled = {cat: (lane, side) for cat, pattern, lane, side, _ in reversed(NAME_RULES) if re.search(pattern, "dma_request")}
    expected = [
        ruled.get((c or "").lower()) or (rows.get((c or "").lower(), ("other", "host")) if c is not None else ("other", "host")) for c in cats * 3
    ]
    assert list(zip(out["lane"].to_list(), out["side"].to_list())) == expected
    assert out["lane"].dtype == pl.Enum(LANES) and out["side"].dtype == pl.Categorical


@pytest.mark.parametrize(
    ("cat", "name", "lane", "side"),
    [
        ("mtia_ccp_events", "dma_request", "device", "device"),
        ("mtia_ccp_events", "event_wait", "device", "device"),
        ("mtia_ccp_events", "event_record", "device", "device"),
        ("mtia_ccp_events", "fc-dtype_Float", "hardware", "device"),
        ("mtia_ccp_events", "pe_exe", "hardware", "device"),
        ("kernel", "dma_request", "hardware", "device"),  # the rules read names only in the categories they name
        ("cpu_op", "event_wait", "framework", "host"),
    ],
)
def test_name_rules_split_mixed_categories(cat: str, name: str, lane: str, side: str) -> None:
    """MTIA's mtia_ccp_events mixes compute with DMA requests and event waits: those are device interaction, not hardware execution."""
    out = classify(_events([cat], [name]))
    assert (out["lane"][0], out["side"][0]) == (lane, side)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["mtia_ccp_events", "MTIA_CCP_Events", "kernel", "cpu_op", None]),
            st.sampled_from(["dma_request", "event_wait", "pe_exe", "xdma_", "", None]),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_name_rules_on_mixed_rows_equal_a_rule_walk_per_event(rows: list[tuple[str | None, str | None]]) -> None:
    """Rows of ruled and other categories interleaved, in any case, with missing names: each gets what walking the rules in order gives it."""
    cats, names = [c for c, _ in rows], [n for _, n in rows]
    table = {row[0].lower(): (row[1], row[2]) for row in LANE_ROWS}

    def expected(cat: str | None, name: str | None) -> tuple[str, str]:
        lowered = (cat or "").lower() if cat is not None else None
        for rule_cat, pattern, lane, side, _ in NAME_RULES:
            if lowered == rule_cat and re.search(pattern, name or ""):
                return lane, side
        return table.get(lowered, ("other", "host")) if lowered is not None else ("other", "host")

    out = classify(pl.DataFrame({"idx": list(range(len(rows))), "ph": ["X"] * len(rows), "cat": cats, "name": names}, schema_overrides={"cat": pl.String, "name": pl.String}))
    assert list(zip(out["lane"].to_list(), out["side"].to_list())) == [expected(c, n) for c, n in rows]


def test_name_rule_table_is_what_the_cli_prints() -> None:
    from click.testing import CliRunner

    from ntrace.cli import main

    result = CliRunner().invoke(main, ["lanes"])
    assert result.exit_code == 0
    table = name_rule_table()
    assert table.height == len(NAME_RULES)
    for row in table.iter_rows(named=True):
        assert row["name"] in result.output and row["why"] in result.output


#: Texts the analyses match case-insensitively, and strings around them that lowercasing treats specially (Kelvin sign, dotted I, long s, final sigma).
_MATCHED = ("gpu_user_annotation", "user_annotation", "cpu_op", "trace", "ac2g", "mtia_ccp_events")
_TRICKY = ["GPU_USER_ANNOTATION", "gpu_uſer_annotation", "Trace", "TRACE ", "İtrace", "trace\u212a", "AC2G", "ac2g\n", "cpu_Op", "", "ΣΑΣ", "nccl", "NcCl_AllReduce", "xRCCLy", "ncc", "\u212anccl"]


@settings(deadline=None)  # no timing in tests: a busy machine must not fail it
@given(st.lists(st.one_of(st.none(), st.sampled_from(_TRICKY + list(_MATCHED)), st.text(alphabet=st.sampled_from("aAcCgGlLnNrRtTeE_ 2ſİ\u212aΣς")), st.text()), max_size=30))
def test_lower_is_and_lower_contains_agree_with_to_lowercase(values: list[str | None]) -> None:
    """The ASCII case-insensitive matchers give what lowercasing every string and comparing gives, nulls included."""
    frame = pl.DataFrame({"c": values}, schema={"c": pl.String})
    lowered = pl.col("c").str.to_lowercase()
    for text in _MATCHED:
        assert frame.select(lower_is("c", text)).to_series().to_list() == frame.select(lowered == text).to_series().to_list()
    got = frame.select(lower_contains("c", "nccl|rccl")).to_series().to_list()
    assert got == frame.select(lowered.str.contains("nccl|rccl")).to_series().to_list()


def test_lower_matchers_refuse_texts_they_cannot_match_exactly() -> None:
    for text in ("kernel", "Cpu_op", "a.b"):
        with pytest.raises(ValueError):
            lower_is("c", text)
