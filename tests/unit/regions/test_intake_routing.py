"""Where the intake produces each award (``regions.intake.routing``), with in-process producers:
a REGIONAL board's awards into this region's topic in one produce, a HOME_ROUTED board's awards
received outside the home into the home's, in request order, and the home's failure answered first."""

from __future__ import annotations

import pytest

from regions.core.boards import Board, Consistency
from regions.intake.routing import AwardRouter
from regions.stores.kafka.clients import AcceptanceUnavailable
from regions.stores.kafka.home import HomeUnavailable
from schema.records import AwardEvent

ROUTED = Board("routed", "Routed", "eu", consistency=Consistency.HOME_ROUTED)
REGIONAL = Board("regional", "Regional", "eu")
BOARDS = {b.id: b for b in (ROUTED, REGIONAL)}


def _event(board: Board, user: str, serving: str = "us") -> AwardEvent:
    return AwardEvent(event_id=f"e-{board.id}-{user}", digest="d", board_id=board.id, match_id="m",
                      user_id=user, award_type="points", amount=1, occurred_at_ms=None,
                      region=board.accepting_region(serving), accepted_at_ms=1, aggregation="SUM",
                      sort_order="DESC", tie_policy="USER_ID", home_region=board.home_region, shards=1,
                      window="", metadata=None)  # fmt: skip


class Topics:
    """Each region's awards topic as a list; a region in ``down`` acknowledges nothing."""

    def __init__(self, *down: str, here: str = "us") -> None:
        self.here = here
        self.written: dict[str, list[bytes]] = {}
        self.produces: list[str] = []
        self.down = set(down)

    async def local(self, records: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        return self._write(self.here, records)

    async def home(self, region: str, records: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        if region in self.down:
            raise HomeUnavailable(region, "cut off")
        return self._write(region, records)

    def _write(self, region: str, records: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
        if region in self.down:
            raise AcceptanceUnavailable(f"{region} is down")
        self.produces.append(region)
        log = self.written.setdefault(region, [])
        log.extend(key for key, _ in records)
        return [(0, len(log) - len(records) + i) for i in range(len(records))]


def test_a_board_is_accepted_by_its_home_only_when_home_routed() -> None:
    assert ROUTED.accepting_region("us") == ROUTED.accepting_region("eu") == "eu"
    assert REGIONAL.accepting_region("us") == "us" and REGIONAL.accepting_region("eu") == "eu"


async def test_regional_boards_are_one_produce_into_this_region() -> None:
    topics = Topics()
    events = [_event(REGIONAL, "ann"), _event(REGIONAL, "bob")]
    positions = await AwardRouter("us", topics.local, topics.home).produce(events, {"regional": REGIONAL})
    assert positions == [(0, 0), (0, 1)] and topics.produces == ["us"]


async def test_a_mixed_request_goes_to_each_accepting_region_and_answers_in_request_order() -> None:
    topics = Topics()
    events = [_event(ROUTED, "ann"), _event(REGIONAL, "bob"), _event(ROUTED, "cat")]
    positions = await AwardRouter("us", topics.local, topics.home).produce(events, BOARDS)
    assert positions == [(0, 0), (0, 0), (0, 1)]
    assert sorted(topics.produces) == ["eu", "us"]
    assert topics.written == {"eu": [b"routed|ann", b"routed|cat"], "us": [b"regional|bob"]}


async def test_an_unreachable_home_is_the_answer_whatever_else_failed() -> None:
    topics = Topics("eu", "us")
    events = [_event(REGIONAL, "bob"), _event(ROUTED, "ann")]
    with pytest.raises(HomeUnavailable) as raised:
        await AwardRouter("us", topics.local, topics.home).produce(events, BOARDS)
    assert raised.value.home == "eu" and topics.written == {}


async def test_without_a_route_to_other_regions_a_home_routed_award_is_refused_not_taken_here() -> None:
    topics = Topics()
    with pytest.raises(HomeUnavailable):
        await AwardRouter("us", topics.local, None).produce([_event(ROUTED, "ann")], BOARDS)
    assert topics.written == {}


async def test_in_its_home_a_home_routed_board_is_a_plain_local_produce() -> None:
    topics = Topics(here="eu")
    events = [_event(ROUTED, "ann", serving="eu")]
    positions = await AwardRouter("eu", topics.local, None).produce(events, BOARDS)  # no other region
    assert positions == [(0, 0)] and topics.written == {"eu": [b"routed|ann"]}
