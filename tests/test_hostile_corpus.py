"""The bad-input corpus's round-two cases (issue 20) through every command and format, each case in a child process under a 4 GiB RLIMIT_AS and a time limit.

Per case: its own expected outcome (scripts/make_bad_inputs.py), then every command on it
(analyze in every format, the others in formats taking turns over the cases, so together the
cases run every command in every format); no run may crash or print a traceback, every run ends 0, 1 or 2 with one-line
errors, every input stays byte-identical (sparse files hashed by their data segments), and no
partial or temporary file is left in the output directories or the child's TMPDIR.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from test_bad_inputs import CASE_NAMES, GENERATOR, RAW_CONTROL, check_outcome, snapshot

CHILD = Path(__file__).with_name("hostile_child.py")
#: The address-space limit of each case's child process.
LIMIT = 4 << 30
#: Seconds one case's child may take for all its runs (a hang fails the case).
TIMEOUT = 300
FORMATS = ("table", "json", "csv", "markdown")
#: The round-two cases: every case from the first one issue 20 added.
ROUND_TWO = CASE_NAMES[CASE_NAMES.index("event_name_clears_screen") :]
HEAVY = {c["name"] for c in GENERATOR.CASES if c["heavy"]}


def command_matrix(path: str, sound: str, out: Path, turn: int) -> list[list[str]]:
    """Every command on `path`: analyze in every output format, each other command in the format whose turn it is (case `turn`), so the corpus covers every command in every format; outputs go under `out`."""
    fmt = [FORMATS[(turn + i) % len(FORMATS)] for i in range(5)]
    runs = [["analyze", path, "--format", f, "-q"] for f in FORMATS]
    runs += [
        ["compare", path, "--format", fmt[0]],
        ["diff", path, sound, "--format", fmt[1]],
        ["ranks", path, "--format", fmt[2], "-q"],
        ["artifacts", path, "--format", fmt[3]],
        ["device", path, "--format", fmt[4]],
        ["report", path, "-o", str(out / "report.html"), "-q"],
        ["export", path, "--perfetto", str(out / "perfetto.json"), "-q"],
        ["convert", path, "-o", str(out / "parquet")],
    ]
    if Path(path).is_dir():
        runs.append(["analyze", path, "-j", "2", "-q"])
    return runs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    """The corpus written once (sparse files take no disk), with its manifest by case name."""
    out = tmp_path_factory.mktemp("hostile")
    return out, {c["name"]: c for c in GENERATOR.write_corpus(out)}


def leftovers(root: Path) -> list[str]:
    """Hidden or partial files under `root` (what an interrupted atomic write would leave)."""
    return [str(p) for p in root.rglob("*") if p.name.startswith(".") or p.name.endswith((".part", ".tmp"))]


def test_round_two_has_at_least_40_cases_each_with_an_outcome() -> None:
    """Issue 20: at least 40 new cases, every one with its expected outcome."""
    assert len(ROUND_TWO) >= 40
    specs = {c["name"]: c for c in GENERATOR.CASES}
    assert all(specs[n]["outcome"] in {"ok", "warning", "error", "report"} and specs[n]["why"] for n in ROUND_TWO)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in ROUND_TWO])
def test_case_through_every_command_under_a_memory_limit(name: str, corpus: tuple[Path, dict[str, dict[str, Any]]], tmp_path: Path) -> None:
    root, cases = corpus
    spec = cases[name]
    if spec["needs"] == "non-root" and hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("permissions do not bind root")
    path = root / spec["path"]
    sound = root / cases["sound_trace"]["path"]
    own = [a.replace("{path}", str(path)).replace("{out}", str(tmp_path / "own")) for a in spec["args"]]
    runs = [own, *command_matrix(str(path), str(sound), tmp_path / "out", ROUND_TWO.index(name))]
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    before = snapshot(root)
    env = {**os.environ, **spec["env"], "TMPDIR": str(temp), "PYTHONPATH": os.pathsep.join(sys.path)}
    job = json.dumps({"limit": LIMIT, "runs": runs}, ensure_ascii=True)
    proc = subprocess.run([sys.executable, str(CHILD)], input=job, capture_output=True, text=True, timeout=TIMEOUT, env=env, errors="surrogateescape")
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 0 and len(results) == len(runs), f"case {name}: child exit {proc.returncode} after {len(results)} of {len(runs)} runs\n{proc.stderr[-3000:]}"
    first, *rest = results
    assert first["crash"] is None, f"case {name}: {first['crash']}"
    check_outcome(spec, first["exit"], first["stdout"], first["stderr"], path)
    for r in rest:
        where = f"case {name}: ntrace {' '.join(r['args'])}: exit {r['exit']}\n{r['stderr'][-1500:]}\n{r['stdout'][-500:]}"
        assert r["crash"] is None, where + f"\n{r['crash']}"
        assert "Traceback" not in r["stdout"] + r["stderr"] and not RAW_CONTROL.search(r["stdout"] + r["stderr"]), where
        assert r["exit"] in (0, 1, 2), where
        lines = r["stderr"].splitlines()
        assert all(line.startswith(("error: ", "warning: ")) for line in lines), where
        assert (r["exit"] == 2) == (sum(line.startswith("error: ") for line in lines) == 1), where
    assert snapshot(root) == before, f"case {name} changed the corpus"
    assert not leftovers(tmp_path) and not list(temp.iterdir()), f"case {name} left temporary files: {leftovers(tmp_path) + [str(p) for p in temp.iterdir()]}"
