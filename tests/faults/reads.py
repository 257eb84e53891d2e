"""Reads through the gateway while faults happen, and the checker of DESIGN's I3 and I5 over them.

A load generator records every acknowledged award with its (partition, offset); readers poll
``top``, ``player`` and ``context`` through GraphQL and record each answer with its asOf and the
real time it was asked and answered; a subscriber records its updates. The checker then demands:

- I5: an answer that is not stale reflects every acknowledged award its asOf covers (an award at
  (p, o) is covered when the asOf's position of p is at least o): the player is there, with a total
  and a version at least those of the covered awards (awards are positive and never repeated).
  A stale answer may lack awards, but it says so.
- I3: a player's version never goes backwards from one non-stale answer to a later one (later in
  real time: asked after the earlier one was answered); a player missing from a ``top`` that shows
  the whole board has gone back to no version at all.
"""

from __future__ import annotations

import asyncio
import bisect
import random
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport

from regions.intake.client import AwardClient

ENTRY = "userId score version"
AS_OF = "asOf { positions { partition offset } stale }"
READ = f"""query($b: ID!, $u: ID!) {{ leaderboard(id: $b) {{
  top(k: 100) {{ entries {{ {ENTRY} }} {AS_OF} }}
  player(userId: $u) {{ {ENTRY} {AS_OF} }}
  context(userId: $u, range: 3) {{ player {{ {ENTRY} }} above {{ {ENTRY} }} below {{ {ENTRY} }} {AS_OF} }}
}} }}"""
UPDATES = """subscription($b: ID!, $u: ID) { leaderboardUpdates(leaderboardId: $b, userId: $u) {
  __typename ... on ScoreUpdated { sequence } ... on RankChanged { sequence } ... on TopKChanged { sequence }
  ... on Resync { reason sequence }
} }"""


@dataclass(frozen=True, slots=True)
class Acked:
    user: str
    amount: int
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Answer:
    """One read's answer: the players it shows (total, version) and whom it had to show."""

    what: str
    asked: float
    answered: float
    stale: bool
    positions: dict[int, int]
    shown: dict[str, tuple[int, int]]
    must_show: str | None  # the player read on its own; None for top (which must show all covered)


@dataclass(slots=True)
class ReadHistory:
    acked: list[Acked] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    updates: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    def stale_between(self, start: float, end: float) -> int:
        return sum(1 for a in self.answers if a.stale and start <= a.asked and a.answered <= end)

    def covers(self, since: float, first: int | None = None) -> bool:
        """One of the last non-stale answers, asked after ``since``, covers the ``first`` awards
        acknowledged (all of them by default)."""
        acked, recent = self.acked[:first], []
        for a in reversed(self.answers):
            if a.asked < since or len(recent) == 10:
                break
            if not a.stale:
                recent.append(a)
        return any(all(a.positions.get(x.partition, -1) >= x.offset for x in acked) for a in recent)


async def load(
    client: AwardClient, board: str, players: list[str], history: ReadHistory, stop: asyncio.Event
) -> None:
    """Batches of 5 new awards, paced, until ``stop``; records the acknowledged ones."""
    rng = random.Random(board)
    while not stop.is_set():
        awards = [(rng.choice(players), rng.randint(1, 20)) for _ in range(5)]
        payload = {"awards": [{"leaderboardId": board, "matchId": uuid.uuid4().hex, "userId": u,
                               "awardType": "points", "delta": d} for u, d in awards]}  # fmt: skip
        try:
            response = await client.send(payload)
        except httpx.HTTPError:
            continue  # unknown outcome: not acknowledged, so never required to be visible
        if response.status_code == 202:
            for (user, amount), ack in zip(awards, response.json()["accepted"], strict=True):
                history.acked.append(Acked(user, amount, ack["partition"], ack["offset"]))
        await asyncio.sleep(0.02)  # pacing: about 200 awards/s, leaving CPU for the region


def _entries(rows: Iterable[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    return {r["userId"]: (r["score"], r["version"]) for r in rows}


def _positions(as_of: dict[str, Any]) -> dict[int, int]:
    return {p["partition"]: p["offset"] for p in as_of["positions"]}


def answers_of(data: dict[str, Any], user: str, asked: float, answered: float) -> list[Answer]:
    lb = data["leaderboard"]
    top, player, context = lb["top"], lb["player"], lb["context"]
    found = [Answer("top", asked, answered, top["asOf"]["stale"], _positions(top["asOf"]),
                    _entries(top["entries"]), None)]  # fmt: skip
    if player is not None:  # a missing player carries no asOf: it claims nothing
        found.append(Answer("player", asked, answered, player["asOf"]["stale"], _positions(player["asOf"]),
                            _entries([player]), user))  # fmt: skip
    if context is not None:
        rows = [context["player"], *context["above"], *context["below"]]
        found.append(Answer("context", asked, answered, context["asOf"]["stale"], _positions(context["asOf"]),
                            _entries(rows), user))  # fmt: skip
    return found


async def read(url: str, board: str, players: list[str], history: ReadHistory, stop: asyncio.Event) -> None:
    """Poll top, player and context until ``stop``; every answer goes into the history."""
    rng = random.Random()
    async with httpx.AsyncClient(timeout=10) as http:
        while not stop.is_set():
            user = rng.choice(players)
            asked = time.monotonic()
            response = await http.post(url, json={"query": READ, "variables": {"b": board, "u": user}})
            body = response.json()
            if body.get("errors"):
                raise AssertionError(f"the read failed: {body['errors']}")
            history.answers += answers_of(body["data"], user, asked, time.monotonic())


async def subscribe(ws_url: str, board: str, user: str, history: ReadHistory, stop: asyncio.Event) -> None:
    transport = WebsocketsTransport(url=ws_url, subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL])
    async with Client(transport=transport) as session:
        request = GraphQLRequest(UPDATES, variable_values={"b": board, "u": user})
        async for result in session.subscribe(request):
            history.updates.append((time.monotonic(), result["leaderboardUpdates"]))
            if stop.is_set():
                return


def _covered(acked: list[Acked], positions: dict[int, int]) -> dict[str, tuple[int, int]]:
    """Per player, the total and the count of the acknowledged awards these positions cover."""
    sums: dict[str, tuple[int, int]] = {}
    for a in acked:
        if positions.get(a.partition, -1) >= a.offset:
            total, count = sums.get(a.user, (0, 0))
            sums[a.user] = (total + a.amount, count + 1)
    return sums


def check_covered(history: ReadHistory) -> list[str]:
    """I5: every non-stale answer reflects every acknowledged award its asOf covers."""
    problems = []
    for a in history.answers:
        if a.stale:
            continue
        covered = _covered(history.acked, a.positions)
        expected = (
            covered
            if a.must_show is None
            else {u: c for u, c in covered.items() if u in a.shown or u == a.must_show}
        )
        for user, (total, count) in expected.items():
            score, version = a.shown.get(user, (0, 0))
            if score < total or version < count:
                problems.append(
                    f"{a.what} asked at {a.asked:.3f} with asOf {a.positions} shows {user} at total {score} "
                    f"version {version}, but it covers {count} acknowledged award(s) totalling {total}"
                )
    return problems


def check_versions(history: ReadHistory) -> list[str]:
    """I3: a player's version never goes backwards from a non-stale answer to a later one."""
    fresh = [a for a in history.answers if not a.stale]
    by_end = sorted(fresh, key=lambda a: a.answered)
    ends = [a.answered for a in by_end]
    best: dict[str, list[int]] = {}  # per player: the highest version among the first i answers by end
    for user in {u for a in fresh for u in a.shown}:
        running, highest = 0, best.setdefault(user, [])
        for a in by_end:
            running = max(running, a.shown.get(user, (0, 0))[1])
            highest.append(running)
    problems = []
    for a in fresh:
        before = bisect.bisect_left(ends, a.asked)  # answers completed before this one was asked
        # top(k) with k above the board's size shows every player: one it leaves out has no version.
        users = best if a.must_show is None else a.shown
        for user in users:
            version = a.shown.get(user, (0, 0))[1]
            earlier = best[user][before - 1] if before else 0
            if version < earlier:
                problems.append(
                    f"{a.what} asked at {a.asked:.3f} shows {user} at version {version} after an earlier "
                    f"answer showed version {earlier} (versions went backwards)"
                )
    return problems
