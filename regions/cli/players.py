"""``ops/lb export-player``: everything this region holds about a player, as one JSON document
(``regions.actions.export``), on stdout or into a file; progress on stderr."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from regions.actions.erase_rows import PlayerStores
from regions.actions.export import export_player
from regions.cli.command import CommandError, Commands, add_command, cassandra_session
from regions.core.ids import user_id_error
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.redis.projection import RedisProjection, connect_redis
from regions.stores.redis.reads import RankReader


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def export_document(settings: Settings, user_id: str) -> dict[str, Any]:
    """The player's export document, read from this region's Cassandra and Redis."""
    problem = user_id_error(user_id)
    if problem is not None:
        raise CommandError(f"user: {problem}")
    redis = connect_redis(settings.redis)
    try:
        async with cassandra_session(settings) as session:
            stores = await asyncio.to_thread(PlayerStores.on, session)
            catalog = await asyncio.to_thread(CassandraCatalog, session)
            prefix = settings.redis.key_prefix
            reader = RankReader(RedisProjection(redis, prefix), prefix, settings.region)
            return await export_player(stores, catalog, reader, user_id, now=datetime.now(UTC), progress=_progress)
    finally:
        await redis.aclose()


async def _export(settings: Settings, args: argparse.Namespace) -> int:
    document = json.dumps(await export_document(settings, args.user), indent=2, sort_keys=True) + "\n"
    if args.output is None:
        sys.stdout.write(document)
        return 0
    try:
        await asyncio.to_thread(Path(args.output).write_text, document, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"--output {args.output}: {exc.strerror}; name a file you can write") from exc
    _progress(f"written to {args.output}")
    return 0


def register(commands: Commands) -> None:
    export = add_command(commands, "export-player", _export,
                         "everything this region holds about a player, as one JSON document")  # fmt: skip
    export.add_argument("user")
    export.add_argument("--output", metavar="FILE", help="write the document here (default: stdout)")
