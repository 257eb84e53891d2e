"""The operator's tools (``ops/lb``, ``ops/award``) against the real servers: clear output, clear
errors, exit status that scripts can trust."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid

import httpx
from cassandra.cluster import Session

from regions.core.boards import Aggregation, Board
from regions.runtime.settings import Settings
from tests.harness import Region, region_env


async def lb(settings: Settings, *args: str) -> tuple[int, str, str]:
    """``python -m regions.cli ARGS`` for these settings: exit status, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "regions.cli", *args, env={**os.environ, **region_env(settings)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_boards_lists_everything_a_board_has(topics: Settings, cassandra_session: Session) -> None:
    board = f"cli-{uuid.uuid4().hex[:8]}"
    created = await lb(topics, "create-board", board, "--name", "Cli", "--tie-policy", "FIRST_REACHED",
                       "--sort-order", "ASC", "--allow-negative", "--shards", "4", "--consistency",
                       "HOME_ROUTED")  # fmt: skip
    refused = await lb(topics, "create-board", "x", "--aggregation", "MAX", "--allow-negative")
    too_many = await lb(topics, "create-board", "y", "--shards", "65")
    weekly = f"cli-{uuid.uuid4().hex[:8]}"
    windowed = await lb(topics, "create-board", weekly, "--window", "WEEKLY", "--time-zone", "America/New_York",
                        "--first-day-of-week", "SUNDAY")  # fmt: skip
    bad_zone = await lb(topics, "create-board", "y", "--window", "DAILY", "--time-zone", "Moon/Base")
    scoped = await lb(topics, "create-board", "z@2026-11-30")
    latest = f"cli-{uuid.uuid4().hex[:8]}"
    keep_latest = await lb(topics, "create-board", latest, "--aggregation", "LATEST")
    switched = await lb(topics, "set-consistency", latest, "HOME_ROUTED")
    unknown = await lb(topics, "set-consistency", f"cli-{uuid.uuid4().hex[:8]}", "REGIONAL")
    trending = f"cli-{uuid.uuid4().hex[:8]}"
    approximate = await lb(topics, "create-board", trending, "--approximate", "50,0.001,0.01")
    bad_approximate = await lb(topics, "create-board", "t2", "--approximate", "50,0.5,0.01")

    code, out, err = await lb(topics, "boards")

    assert created[0] == 0 and refused[0] == 2 and "allow_negative" in refused[2]
    assert too_many[0] == 2 and "shards: must be 1..64, got 65" in too_many[2]
    assert windowed[0] == 0 and bad_zone[0] == 2 and "--time-zone: 'Moon/Base' is not an IANA" in bad_zone[2]
    assert scoped[0] == 2 and "must be 1..128 of letters" in scoped[2]
    header, *rows = out.splitlines()
    assert header.split() == ["ID", "STATUS", "HOME", "AGGREGATION", "ORDER", "TIE", "POLICY", "WINDOW",
                              "NEGATIVE", "SHARDS", "CONSISTENCY", "APPROXIMATE", "CREATED"]  # fmt: skip
    row = next(r for r in rows if r.startswith(board + " "))
    assert row.split()[1:10] == ["OPEN", "local", "SUM", "ASC", "FIRST_REACHED", "none", "allowed", "4",
                                 "HOME_ROUTED"]  # fmt: skip
    assert row.split()[10] == "-" and row.split()[11].startswith("20") and code == 0 and err == ""
    row = next(r for r in rows if r.startswith(weekly + " "))
    assert row.split()[6] == "WEEKLY:SUNDAY@America/New_York"
    row = next(r for r in rows if r.startswith(latest + " "))
    assert keep_latest[0] == 0 and row.split()[3] == "LATEST" and row.split()[7] == "-"  # takes no deltas
    assert switched[0] == 0 and row.split()[9] == "HOME_ROUTED" and "accepted before stay counted" in switched[1]
    assert unknown[0] == 2 and "does not exist" in unknown[2]
    row = next(r for r in rows if r.startswith(trending + " "))
    assert approximate[0] == 0 and row.split()[10] == "50,0.001,0.01"
    assert (
        bad_approximate[0] == 2
        and "--approximate 50,0.5,0.01: approximate.epsilon: must be in (0, 0.1]" in bad_approximate[2]
    )


async def test_put_profile_stores_what_the_gateway_shows_and_refuses_bad_values(
    topics: Settings, cassandra_session: Session
) -> None:
    user = f"u-{uuid.uuid4().hex[:8]}"
    saved = await lb(topics, "put-profile", user, "--name", "Ann Example", "--country", "SE",
                     "--avatar-url", "https://example.com/a.png")  # fmt: skip
    bad = await lb(topics, "put-profile", user, "--name", "  ", "--country", "Sweden")

    assert saved == (0, f"profile of {user} saved\n", "")
    row = cassandra_session.execute(
        "SELECT display_name, country, avatar_url FROM profiles WHERE user_id = %s", (user,)
    ).one()
    assert tuple(row) == ("Ann Example", "SE", "https://example.com/a.png")
    assert bad[0] == 2 and "name: must not be only white space" in bad[2] and "country:" in bad[2]


async def test_award_prints_where_it_landed_or_the_error_and_exits_accordingly(region: Region) -> None:
    total, best = (
        Board(f"s-{uuid.uuid4().hex[:8]}", "Sum", "local"),
        Board(f"m-{uuid.uuid4().hex[:8]}", "Max", "local", aggregation=Aggregation.MAX),
    )
    for board in (total, best):
        await region.create_board(board)
    settings = region.settings

    accepted = await lb(settings, "award", total.id, "ann", "5")
    scored = await lb(settings, "award", best.id, "ann", "120", "--score")
    wrong_field = await lb(settings, "award", best.id, "ann", "120")
    zero = await lb(settings, "award", total.id, "ann", "0")
    not_a_number = await lb(settings, "award", total.id, "ann", "ten")
    no_intake = await lb(settings.model_copy(update={"intake": settings.intake.model_copy(update={"port": 1})}),
                         "award", total.id, "ann", "5")  # fmt: skip

    assert accepted[0] == 0 and accepted[1].startswith("accepted: event ") and "partition" in accepted[1]
    assert scored[0] == 0
    assert wrong_field[0] == 1 and wrong_field[2].splitlines() == [
        "error: HTTP 400 invalid_field: some fields are invalid",
        f"  delta: board {best.id} is MAX: send score instead",
    ]
    assert zero[0] == 1 and "delta: must not be 0" in zero[2]
    assert not_a_number[0] == 2 and "invalid int value: 'ten'" in not_a_number[2]
    assert no_intake[0] == 1 and "not reachable" in no_intake[2] and "Traceback" not in no_intake[2]
    await region.wait_for_total(best.id, "ann", 120)


async def test_reconciliation_reads_what_was_not_applied_and_follows_new_entries(region: Region) -> None:
    board = Board(f"r-{uuid.uuid4().hex[:8]}", "Reconciled", "local")
    await region.create_board(board)
    near_limit = 2**53 - 1
    sends = [
        {"matchId": "m1", "userId": "ann", "delta": 5},
        {"matchId": "m1", "userId": "ann", "delta": 6},  # conflicting repeat
        {"matchId": "m2", "userId": "bob", "delta": near_limit},
        {"matchId": "m3", "userId": "bob", "delta": 1},  # would leave the exact range
    ]
    for fields in sends:
        response = await region.client.send({"leaderboardId": board.id, "awardType": "kill", **fields})
        assert response.status_code == 202
    await region.wait_for_total(board.id, "bob", near_limit)

    async def both_reconciled() -> bool:
        out = (await lb(region.settings, "reconciliation", "--board", board.id))[1]
        return "conflicting_repeat" in out and "total_out_of_range" in out

    await region.wait_until(both_reconciled, what="both awards in reconciliation")
    code, out, _ = await lb(region.settings, "reconciliation", "--board", board.id)
    other = (await lb(region.settings, "reconciliation", "--board", "some-other-board"))[1]

    assert code == 0 and other == "nothing in reconciliation for board some-other-board\n"
    conflict = next(line for line in out.splitlines() if "conflicting_repeat" in line)
    assert f"board={board.id} user=ann event=" in conflict
    assert f"at {region.settings.kafka.topic('awards')}:" in conflict
    assert "total would be 9007199254740992" in out
    async with httpx.AsyncClient() as http:
        metrics = (await http.get(region.health_url("processor") + "/metrics")).text
    assert 'lb_processor_reconciled_total{reason="total_out_of_range"} 1.0' in metrics

    # Ctrl-C as an operator's terminal sends it: a child inherits an ignored SIGINT (a suite started in
    # the background of a non-interactive shell ignores it), so the command starts with the default.
    interruptible = "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); " \
                    "runpy.run_module('regions.cli', run_name='__main__')"  # fmt: skip
    follow = await asyncio.create_subprocess_exec(
        sys.executable, "-c", interruptible, "reconciliation", "--board", board.id, "--follow",
        env={**os.environ, **region_env(region.settings)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert follow.stdout is not None and follow.stderr is not None
    errors = asyncio.create_task(follow.stderr.read())  # drained meanwhile: a full pipe would block it
    seen: list[bytes] = []

    async def lines(n: int, what: str) -> None:
        for _ in range(n):
            try:
                seen.append(await asyncio.wait_for(follow.stdout.readline(), 60))
            except TimeoutError:
                follow.kill()
                raise AssertionError(f"--follow printed {seen} and no more; wanted {what}") from None

    await lines(4, "the two entries so far, two lines each")
    repeat = await region.client.send({"leaderboardId": board.id, "awardType": "kill", "matchId": "m1",
                                       "userId": "ann", "delta": 7})  # fmt: skip
    assert repeat.status_code == 202, repeat.text
    await lines(2, "the new conflicting repeat")
    follow.send_signal(signal.SIGINT)
    await asyncio.wait_for(follow.wait(), 60)

    assert sum(b"conflicting_repeat" in line for line in seen) == 2
    assert b"Traceback" not in await errors


async def test_close_begins_a_close_once_and_results_says_when_there_is_none(
    topics: Settings, cassandra_session: Session
) -> None:
    board = f"cli-{uuid.uuid4().hex[:8]}"
    await lb(topics, "create-board", board)

    closed = await lb(topics, "close", board, "--reason", "season over")
    again = await lb(topics, "close", board, "--reason", "other")
    unknown = await lb(topics, "close", "no-such-board")
    results = await lb(topics, "results", board)

    assert closed[0] == again[0] == 0
    assert closed[1].startswith(f"{board} is CLOSING (reason: season over)")
    assert again[1].startswith(f"{board} is CLOSING (reason: season over)")  # the first close stands
    assert unknown[0] == 1 and "'no-such-board' does not exist" in unknown[2]
    assert results[0] == 1 and f"no archived result for {board}" in results[1]


async def test_bootstrap_with_kafka_away_says_where_and_what_to_do(topics: Settings) -> None:
    away = topics.model_copy(
        update={"kafka": topics.kafka.model_copy(update={"bootstrap_servers": "127.0.0.1:1"})}
    )

    code, _, err = await lb(away, "bootstrap")

    assert code == 1 and "Traceback" not in err
    assert err.splitlines() == [err.splitlines()[-1]]  # the one error, not aiokafka's log of it above
    assert err.splitlines()[-1].startswith("error: Kafka at 127.0.0.1:1 is not reachable (")
    assert "'ops/services up' starts it" in err
