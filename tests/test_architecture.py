"""The architecture: one dependency direction (the import-linter contracts in pyproject.toml), no import cycle anywhere, every subpackage naming its stage."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from helpers import REPO

SRC = REPO / "src" / "ntrace"


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every strongly connected set of two or more modules (an import cycle), found with Tarjan's algorithm over the whole graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.find_modules_directly_imported_by(node)):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle_anywhere() -> None:
    graph = grimp.build_graph("ntrace")  # function-level imports included
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("a", "a.b", "a.c", "a.d"):
        graph.add_module(module)
    graph.add_import(importer="a.b", imported="a.c")
    graph.add_import(importer="a.c", imported="a.b")
    graph.add_import(importer="a.c", imported="a.d")
    assert _cycles(graph) == [["a.b", "a.c"]]


def test_import_linter_contracts_are_kept() -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--config", str(REPO / "pyproject.toml")], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


@pytest.mark.parametrize("package", sorted(p.parent.relative_to(SRC.parent).as_posix().replace("/", ".") for p in SRC.rglob("__init__.py")))
def test_every_package_opens_with_a_docstring_naming_its_stage(package: str) -> None:
    doc = importlib.import_module(package).__doc__
    assert doc and len(doc.splitlines()[0]) > 20, f"{package} has no opening docstring"


def test_every_module_public_function_and_class_says_what_it_is_for() -> None:
    import ast

    missing = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text())
        if not ast.get_docstring(tree):
            missing.append(str(path.relative_to(SRC)))
        members = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        for node in [*tree.body, *(m for c in members for m in c.body)]:  # module-level and class-level definitions (closures are their function's detail)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_") and not ast.get_docstring(node):
                missing.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    assert missing == []


def test_strict_type_check_passes() -> None:
    """mypy --strict over src/ (its settings in pyproject.toml)."""
    from mypy import api

    limit = sys.getrecursionlimit()
    try:
        out, err, status = api.run(["--config-file", str(REPO / "pyproject.toml"), "--cache-dir", str(REPO / ".mypy_cache")])
    finally:
        sys.setrecursionlimit(limit)  # mypy raises it for good, and the decoders' depth checks in later tests depend on it
    assert status == 0, out + err
