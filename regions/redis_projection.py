"""Redis projection adapter: versioned apply, positions (asOf), board size, hints (reads: ``redis_reads``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from regions import redis_connection
from regions.core.positions import SourceKey, SourcePosition
from regions.redis_connection import (
    ProjectionRedis,
    ScriptCall,
    call_scripts,
    call_scripts_then_hget,
    execute_pipeline,
    publish_many,
)
from regions.settings import RedisSettings
from schema.redis_keys import (
    POSITION_DETAILS,
    BoardKeys,
    board_keys,
    hints_channel,
    position_field,
    positions_key,
)
from schema.resources import lua_script


def connect_redis(redis: RedisSettings) -> ProjectionRedis:
    """A client for the projection (one server or a cluster, by the URL); replies are decoded to str."""
    return redis_connection.connect_redis(redis.url)


@dataclass(frozen=True, slots=True)
class ProjectedTotal:
    """One total as the projection stores it: ``score`` and ``member`` already encode rank order;
    an empty ``member`` removes the player (the version is still recorded)."""

    user_id: str
    version: int
    total: int
    score: float
    member: str


@dataclass(frozen=True, slots=True)
class ApplyResult:
    sequence: int
    users: list[str]


@dataclass(frozen=True, slots=True)
class Positions:
    """What the projection reflects: per (accepting region, partition), the last offset included
    with the times and gaps that go with it. A projection without an epoch (lost) or still
    ``rebuilding`` claims nothing fresh: its reads are stale."""

    epoch: str | None
    marks: dict[SourceKey, SourcePosition]
    newest_accepted_ms: int | None
    rebuilding: bool = False
    sequence_base: int = 0  # added to every board's hint sequence in this epoch (see the projector)

    @property
    def offsets(self) -> dict[SourceKey, int]:
        return {key: mark.offset for key, mark in self.marks.items()}


_DETAILS = dict(zip(POSITION_DETAILS, ("accepted_at_ms", "heartbeat_at_ms", "gaps"), strict=True))


def position_fields(marks: Mapping[SourceKey, SourcePosition]) -> list[str | int]:
    """The positions hash's fields and values for ``marks`` (field, value, ...); zero times and
    counts are left out, so a field exists only once something was heard."""
    items: list[str | int] = []
    newest = 0
    for (region, partition), mark in marks.items():
        items += [position_field(region, partition), mark.offset]
        for detail, attribute in _DETAILS.items():
            value = getattr(mark, attribute)
            if value > 0:
                items += [position_field(region, partition, detail), value]
        newest = max(newest, mark.accepted_at_ms)
    if newest:
        items += ["accepted_at", newest]
    return items


def parse_positions(raw: Mapping[str, str]) -> dict[SourceKey, SourcePosition]:
    """The (region, partition) positions a positions hash holds; other fields are ignored."""
    offsets: dict[SourceKey, int] = {}
    details: dict[SourceKey, dict[str, int]] = {}
    for name, value in raw.items():
        parts = name.split(":")
        if len(parts) == 2 and parts[1].isdigit():
            offsets[(parts[0], int(parts[1]))] = int(value)
        elif len(parts) == 3 and parts[0] in _DETAILS and parts[2].isdigit():
            details.setdefault((parts[1], int(parts[2])), {})[_DETAILS[parts[0]]] = int(value)
    return {key: SourcePosition(offset, **details.get(key, {})) for key, offset in offsets.items()}


class RedisProjection:
    def __init__(self, redis: ProjectionRedis, key_prefix: str) -> None:
        self.redis = redis
        self._prefix = key_prefix
        self._positions = positions_key(key_prefix)
        self._apply = redis.register_script(lua_script("apply_totals"))
        self._advance = redis.register_script(lua_script("advance_positions"))
        self._replace = redis.register_script(lua_script("replace_hash"))
        self._rename = redis.register_script(lua_script("rename_keys"))

    @staticmethod
    def _args(totals: Sequence[ProjectedTotal]) -> list[str | int | float]:
        args: list[str | int | float] = []
        for t in totals:
            args += [t.user_id, t.version, t.total, t.score, t.member]
        return args

    @staticmethod
    def _keys(keys: BoardKeys, sequenced: bool) -> list[str]:
        return [keys.ranking, keys.records, keys.sequence] if sequenced else [keys.ranking, keys.records]

    async def apply(self, keys: BoardKeys, totals: Sequence[ProjectedTotal]) -> ApplyResult:
        """Apply totals newer than the recorded versions, atomically."""
        reply = await self._apply(keys=self._keys(keys, True), args=self._args(totals))
        return ApplyResult(int(reply[0]), list(reply[1:]))

    async def apply_many(
        self, work: Sequence[tuple[BoardKeys, Sequence[ProjectedTotal]]], *, sequenced: bool = True
    ) -> list[ApplyResult]:
        """Apply several boards' totals in one round trip (each board atomically). Without
        ``sequenced`` (a rebuild's fresh keys) the boards' hint sequences are left alone."""
        replies = await call_scripts(
            self.redis,
            [(self._apply, self._keys(keys, sequenced), self._args(totals)) for keys, totals in work],
        )
        return [ApplyResult(int(r[0]), list(r[1:])) for r in replies]

    async def start_epoch(self, epoch: str, *, sequence_base: int = 0, rebuilding: bool = False) -> None:
        """Begin a new life of the projection, in one step: positions restart from nothing and,
        with ``rebuilding``, every read says stale until a rebuild completes."""
        fields: list[str | int] = ["epoch", epoch, "sequence_base", sequence_base]
        if rebuilding:
            fields += ["rebuilding", "1"]
        await self._replace(keys=[self._positions], args=fields)

    async def advance(
        self, epoch: str, marks: Mapping[SourceKey, SourcePosition], *, completes_rebuild: bool = False
    ) -> bool:
        """Move positions forward, each field on its own (and with ``completes_rebuild`` end the
        rebuilding state in the same step); False when Redis no longer holds this epoch (data was
        lost)."""
        args: list[str | int] = [epoch, "1" if completes_rebuild else "0", *position_fields(marks)]
        return bool(await self._advance(keys=[self._positions], args=args))

    async def positions(self) -> Positions:
        raw = cast(dict[str, str], await self.redis.hgetall(self._positions))
        accepted = raw.get("accepted_at")
        return Positions(
            raw.get("epoch"),
            parse_positions(raw),
            int(accepted) if accepted else None,
            raw.get("rebuilding", "0") == "1",
            int(raw.get("sequence_base", "0")),
        )

    async def epoch_after(self, calls: Sequence[ScriptCall]) -> tuple[list[Any], str | None]:
        """The replies of script ``calls`` (reads of boards' keys), and the epoch as read after they
        ran: when it is not the epoch read before them, Redis lost the projection meanwhile."""
        return await call_scripts_then_hget(self.redis, calls, self._positions, "epoch")

    async def swap(self, fresh: BoardKeys, live: BoardKeys) -> None:
        """Replace a board's live keys by a rebuild's fresh ones in one step (they share a hash tag)."""
        await self._rename(keys=[fresh.ranking, live.ranking, fresh.records, live.records])

    async def drop(self, boards: Sequence[BoardKeys]) -> None:
        """Delete boards' rankings and records (not their hint sequences)."""
        if boards:
            await self.redis.delete(*(k for keys in boards for k in (keys.ranking, keys.records)))

    async def next_sequences(self, boards: Sequence[BoardKeys]) -> list[int]:
        """One more step of each board's hint sequence (for hints that are not a batch of totals)."""
        pipe = self.redis.pipeline(transaction=False)
        for keys in boards:
            pipe.incr(keys.sequence)
        return [int(n) for n in await execute_pipeline(pipe)] if boards else []

    async def next_hint_sequence(self, board_id: str, attempts: int = 5) -> int:
        """The board's next hint sequence for a hint that is not a batch of totals (a status change):
        one more step of its counter plus the epoch's base, read on both sides of the step so that a
        new epoch beginning meanwhile (whose base is larger) is not mixed with the old base."""
        keys = board_keys(self._prefix, board_id)
        for _ in range(attempts):
            before = await self.positions()
            step = (await self.next_sequences([keys]))[0]
            if (await self.positions()).epoch == before.epoch:
                break
        return before.sequence_base + step

    async def totals_of(self, keys: BoardKeys, users: Sequence[str]) -> dict[str, int | None]:
        """The projection's total of each player (None when the player is absent)."""
        records = cast(list[str | None], await self.redis.hmget(keys.records, list(users))) if users else []
        return {
            u: None if r is None else int(r.split("|", 2)[1]) for u, r in zip(users, records, strict=True)
        }

    async def count(self, keys: BoardKeys) -> int:
        return int(await self.redis.zcard(keys.ranking))

    async def version_of(self, keys: BoardKeys, user_id: str) -> int | None:
        """The recorded version of one player's total, or None when the player is absent."""
        record = cast(str | None, await self.redis.hget(keys.records, user_id))
        return None if record is None else int(record.split("|", 1)[0])

    async def publish_hint(self, board_id: str, payload: bytes) -> None:
        await self.redis.publish(hints_channel(self._prefix, board_id), payload)

    async def publish_hints(self, hints: Sequence[tuple[str, bytes]]) -> None:
        """Publish (board id, payload) hints in one round trip."""
        await publish_many(
            self.redis, [(hints_channel(self._prefix, board), payload) for board, payload in hints]
        )
