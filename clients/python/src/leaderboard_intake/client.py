"""Clients of the award intake: ``IntakeClient`` (blocking) and ``AsyncIntakeClient`` (asyncio), on
httpx. Both sign every request, retry the same award on timeouts, connection failures and 5xx with
backoff and jitter (waiting at least what ``Retry-After`` says, also on 429), and fail over to the
next region's intake after repeated failures (``policy.RetryPolicy``). The attempts are planned by
``policy.plan``; each class only sends and waits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any

import httpx

from leaderboard_intake.awards import (
    Accepted,
    Award,
    IntakeUnavailable,
    accepted_of,
    encode,
    query,
    refused_of,
    retry_after_s,
    signed_headers,
)
from leaderboard_intake.policy import Answer, Attempt, Endpoints, RetryPolicy, plan

PATH = "/internal/awards"
Steps = Generator[Attempt, Answer, tuple[Answer, int, int]]


class _Base:
    def __init__(
        self,
        endpoints: Sequence[str],
        key_id: str,
        secret: str,
        policy: RetryPolicy,
        clock: Callable[[], float],
        timeout_s: float,
    ) -> None:
        if not endpoints:
            raise ValueError("at least one intake endpoint (base URL) is needed")
        self.endpoints = [e.rstrip("/") for e in endpoints]
        self._key_id, self._secret, self._policy, self._clock = key_id, secret, policy, clock
        self._where = Endpoints(len(self.endpoints), policy.failover_after)
        self._timeout_s = timeout_s

    @property
    def current_endpoint(self) -> str:
        """Where the next send goes first."""
        return self.endpoints[self._where.current]

    def _request(self, endpoint: int, body: bytes, wait_applied_ms: int | None) -> dict[str, Any]:
        return {
            "url": self.endpoints[endpoint] + PATH,
            "content": body,
            "params": query(wait_applied_ms),
            "headers": signed_headers(self._key_id, self._secret, int(self._clock()), body),
        }

    def _start(self, awards: Sequence[Award], wait_applied_ms: int | None) -> tuple[bytes, Steps, float]:
        """The request's body, its attempts, and each attempt's timeout."""
        query(wait_applied_ms)  # a wait out of range is refused before anything is sent
        timeout = self._timeout_s + (wait_applied_ms or 0) / 1000
        return encode(list(awards)), plan(self._policy, self._where), timeout

    @staticmethod
    def _answer(response: httpx.Response | httpx.TransportError) -> Answer:
        if isinstance(response, httpx.TransportError):
            return Answer(None, error=f"{type(response).__name__}: {response}")
        return Answer(response.status_code, retry_after_s(response.headers.get("retry-after")))

    def _next(
        self, steps: Steps, got: httpx.Response | httpx.TransportError, waited: bool
    ) -> Attempt | list[Accepted]:
        """The next attempt after ``got``, or the send's result (or its error, raised)."""
        try:
            return steps.send(self._answer(got))
        except StopIteration as done:
            last, _, made = done.value
            return self._result(last, got if isinstance(got, httpx.Response) else None, made, waited)

    @staticmethod
    def _result(answer: Answer, response: httpx.Response | None, made: int, waited: bool) -> list[Accepted]:
        if response is None or answer.status is None:
            raise IntakeUnavailable(made, answer.error)
        try:
            body = response.json()
        except ValueError:
            body = None
        if answer.status == 202 and isinstance(body, dict):
            return accepted_of(body, waited)
        if answer.status >= 500 or answer.status == 429 or answer.status == 202:
            raise IntakeUnavailable(made, f"HTTP {answer.status}: {response.text[:200]}")
        raise refused_of(answer.status, body)


class IntakeClient(_Base):
    """A blocking client. ``endpoints``: the intakes' base URLs, this region's first (others are the
    failover). ``timeout_s`` bounds each attempt; a wait for the applied entry adds its own time."""

    def __init__(
        self,
        endpoints: Sequence[str],
        key_id: str,
        secret: str,
        *,
        policy: RetryPolicy | None = None,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(endpoints, key_id, secret, policy or RetryPolicy(), clock, timeout_s)
        self._http, self._sleep = httpx.Client(), sleep

    def send(self, award: Award, *, wait_applied_ms: int | None = None) -> Accepted:
        """Send one award; with ``wait_applied_ms`` (1..2000) also its entry once applied."""
        return self.send_batch([award], wait_applied_ms=wait_applied_ms)[0]

    def send_batch(self, awards: Sequence[Award], *, wait_applied_ms: int | None = None) -> list[Accepted]:
        """Send awards in one request (all accepted, or the request refused as a whole)."""
        body, steps, timeout = self._start(awards, wait_applied_ms)
        step: Attempt | list[Accepted] = next(steps)
        while isinstance(step, Attempt):
            self._sleep(step.delay_s)
            got: httpx.Response | httpx.TransportError
            try:
                got = self._http.post(**self._request(step.endpoint, body, wait_applied_ms), timeout=timeout)
            except httpx.TransportError as exc:
                got = exc
            step = self._next(steps, got, wait_applied_ms is not None)
        return step

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> IntakeClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncIntakeClient(_Base):
    """The asyncio client; as ``IntakeClient``."""

    def __init__(
        self,
        endpoints: Sequence[str],
        key_id: str,
        secret: str,
        *,
        policy: RetryPolicy | None = None,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(endpoints, key_id, secret, policy or RetryPolicy(), clock, timeout_s)
        self._http = httpx.AsyncClient()

    async def send(self, award: Award, *, wait_applied_ms: int | None = None) -> Accepted:
        """Send one award; with ``wait_applied_ms`` (1..2000) also its entry once applied."""
        return (await self.send_batch([award], wait_applied_ms=wait_applied_ms))[0]

    async def send_batch(self, awards: Sequence[Award], *, wait_applied_ms: int | None = None) -> list[Accepted]:
        """Send awards in one request (all accepted, or the request refused as a whole)."""
        body, steps, timeout = self._start(awards, wait_applied_ms)
        step: Attempt | list[Accepted] = next(steps)
        while isinstance(step, Attempt):
            await asyncio.sleep(step.delay_s)
            got: httpx.Response | httpx.TransportError
            try:
                got = await self._http.post(**self._request(step.endpoint, body, wait_applied_ms), timeout=timeout)
            except httpx.TransportError as exc:
                got = exc
            step = self._next(steps, got, wait_applied_ms is not None)
        return step

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncIntakeClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
