"""render.tables.cells: every value of a display column written by its unit, checked against texts written out by hand; and the tables built column by column from them."""

from __future__ import annotations

import polars as pl

from ntrace.render.markdown import frame_table
from ntrace.render.tables import cells, frame_cells
from ntrace.render.views import table


def test_each_unit_is_written_as_people_read_it() -> None:
    cases = {
        "dur_us": ([1.5, 2500, 3_000_000.0, None, -4.0], ["1.500us", "2.500ms", "3.000s", "-", "-4.000us"]),
        "host_busy_us.framework": ([12.25], ["12.250us"]),  # a nested column: its base name decides
        "self_cpu_change_pct": ([5.0, -0.25], ["+5.0%", "-0.2%"]),
        "self_cpu_pct": ([12.345], ["12.35%"]),
        "share": ([0.5], ["50.00%"]),
        "idle_share": ([0.0125], ["1.25%"]),
        "cpu_mem": ([1536, -2048], ["1.5 KiB", "-2.0 KiB"]),
        "speedup": ([1.5], ["1.50x"]),
        "valid": ([True, False], ["yes", "NO"]),
        "user_annotation": ([True, False], ["yes", "no"]),
        "events": ([1234567, 0], ["1,234,567", "0"]),
        "ratio": ([1234.5], ["1,234.500"]),
        "name": (["aten::mm", None], ["aten::mm", "-"]),
    }
    for column, (values, want) in cases.items():
        assert cells(column, values) == want, column


def test_a_column_of_mixed_types_writes_each_value_by_its_own_type() -> None:
    assert cells("self_cpu_pct", [1, 2.5, None, "x", True]) == ["1", "2.50%", "-", "x", "yes"]
    assert cells("events", iter([3, None])) == ["3", "-"]  # any iterable, read once


def test_frame_cells_are_per_column_in_column_order() -> None:
    frame = pl.DataFrame({"name": ["a", "b"], "events": [1000, None], "dur_us": [1.0, 2000.0]})
    assert frame_cells(frame) == [["a", "b"], ["1,000", "-"], ["1.000us", "2.000ms"]]


def test_markdown_escapes_text_cells_only() -> None:
    frame = pl.DataFrame({"name": ["a|b", "line\nbreak"], "events": [1, 22]})
    lines = frame_table(frame).splitlines()
    assert lines[2:] == ["| a\\|b | 1 |", "| line break | 22 |"]


def test_html_table_escapes_text_and_keeps_values_for_sorting() -> None:
    frame = pl.DataFrame({"name": ["<b>&", None], "events": [1234, None], "dims": [[1, 2], None]})
    html = table(frame)
    assert "<tr><td>&lt;b&gt;&amp;</td><td class=num data-v=\"1234\">1,234</td><td>1, 2</td></tr>" in html
    assert '<tr><td>-</td><td class=num data-v="">-</td><td>-</td></tr>' in html
