"""A player's export on real Cassandra and Redis: their totals, ranks and metadata in this region's
projection (a board and the current period of a daily one), their award history, their archived
entries and their profile, by ``export_player`` and by ``ops/lb export-player``."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

from cassandra.cluster import Session
from redis.asyncio import Redis

from regions.actions.erase_rows import PlayerStores
from regions.actions.export import export_player
from regions.core.boards import Board
from regions.core.ordering import encode, reached_position
from regions.core.periods import Period, WindowSpec, period_of, utc_ms
from regions.core.profiles import Profile
from regions.core.windows import encode_window
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.redis.projection import ProjectedTotal, RedisProjection
from regions.stores.redis.reads import RankReader
from tests.integration.regions.test_cli import lb
from tests.integration.regions.test_erase_rows import SIZE, _archive, _closed_board, _entries, _history


def _total(board: Board, user: str, points: int, metadata: str = "") -> ProjectedTotal:
    score, member = encode(board.sort_order, board.tie_policy, user, points, reached_position(1, 0, 0))
    return ProjectedTotal(user, 1, points, score, member, metadata)


async def test_export_holds_scores_history_archives_and_profile(
    settings: Settings, cassandra_session: Session, redis_client: Redis, tmp_path: Path
) -> None:
    tag, now = uuid.uuid4().hex[:8], datetime.now(UTC)
    user, rival = f"exported-{tag}", f"rival-{tag}"
    stores, catalog = PlayerStores.on(cassandra_session), CassandraCatalog(cassandra_session)
    live = Board(f"export-live-{tag}", "live", "local")
    daily = Board(f"export-daily-{tag}", "daily", "local", window=encode_window(WindowSpec(Period.DAILY)))
    today = daily.for_period(period_of(WindowSpec(Period.DAILY), utc_ms(now)).key)
    untouched = Board(f"export-none-{tag}", "none", "local")
    for board in (live, daily, untouched):
        assert await catalog.create(board)
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    await projection.apply(live.id, [_total(live, user, 40, '{"map":"dust"}'), _total(live, rival, 50)])
    await projection.apply(today.id, [_total(today, user, 7)])
    await projection.apply(untouched.id, [_total(untouched, rival, 3)])
    closed = f"export-closed-{tag}"
    await _closed_board(cassandra_session, stores, closed)
    others = [f"p{i}-{tag}" for i in range(4)]
    await _archive(stores, closed, 1, _entries([*others, user]))  # rank 5: in the second chunk
    assert all(e is None for e in await stores.audit.write_many([_history(user, live.id, i) for i in range(2)]))
    await stores.profiles.put(Profile(user, "Exported", "FR"))
    reader = RankReader(projection, prefix, "local")

    document = await export_player(stores, catalog, reader, user, now=now)

    assert json.loads(json.dumps(document)) == document
    assert document["userId"] == user and document["exportedAt"] == now.isoformat()
    assert sorted(document["scores"], key=lambda s: s["leaderboardId"]) == [
        {"leaderboardId": today.id, "total": 7, "rank": 1, "sharedRank": 1, "metadata": None,
         "estimated": False, "verified": True, "exactScore": 7},
        {"leaderboardId": live.id, "total": 40, "rank": 2, "sharedRank": 2, "metadata": {"map": "dust"},
         "estimated": False, "verified": True, "exactScore": 40},
    ]  # fmt: skip
    assert [(h["eventId"], h["leaderboardId"], h["amount"], h["userId"]) for h in document["awardHistory"]] == [
        (f"{live.id}-{user}-{i}", live.id, i + 1, user) for i in range(2)
    ]
    assert document["archivedResults"] == [
        {"leaderboardId": closed, "version": 1, "rank": 5, "score": 96, "metadata": None, "errorBound": None,
         "estimated": False, "verified": True, "exactScore": 96}
    ]  # fmt: skip
    assert SIZE < 5  # the entry is found in a chunk past the first
    assert document["profile"] == {"userId": user, "displayName": "Exported", "country": "FR", "avatarUrl": None}

    out = tmp_path / "export.json"
    code, stdout, stderr = await lb(settings, "export-player", user, "--output", str(out))
    assert (code, stdout) == (0, ""), stderr
    assert "archived results hold the player" in stderr and f"written to {out}" in stderr
    written = json.loads(out.read_text())
    assert {k: v for k, v in written.items() if k != "exportedAt"} == {
        k: v for k, v in document.items() if k != "exportedAt"
    }
    code, stdout, _ = await lb(settings, "export-player", user)
    assert code == 0 and json.loads(stdout)["archivedResults"] == document["archivedResults"]
    code, stdout, stderr = await lb(settings, "export-player", "")
    assert code == 1 and stdout == "" and "user:" in stderr
