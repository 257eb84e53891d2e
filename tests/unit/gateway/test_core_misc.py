import asyncio

import pytest

from gateway.core.answers import Answer, AnswerCache, Flights
from gateway.core.auth import bearer_token, is_admin
from gateway.core.hints import ChangedUser, InvalidHint, parse_hint
from gateway.core.limits import ReadLimits
from gateway.core.ttl_cache import TtlCache


def test_bearer_token_and_admin_check() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Basic abc") is None
    assert bearer_token(None) is None
    assert is_admin("Bearer s3cret", ["s3cret"])
    assert not is_admin("Bearer wrong", ["s3cret"])
    assert not is_admin(None, ["s3cret"])


def test_during_a_rotation_either_admin_token_is_accepted() -> None:
    assert is_admin("Bearer new", ["new", "old"])
    assert is_admin("Bearer old", ["new", "old"])
    assert not is_admin("Bearer new,old", ["new", "old"])


def test_limits_name_the_cap() -> None:
    limits = ReadLimits(max_top_k=100, max_context_range=50)
    assert limits.check_k(100) is None
    assert limits.check_k(101) == "k must be between 1 and 100, got 101"
    assert limits.check_k(0) is not None
    assert limits.check_range(0) is None
    assert limits.check_range(51) == "range must be between 0 and 50, got 51"


def test_ttl_cache_expires_and_stays_bounded() -> None:
    cache: TtlCache[str, int] = TtlCache(ttl_s=1.0, max_entries=2)
    cache.put("a", 1, now=0)
    assert cache.get("a", now=0.9) == 1
    assert cache.get("a", now=1.0) is None
    for i, key in enumerate("xyz"):
        cache.put(key, i, now=2)
    assert len(cache) == 2
    assert cache.get("x", now=2) is None


def test_ttl_zero_caches_nothing() -> None:
    cache: TtlCache[str, int] = TtlCache(ttl_s=0)
    cache.put("a", 1, now=0)
    assert cache.get("a", now=0) is None


def test_parse_hint_as_the_projector_publishes_it() -> None:
    raw = (
        b'{"boardId":"b1","sequence":7,"positions":{"eu:0":12,"us-west:3":4},'
        b'"users":[{"userId":"alice","score":9007199254740991,"version":3}],"truncated":false}'
    )
    hint = parse_hint(raw)

    assert (hint.board_id, hint.sequence, hint.positions) == ("b1", 7, {("eu", 0): 12, ("us-west", 3): 4})
    assert hint.users == (ChangedUser("alice", 2**53 - 1, 3),)
    with pytest.raises(InvalidHint):
        parse_hint(b'{"sequence": 1}')


@pytest.mark.parametrize("name", ["0", "eu:", ":3", "eu:x", "eu:-1"])
def test_a_position_not_named_region_and_partition_makes_the_hint_invalid(name: str) -> None:
    with pytest.raises(InvalidHint):
        parse_hint(b'{"boardId":"b1","sequence":7,"positions":{"%s":1}}' % name.encode())


def test_answer_cache_reuses_only_fresh_answers_of_unchanged_boards() -> None:
    cache = AnswerCache(ttl_s=1.0)
    generations = {"b1": 3}
    cache.put(b"q", Answer(made_at=10.0, generations={"b1": 3}, body=b"{}"))

    assert cache.get(b"q", 10.5, lambda b: generations[b]) == b"{}"
    generations["b1"] = 4
    assert cache.get(b"q", 10.6, lambda b: generations[b]) is None
    cache.put(b"q", Answer(made_at=11.0, generations={"b1": 4}, body=b"{}"))
    assert cache.get(b"q", 12.0, lambda b: generations[b]) is None
    assert cache.stale(b"q", 12.9, lambda b: generations[b]) == b"{}"  # expired, kept while read again
    assert cache.stale(b"q", 13.0, lambda b: generations[b]) is None  # twice the TTL old
    generations["b1"] = 5
    assert cache.stale(b"q", 12.5, lambda b: generations[b]) is None
    assert cache.get(b"q", 11.5, lambda b: generations[b]) is None
    assert len(cache) == 0


def test_answer_cache_is_bounded_by_bytes_least_recently_used_first() -> None:
    cache = AnswerCache(ttl_s=10.0, max_bytes=1000)
    for i in range(5):
        cache.put(b"k%d" % i, Answer(made_at=0.0, generations={}, body=b"x" * 198))  # 200 bytes each
    assert cache.get(b"k0", 1.0, lambda b: 0) is not None  # k0 is now the most recently used

    cache.put(b"k5", Answer(made_at=0.0, generations={}, body=b"x" * 398))
    cache.put(b"huge", Answer(made_at=0.0, generations={}, body=b"x" * 5000))  # bigger than all: not kept

    assert cache.bytes == 1000
    assert [k for k in (b"k0", b"k1", b"k2", b"k3", b"k4", b"k5") if cache.get(k, 1.0, lambda b: 0)] == [
        b"k0", b"k3", b"k4", b"k5",
    ]  # fmt: skip
    assert cache.get(b"huge", 1.0, lambda b: 0) is None


async def test_the_first_identical_read_leads_and_the_others_wait_for_its_answer() -> None:
    flights = Flights()
    led = flights.lead(b"k")
    assert led is not None and flights.flying(b"k") is led
    assert flights.lead(b"k") is None  # another request of the same key waits instead
    waiting = asyncio.ensure_future(asyncio.shield(led))
    answer = Answer(0.0, {"b": 3}, b"{}")
    flights.land(b"k", led, answer)
    assert await waiting is answer
    assert flights.flying(b"k") is None and len(flights) == 0
    assert answer.current({"b": 3}.__getitem__) and not answer.current({"b": 4}.__getitem__)


async def test_a_flight_that_lands_without_an_answer_leaves_the_next_request_to_lead() -> None:
    flights = Flights()
    first = flights.lead(b"k")
    assert first is not None
    flights.land(b"k", first, None)
    assert await first is None
    second = flights.lead(b"k")
    assert second is not None and second is not first
    flights.land(b"k", first, Answer(0.0, {}, b"late"))  # a landed flight's leader cannot end a newer one
    assert flights.flying(b"k") is second and not second.done()
