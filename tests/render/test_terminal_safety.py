"""Names from an input (events, files, ops, warnings) never reach a terminal as control characters: escaped in text and Markdown, JSON escapes in JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers import write_trace, x
from ntrace.cli import main
from ntrace.errors import json_safe, terminal_safe
from ntrace.render.text import table

HOSTILE = "evil\x1b[2J\r\x07\x7f\x9b31m\u202e"
#: Any control character a terminal acts on, except the newline between lines.
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]")


def test_terminal_safe_escapes_every_control_character_but_newlines() -> None:
    assert terminal_safe("a\x1b[2Jb\n\rc\x7f\x9b") == "a\\x1b[2Jb\n\\rc\\x7f\\x9b"
    assert terminal_safe("plain\ntext") == "plain\ntext"


def test_json_safe_escapes_del_and_c1_that_json_allows_raw() -> None:
    text = json_safe(json.dumps({"n": "\x7f\x9b"}, ensure_ascii=False))
    assert "\x7f" not in text and "\x9b" not in text and json.loads(text) == {"n": "\x7f\x9b"}
    for name in ("\x7f", "\x9b", "a\u00b5\x9b", "plain"):  # DEL alone in ASCII text, C1 alone, C1 beside other non-ASCII, nothing to escape
        text = json_safe(json.dumps({"n": name}, ensure_ascii=False))
        assert "\x7f" not in text and "\x9b" not in text and json.loads(text) == {"n": name}


def test_table_cells_are_escaped_before_alignment() -> None:
    lines = table(["name", "n"], [["a\x1b[2J", "1"], ["bb", "22"]]).splitlines()
    assert lines[3] == "a\\x1b[2J   1" and lines[4] == "bb        22"


@pytest.fixture
def hostile_trace(tmp_path: Path) -> Path:
    """A trace whose op, device activity and file name hold terminal escapes, a carriage return, DEL, C1 CSI and a bidi override."""
    events = [x(f"aten::{HOSTILE}", "cpu_op", 0, 10, **{"External id": 1}), x(f"kernel_{HOSTILE}", "kernel", 2, 5, pid=0, tid=7, correlation=1)]
    return write_trace(tmp_path / f"rank\x1b[31m{HOSTILE}.pt.trace.json", events)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
@pytest.mark.parametrize("command", ["analyze", "compare"])
def test_text_outputs_hold_no_raw_control_character(hostile_trace: Path, fmt: str, command: str) -> None:
    target = hostile_trace if command == "analyze" else hostile_trace.parent
    result = CliRunner().invoke(main, [command, str(target), "--format", fmt, *(["-q"] if command == "analyze" else [])])
    assert result.exit_code == 0, result.output
    assert not RAW_CONTROL.search(result.stdout + result.stderr), repr(result.stdout)
    if command == "analyze":
        assert "aten::evil\\x1b[2J\\r\\x07\\x7f\\x9b31m\\u202e" in result.stdout


def test_json_keeps_the_names_as_json_escapes(hostile_trace: Path) -> None:
    result = CliRunner().invoke(main, ["analyze", str(hostile_trace), "--format", "json", "-q"])
    assert result.exit_code == 0 and not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", result.stdout)  # a bidi override is no control character: kept
    doc = json.loads(result.stdout)
    names = {row["name"] for t in doc["profiles"] for row in t["ops"]}
    assert f"aten::{HOSTILE}" in names


def test_warnings_and_written_paths_are_escaped(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.json", [x("a", "cpu_op", 0, 1), {"ph": "Z", "name": "z"}])
    out = tmp_path / "out\x1b]0;title\x07"
    result = CliRunner().invoke(main, ["convert", str(trace), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert not RAW_CONTROL.search(result.stdout + result.stderr) and "out\\x1b]0;title\\x07" in result.stdout
