"""Hypothesis strategies for the core's values."""

from hypothesis import strategies as st

from regions.core.boards import Aggregation
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent

users = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=6
)
amounts = st.integers(min_value=-(10**6), max_value=10**6)


def award(
    user: str, match: str, amount: int, *, aggregation: Aggregation = Aggregation.SUM, at_ms: int = 0,
    region: str = "local", metadata: str = "",
) -> AwardEvent:
    return AwardEvent(
        event_id=event_id("board", match, user, "kill"),
        digest=payload_digest(amount, None, metadata),
        board_id="board",
        match_id=match,
        user_id=user,
        award_type="kill",
        amount=amount,
        occurred_at_ms=None,
        region=region,
        accepted_at_ms=at_ms,
        aggregation=aggregation.value,
        sort_order="DESC",
        tie_policy="USER_ID",
        metadata=metadata,
    )
