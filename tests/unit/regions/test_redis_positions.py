"""The positions hash as the projector writes it and readers parse it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.positions import SourceKey, SourcePosition
from regions.stores.redis.positions import parse_positions, position_fields

positions = st.builds(
    SourcePosition,
    offset=st.integers(0, 10**12),
    accepted_at_ms=st.integers(0, 2 * 10**12),
    heartbeat_at_ms=st.integers(0, 2 * 10**12),
    gaps=st.integers(0, 5),
)
keys = st.tuples(st.sampled_from(["eu", "us", "ap-south"]), st.integers(0, 5))


@given(st.dictionaries(keys, positions, max_size=8))
def test_positions_survive_the_redis_hash_as_the_projector_writes_it(
    written: dict[SourceKey, SourcePosition],
) -> None:
    items = position_fields(written)
    fields = {str(items[i]): str(items[i + 1]) for i in range(0, len(items), 2)}
    fields |= {"epoch": "e1", "sequence_base": "7", "rebuilding": "1", "3": "99"}  # not positions

    assert parse_positions(fields) == written
    newest = max((m.accepted_at_ms for m in written.values()), default=0)
    assert fields.get("accepted_at") == (str(newest) if newest else None)
