"""What went to reconciliation, for people (``ops/lb reconciliation [--board B] [--follow]``).

Each entry reads: time, reason, board, user, event id and position of the source record, then the
detail on a second line. Board and user come from the award, or from the record's key
(``board|user``) when the award itself could not be decoded.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime

import msgspec
from aiokafka import ConsumerRecord, TopicPartition

from regions.cli.command import Commands, add_command, say
from regions.runtime.settings import KafkaSettings, Settings
from regions.stores.kafka.clients import make_consumer, partitions_of, replay, stop_consumer
from schema.records import Codec, Reconciliation


def board_and_user(key: bytes | None, entry: Reconciliation | None) -> tuple[str, str]:
    if entry is not None and entry.award is not None:
        return entry.award.board_id, entry.award.user_id
    board, _, user = (key or b"").decode(errors="replace").partition("|")
    return board or "?", user or "?"


def describe(timestamp_ms: int, key: bytes | None, entry: Reconciliation, awards_topic: str) -> str:
    """Two lines: what, when, whose and where; then the detail."""
    at = datetime.fromtimestamp(timestamp_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    board, user = board_and_user(key, entry)
    event = entry.award.event_id if entry.award is not None else "-"
    where = f"{entry.source_topic or awards_topic}:{entry.source_partition}:{entry.source_offset}"
    detail = entry.detail + (f" (raw record: {len(entry.raw)} bytes)" if entry.raw is not None else "")
    return f"{at}  {entry.reason}  board={board} user={user} event={event} at {where}\n    {detail}"


class ReconciliationReader:
    """Reads the reconciliation topic from its beginning and hands each entry, described, to ``show``."""

    def __init__(self, kafka: KafkaSettings, board: str | None, show: Callable[[str], None]) -> None:
        self._kafka = kafka
        self._board = board
        self._show = show
        self._codec = Codec()
        self.shown = 0

    def _show_records(self, records: list[ConsumerRecord]) -> None:
        for record in sorted(records, key=lambda r: (r.timestamp, r.partition, r.offset)):
            try:
                entry = self._codec.reconciliation(record.value)
            except msgspec.DecodeError as exc:
                self._show(f"reconciliation record {record.partition}:{record.offset} cannot be read: {exc}")
                continue
            if self._board is None or board_and_user(record.key, entry)[0] == self._board:
                self._show(describe(record.timestamp, record.key, entry, self._kafka.topic("awards")))
                self.shown += 1

    async def read(self, *, follow: bool) -> None:
        """Everything so far, oldest first; with ``follow``, then every new entry until cancelled."""
        topic = self._kafka.topic("reconciliation")
        tps = [TopicPartition(topic, p) for p in await partitions_of(self._kafka, topic)]
        history: list[ConsumerRecord] = []

        async def keep(records: list[ConsumerRecord]) -> None:
            history.extend(records)

        end = await replay(self._kafka, tps, keep)
        self._show_records(history)
        if follow:
            await self._follow(tps, end)

    async def _follow(self, tps: list[TopicPartition], start: dict[TopicPartition, int]) -> None:
        consumer = make_consumer(self._kafka, group_id=None)
        await consumer.start()
        try:
            consumer.assign(tps)
            for tp in tps:
                consumer.seek(tp, start[tp])
            while True:
                batch = await consumer.getmany(*tps, timeout_ms=500)
                self._show_records([r for records in batch.values() for r in records])
        finally:
            await stop_consumer(consumer)


async def _reconciliation(settings: Settings, args: argparse.Namespace) -> int:
    reader = ReconciliationReader(settings.kafka, args.board, say)
    await reader.read(follow=args.follow)
    if not reader.shown:
        print("nothing in reconciliation" + (f" for board {args.board}" if args.board else ""))
    return 0


def register(commands: Commands) -> None:
    reconciliation = add_command(
        commands, "reconciliation", _reconciliation, "what was not applied or audited, and why"
    )
    reconciliation.add_argument("--board", help="only this board")
    reconciliation.add_argument(
        "--follow", action="store_true", help="keep printing new entries (Ctrl-C ends)"
    )
