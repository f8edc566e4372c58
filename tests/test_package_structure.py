"""The package's shape: every name imported from the one module that defines it, and a core whose folders stay
small enough to read. The layers and the absence of import cycles are import-linter's contracts (pyproject.toml,
run by `lint-imports` in CI)."""

import ast
import re
from pathlib import Path

import mlm_studio

PACKAGE = Path(mlm_studio.__file__).parent
ROOT = PACKAGE.parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


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


def imports_of(tree: ast.Module):
    """(module, name) for every `from mlm_studio… import name`, wherever it is (deferred and annotation-only
    imports count)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("mlm_studio"):
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mlm_studio"):
                    yield alias.name, None


def test_every_name_is_imported_from_its_home():
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}
    test_trees = {str(p): ast.parse(p.read_text(encoding="utf-8")) for p in (ROOT / "tests").rglob("*.py")}
    strays = []
    for where, tree in {**trees, **test_trees}.items():
        for module, name in imports_of(tree):
            if name is None or f"{module}.{name}" in MODULES:
                continue
            if module not in trees or name not in defined(trees[module]):
                strays.append(f"{where}: from {module} import {name}")
    assert not strays, "\n".join(strays)


def test_the_core_is_a_tree_of_small_folders():
    core = PACKAGE / "core"
    top = [p for p in core.glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= 10, sorted(p.name for p in top)
    for folder in (p for p in core.iterdir() if p.is_dir() and p.name != "__pycache__"):
        assert (folder / "__init__.py").is_file(), folder.name
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert 1 <= len(modules) <= 15, (folder.name, len(modules))


def test_every_module_is_named_in_the_architecture_page():
    """docs/architecture.md lists every module of the package by its name, so a new one takes its place there."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    unnamed = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "mlm_studio").rglob("*.py"))
        if path.name != "__init__.py" and not re.search(rf"\b{re.escape(path.stem)}\b", page)
    ]
    assert not unnamed, f"modules docs/architecture.md does not name: {unnamed}"
