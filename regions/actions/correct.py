"""Recording a correction of a closed board, for every caller (the gateway's publishCorrection,
``ops/lb correct``). Its home region's lifecycle worker then publishes it (``publish``).

Checked here, each refusal naming the field: the board exists, this is its home region, it is not
approximate (``regions.core.corrections.approximate_refusal``), it is CLOSED, and every adjusted
player is in its result; the same correction id again answers the
correction it recorded (with the same content) or is refused (with other content).
"""

from __future__ import annotations

from datetime import datetime

from regions.actions.home import ActionRefused, home_record
from regions.core.boards import BoardStatus
from regions.core.corrections import (
    CorrectionRequest,
    approximate_refusal,
    next_result_version,
    not_in_result,
)
from regions.stores.cassandra.corrections import CassandraCorrections, CorrectionEntry
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.redis.projection import RedisProjection

ATTEMPTS = 5  # versions claimed by concurrent corrections of one board before giving up


def _same(entry: CorrectionEntry, request: CorrectionRequest, at: str) -> CorrectionEntry:
    if entry.digest != request.digest:
        raise ActionRefused(
            "conflict",
            f"{at}correctionId: {request.correction_id!r} is correction version {entry.result_version} of "
            f"{request.board_id!r} with another reason or other adjustments; use a new id for a new correction",
        )
    return entry


async def _check_players(
    projection: RedisProjection, prefix: str, request: CorrectionRequest, at: str
) -> None:
    """Every adjusted player is in the board's result: the frozen home projection holds the same
    players as every result version (corrections change scores, not who is in it)."""
    positions = await projection.positions()
    if positions.epoch is None or positions.rebuilding:
        raise ActionRefused(
            "unavailable",
            "the board's projection is being rebuilt here, so its players cannot be checked; retry",
        )
    users = [a.user_id for a in request.adjustments]
    found = await projection.totals_of(request.board_id, users)
    missing = not_in_result(request.adjustments, {u: found[u] is not None for u in users})
    if missing:
        named = "; ".join(
            f"{at}adjustments[{i}].userId: {users[i]!r} is not in the result of {request.board_id!r}"
            for i in missing
        )
        raise ActionRefused(
            "not_in_result", f"{named} (a correction changes the score of a player in it)"
        )


async def record_correction(
    lifecycle: CassandraLifecycle,
    corrections: CassandraCorrections,
    projection: RedisProjection,
    prefix: str,
    request: CorrectionRequest,
    *,
    region: str,
    now: datetime,
    at: str = "input.",
) -> CorrectionEntry:
    """Record ``request`` as the board's next result version (or answer the one its id recorded).
    ``ActionRefused``: ``unknown`` (no such board), ``not_home``, ``approximate``, ``not_closed``,
    ``not_in_result``, ``conflict`` (the id holds other content) or ``unavailable`` (retry later)."""
    record = await home_record(lifecycle, request.board_id, region=region, done="corrected in",
                               action="correction", field=f"{at}leaderboardId: ")  # fmt: skip
    refusal = approximate_refusal(record.board, f"{at}leaderboardId: ")
    if refusal is not None:
        raise ActionRefused("approximate", refusal)
    known = await corrections.get(request.board_id, request.correction_id)
    if known is not None:
        return _same(known, request, at)
    status = record.board.status
    if status is not BoardStatus.CLOSED:
        raise ActionRefused(
            "not_closed",
            f"{at}leaderboardId: leaderboard {request.board_id!r} is {status}; only a CLOSED board takes "
            "corrections (close it, and wait until it is CLOSED)",
        )
    await _check_players(projection, prefix, request, at)
    return _same(await claim_version(corrections, request, now), request, at)


async def claim_version(
    corrections: CassandraCorrections, request: CorrectionRequest, now: datetime
) -> CorrectionEntry:
    """Record ``request`` as the board's next result version, or answer the entry its id holds
    (recorded before, or concurrently); ``unavailable`` when other corrections keep winning the race."""
    for _ in range(ATTEMPTS):
        known = await corrections.get(request.board_id, request.correction_id)
        if known is not None:
            return known
        last = await corrections.last_version(request.board_id)
        if await corrections.record(request, next_result_version(last), last, now):
            break
    entry = await corrections.get(request.board_id, request.correction_id)
    if entry is None:
        raise ActionRefused(
            "unavailable", f"corrections of {request.board_id!r} are being recorded concurrently; retry"
        )
    return entry
