"""The layout is the architecture, and dependencies point one way:
- a pure core (``regions/core``, ``gateway/core``) imports only cores and the shared contracts;
- ``schema`` (the contracts) imports nothing of the platform;
- runtime (settings, health, metrics, logs, workers) imports only cores and contracts;
- stores (one adapter package per technology) import no service and no tool;
- a service (the intake, processor, projector, audit, lifecycle, the gateway, the replicator) never
  imports another service or the operator's tools; actions shared by the gateway and the tools
  import no service;
- no module imports itself back through others, nor does a package;
- ``regions/`` holds packages, not flat modules; no product module is over 400 lines.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("gateway", "regions", "replicator", "schema")
CONTRACTS = ("schema.records", "schema.lifecycle", "schema.event_id", "schema.scoped")
SERVICES = (
    "regions.intake",
    "regions.processor",
    "regions.projector",
    "regions.audit",
    "regions.lifecycle",
    "gateway",
    "replicator",
)
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for top in PROJECT for p in sorted((ROOT / top).rglob("*.py"))}


def _imports(path: Path) -> set[str]:
    """The project's modules ``path`` imports (``from pkg import sub`` names the submodule only)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names} & MODULES.keys()
            found |= subs
            if len(subs) < len(node.names):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {n for n in found if n in MODULES}


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items()}


def _within(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _service_of(name: str) -> str | None:
    return next((s for s in SERVICES if _within(name, (s,))), None)


def _layer(prefixes: tuple[str, ...]) -> list[str]:
    return sorted(n for n in MODULES if _within(n, prefixes))


def _outside(name: str, allowed: tuple[str, ...]) -> list[str]:
    return sorted(d for d in GRAPH[name] if not _within(d, allowed))


CORES = _layer(("regions.core", "gateway.core"))


@pytest.mark.parametrize("name", CORES, ids=CORES)
def test_a_core_module_imports_only_cores_and_contracts(name: str) -> None:
    assert _outside(name, ("regions.core", "gateway.core", *CONTRACTS)) == []


SCHEMA = _layer(("schema",))


@pytest.mark.parametrize("name", SCHEMA, ids=SCHEMA)
def test_the_contracts_import_nothing_of_the_platform(name: str) -> None:
    assert _outside(name, ("schema",)) == []


RUNTIME = _layer(("regions.runtime",))


@pytest.mark.parametrize("name", RUNTIME, ids=RUNTIME)
def test_runtime_imports_only_cores_and_contracts(name: str) -> None:
    assert _outside(name, ("regions.runtime", "regions.core", "schema")) == []


STORES = _layer(("regions.stores",))


@pytest.mark.parametrize("name", STORES, ids=STORES)
def test_a_store_imports_no_service_and_no_tool(name: str) -> None:
    assert _outside(name, ("regions.stores", "regions.runtime", "regions.core", "schema")) == []


IN_SERVICES = sorted(n for n in MODULES if _service_of(n) is not None)


@pytest.mark.parametrize("name", IN_SERVICES, ids=IN_SERVICES)
def test_a_service_imports_no_other_service_and_no_tool(name: str) -> None:
    own = _service_of(name)
    crossing = sorted(
        d for d in GRAPH[name] if _service_of(d) not in (None, own) or _within(d, ("regions.cli",))
    )

    assert crossing == []


ACTIONS = _layer(("regions.actions",))


@pytest.mark.parametrize("name", ACTIONS, ids=ACTIONS)
def test_shared_actions_import_no_service(name: str) -> None:
    assert (
        _outside(name, ("regions.actions", "regions.stores", "regions.runtime", "regions.core", "schema"))
        == []
    )


def _circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _package(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rsplit(".", 1)[0]


def test_no_module_imports_itself_back() -> None:
    assert _circles(GRAPH) == []


def test_no_package_imports_itself_back() -> None:
    packages: dict[str, set[str]] = {}
    for name, deps in GRAPH.items():
        here = _package(name)
        for dep in deps:
            there = _package(dep)
            if not (_within(there, (here,)) or _within(here, (there,))):
                packages.setdefault(here, set()).add(there)

    assert _circles(packages) == []


def test_regions_holds_packages_not_flat_modules() -> None:
    flat = sorted(p.name for p in (ROOT / "regions").glob("*.py") if p.name != "__init__.py")

    assert flat == []


def test_no_product_module_is_over_the_size_limit() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()}

    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}


def test_the_rules_see_every_layer() -> None:
    # The rules above are only as good as the names they match: every layer has modules.
    assert all([CORES, SCHEMA, RUNTIME, STORES, IN_SERVICES, ACTIONS])
    assert {_service_of(n) for n in IN_SERVICES} == set(SERVICES)


def test_nothing_under_ops_imports_the_tests() -> None:
    importing = []
    for path in sorted((ROOT / "ops").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            importing += [str(path.relative_to(ROOT)) for n in names if n.split(".")[0] == "tests"]

    assert importing == []


def test_the_client_library_imports_only_itself_the_standard_library_and_httpx() -> None:
    # It ships apart from the platform (clients/python): a game service installs it alone.
    allowed = {"leaderboard_intake", "httpx", "__future__", *sys.stdlib_module_names}
    found = set()
    for path in sorted((ROOT / "clients" / "python" / "src").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found |= {n.split(".")[0] for n in names}

    assert "leaderboard_intake" in found and found - allowed == set()
