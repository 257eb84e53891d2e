"""The closed periods a moderation action of a windowed board republishes, and their versions' claims.

A period that is CLOSING or CLOSED when the home lifecycle worker writes an action gets the action's
result version (``moderation:<sequence>`` in ``board_corrections``, under the period's board id
``<board>@<key>``) when its home projection shows the player otherwise than the action asks
(``regions.core.moderation.republishes``). The periods looked at: those whose archived results hold
the player (``archived_players``: closed while the player was shown), and those from the period
before the action's (a hide) or before the hide it undoes (a restore) up to the current one (closed
while the player was hidden). The action's record names each such period, so every region's
processor changes the player's state there as in the current period, and the worker publishes the
version as a CLOSED board's once the projection shows the change (``regions.lifecycle.publish``).

A crash after a claim is made finds the claim again (the id is the action's): the period is named
anew whatever its projection shows by then, and its version is published once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from regions.actions.correct import claim_version
from regions.actions.moderate import version_of
from regions.core.boards import Board, BoardStatus
from regions.core.moderation import republishes
from regions.core.periods import WindowSpec, period_of, previous_period
from regions.stores.cassandra.base import ms
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.moderation import CassandraModeration, ModerationEntry
from regions.stores.cassandra.periods import CassandraPeriods, PeriodRecord
from regions.stores.cassandra.results import CassandraResults
from regions.stores.redis.projection import RedisProjection
from schema.scoped import period_board_id, split_board_id


@dataclass(frozen=True, slots=True)
class PeriodStores:
    moderation: CassandraModeration
    corrections: CassandraCorrections
    periods: CassandraPeriods
    results: CassandraResults


async def claim_periods(
    stores: PeriodStores, projection: RedisProjection, board: Board, entry: ModerationEntry
) -> list[str]:
    """The period board ids whose result version the action claims (claimed now, or before)."""
    spec = board.window_spec
    if spec is None or spec.rolling:
        return []
    positions = await projection.positions()
    if positions.epoch is None or positions.rebuilding:
        raise RuntimeError(f"{board.id}: the projection is being rebuilt; its periods are looked at later")
    claimed = []
    for key, period in sorted((await _candidates(stores, board, spec, entry)).items()):
        board_id = period_board_id(board.id, key)
        request = version_of(entry, board_id)
        known = await stores.corrections.get(board_id, request.correction_id)
        if known is None and not republishes(
            entry.hidden, period.status, await _shown(projection, board, board_id, entry)
        ):
            continue
        await claim_version(stores.corrections, request, datetime.now(UTC))
        claimed.append(board_id)
    return claimed


async def open_periods(periods: CassandraPeriods, board_ids: list[str]) -> list[str]:
    """Of ``board_ids``, the periods that are not closing yet (no period row, or OPEN)."""
    found = []
    for board_id in board_ids:
        base, key = split_board_id(board_id)
        if key is None:
            continue
        row = (await periods.between(base, key, key)).get(key)
        if row is None or row.status is BoardStatus.OPEN:
            found.append(board_id)
    return found


async def _candidates(
    stores: PeriodStores, board: Board, spec: WindowSpec, entry: ModerationEntry
) -> dict[str, PeriodRecord]:
    """The period rows (closing or closed) the action may change, by key."""
    since_ms = ms(entry.at) or 0
    if not entry.hidden:  # a restore: every period closed since the hide it undoes
        hide = await stores.moderation.last_of(board.id, entry.user_id, before=entry.sequence)
        since_ms = min(since_ms, ms(hide.at) or since_ms) if hide is not None else since_ms
    first = previous_period(spec, period_of(spec, since_ms)).key
    rows = await stores.periods.between(board.id, first, period_of(spec, ms(entry.at) or 0).key)
    for archived in await stores.results.archives_of(entry.user_id):
        base, key = split_board_id(archived.board_id)
        if base == board.id and key is not None and key not in rows:
            rows.update(await stores.periods.between(board.id, key, key))
    return rows


async def _shown(
    projection: RedisProjection, board: Board, board_id: str, entry: ModerationEntry
) -> bool | None:
    """The player shown in the period's projection (True), held hidden (False), or absent (None)."""
    if await projection.version_of(board_id, entry.user_id) is None:
        return None
    return await projection.total_of(board_id, entry.user_id, board.sort_order) is not None
