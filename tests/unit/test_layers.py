"""The layering DESIGN.md draws: import-linter's contracts (pyproject) hold, and no
module of weir reaches into another's underscore names."""

from __future__ import annotations

import ast
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Private names of third-party libraries weir has to use (py4j's JVM, pyarrow's
# expression call, pyiceberg's transaction update, PySpark's handles on its JVM objects,
# which a SparkListener and the status store are only reachable through).
THIRD_PARTY = {"_jvm", "_call", "_apply", "_exit", "_gateway", "_jsc", "_jdf", "_jsparkSession"}


def _defined_here(tree: ast.Module) -> set[str]:
    """Underscore names a module defines itself (functions, classes, attributes)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def test_no_module_uses_another_modules_underscore_names() -> None:
    found = []
    for path in sorted((ROOT / "weir").rglob("*.py")):
        tree = ast.parse(path.read_text())
        own = _defined_here(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("weir"):
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {a.name}"
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__") and node.attr not in THIRD_PARTY \
                    and node.attr not in own:
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports", path=str(pathlib.Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed (./scripts/test installs it)")
    out = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]
