"""The Python intake client's retry plan (pure): what is retried, where, and after how long."""

from __future__ import annotations

import pytest
from leaderboard_intake.policy import Answer, Endpoints, RetryPolicy, plan

TIMEOUT = Answer(None, error="ReadTimeout")


def run(policy: RetryPolicy, endpoints: Endpoints, answers: list[Answer]) -> tuple[list[tuple[int, float]], tuple[Answer, int, int]]:
    """Drives a plan with ``answers``; the attempts made (endpoint, delay) and the plan's result."""
    steps = plan(policy, endpoints, draws=[1.0])
    made = [next(steps)]
    for answer in answers:
        try:
            made.append(steps.send(answer))
        except StopIteration as done:
            return [(a.endpoint, a.delay_s) for a in made], done.value
    raise AssertionError("the plan asked for more answers than given")


def test_an_answer_that_is_final_ends_the_send_at_once() -> None:
    for status in (202, 400, 401, 403, 404, 409, 413, 415):
        attempts, (last, endpoint, made) = run(RetryPolicy(), Endpoints(2, 2), [Answer(status)])
        assert attempts == [(0, 0.0)] and last.status == status and (endpoint, made) == (0, 1)


def test_timeouts_and_5xx_are_retried_with_doubling_capped_waits_then_fail_over() -> None:
    policy = RetryPolicy(attempts=6, failover_after=2, backoff_s=0.1, max_backoff_s=0.3)
    answers = [TIMEOUT, Answer(503), Answer(500), Answer(502), Answer(504), TIMEOUT]
    attempts, (last, endpoint, made) = run(policy, Endpoints(2, 2), answers)
    assert [e for e, _ in attempts] == [0, 0, 1, 1, 0, 0]
    assert [d for _, d in attempts] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.3, 0.3])
    assert last == TIMEOUT and made == 6 and endpoint == 0


def test_retry_after_is_the_least_wait_and_a_throttled_key_does_not_fail_over() -> None:
    policy = RetryPolicy(attempts=4, failover_after=1, backoff_s=0.1, max_backoff_s=0.1)
    endpoints = Endpoints(2, 1)
    attempts, (last, endpoint, _) = run(policy, endpoints, [Answer(429, 2.0), Answer(429, 1.0), Answer(202)])
    assert attempts == [(0, 0.0), (0, 2.0), (0, 1.0)] and last.status == 202 and endpoint == 0

    attempts, _ = run(policy, endpoints, [Answer(503, 3.0), Answer(202)])
    assert attempts == [(0, 0.0), (1, 3.0)]


def test_the_endpoint_that_answered_stays_in_use_for_later_sends() -> None:
    endpoints = Endpoints(3, 1)
    run(RetryPolicy(failover_after=1), endpoints, [TIMEOUT, TIMEOUT, Answer(202)])
    assert endpoints.current == 2
    attempts, _ = run(RetryPolicy(failover_after=1), endpoints, [Answer(202)])
    assert attempts == [(2, 0.0)]
    endpoints.failed(0)  # a late failure of an endpoint already left does not move it
    assert endpoints.current == 2


def test_waits_are_drawn_below_the_ceiling() -> None:
    policy = RetryPolicy(backoff_s=1.0, max_backoff_s=8.0)
    assert policy.delay_s(1, None, 0.5) == 0.5
    assert policy.delay_s(3, None, 0.5) == 2.0
    assert policy.delay_s(10, None, 0.999) == pytest.approx(7.992)
    assert policy.delay_s(1, 4.0, 0.1) == 4.0


@pytest.mark.parametrize(
    "arguments", [{"attempts": 0}, {"failover_after": 0}, {"backoff_s": -1.0}, {"backoff_s": 9.0, "max_backoff_s": 1.0}]
)
def test_a_policy_that_cannot_work_is_refused(arguments: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**arguments)  # type: ignore[arg-type]
