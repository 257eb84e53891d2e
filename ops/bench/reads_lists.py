"""The pages and friends lists that ``ops/bench/reads`` measures next to top-10, player and context:
each GraphQL read with the plain reference's read of the same players (``reads_reference.py``), and
a check that both answer alike.

- ``page 100 from the middle``: ``entries(first: 100, fromRank: N/2)``, deep in the board;
- ``page 100 after a cursor``: ``entries(first: 100, after: c)``, ``c`` drawn from the end cursors
  of pages at random ranks, read before the runs (``queries.cursors``);
  both pages past the gateway's answer cache, as the reference (which has none) reads them;
- ``players(50 ids)``, ``players(100 ids)``: ``players(userIds)`` of random players of the board,
  ranked among themselves (100 is the gateway's default cap).
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from ops.bench.queries import LISTED, PAGE_AFTER, PAGE_FROM, get, post, uncached

Make = Callable[[random.Random], bytes]  # the next request, drawn from the run's random numbers
Step = tuple[str, Make, Make]  # label, the GraphQL request, the reference's request
UserId = Callable[[int], str]  # the board's i-th player


def steps(board: str, g: int, r: int, players: int, pool: Sequence[str], user_id: UserId) -> list[Step]:
    """The steps on the gateway's port ``g`` and the reference's ``r`` for a board of ``players``
    (the i-th is ``user_id(i)``): pages from its middle and after a cursor of ``pool``, lists of
    random players."""
    middle, nonce = players // 2, itertools.count()
    page_from, page_after = uncached(PAGE_FROM), uncached(PAGE_AFTER)  # the same page, read every time

    def user(rng: random.Random) -> str:
        return user_id(rng.randrange(players))

    def listed(size: int) -> Step:
        def ids(rng: random.Random) -> list[str]:
            return [user(rng) for _ in range(size)]

        return (
            f"players({size} ids)",
            lambda rng: post(g, LISTED % (board, json.dumps(ids(rng)))),
            lambda rng: get(r, f"/players?board={board}&users={','.join(ids(rng))}"),
        )

    return [
        ("page 100 from the middle", lambda _: post(g, page_from % (next(nonce), board, middle)),
         lambda _: get(r, f"/page?board={board}&rank={middle}")),
        ("page 100 after a cursor", lambda rng: post(g, page_after % (next(nonce), board, rng.choice(pool))),
         lambda rng: get(r, f"/page?board={board}&after={rng.choice(pool)}")),
        listed(50),
        listed(100),
    ]  # fmt: skip


async def same_answers(
    board: str, g: int, r: int, players: int, pool: Sequence[str], user_id: UserId
) -> None:
    """Every page and list the gateway answers is the reference's (entries, cursors), for the middle,
    20 cursors and 20 lists of 100 players (see ``steps``)."""
    rng, middle = random.Random(7), players // 2
    async with httpx.AsyncClient() as http:

        async def both(document: str, path: str) -> tuple[Any, Any]:
            posted = await http.post(f"http://127.0.0.1:{g}/graphql", json=json.loads(document))
            plain = await http.get(f"http://127.0.0.1:{r}{path}")
            return posted.json()["data"]["leaderboard"], plain.json()

        pages = [(PAGE_FROM % (board, middle), f"/page?board={board}&rank={middle}")]
        pages += [
            (PAGE_AFTER % (board, c), f"/page?board={board}&after={c}") for c in rng.sample(list(pool), 20)
        ]
        for document, path in pages:
            found, want = await both(document, path)
            page = found["entries"]
            alike = page["entries"] == want["entries"] and page["pageInfo"] == want["pageInfo"]
            if not alike or len(want["entries"]) != 100:
                raise RuntimeError(f"the gateway's page {page} is not the reference's {want} ({path})")
        for _ in range(20):
            ids = [user_id(rng.randrange(players)) for _ in range(100)]
            path = f"/players?board={board}&users={','.join(ids)}"
            found, want = await both(LISTED % (board, json.dumps(ids)), path)
            if found["players"]["entries"] != want["entries"]:
                raise RuntimeError(f"the gateway's list {found} is not the reference's {want} ({path})")
    print(
        "  answers checked: pages (from the middle, 20 after a cursor) and 20 lists of 100 == the reference's"
    )
