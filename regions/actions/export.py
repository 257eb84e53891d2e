"""A player's data, as one JSON document (a player's request for their data).

What it holds: per board (and current or previous period) where the player has a score in this
region's projection, their total, rank and metadata; their award history rows; their entries in
archived results (board, version, rank, score, metadata); their profile. Every score says whether
it is an estimate (``estimated``: an approximate board's) and its exact count if known (``verified``,
``exactScore``), as the API's entries do (``regions.core.candidates.shown``): an approximate board's
item has an estimate and no rank (the board ranks none exactly; an archived chart's entry has its
place in the chart), and never shows the verified count it keeps as metadata. Reads only: the
archives' index of players names the chunks to read (older versions are indexed first, once), the
history comes by the index on ``award_history.user_id``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, replace
from datetime import datetime
from typing import Any

from regions.actions.erase_archives import index_older
from regions.actions.erase_rows import PlayerStores
from regions.core.boards import Board
from regions.core.candidates import Shown, shown
from regions.core.moderation import state_boards
from regions.core.periods import utc_ms
from regions.core.results import holds_estimates
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.results import CassandraResults
from regions.stores.redis.reads import RankReader
from schema.scoped import split_board_id

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def _metadata(text: str | None) -> Any:
    """Metadata as the JSON it was sent as (None: none)."""
    return json.loads(text) if text else None


def _shown(view: Shown, estimated: bool) -> dict[str, Any]:
    return {"metadata": _metadata(view.metadata), "estimated": estimated, "verified": view.verified,
            "exactScore": view.exact_score}  # fmt: skip


def _camel(row: dict[str, Any]) -> dict[str, Any]:
    """A row's fields named as the API names fields (``board_id`` -> ``leaderboardId``)."""
    named = {}
    for name, value in row.items():
        head, *rest = name.replace("board_id", "leaderboard_id").split("_")
        named[head + "".join(part.title() for part in rest)] = value
    return named


async def _scores(boards: list[Board], reader: RankReader, user_id: str, now: datetime) -> list[dict[str, Any]]:
    """The player's total, rank and metadata on every board (or period) where they have a score; on
    an approximate board, the item's estimate and verified count, without a rank."""
    read: list[Board] = []
    for board in boards:
        read += [replace(board, id=b) for b in state_boards(board.id, board.window_spec, utc_ms(now))]
    entries = await reader.entries([(b, user_id) for b in read])
    scores = []
    for b, e in zip(read, entries, strict=True):
        if e is not None:
            estimated = b.approximate is not None
            rank, shared_rank = (None, None) if estimated else (e.rank, e.shared_rank)
            scores.append({
                "leaderboardId": b.id, "total": e.score, "rank": rank, "sharedRank": shared_rank,
                **_shown(shown(e.score, e.metadata, estimated=estimated), estimated),
            })  # fmt: skip
    return scores


async def _archived(results: CassandraResults, user_id: str, approximate: set[str]) -> list[dict[str, Any]]:
    """The player's entries in archived results, found through the index of archived players
    (``approximate``: the approximate boards, for results archived before they kept an error bound)."""
    await index_older(results)
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for where in await results.archives_of(user_id):
        header = await results.get(where.board_id, where.version)
        chunk = (await results.chunks(where.board_id, where.version, [where.chunk])).get(where.chunk, [])
        for i, entry in enumerate(chunk):
            if header is not None and entry.user_id == user_id:  # an index row may predate a rewrite
                estimated = holds_estimates(header.error_bound, split_board_id(where.board_id)[0] in approximate)
                found[(where.board_id, where.version)] = {
                    "leaderboardId": where.board_id, "version": where.version,
                    "rank": where.chunk * header.chunk_size + i + 1, "score": entry.score,
                    "errorBound": header.error_bound, **_shown(entry.shown(estimated=estimated), estimated),
                }  # fmt: skip
    return [found[key] for key in sorted(found)]


async def export_player(
    stores: PlayerStores,
    catalog: CassandraCatalog,
    reader: RankReader,
    user_id: str,
    *,
    now: datetime,
    progress: Progress = _quiet,
) -> dict[str, Any]:
    """Everything this region holds about the player, JSON-serializable; ``progress`` hears of
    each step as it starts."""
    progress("reading the player's scores in the projection")
    boards = await catalog.all()
    scores = await _scores(boards, reader, user_id, now)
    progress(f"{len(scores)} boards with a score; reading the award history")
    history = [_camel(asdict(row)) for row in await stores.audit.rows_of(user_id)]
    progress(f"{len(history)} award history rows; reading the archived results")
    approximate = {b.id for b in boards if b.approximate is not None}
    archived = await _archived(stores.archives.results, user_id, approximate)
    progress(f"{len(archived)} archived results hold the player; reading the profile")
    profile = (await stores.profiles.get_many([user_id])).get(user_id)
    return {
        "userId": user_id,
        "exportedAt": now.isoformat(),
        "region": reader.region,
        "scores": scores,
        "awardHistory": history,
        "archivedResults": archived,
        "profile": None if profile is None else _camel(asdict(profile)),
    }
