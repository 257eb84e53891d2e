"""A Jepsen-style history of award submissions and the checker of DESIGN's invariants I1 and I2.

Each submission is recorded as ``ok`` (202: durably accepted), ``fail`` (a definite 4xx refusal) or
``info`` (no answer, or a 5xx: it may or may not have been accepted). The checker then demands, per
player, that the projected total lies between the fold of distinct ``ok`` awards and that fold plus
each distinct ``info`` award counted at most once; with no ``info`` the total must be exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from regions.intake.client import AwardClient
from tests.harness import points


@dataclass(frozen=True, slots=True)
class Op:
    board: str
    user: str
    match: str
    amount: int
    outcome: str  # ok | fail | info


@dataclass(slots=True)
class History:
    ops: list[Op] = field(default_factory=list)
    acknowledged: dict[int, int] = field(default_factory=dict)  # awards partition -> highest acked offset

    async def submit(self, client: AwardClient, board: str, user: str, match: str, amount: int) -> str:
        payload = points(board, match, user, amount)
        try:
            response = await client.send(payload)
            status = response.status_code
            outcome = "ok" if status == 202 else ("info" if status >= 500 else "fail")
            for ack in response.json()["accepted"] if status == 202 else ():
                p = ack["partition"]
                self.acknowledged[p] = max(self.acknowledged.get(p, -1), ack["offset"])
        except (TimeoutError, httpx.HTTPError):
            outcome = "info"
        self.ops.append(Op(board, user, match, amount, outcome))
        return outcome

    async def submit_as_a_client_would(
        self, client: AwardClient, board: str, user: str, match: str, amount: int, attempts: int = 5
    ) -> str:
        """``submit``, retrying an unknown outcome (timeout, 5xx) with the same award, as game
        services are told to: the retry is deduplicated, so the award ends acknowledged once."""
        outcome = "info"
        for _ in range(attempts):
            outcome = await self.submit(client, board, user, match, amount)
            if outcome != "info":
                break
        return outcome

    def every_award_acknowledged(self) -> bool:
        """No award was refused, and every one that got no answer was acknowledged on a retry."""
        return not self.distinct("fail") and self.distinct("info").keys() <= self.distinct("ok").keys()

    def distinct(self, outcome: str) -> dict[tuple[str, str, str], int]:
        """Distinct awards (by identity) with this outcome; an ok repeat is one award."""
        return {(o.board, o.user, o.match): o.amount for o in self.ops if o.outcome == outcome}

    def expected_totals(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(lowest, highest) acceptable SUM total per (board, user) for positive amounts."""
        ok = self.distinct("ok")
        maybe = {k: v for k, v in self.distinct("info").items() if k not in ok}
        bounds: dict[tuple[str, str], tuple[int, int]] = {}
        for (board, user, _), amount in ok.items():
            low, high = bounds.get((board, user), (0, 0))
            bounds[(board, user)] = (low + amount, high + amount)
        for (board, user, _), amount in maybe.items():
            low, high = bounds.get((board, user), (0, 0))
            bounds[(board, user)] = (low, high + amount)
        return bounds


def check_totals(history: History, totals: dict[tuple[str, str], int | None]) -> list[str]:
    """Violations of I1 (an acknowledged award missing) and I2 (an award counted twice)."""
    problems = []
    for key, (low, high) in history.expected_totals().items():
        total = totals.get(key) or 0
        if total < low:
            problems.append(f"{key}: total {total} < {low}: an acknowledged award is missing (I1)")
        if total > high:
            problems.append(f"{key}: total {total} > {high}: an award was counted twice (I2)")
    return problems
