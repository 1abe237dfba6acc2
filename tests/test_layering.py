"""The import structure is the architecture: core <- rules <- engines <- api; engines never import each other."""

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "chainrules"

# top-level subpackage -> subpackages it must not import
FORBIDDEN = {
    "core": {"rules", "forward", "reverse", "api", "testing", "demo"},
    "rules": {"forward", "reverse", "api", "testing", "demo"},
    "forward": {"reverse", "api", "testing", "demo"},
    "reverse.trace": {"forward", "reverse.source", "api", "testing", "demo"},
    "reverse.source": {"forward", "reverse.trace", "api", "testing", "demo"},
}


def _layer(module: str) -> str | None:
    for layer in sorted(FORBIDDEN, key=len, reverse=True):
        if module == layer or module.startswith(layer + "."):
            return layer
    return None


def _imports(path: pathlib.Path) -> set[str]:
    """Absolute chainrules module names imported by a file (relative imports resolved)."""
    package = ".".join(path.relative_to(SRC.parent).parts[:-1])
    return _imports_of(path.read_text(), package)


def _imports_of(source: str, package: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.add(name)
            found.update(f"{name}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {n[len("chainrules.") :] for n in found if n.startswith("chainrules.")} | (
        {""} if "chainrules" in found else set()
    )


FILES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_go_one_way(path):
    own = _layer(".".join(path.relative_to(SRC).with_suffix("").parts))
    if own is None:
        return
    for target in _imports(path):
        assert target != "", f"{path.relative_to(SRC)} imports the top-level chainrules package"
        bad = {f for f in FORBIDDEN[own] if target == f or target.startswith(f + ".")}
        assert not bad, f"{path.relative_to(SRC)} ({own}) imports {target}"


def test_core_imports_no_engine_and_no_rule_module():
    core_files = [p for p in FILES if p.relative_to(SRC).parts[0] == "core"]
    assert core_files
    for path in core_files:
        for target in _imports(path):
            assert not target.startswith(("rules", "forward", "reverse", "api", "testing")), (path, target)


def test_the_check_resolves_relative_imports():
    assert "rules.operators" in _imports_of("from ..rules import operators\n", "chainrules.core")
    assert "core.tangents" in _imports_of("from .tangents import Thunk\n", "chainrules.core")
    assert "" in _imports_of("import chainrules\n", "chainrules.rules")
