"""Dependencies point one way: a pure core imports only other cores and the shared contracts."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORES = ("gateway/core", "regions/core")
PROJECT = ("gateway", "regions", "replicator", "schema")
ALLOWED = ("gateway.core", "regions.core", "schema.records", "schema.lifecycle", "schema.event_id", "schema.scoped")


def _project_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return [n for n in names if n.split(".")[0] in PROJECT]


CORE_MODULES = sorted(p for core in CORES for p in (ROOT / core).glob("*.py"))


@pytest.mark.parametrize("path", CORE_MODULES, ids=[str(p.relative_to(ROOT)) for p in CORE_MODULES])
def test_a_core_module_imports_only_cores_and_contracts(path: Path) -> None:
    outside = [n for n in _project_imports(path) if not n.startswith(ALLOWED)]

    assert outside == [], f"{path.relative_to(ROOT)} imports adapters: {outside}"
