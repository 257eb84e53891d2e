"""``publishCorrection``'s input and answer: a correction of a closed board's result."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry

from gateway.api.errors import InvalidInput
from gateway.api.scalars import Long
from regions.core.corrections import CorrectionRequest, parse_correction
from regions.stores.cassandra.corrections import CorrectionEntry


@strawberry.input(description="One player's corrected final score.")
class AdjustmentInput:
    user_id: strawberry.ID
    score: Long = strawberry.field(description="The corrected final score; |score| < 2^53.")


@strawberry.input
class PublishCorrectionInput:
    leaderboard_id: strawberry.ID
    correction_id: strawberry.ID = strawberry.field(
        description="Chosen by the caller (1..128 printable characters): the same id again answers the "
        "same correction, the same id with another reason or other adjustments is refused."
    )
    reason: str = strawberry.field(description="Why the result is corrected (1..500 characters).")
    adjustments: list[AdjustmentInput] = strawberry.field(
        description="1..1000 players of the newest result, each once, with their corrected final score."
    )

    def request(self, board_id: str) -> CorrectionRequest:
        adjustments = [(str(a.user_id), int(a.score)) for a in self.adjustments]
        parsed = parse_correction(board_id, str(self.correction_id), self.reason, adjustments, at="input.")
        if isinstance(parsed, list):
            raise InvalidInput("; ".join(f"{e.field}: {e.rule}" for e in parsed))
        return parsed


@strawberry.enum(description="PENDING: recorded, its result version is being published; PUBLISHED: readable.")
class CorrectionStatus(Enum):
    PENDING = "PENDING"
    PUBLISHED = "PUBLISHED"


@strawberry.type
class Adjustment:
    user_id: strawberry.ID
    score: Long


@strawberry.type(description="A correction of a closed board: it publishes result version resultVersion.")
class Correction:
    leaderboard_id: strawberry.ID
    correction_id: strawberry.ID
    result_version: int = strawberry.field(
        description="The result version it publishes: Leaderboard.result(version) once PUBLISHED."
    )
    status: CorrectionStatus
    reason: str
    adjustments: list[Adjustment]
    created_at: datetime | None

    @staticmethod
    def of(entry: CorrectionEntry) -> Correction:
        return Correction(
            leaderboard_id=strawberry.ID(entry.board_id), correction_id=strawberry.ID(entry.correction_id),
            result_version=entry.result_version,
            status=CorrectionStatus.PUBLISHED if entry.published else CorrectionStatus.PENDING,
            reason=entry.reason, created_at=entry.created_at,
            adjustments=[Adjustment(user_id=strawberry.ID(a.user_id), score=Long(a.score)) for a in entry.adjustments],
        )  # fmt: skip
