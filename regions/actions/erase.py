"""Asking for a player's erasure, and lifting one, for every caller (the gateway's erasePlayer,
``ops/lb erase-player`` and ``ops/lb lift-erasure``). The lifecycle worker of the region asked then
carries it out (``regions.lifecycle.erasure``).

Either is answered only once the change is in the erasure change log (this region's lane), which
every intake and audit sink reads every ``intake.erasure_refresh_s``: an answered erasure is refused
by every intake within that bound, once it reached the intake's data center.

A change is recorded, then queued for a lifecycle worker, then appended to the log: each step is
idempotent, so asking again after a crash in between completes it (the worker of the region asked
also finds such a change on its own, ``regions.lifecycle.erasure``). Queued before logged: a change
the intakes honour is always one some worker will carry out.
"""

from __future__ import annotations

from datetime import datetime

from regions.actions.home import ActionRefused
from regions.core.erasure import ErasureRequest
from regions.stores.cassandra.erasures import CassandraErasures, ErasureEntry
from schema.erasure import erasure_token


async def request_erasure(
    erasures: CassandraErasures, request: ErasureRequest, *, region: str, now: datetime
) -> ErasureEntry:
    """Record the erasure (queued for this region), or answer the player's standing one. A lifted
    erasure is asked anew."""
    token = erasure_token(request.user_id)
    for _ in range(3):
        known = await erasures.get(token)
        if known is None:
            if await erasures.request(token, request.user_id, request.reason, region, now):
                break
        elif known.lifted_at is None:
            return await under_way(erasures, known, region)
        elif await erasures.renew(known, request.user_id, request.reason, region, now):
            break
    entry = await erasures.get(token)
    if entry is None:
        raise ActionRefused("unavailable", "the erasure could not be recorded; retry")
    return await under_way(erasures, entry, region)


async def lift_erasure(erasures: CassandraErasures, user_id: str, *, region: str, now: datetime) -> ErasureEntry:
    """Lift the player's erasure: the intakes take their awards again, and the processors, told by
    this region's lifecycle worker, apply them."""
    token = erasure_token(user_id)
    known = await erasures.get(token)
    if known is None:
        raise ActionRefused("unknown", f"userId: {user_id!r} has no erasure to lift")
    if known.lifted_at is None and not await erasures.lift(known, now):
        raise ActionRefused("unavailable", "the lift could not be recorded; retry")
    entry = await erasures.get(token)
    return await under_way(erasures, entry or known, region)


async def under_way(erasures: CassandraErasures, entry: ErasureEntry, region: str) -> ErasureEntry:
    """``entry``, once queued while work is left (an erasure for the region that carries it out, a lift
    for ``region``, the one asking) and its newest change is in the change log (appended to
    ``region``'s lane if not)."""
    if entry.outstanding:
        await erasures.queue(region if entry.lifted_at is not None else entry.region, entry.token)
    if entry.unlogged and not await erasures.append_change(entry, region):
        raise ActionRefused("unavailable", "the erasure list is being changed concurrently here; retry")
    return entry
