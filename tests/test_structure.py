"""The package's shape: wings that import only downwards, no import cycles, short modules.

The layering, from the bottom:

    ground     config, errors, device, metrics, specials, cpu,  imports no wing
               run/
    data       read, clean, tokenizers, prepared data, batches  may import the ground
    model      the Transformer                                  may import the ground
    inference  decoding, translate, validate                    + data, model
    training   the Trainer and `translator train`               + data, model, inference
    export     CTranslate2 export and engine                    + data, model, inference
    serve      the HTTP app and page                            + data, model, inference, export
    distill    a student trained on a teacher's translations    + training, export and below
    interop    import/export of Transformers (Marian) models    + data, model, inference
    top        cli.py, commands/, __main__.py                   may import anything; the
               command layer (commands/) is imported by cli.py alone

Every import counts: at the top of a module, inside a function, or under `if TYPE_CHECKING:`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "translator"
MAX_LINES = 400

WINGS = ("data", "model", "inference", "training", "export", "serve", "distill", "interop")
TOP = {"translator", "translator.cli", "translator.commands", "translator.__main__"}
LAYER = "translator.commands"  # a module per verb: parsed options into calls
ALLOWED: dict[str, set[str]] = {
    "ground": {"ground"},
    "data": {"ground", "data"},
    "model": {"ground", "model"},
    "inference": {"ground", "data", "model", "inference"},
    "training": {"ground", "data", "model", "inference", "training"},
    "export": {"ground", "data", "model", "inference", "export"},
    "serve": {"ground", "data", "model", "inference", "export", "serve"},
    "distill": {"ground", "data", "model", "inference", "training", "export", "distill"},
    "interop": {"ground", "data", "model", "inference", "interop"},
}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """translator/data/read.py -> translator.data.read; a package's __init__.py -> the package."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def wing_of(module: str) -> str:
    """The wing a module belongs to: a wing's name, 'top' or 'ground'."""
    if module in TOP or module.startswith(f"{LAYER}."):
        return "top"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in WINGS else "ground"


def imports_of(path: Path, modules: set[str], package: Path = PACKAGE) -> set[str]:
    """translator modules that `path` imports, anywhere in the file (TYPE_CHECKING included).

    `from translator.data import tokenizer` names the module translator.data.tokenizer when that
    is a module of `modules`, else the package translator.data.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "translator" or node.module.startswith("translator."):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(
                a.name
                for a in node.names
                if a.name == "translator" or a.name.startswith("translator.")
            )
    return found - {module_name(path, package)}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Every module of the package and the package modules it imports."""
    paths = {module_name(p, package): p for p in package.rglob("*.py")}
    return {name: imports_of(path, set(paths), package) for name, path in paths.items()}


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


def layering_violations(graph: dict[str, set[str]]) -> list[str]:
    """One line per import that points up or sideways into a wing it may not use."""
    out = []
    for module, deps in sorted(graph.items()):
        wing = wing_of(module)
        if wing == "top":
            continue
        for dep in sorted(deps):
            if wing_of(dep) not in ALLOWED[wing]:
                may = ", ".join(sorted(ALLOWED[wing] - {wing})) or "nothing below it"
                out.append(
                    f"{module} imports {dep}: {wing} may not import {wing_of(dep)} "
                    f"({wing} may import: {may})"
                )
    return out


# --------------------------------------------------------------------------- the checkers


def test_find_cycle_sees_a_cycle_and_its_absence() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_lazy_and_type_checking_imports_both_count(tmp_path: Path) -> None:
    pkg = tmp_path / "translator"
    (pkg / "data").mkdir(parents=True)
    (pkg / "data" / "tokenizer.py").write_text("")
    probe = pkg / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from translator.a import A\n"
        "def f():\n    from translator.b import g\n"
        "from translator.data import tokenizer\nimport translator.c\n"
    )
    modules = {"translator.data.tokenizer", "translator.a", "translator.b", "translator.c"}
    found = imports_of(probe, modules, pkg)
    assert found == {"translator.a", "translator.b", "translator.c", "translator.data.tokenizer"}


def test_layering_names_the_upward_import() -> None:
    graph = {
        "translator.inference.predict": {"translator.training.trainer", "translator.model.x"},
        "translator.data.read": {"translator.errors"},
        "translator.errors": set(),
        "translator.run.paths": {"translator.data.read"},
        "translator.cli": {"translator.training.train"},
    }
    assert layering_violations(graph) == [
        "translator.inference.predict imports translator.training.trainer: inference may not "
        "import training (inference may import: data, ground, model)",
        "translator.run.paths imports translator.data.read: ground may not import data "
        "(ground may import: nothing below it)",
    ]


def test_wings_are_recognised() -> None:
    assert wing_of("translator.cli") == "top"
    assert wing_of("translator.commands.train") == "top"
    assert wing_of("translator.config.load") == "ground"
    assert wing_of("translator.run.checkpoint") == "ground"
    assert wing_of("translator.serve") == "serve"
    assert wing_of("translator.training.trainer") == "training"


# --------------------------------------------------------------------------- the package


def test_package_is_laid_out_in_wings() -> None:
    graph = import_graph()
    for wing in WINGS:
        assert f"translator.{wing}" in graph, f"translator/{wing}/__init__.py is missing"
    assert "translator.inference.predict" in graph and "translator.run.paths" in graph
    flat = sorted(m for m in graph if m.count(".") == 1 and wing_of(m) == "ground")
    assert len(flat) <= 10, f"the ground has grown flat again: {flat}"


def test_no_import_cycles_between_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, f"import cycle: {' -> '.join(cycle or [])}"


def test_no_wing_imports_a_wing_above_it() -> None:
    problems = layering_violations(import_graph())
    assert not problems, "layering broken:\n" + "\n".join(problems)


def test_only_the_parser_imports_the_command_layer() -> None:
    def in_layer(module: str) -> bool:
        return module == LAYER or module.startswith(f"{LAYER}.")

    users = {
        module
        for module, deps in import_graph().items()
        if not in_layer(module) and any(in_layer(dep) for dep in deps)
    }
    assert users <= {"translator.cli"}, f"only cli.py imports {LAYER}; also: {sorted(users)}"


@pytest.mark.parametrize("wing", WINGS + ("run", "config"))
def test_each_wing_says_what_it_does_and_may_import(wing: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / wing / "__init__.py").read_text()))
    assert doc and "import" in doc.lower(), f"translator/{wing}/__init__.py: no docstring saying "
    "what the wing does and what it may import"


def test_every_module_opens_with_a_docstring_and_stays_short() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text))
        assert doc and doc.splitlines()[0].strip(), f"{path}: no opening one-line docstring"
        n = text.count("\n")
        assert n <= MAX_LINES, f"{path}: {n} lines; split it along its seams (≤ {MAX_LINES})"


# --------------------------------------------------------------------------- the README's table

README = PACKAGE.parent / "README.md"


def readme_wings_table(text: str) -> dict[str, tuple[set[str], set[str]]]:
    """The README's "Project layout" table: wing -> (the files its row names, what it imports)."""
    section = text.split("\n## Project layout\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[set[str], set[str]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) != 3 or cells[0] == "wing":
            continue
        names = set(re.findall(r"`([^`]+)`", cells[0]))
        if cells[0].startswith(("the ground", "the top")):
            wing = cells[0].split()[1].rstrip(":")
        else:
            wing = cells[0].strip("`").rstrip("/")
        may = {w.strip().removeprefix("the ") for w in cells[2].split(",")} - {"nothing"}
        rows[wing] = (names, may)
    return rows


def test_readme_wings_table_matches_the_tree() -> None:
    rows = readme_wings_table(README.read_text(encoding="utf-8"))
    fix = "; update the table in README.md's 'Project layout'"
    assert set(rows) == {*WINGS, "ground", "top"}, f"README's wings: {sorted(rows)}{fix}"
    for wing in WINGS:
        names, may = rows[wing]
        assert names == {f"{wing}/"} and (PACKAGE / wing / "__init__.py").exists(), wing + fix
        rule = ALLOWED[wing] - {wing}
        assert may == rule, f"README: {wing} may import {sorted(may)}, the rule {sorted(rule)}{fix}"
    ground, may = rows["ground"]
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    tree = {f"{name}/" for name in packages - set(WINGS) if f"translator.{name}" not in TOP}
    tree |= {p.name for p in PACKAGE.glob("*.py") if module_name(p) not in TOP}
    assert ground == tree, f"README's ground row: {sorted(ground)}; the tree: {sorted(tree)}{fix}"
    assert may == set(), f"README: the ground may import {sorted(may)}; the rule: nothing{fix}"
    top, may = rows["top"]
    listed = {f"translator.{Path(name).stem}" for name in top}
    assert listed == TOP - {"translator"}, f"README's top row: {sorted(top)}{fix}"
    assert may == {"anything"}, f"README: the top may import {sorted(may)}; the rule: anything{fix}"
