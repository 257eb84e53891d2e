"""What every operator command shares: how it is run and registered, its error for the operator, its
Cassandra session and how it prints progress."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeAlias

from cassandra import DriverException
from cassandra.cluster import Session

from regions.runtime.settings import Settings
from regions.stores.cassandra.session import CASSANDRA_ERRORS, CassandraUnavailable, connect, describe

#: A command: run with the settings and its parsed arguments, it returns the exit status.
Command: TypeAlias = Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, int]]
#: Where a group of commands adds its own (``ArgumentParser.add_subparsers``).
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class CommandError(Exception):
    """What went wrong, for the operator: printed as ``error: ...``, exit status 1."""


def add_command(commands: Commands, name: str, run: Command, summary: str) -> argparse.ArgumentParser:
    """The parser of command ``name`` (``summary`` is its line in ``lb --help``), which ``run`` runs."""
    parser = commands.add_parser(name, help=summary)
    parser.set_defaults(run=run)
    return parser


def say(line: str) -> None:
    """A line of progress, shown at once."""
    print(line, flush=True)


@contextlib.asynccontextmanager
async def cassandra_session(settings: Settings) -> AsyncIterator[Session]:
    """A session for one command; Cassandra being away is a ``CassandraUnavailable`` that says where."""
    try:
        cluster, session = connect(settings.cassandra)
    except CASSANDRA_ERRORS as exc:
        raise CassandraUnavailable(
            f"Cassandra at {describe(settings.cassandra)} is not reachable ({type(exc).__name__}). "
            "See 'ops/services status'; 'ops/services up' starts it."
        ) from exc
    try:
        yield session
    except DriverException as exc:
        raise CassandraUnavailable(
            f"Cassandra at {describe(settings.cassandra)} did not answer ({type(exc).__name__}); retry, "
            "or see 'ops/services status'."
        ) from exc
    finally:
        cluster.shutdown()
