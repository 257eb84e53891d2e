from gateway.core.breaker import BreakerState, CircuitBreaker


def test_opens_after_threshold_failures_in_a_row() -> None:
    breaker = CircuitBreaker(threshold=3, reset_s=5)
    for t in (0.0, 0.1):
        breaker.failed(t)
        assert breaker.allow(t)
    breaker.failed(0.2)

    assert breaker.state(0.3) is BreakerState.OPEN
    assert not breaker.allow(0.3)


def test_a_success_resets_the_count() -> None:
    breaker = CircuitBreaker(threshold=2, reset_s=5)
    breaker.failed(0)
    breaker.succeeded()
    breaker.failed(1)

    assert breaker.allow(1)


def test_half_open_lets_one_trial_through_and_closes_on_success() -> None:
    breaker = CircuitBreaker(threshold=1, reset_s=5)
    breaker.failed(0)

    assert breaker.allow(5.0)
    assert not breaker.allow(5.1)  # only one trial at a time
    breaker.succeeded()
    assert breaker.state(5.2) is BreakerState.CLOSED


def test_a_failed_trial_opens_again_for_the_full_reset_time() -> None:
    breaker = CircuitBreaker(threshold=1, reset_s=5)
    breaker.failed(0)
    assert breaker.allow(6)
    breaker.failed(6)

    assert not breaker.allow(10)
    assert breaker.allow(11)
