"""When a send is tried again, where, and after how long. Pure: no I/O, no clock; the caller brings
the random draws and does the waiting and the sending.

An award's event id is derived from what it is (board, match, player, award type), so the same award
sent again, to the same region or another one, is counted once by the platform: a failure whose
outcome is unknown (a timeout, a reset connection, a 5xx) is always safe to retry with the same award.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Sequence
from dataclasses import dataclass

RETRIED_STATUSES = frozenset({500, 502, 503, 504})
THROTTLED = 429


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``attempts`` per send, over every endpoint; after ``failover_after`` failures in a row on one
    endpoint the next one is used (and kept for later sends until it fails as often); each retry
    waits a random time up to ``backoff_s`` doubled per failure, at most ``max_backoff_s`` (full
    jitter), and at least what the intake's ``Retry-After`` says."""

    attempts: int = 8
    failover_after: int = 2
    backoff_s: float = 0.1
    max_backoff_s: float = 5.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.failover_after < 1:
            raise ValueError("failover_after must be at least 1")
        if not 0 <= self.backoff_s <= self.max_backoff_s:
            raise ValueError("backoff_s must be between 0 and max_backoff_s")

    def delay_s(self, failures: int, retry_after_s: float | None, draw: float) -> float:
        """The wait before the next attempt after ``failures`` failures of this send (``draw`` in [0, 1))."""
        ceiling = min(self.max_backoff_s, self.backoff_s * 2.0 ** max(0, failures - 1))
        return max(draw * ceiling, retry_after_s or 0.0)


@dataclass(frozen=True, slots=True)
class Answer:
    """What one attempt got: an HTTP status and ``Retry-After`` (s), or ``status`` None when no
    answer came (connection refused or reset, a timeout): ``error`` says which."""

    status: int | None
    retry_after_s: float | None = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class Attempt:
    endpoint: int  # index into the client's endpoints
    delay_s: float  # wait this long first


class Endpoints:
    """Which endpoint sends go to: the first, until it fails ``failover_after`` times in a row, then
    the next (round robin). Shared by every send of one client."""

    def __init__(self, count: int, failover_after: int) -> None:
        if count < 1:
            raise ValueError("at least one endpoint is needed")
        self.count, self._failover_after = count, failover_after
        self.current, self._failures = 0, 0

    def succeeded(self, endpoint: int) -> None:
        if endpoint == self.current:
            self._failures = 0

    def failed(self, endpoint: int) -> None:
        if endpoint != self.current:
            return  # a late answer of an endpoint already left behind
        self._failures += 1
        if self._failures >= self._failover_after:
            self.current, self._failures = (self.current + 1) % self.count, 0


def plan(
    policy: RetryPolicy, endpoints: Endpoints, draws: Sequence[float] | None = None
) -> Generator[Attempt, Answer, tuple[Answer, int, int]]:
    """The attempts of one send: yields where and when to try, receives each answer, and returns the
    last answer, the endpoint that gave it and the number of attempts made, once an answer is
    final (accepted or refused) or the attempts are spent. ``draws``: the random draws for the
    waits, one per retry (tests pass them; a client passes None and draws ``random()``)."""
    endpoint, delay = endpoints.current, 0.0
    for made in range(1, policy.attempts + 1):  # every attempt but a final one is a failure
        answer = yield Attempt(endpoint, delay)
        if answer.status is not None and answer.status not in RETRIED_STATUSES and answer.status != THROTTLED:
            endpoints.succeeded(endpoint)  # accepted, or refused for what it is: final either way
            return answer, endpoint, made
        if answer.status != THROTTLED:  # the key's rate, not the endpoint's health
            endpoints.failed(endpoint)
        if made == policy.attempts:
            return answer, endpoint, made
        draw = random.random() if draws is None else draws[(made - 1) % len(draws)]
        endpoint, delay = endpoints.current, policy.delay_s(made, answer.retry_after_s, draw)
    raise AssertionError("unreachable")  # the loop always returns
