"""Golden outputs: every command in every format on every fixture and real trace, byte for byte as committed under tests/golden/.

A change that alters any printed byte fails here; a change meant to alter output rewrites the
files with `NTRACE_UPDATE_GOLDEN=1 ./scripts/test tests/test_golden.py` and the diff of
tests/golden/ shows, in review, exactly what changed.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ntrace.cli import main

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"
#: Outputs larger than this are kept as their SHA-256 and size (still byte-for-byte; a 6 MB export would not be read in review anyway).
DIGEST_ABOVE = 256 << 10
REAL = sorted((REPO / "tests" / "data" / "kineto").glob("*.json.gz"))
FORMATS = ("table", "json", "csv", "markdown")
BASE, TEST = "tests/data/kineto/trace_compare__base__base.json.gz", "tests/data/kineto/trace_compare__test__test.json.gz"


def _cases() -> dict[str, list[str]]:
    """Golden name → CLI arguments (paths relative to the repository)."""
    cases: dict[str, list[str]] = {"lanes": ["lanes"]}
    targets = {"rmsnorm": "fixtures/rmsnorm", **{p.name.split("__")[0] + "-" + p.name.split("__")[-1].split(".")[0][:12]: str(p.relative_to(REPO)) for p in REAL}}
    for name, path in targets.items():
        for fmt in FORMATS:
            cases[f"analyze-{name}.{fmt}"] = ["analyze", path, "--format", fmt, "-q"]
    for name in ("model_mode", "damaged"):
        for fmt in ("table", "json"):
            cases[f"analyze-{name}.{fmt}"] = ["analyze", f"fixtures/{name}", "--format", fmt, "-q"]
    cases["analyze-rmsnorm-top.table"] = ["analyze", "fixtures/rmsnorm", "--sort-by", "self_privateuse1_time_total", "--top", "3", "-q"]
    cases["analyze-rmsnorm-shapes.json"] = ["analyze", "fixtures/rmsnorm/naive", "--group-by-shape", "--format", "json", "-q"]
    for fmt in FORMATS:
        cases[f"compare-rmsnorm.{fmt}"] = ["compare", "fixtures/rmsnorm", "--format", fmt]
        cases[f"compare-base-test.{fmt}"] = ["compare", BASE, TEST, "--format", fmt]
        cases[f"diff-base-test.{fmt}"] = ["diff", BASE, TEST, "--format", fmt]
        for name in ("rmsnorm", "model_mode", "damaged"):
            cases[f"artifacts-{name}.{fmt}"] = ["artifacts", f"fixtures/{name}", "--format", fmt]
        cases[f"device-fixtures.{fmt}"] = ["device", "fixtures/device", "--format", fmt]
    cases["compare-baseline.table"] = ["compare", "fixtures/rmsnorm/naive", "fixtures/rmsnorm/fused", "--baseline", "fused"]
    cases["diff-fused-naive.table"] = ["diff", "fixtures/rmsnorm/fused", "fixtures/rmsnorm/naive", "--fail-above", "10"]
    return cases


CASES = _cases()


def _run(args: list[str], tmp: Path) -> tuple[str, str]:
    """stdout (with the export's file appended) and stderr of one CLI run from the repository root, temporary paths replaced by <tmp>."""
    os.chdir(REPO)
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    out = f"{result.stdout}[exit {result.exit_code}]\n"
    return out.replace(str(tmp), "<tmp>"), result.stderr.replace(str(tmp), "<tmp>")


def _check(name: str, out: str, err: str) -> None:
    """Compare with the committed golden files (or rewrite them under NTRACE_UPDATE_GOLDEN=1)."""
    if len(out) > DIGEST_ABOVE:
        data = out.encode()
        out = f"sha256 {hashlib.sha256(data).hexdigest()} {len(data)} bytes\n"
    files = {GOLDEN / f"{name}.out": out, GOLDEN / f"{name}.err": err}
    if os.environ.get("NTRACE_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        for path, text in files.items():
            if text or path.suffix == ".out":
                path.write_text(text)
            else:
                path.unlink(missing_ok=True)
        return
    for path, text in files.items():
        expected = path.read_text() if path.exists() else ""
        assert text == expected, f"{path.name} differs from the golden output"


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_output_is_golden(name: str, tmp_path: Path) -> None:
    out, err = _run(CASES[name], tmp_path)
    _check(name, out, err)


@pytest.mark.parametrize("trace", ["fixtures/rmsnorm/naive", *(str(p.relative_to(REPO)) for p in REAL)], ids=lambda t: re.sub(r"[^A-Za-z0-9]+", "-", Path(t).name)[:24])
def test_perfetto_export_is_golden(trace: str, tmp_path: Path) -> None:
    out_file = tmp_path / "export.json"
    out, err = _run(["export", trace, "--perfetto", str(out_file), "-q"], tmp_path)
    name = "export-" + re.sub(r"[^A-Za-z0-9]+", "-", Path(trace).name)[:40]
    _check(name, out + out_file.read_text(), err)
