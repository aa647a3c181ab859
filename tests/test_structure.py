"""The package's shape: no import cycles between its modules (lazy imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "translator"


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(path: Path) -> set[str]:
    """translator modules that `path` imports at run time, at the top or inside functions."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _type_checking_block(node):
            return  # annotations only: no import happens at run time
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("translator."):
                found.add(node.module.split(".")[1])
            elif node.module == "translator":
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("translator."):
                    found.add(alias.name.split(".")[1])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found - {path.stem}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def walk(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (cycle := walk(dep, [*path, dep])):
                return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := walk(start, [start])):
            return cycle
    return None


def test_find_cycle_sees_a_cycle_and_its_absence() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_lazy_import_counts_and_type_checking_does_not(tmp_path: Path) -> None:
    tree = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from translator.a import A\n"
        "def f():\n    from translator.b import g\n"
    )
    path = tmp_path / "probe.py"
    path.write_text(tree, encoding="utf-8")
    assert imports_of(path) == {"b"}


def test_no_import_cycles_between_modules() -> None:
    graph = {p.stem: imports_of(p) for p in PACKAGE.glob("*.py")}
    assert "predict" in graph and "attention" in graph
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph) or [])}"
