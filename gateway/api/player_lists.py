"""Output types of ``players(userIds)``: the ranks of a list of players (a friends list)."""

from __future__ import annotations

import strawberry

from gateway.api.types import AsOf, RankedPlayer
from regions.core import reads
from regions.core.player_lists import Listed


@strawberry.type(description="A listed player: its rank among the listed players and on the whole board.")
class ListedPlayer:
    user_id: strawberry.ID
    rank_among: int | None = strawberry.field(
        description="1..n among the listed players that have a score, in rank order; null: no score."
    )
    player: RankedPlayer | None = strawberry.field(
        description="The player on the whole board; null: no score."
    )

    @staticmethod
    def of(listed: Listed) -> ListedPlayer:
        entry = None if listed.entry is None else RankedPlayer.of(listed.entry)
        return ListedPlayer(user_id=strawberry.ID(listed.user_id), rank_among=listed.rank_among, player=entry)


@strawberry.type(description="Listed players in rank order, those without a score last, with their asOf.")
class PlayerList:
    entries: list[ListedPlayer]
    as_of: AsOf

    @staticmethod
    def of(listed: list[Listed], as_of: reads.AsOf) -> PlayerList:
        return PlayerList(entries=[ListedPlayer.of(item) for item in listed], as_of=AsOf.of(as_of))
