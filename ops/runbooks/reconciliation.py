"""Print the region's reconciliation topic as JSON lines, oldest first, then stop at its end.

Each line is an award the processor did not apply and that needs a person (a conflicting repeat,
an out-of-range total, a late award, an undecodable record). It reads with the running process's
own settings (LB_*), so in a pod it needs nothing but the image:

    kubectl -n NS exec -i deploy/FULLNAME-processor -- python - --last 20 < ops/runbooks/reconciliation.py
    .venv/bin/python ops/runbooks/reconciliation.py --last 20            # a local region

--last N: only the newest N records of each partition; --board ID: only that board's awards.
It joins no consumer group and commits nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from aiokafka import ConsumerRecord, TopicPartition

from regions.runtime.settings import load_settings
from regions.stores.kafka.clients import make_consumer, partitions_of
from schema.records import Codec


def row(record: ConsumerRecord, codec: Codec) -> dict[str, Any]:
    where = {"partition": record.partition, "offset": record.offset}
    try:
        r = codec.reconciliation(record.value)
    except Exception as exc:  # a bad record is shown, never a reason to stop reading
        return {**where, "error": f"undecodable reconciliation record: {exc}"}
    line: dict[str, Any] = {**where, "reason": r.reason, "detail": r.detail,
                            "award_partition": r.source_partition, "award_offset": r.source_offset}  # fmt: skip
    if (a := r.award) is not None:
        line |= {"board": a.board_id, "user": a.user_id, "match": a.match_id, "award_type": a.award_type,
                 "amount": a.amount, "event_id": a.event_id, "region": a.region,
                 "accepted_at_ms": a.accepted_at_ms}  # fmt: skip
    return line


async def dump(last: int | None, board: str | None) -> int:
    settings = load_settings()
    topic = settings.kafka.topic("reconciliation")
    partitions = [TopicPartition(topic, p) for p in await partitions_of(settings.kafka, topic)]
    consumer = make_consumer(settings.kafka, group_id=None)
    await consumer.start()
    try:
        consumer.assign(partitions)
        begin, end = await consumer.beginning_offsets(partitions), await consumer.end_offsets(partitions)
        for tp in partitions:
            consumer.seek(tp, begin[tp] if last is None else max(begin[tp], end[tp] - last))
        codec, printed = Codec(), 0
        pending = {tp for tp in partitions if await consumer.position(tp) < end[tp]}
        while pending:
            for records in (await consumer.getmany(*pending, timeout_ms=1000)).values():
                for record in records:
                    line = row(record, codec)
                    if board is None or line.get("board") == board:
                        print(json.dumps(line), flush=True)
                        printed += 1
            pending = {tp for tp in pending if await consumer.position(tp) < end[tp]}
    finally:
        await consumer.stop()
    print(f"{printed} reconciliation record(s) in {topic}", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--last", type=int, help="only the newest N records of each partition")
    parser.add_argument("--board", help="only awards of this board")
    args = parser.parse_args(argv)
    return asyncio.run(dump(args.last, args.board))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
