"""One vocabulary of column names: every command in every format, over the fixtures, names its columns from ntrace.render.columns.VOCABULARY.

JSON keys and CSV headers must be vocabulary names (or `name.qualifier`, the flat form of a nested
value); text and Markdown headers must be `header(name)` of one; no table shows two columns
under one header. The walk reads the outputs, not the renderers' code, so a new table or key that
invents a name fails here.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from helpers import REAL_TRACES, REPO
from ntrace.cli import main
from ntrace.render.columns import CSV_TABLES, VOCABULARY, base_name, header

FORMATS = ("table", "json", "csv", "markdown")
BASE, TEST = REAL_TRACES / "trace_compare__base__base.json.gz", REAL_TRACES / "trace_compare__test__test.json.gz"
#: JSON keys whose values are keyed by data (a lane, an engine, a gap kind, a category), not by column names.
DATA_KEYED = {"categories", "host_busy_us", "busy_us", "active_us", "active_pct", "gaps", "metadata", "hbm_bytes", "flops"}
#: Top-level and per-object scalars that describe the document rather than a table's rows.
DOCUMENT = {"schema", "warnings", "profile_warnings", "baseline", "basis", "alignment", "matching", "metadata", "framework_mappings"}


@pytest.fixture(scope="module")
def rank_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three SYNTHETIC ranks made from the real NCCL trace (scripts/make_ranks.py)."""
    out = tmp_path_factory.mktemp("ranks")
    src = REAL_TRACES / "nccl_parser_config__nccl_data.json.gz"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_ranks.py"), str(src), str(out), "--ranks", "3", "--manifest", str(out.parent / "m.json")], check=True, capture_output=True)
    return out


def runs(rank_dir: Path) -> Iterator[tuple[str, list[str]]]:
    """(name, CLI arguments) of every command in every format, and every CSV table."""
    commands = {
        "analyze-rmsnorm": ["analyze", "fixtures/rmsnorm", "-q"],
        "analyze-model_mode": ["analyze", "fixtures/model_mode", "-q"],
        "analyze-ns": ["analyze", str(REAL_TRACES / "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"), "-q", "--group-by-shape"],
        "compare-rmsnorm": ["compare", "fixtures/rmsnorm"],
        "compare-base-test": ["compare", str(BASE), str(TEST)],
        "diff-base-test": ["diff", str(BASE), str(TEST)],
        "artifacts-damaged": ["artifacts", "fixtures/damaged"],
        "artifacts-rmsnorm": ["artifacts", "fixtures/rmsnorm"],
        "device": ["device", "fixtures/device"],
        "ranks": ["ranks", str(rank_dir), "-q"],
    }
    for name, args in commands.items():
        for fmt in FORMATS:
            yield f"{name}.{fmt}", [*args, "--format", fmt]
        for table in CSV_TABLES.get(args[0], ())[1:]:
            yield f"{name}.csv-{table}", [*args, "--format", "csv", "--table", table]


def text_headers(out: str) -> list[list[str]]:
    """The header row of every aligned table (a rule, the headers, the same rule), split at the rule's column spans."""
    lines = out.splitlines()
    heads = []
    for i in range(len(lines) - 2):
        rule = lines[i]
        if re.fullmatch(r"-+(  -+)*", rule) and lines[i + 2] == rule and (i < 2 or lines[i - 2] != rule):
            heads.append([lines[i + 1][a:b].strip() for a, b in (m.span() for m in re.finditer(r"-+", rule))])
    return heads


def markdown_headers(out: str) -> list[list[str]]:
    """The header row of every GitHub table."""
    lines = out.splitlines()
    return [
        [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        for line, below in zip(lines, lines[1:])
        if line.startswith("| ") and re.fullmatch(r"\|(:?-+:?\|)+", below)
    ]


def _scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


def _is_column(key: str, value: Any) -> bool:
    """Whether a JSON key holds a column: a scalar, a list of scalars, or an object of scalars keyed by data (a lane, an engine) or by side (base, test)."""
    if isinstance(value, dict):
        return bool(value) and all(_scalar(v) for v in value.values()) and (key in DATA_KEYED or set(value) <= {"base", "test"})
    if isinstance(value, list):
        return bool(value) and all(_scalar(v) for v in value)
    return True


def json_columns(doc: Any, data: bool = False) -> Iterator[str]:
    """Every key of the document that names a column; the keys of objects keyed by data (`data`) are values, not names."""
    if isinstance(doc, list):
        for v in doc:
            yield from json_columns(v)
    elif isinstance(doc, dict):
        for k, v in doc.items():
            if not data and k not in DOCUMENT and _is_column(k, v):
                yield k
            yield from json_columns(v, data=isinstance(v, dict) and (k in DATA_KEYED or (bool(v) and set(v) <= {"base", "test"})))


@pytest.fixture(scope="module")
def outputs(rank_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    runner = CliRunner()
    got = {}
    for name, args in runs(rank_dir):
        result = runner.invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, (name, result.output)
        got[name] = result.stdout
    return got


HEADERS = {header(n): n for n in VOCABULARY}


def test_the_vocabulary_is_unambiguous() -> None:
    """Two names show one header only when they are one figure with and without its unit (`max`, over ranks in the figure's unit; `max_us`)."""
    by_header: dict[str, set[str]] = {}
    for n in VOCABULARY:
        by_header.setdefault(header(n), set()).add(n)
    shared = {h: names for h, names in by_header.items() if len(names) > 1}
    assert all(names == {h, f"{h}_us"} for h, names in shared.items()), shared
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", n) for n in VOCABULARY)


def test_every_command_and_format_names_its_columns_from_the_vocabulary(outputs: dict[str, str]) -> None:
    unknown: dict[str, set[str]] = {}
    for name, out in outputs.items():
        fmt = name.split(".")[-1]
        if fmt == "json":
            names = set(json_columns(json.loads(out)))
            assert names, name
            bad = {n for n in names if n not in VOCABULARY}
        elif fmt.startswith("csv"):
            head = next(csv.reader(io.StringIO(out)), []) if out.strip() else []
            assert len(set(head)) == len(head), (name, head)
            bad = {c for c in head if base_name(c) not in VOCABULARY}
        else:
            tables = text_headers(out) if fmt == "table" else markdown_headers(out)
            assert tables, name
            bad = set()
            for cells in tables:
                assert len(set(cells)) == len(cells), (name, cells)  # no two columns under one header
                bad |= {c for c in cells if c not in HEADERS and not _qualified(c)}
        if bad:
            unknown[name] = bad
    assert unknown == {}, "\n".join(f"{k}: {sorted(v)}" for k, v in unknown.items())


def _qualified(cell: str) -> bool:
    """A header of a `name.qualifier` column: the qualifier's words, then a vocabulary name's header."""
    return any(cell.endswith(" " + h) and cell != h for h in HEADERS)


def test_csv_and_json_name_the_same_figures_alike(outputs: dict[str, str]) -> None:
    """The flat CSV tables use the JSON's own names for the same figures."""
    doc = json.loads(outputs["analyze-rmsnorm.json"])
    profile = doc["profiles"][0]
    for table, rows in (("lanes", profile["lanes"]), ("ops", profile["ops"]), ("kernels", profile["kernels"]), ("findings", profile["findings"]), ("tracks", profile["tracks"])):
        head = next(csv.reader(io.StringIO(outputs[f"analyze-rmsnorm.csv-{table}"])))
        assert set(head) - {"trace"} <= set(rows[0]), table
    compare = json.loads(outputs["compare-rmsnorm.json"])["variants"][0]
    head = next(csv.reader(io.StringIO(outputs["compare-rmsnorm.csv"])))
    assert {c for c in head if "." not in c} <= set(compare)
