"""Taking a player out of every archived result that holds them (a deleted account).

Archives are immutable except for this. Per board (or period) whose archives hold the player:
1. its published version n holds the player: version n+1 is published without them, ranks closed up
   (an approximate board's with the error bound of version n: the sketch keeps what the item counted),
   recorded as the board's newest result as a correction's is (its version claimed in
   ``board_corrections`` by the same lightweight transaction, chunks, then the header, then the
   catalog's ``result_version`` moved from n to n+1, then the claim marked published). The lifecycle
   worker leaves an erasure's version to the erasure (``regions.core.erasure.is_erasure``);
2. every earlier version holding them is rewritten in place: the entry removed and the players after
   it renumbered (closed up, as in the new version), so each version reads as a valid result of
   contiguous ranks; the chunks, then the header's counts, then a chunk left past the end;
3. the player's adjustments in the board's published corrections are removed (a correction names
   the players it adjusts);
4. the player's rows of ``archived_players`` are deleted last, so an erasure interrupted anywhere is
   found and finished by running it again (``regions.core.erasure.closed_up`` repairs a rewrite cut
   in the middle).

Finding the archives: the index on ``archived_players.user_id`` names them without reading a chunk;
versions archived before that index (header ``players_indexed`` null) are read whole once, by the
first erasure or export after it, and indexed (``index_older``). Cost per erasure: one indexed
lookup, a scan of the result headers (one row per version), and for each board holding the player
every chunk of each of its versions read and written again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from regions.core.corrections import CorrectionRequest
from regions.core.erasure import ERASURE_REASON, closed_up, erasure_id, needs_rewrite
from regions.stores.cassandra.corrections import CassandraCorrections, CorrectionEntry
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.results import CassandraResults, ResultHeader, result_chunks
from schema.scoped import split_board_id


class ErasureBlocked(Exception):
    """The player cannot be erased from a board's archive yet; the message says what to wait for."""


@dataclass(frozen=True, slots=True)
class ArchiveStores:
    results: CassandraResults
    corrections: CassandraCorrections
    lifecycle: CassandraLifecycle
    periods: CassandraPeriods


async def erase_from_archives(stores: ArchiveStores, user_id: str, *, now: datetime) -> str:
    """Erase the player from every archive; what was touched, as a line."""
    await index_older(stores.results)
    boards = {w.board_id for w in await stores.results.archives_of(user_id)}
    published, rewritten, corrections = 0, 0, 0
    for board_id in sorted(boards):
        published += await _publish_without(stores, board_id, user_id, now)
        corrections += await stores.corrections.erase_player(board_id, user_id)
        for header in await stores.results.versions(board_id):
            entries = await stores.results.all_entries(header)
            if needs_rewrite(entries, user_id):
                await stores.results.rewrite(header, closed_up(entries, user_id))
                rewritten += 1
    await stores.results.forget(user_id, await stores.results.archives_of(user_id))
    return (
        f"{len(boards)} boards: {published} versions published without the player, {rewritten} rewritten, "
        f"{corrections} corrections' adjustments of the player removed"
    )


async def index_older(results: CassandraResults) -> int:
    """Index the players of every version archived before archives were indexed (each is read whole
    once: afterwards its header says it is indexed); how many versions were."""
    older = await results.unindexed()
    for header in older:
        await results.mark_indexed(header, await results.all_entries(header))
    return len(older)


async def _published(stores: ArchiveStores, board_id: str) -> int | None:
    """The board's (or period's) newest published result version in the catalog."""
    base, key = split_board_id(board_id)
    if key is None:
        record = await stores.lifecycle.record(board_id)
        return None if record is None else record.result_version
    period = (await stores.periods.between(base, key, key)).get(key)
    return None if period is None else period.result_version


async def _publish_without(stores: ArchiveStores, board_id: str, user_id: str, now: datetime) -> int:
    """Publish the board's next version without the player if its newest holds them; 1 if it did."""
    base = await _published(stores, board_id)
    header = None if base is None else await stores.results.get(board_id, base)
    if base is None or header is None:
        return 0
    entries = await stores.results.all_entries(header)
    if not any(e.user_id == user_id for e in entries):
        return 0
    claim = await _claim(stores.corrections, board_id, erasure_id(board_id, user_id, base), base, now)
    kept = closed_up(entries, user_id)
    size = header.chunk_size
    chunks = result_chunks(kept, size)
    await stores.results.put_chunks(board_id, claim.result_version, chunks)
    await stores.results.put_header(ResultHeader(
        board_id, claim.result_version, now, ERASURE_REASON, len(kept), len(chunks), size,
        error_bound=header.error_bound,  # the same estimates: the sketch keeps what the item counted
    ))  # fmt: skip
    await _move_catalog(stores, board_id, claim.result_version)
    await stores.corrections.record_published(board_id, claim.correction_id, now)
    return 1


async def _claim(
    corrections: CassandraCorrections, board_id: str, correction_id: str, base: int, now: datetime
) -> CorrectionEntry:
    """The erasure's claim on version base+1 (made now, or found from an interrupted erasure)."""
    request = CorrectionRequest(board_id, correction_id, ERASURE_REASON, ())
    for _ in range(3):
        known = await corrections.get(board_id, correction_id)
        if known is not None:
            return known
        last = await corrections.last_version(board_id)
        if last is not None and last > base:
            raise ErasureBlocked(
                f"{board_id}: correction version {last} is recorded but not yet published (the newest "
                f"is {base}); erase the player again once it is published"
            )
        await corrections.record(request, base + 1, last, now)
    raise ErasureBlocked(
        f"{board_id}: result versions are being claimed concurrently; erase the player again"
    )


async def _move_catalog(stores: ArchiveStores, board_id: str, version: int) -> None:
    """The catalog names ``version`` as the newest result (already done: nothing changes)."""
    if split_board_id(board_id)[1] is None:
        moved = await stores.lifecycle.publish_version(board_id, version)
    else:
        moved = await stores.periods.publish_version(board_id, version)
    if not moved and await _published(stores, board_id) != version:
        raise ErasureBlocked(f"{board_id}: its newest result moved past {version - 1} meanwhile; erase again")
