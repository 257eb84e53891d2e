"""``ops/lb award`` (``ops/award``): one signed award sent to this region's intake, as a game server
sends it, and where it landed or why it was refused."""

from __future__ import annotations

import argparse
import sys
import uuid
from datetime import UTC, datetime

import httpx

from regions.cli.command import CommandError, Commands, add_command
from regions.intake.client import AwardClient, describe_answer
from regions.runtime.settings import Settings


async def _award(settings: Settings, args: argparse.Namespace) -> int:
    keys = settings.intake.award_keys
    if not keys:  # production mode has no development key: only the intake's pod holds the keys
        raise CommandError("no award keys in LB_INTAKE__AWARD_KEYS: run this where the intake's keys are set")
    key_id = args.key_id or ("dev" if "dev" in keys else min(keys))
    if key_id not in keys:
        raise CommandError(
            f"no secret for key id {key_id!r} in LB_INTAKE__AWARD_KEYS (known: {', '.join(sorted(keys))})"
        )
    url = f"http://{settings.intake.host}:{settings.intake.port}"
    award = {"leaderboardId": args.board, "matchId": args.match or uuid.uuid4().hex, "userId": args.user,
             "awardType": args.type, "score" if args.score else "delta": args.amount}  # fmt: skip
    occurred_at = args.occurred_at or (
        None if args.match else datetime.now(UTC).isoformat(timespec="milliseconds")
    )
    if occurred_at is not None:
        award["occurredAt"] = occurred_at
    client = AwardClient(url, key_id, keys[key_id].get_secret_value())
    try:
        response = await client.send(award)
    except httpx.TransportError as exc:
        raise CommandError(
            f"the intake at {url} is not reachable ({type(exc).__name__}); is the region running ('ops/run')?"
        ) from exc
    finally:
        await client.aclose()
    ok, text = describe_answer(response)
    print(text, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def register(commands: Commands) -> None:
    award = add_command(commands, "award", _award, "send one signed award to this region's intake")
    award.add_argument("board")
    award.add_argument("user")
    award.add_argument("amount", type=int, help="the delta (SUM boards) or, with --score, the score")
    award.add_argument("match", nargs="?", help="match id (default: a new random one)")
    award.add_argument("--score", action="store_true", help="send a score, for MAX and MIN boards")
    award.add_argument("--type", default="points", help="award type (default: points)")
    award.add_argument("--key-id", help="award key id (default: dev, or the first configured key)")
    award.add_argument(
        "--occurred-at",
        help="the award's event time, RFC 3339 (default: now for a new award; with MATCH given, none, "
        "so that sending it again is a repeat); boards with a time window need one",
    )
