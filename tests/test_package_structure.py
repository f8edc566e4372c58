"""The package's shape: every name imported from the one module that defines it, no import cycle, a core whose
folders stay small enough to read."""

import ast
from pathlib import Path

import mlm_studio

PACKAGE = Path(mlm_studio.__file__).parent
ROOT = PACKAGE.parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def defined(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names.update(t.id for t in ast.walk(target) if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def walk_at_run_time(node: ast.AST):
    """Every node below `node` except those under `if TYPE_CHECKING:` (imports for annotations only)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not (isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING"):
            yield from walk_at_run_time(child)


def imports_of(tree: ast.Module, walk=walk_at_run_time):
    """(module, name) for every `from mlm_studio… import name` run at import or call time (deferred imports
    count)."""
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("mlm_studio"):
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mlm_studio"):
                    yield alias.name, None


def test_every_name_is_imported_from_its_home():
    test_trees = {str(p): ast.parse(p.read_text(encoding="utf-8")) for p in (ROOT / "tests").rglob("*.py")}
    strays = []
    for where, tree in {**TREES, **test_trees}.items():
        for module, name in imports_of(tree, ast.walk):
            if name is None or f"{module}.{name}" in MODULES:
                continue
            if module not in TREES or name not in defined(TREES[module]):
                strays.append(f"{where}: from {module} import {name}")
    assert not strays, "\n".join(strays)


def test_no_import_cycle():
    graph = {}
    for name, tree in TREES.items():
        targets = set()
        for module, imported in imports_of(tree):
            target = f"{module}.{imported}" if f"{module}.{imported}" in MODULES else module
            if target in MODULES and target != name and not MODULES[target].name == "__init__.py":
                targets.add(target)
        graph[name] = targets
    state, cycles = {}, []

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" → ".join([*trail[trail.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(cycles)


def test_the_core_is_a_tree_of_small_folders():
    core = PACKAGE / "core"
    top = [p for p in core.glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= 10, sorted(p.name for p in top)
    for folder in (p for p in core.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert (folder / "__init__.py").is_file(), folder.name
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert 1 <= len(modules) <= 15, (folder.name, len(modules))
