"""The checked-in SDL is the code's schema: clients and CI rely on ``schema/leaderboard.graphql``."""

from gateway.api import sdl
from gateway.export_schema import SDL_PATH, main


def test_checked_in_sdl_matches_the_code() -> None:
    assert SDL_PATH.read_text(encoding="utf-8") == sdl(), (
        "schema/leaderboard.graphql is out of date: run 'python -m gateway.export_schema'"
    )
    assert main(["--check"]) == 0


def test_contract_names_are_present() -> None:
    text = sdl()
    for name in (
        "leaderboard(id: ID!): Leaderboard",
        "leaderboards(status: BoardStatus = null): [Leaderboard!]!",
        "top(k: Int = 10, scope: Scope = HOME): RankPage!",
        "player(userId: ID!, scope: Scope = HOME): RankedPlayer",
        "context(userId: ID!, range: Int = 4, scope: Scope = HOME): PlayerContext",
        "result(version: Int = null): BoardResult",
        "union LeaderboardUpdate = ScoreUpdated | RankChanged | TopKChanged | Resync",
        "leaderboardUpdates(leaderboardId: ID!, userId: ID = null, scope: Scope = HOME, userIds: [ID!] = null): "
        "LeaderboardUpdate!",
        "players(userIds: [ID!]!, scope: Scope = HOME): PlayerList!",
        "sharedRank: Int!",
        "topPercent: Float!",
        "rankAmong: Int",
        "createLeaderboard(input: CreateLeaderboardInput!): Leaderboard!",
        "scalar Long",
        "newestAcceptedAt: DateTime",
        "regions: [RegionStatus!]!",
        "lagSeconds: Float",
        "gap: Boolean!",
        "enum Scope {\n  HOME\n  REGIONAL\n}",
    ):
        assert name in text, name
