from regions.core.rate_limit import TokenBuckets
from regions.core.signing import AuthFailure, Denied, sign, verify

SECRETS = {"dev": "dev-secret"}
BODY = b'{"a":1}'


def _verify(key: str | None = "dev", ts: str | None = "1000", sig: str | None = None, now: int = 1000):
    return verify(
        key, ts, sig if sig is not None else sign("dev-secret", 1000, BODY), BODY, SECRETS, now, 300
    )


def test_good_signature_names_the_key() -> None:
    assert _verify() == "dev"


def test_each_failure_has_its_reason_and_status() -> None:
    cases = {
        AuthFailure.MISSING: (_verify(sig=""), 401),
        AuthFailure.MALFORMED: (_verify(ts="soon"), 401),
        AuthFailure.SKEWED: (_verify(now=1301), 401),
        AuthFailure.UNKNOWN_KEY: (_verify(key="other"), 403),
        AuthFailure.BAD_SIGNATURE: (_verify(sig=sign("dev-secret", 1000, b"{}")), 403),
    }
    for reason, (result, status) in cases.items():
        assert isinstance(result, Denied) and (result.reason, result.status) == (reason, status)


def test_signature_matches_the_documented_formula() -> None:
    import hashlib
    import hmac

    expected = hmac.new(b"dev-secret", b"1000." + BODY, hashlib.sha256).hexdigest()
    assert sign("dev-secret", 1000, BODY) == f"v1={expected}"


def test_token_bucket_refuses_then_refills() -> None:
    buckets = TokenBuckets(rate=10, burst=2)
    assert [buckets.take("k", 1, 0.0) for _ in range(3)] == [0.0, 0.0, 0.1]
    assert buckets.take("k", 1, 0.2) == 0.0


def test_reserve_paces_callers_to_the_rate() -> None:
    buckets = TokenBuckets(rate=100, burst=10)
    waits = [buckets.reserve("a", 10, 0.0) for _ in range(3)]
    assert waits == [0.0, 0.1, 0.2]  # 30 rows at 100/s: the last waits until 0.2 s
    assert buckets.reserve("a", 10, 1.0) == 0.0  # refilled
