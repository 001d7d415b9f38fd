"""The package's shape, read from its source: no import cycles, layers import downwards only, small
modules and functions (issue 14). Fails when someone adds a cycle or a back-import."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cnmtune"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100
# the jitted rv32i interpreter loop: one function so numba compiles one dispatch loop
# the simulator's jitted loops: the interpreter's dispatch, and the co-simulation that mirrors
# DpuTimeline.run, _act and _Functional.step step by step in one compiled function
LONG_FUNCTIONS_ALLOWED = {"cnmtune.runtime.sim.interpreter.run_tasklet", "cnmtune.runtime.sim.cosim.cosimulate"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
    """Every cnmtune module `name` imports, anywhere in its body (lazy imports count too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            # `from package import submodule` imports the submodule
            found.update(f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in known)
    return {m for m in found if m in known and m != name}


def import_graph() -> nx.DiGraph:
    """Directed graph of cnmtune modules: an edge A -> B when A imports B."""
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        graph.add_edges_from((name, target) for target in _imported(name, path, set(modules)))
    return graph


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_graph_sees_lazy_and_relative_imports(tmp_path):
    known = {"cnmtune.a", "cnmtune.a.b", "cnmtune.c"}
    source = tmp_path / "b.py"
    source.write_text("def f():\n    from cnmtune.c import x\n    from . import b\n")
    assert _imported("cnmtune.a.z", source, known) == {"cnmtune.c", "cnmtune.a", "cnmtune.a.b"}


def test_no_import_cycles():
    graph = import_graph()
    # package __init__ modules re-export their children: a child importing a sibling through the
    # package is not a cycle of modules, so edges from a package to its own children are dropped
    modules = nx.DiGraph((a, b) for a, b in graph.edges if not _in(b, a))
    cycles = list(nx.simple_cycles(modules))
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c + c[:1]) for c in cycles[:10])


@pytest.mark.parametrize("lower, upper", [("cnmtune.runtime", "cnmtune.costmodel"),
                                          ("cnmtune.runtime", "cnmtune.plugin"),
                                          ("cnmtune.costmodel", "cnmtune.plugin"),
                                          ("cnmtune.passes", "cnmtune.plugin"),
                                          ("cnmtune.passes", "cnmtune.costmodel")])
def test_layers_import_downwards_only(lower, upper):
    wrong = sorted(f"{a} -> {b}" for a, b in import_graph().edges if _in(a, lower) and _in(b, upper))
    assert not wrong, f"{lower} must not import {upper}:\n" + "\n".join(wrong)


def test_modules_stay_small():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_functions_stay_short():
    long = {}
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and f"{name}.{node.name}" not in LONG_FUNCTIONS_ALLOWED:
                    long[f"{name}.{node.name}"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"
