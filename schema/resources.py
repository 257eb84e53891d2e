"""Static contract files shipped in this package: CQL migrations and Redis Lua scripts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.cql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


def _split_statements(text: str) -> tuple[str, ...]:
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    return tuple(s.strip() for s in "\n".join(lines).split(";") if s.strip())


def cql_migrations() -> list[Migration]:
    """All migrations under ``schema/cql``, in version order; each statement is idempotent."""
    found = []
    for entry in resources.files("schema.cql").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            statements = _split_statements(entry.read_text(encoding="utf-8"))
            found.append(Migration(int(match.group(1)), match.group(2), statements))
    return sorted(found, key=lambda m: m.version)


def lua_script(name: str) -> str:
    """The source of ``schema/lua/<name>.lua``."""
    return resources.files("schema.lua").joinpath(f"{name}.lua").read_text(encoding="utf-8")
