"""A client of the leaderboard platform's award intake for game services: signed requests, retries
of the same award with backoff and jitter, failover to another region's intake, and the rank an
award reached (``wait_applied_ms``)."""

from leaderboard_intake.awards import (
    Accepted,
    Applied,
    Award,
    AwardRefused,
    FieldProblem,
    IntakeError,
    IntakeUnavailable,
)
from leaderboard_intake.client import AsyncIntakeClient, IntakeClient
from leaderboard_intake.policy import RetryPolicy

__all__ = [
    "Accepted",
    "Applied",
    "AsyncIntakeClient",
    "Award",
    "AwardRefused",
    "FieldProblem",
    "IntakeClient",
    "IntakeError",
    "IntakeUnavailable",
    "RetryPolicy",
]
