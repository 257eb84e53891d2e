"""RocksDB adapter of a processor task's state store (``regions.stores.task_state.TaskStore``).

One database per task directory. Keys start with one byte naming what they hold:
``p`` + ``board|user`` -> player state; ``d`` + event id (16 bytes) -> the remembered copy (digest,
acceptance time, amount, region: ``schema.records.pack_seen``); ``t`` + acceptance time (8 bytes,
order-preserving) + event id -> nothing: the time index forgetting walks, so forgetting old copies
costs what is forgotten, not the whole memory; ``s`` + region ->
source position; ``c`` + ``board|region`` -> offset of the board's close cutoff (8 bytes, signed), also
kept in memory (cutoffs are few, and every award asks);
``e`` + board -> the newest expired day of a ROLLING board (4 bytes); ``x`` + ``board|`` + day (4 bytes)
+ user -> nothing: the day index an expiry walks, so it visits the players with points that day and
no other; ``h`` + board -> the correction records held for the board (absent: none); ``o`` + ``board|user``
-> the player's last moderation action (sequence, hidden), also kept in memory (moderated players are
few, and every award asks); ``u`` + user + ``\x00`` + board -> nothing: the player's states, which an
erasure removes; ``z`` + erasure token -> nothing: the erasure list; ``k`` + board + ``\x00`` + row
(1 byte) + block (2 bytes) -> the counters of one block of an approximate board's sketch (msgpack);
``q`` + board -> its candidate list (msgpack map); ``v`` + item + ``\x00`` + board -> nothing: the
lists an item is on, which an erasure takes it off; ``m`` + name -> metadata (identity, format, changelog
offsets, completeness bound). A player value is msgpack (total, version, tie key, ROLLING day buckets,
MAX/MIN contributions), trailing defaults left out.

Memory stays bounded whatever the number of players: one LRU block cache (index and filter blocks
included) and write buffers charged to it, both sized from settings. The write-ahead log is not
synced (and a restore writes none, then flushes): after a crash the store comes back as of some
earlier batch, with the changelog offsets of that batch, and the task replays the changelogs' tail
from there.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import msgspec
from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBatch, WriteBufferManager, WriteOptions

from regions.core.aggregation import PlayerState, Seen
from regions.core.candidates import CandidateList
from regions.core.moderation import Moderation
from regions.core.positions import SourcePosition
from regions.stores.task_state import (
    STORE_FORMAT,
    BlockKey,
    CutoffKey,
    DayEntry,
    StateKey,
    StoreBatch,
    StoreIdentity,
)
from schema.lifecycle import HeldCorrection
from schema.records import pack_seen, unpack_seen

log = logging.getLogger(__name__)
_IDENTITY = b"mid"
_CHANGELOG = b"mcl"
_COMPLETE = b"mcs"
_FORMAT = b"mfv"
_SIGN = 1 << 63


def _time(at_ms: int) -> bytes:
    return (at_ms + _SIGN).to_bytes(8, "big")


def _cutoff_key(key: CutoffKey) -> bytes:
    return b"c" + f"{key[0]}|{key[1]}".encode()


def _player_key(key: StateKey) -> bytes:
    return b"p" + f"{key[0]}|{key[1]}".encode()


def _moderation_key(key: StateKey) -> bytes:
    return b"o" + f"{key[0]}|{key[1]}".encode()


def _user_key(key: StateKey) -> bytes:
    return b"u" + key[1].encode() + b"\x00" + key[0].encode()


def _block_key(key: BlockKey) -> bytes:
    return b"k" + key[0].encode() + b"\x00" + key[1].to_bytes(1, "big") + key[2].to_bytes(2, "big")


def _day_prefix(board: str, day: int) -> bytes:
    return b"x" + board.encode() + b"|" + day.to_bytes(4, "big")


def _day_key(entry: DayEntry) -> bytes:
    return _day_prefix(entry[0], entry[1]) + entry[2].encode()


class _Player(msgspec.Struct, array_like=True, omit_defaults=True):
    """A player's value: (total, version, tie key), and on a ROLLING board its day buckets."""

    total: int
    version: int
    reached: str
    buckets: tuple[tuple[int, int, str], ...] = ()
    contributions: tuple[tuple[str, int], ...] = ()
    metadata: str = ""
    notes: tuple[tuple[str, str], ...] = ()


class _Meta(msgspec.Struct, array_like=True):
    cluster_id: str
    changelogs: list[str]
    partition: int


class RocksStore:
    """A task's state in RocksDB under ``path``."""

    def __init__(self, path: Path, options: Options) -> None:
        self._path = path
        path.mkdir(parents=True, exist_ok=True)
        self._db = Rdict(str(path), options)
        self._encode = msgspec.msgpack.Encoder().encode
        self._player = msgspec.msgpack.Decoder(_Player).decode
        self._source = msgspec.msgpack.Decoder(tuple[int, int, int, int]).decode
        self._meta = msgspec.msgpack.Decoder(_Meta).decode
        self._offsets = msgspec.msgpack.Decoder(dict[str, int]).decode
        self._normal = WriteOptions()
        self._bulk = WriteOptions()  # a restore's: no write-ahead log (the changelog is one), then flush
        self._bulk.disable_wal = True  # type: ignore[method-assign,assignment]  # (a property; its stub says method)
        self._held = msgspec.msgpack.Decoder(tuple[HeldCorrection, ...]).decode
        self._counters = msgspec.msgpack.Decoder(tuple[int, ...]).decode
        self._candidates = msgspec.msgpack.Decoder(CandidateList).decode
        moderation = msgspec.msgpack.Decoder(tuple[int, bool]).decode
        self._moderation = {key: Moderation(*moderation(value)) for key, value in self._pairs(b"o")}
        self._cutoffs = {key: int.from_bytes(value, "big", signed=True) for key, value in self._pairs(b"c")}

    def _pairs(self, prefix: bytes) -> Iterator[tuple[tuple[str, str], bytes]]:
        """The values under ``prefix`` of keys ``prefix`` + ``a|b``, by (a, b)."""
        for key, value in self._scan(prefix):
            a, _, b = key[1:].decode().partition("|")
            yield (a, b), value

    def _get(self, key: bytes) -> bytes | None:
        return cast(bytes | None, self._db.get(key))

    def identity(self) -> StoreIdentity | None:
        raw = self._get(_IDENTITY)
        if raw is None:
            return None
        meta = self._meta(raw)
        return StoreIdentity(meta.cluster_id, tuple(meta.changelogs), meta.partition)

    def reset(self, identity: StoreIdentity) -> None:
        batch = WriteBatch(raw_mode=True)
        batch.delete_range(b"\x00", b"\xff")
        meta = _Meta(identity.cluster_id, list(identity.changelogs), identity.partition)
        batch.put(_IDENTITY, self._encode(meta))
        batch.put(_FORMAT, STORE_FORMAT.to_bytes(4, "big"))
        self._db.write(batch)
        self._db.compact_range(None, None)
        self._moderation, self._cutoffs = {}, {}

    def changelog_positions(self) -> dict[str, int]:
        raw = self._get(_CHANGELOG)
        return {} if raw is None else self._offsets(raw)

    def player(self, key: StateKey) -> PlayerState | None:
        raw = self._get(_player_key(key))
        if raw is None:
            return None
        value = self._player(raw)
        return PlayerState(
            value.total, value.version, value.reached, value.buckets, value.contributions, value.metadata, value.notes
        )

    def format(self) -> int:
        """1 for a store written before formats were recorded."""
        raw = self._get(_FORMAT)
        return 1 if raw is None else int.from_bytes(raw, "big")

    def expired_through(self, board: str) -> int | None:
        raw = self._get(b"e" + board.encode())
        return None if raw is None else int.from_bytes(raw, "big")

    def players_of_days(self, board: str, after: int | None, through: int) -> list[DayEntry]:
        start = _day_prefix(board, 0 if after is None else after + 1)
        width = len(_day_prefix(board, 0))
        return [
            (board, int.from_bytes(key[width - 4 : width], "big"), key[width:].decode())
            for key, _ in self._scan(
                b"x" + board.encode() + b"|", start=start, end=_day_prefix(board, through + 1)
            )
        ]

    def seen(self, event_id: str) -> Seen | None:
        raw = self._get(b"d" + bytes.fromhex(event_id))
        return None if raw is None else Seen(*unpack_seen(raw))

    def sources(self) -> dict[str, SourcePosition]:
        return {key[1:].decode(): SourcePosition(*self._source(value)) for key, value in self._scan(b"s")}

    def _scan(
        self, prefix: bytes, end: bytes | None = None, start: bytes | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        """Keys and values that start with ``prefix`` (from ``start``, before ``end``), in key order."""
        for key, value in cast(Iterator[tuple[bytes, bytes]], self._db.items(from_key=start or prefix)):
            if not key.startswith(prefix) or (end is not None and key >= end):
                return
            yield key, value

    def sketch_block(self, key: BlockKey) -> tuple[int, ...] | None:
        raw = self._get(_block_key(key))
        return None if raw is None else self._counters(raw)

    def candidates(self, board_id: str) -> CandidateList:
        raw = self._get(b"q" + board_id.encode())
        return CandidateList() if raw is None else self._candidates(raw)

    def candidate_lists_of(self, item: str) -> list[str]:
        prefix = b"v" + item.encode() + b"\x00"
        return [key[len(prefix) :].decode() for key, _ in self._scan(prefix)]

    def cutoff(self, key: CutoffKey) -> int | None:
        return self._cutoffs.get(key)

    def held(self, board_id: str) -> tuple[HeldCorrection, ...]:
        raw = self._get(b"h" + board_id.encode())
        return () if raw is None else self._held(raw)

    def moderation(self, key: StateKey) -> Moderation | None:
        return self._moderation.get(key)

    def states_of(self, user_id: str) -> list[StateKey]:
        prefix = b"u" + user_id.encode() + b"\x00"
        return [(key[len(prefix) :].decode(), user_id) for key, _ in self._scan(prefix)]

    def erased(self, token: str) -> bool:
        return self._get(b"z" + token.encode()) is not None

    def complete_since_ms(self) -> int | None:
        raw = self._get(_COMPLETE)
        return None if raw is None else int.from_bytes(raw, "big", signed=True)

    def write(self, batch: StoreBatch, *, bulk: bool = False) -> None:
        out = WriteBatch(raw_mode=True)
        for key in batch.erased_players:  # before the puts, as the round removed them
            for item in (_player_key(key), _user_key(key), _moderation_key(key)):
                out.delete(item)
            self._moderation.pop(key, None)
        self._forget(out, batch.forgotten)  # before the puts: a copy forgotten and seen again stays
        for entry in batch.days_removed:  # before the puts: an entry removed and added again stays
            out.delete(_day_key(entry))
        self._index_candidates(out, batch.candidates)
        items = self._items(batch)
        for item, value in sorted(items) if bulk else items:  # a restore's big batches: in key order,
            out.put(item, value)  # the memtable takes them about a third faster
        for board, day in batch.expired.items():
            known = self.expired_through(board)
            out.put(b"e" + board.encode(), max(day, day if known is None else known).to_bytes(4, "big"))
        for region, position in batch.sources.items():
            out.put(b"s" + region.encode(), self._encode(
                (position.offset, position.accepted_at_ms, position.heartbeat_at_ms, position.gaps)
            ))  # fmt: skip
        cutoffs = {key: offset for key, offset in batch.cutoffs.items() if key not in self._cutoffs}
        for key, offset in cutoffs.items():  # the first marker stays the cutoff
            out.put(_cutoff_key(key), offset.to_bytes(8, "big", signed=True))
        for board_id, held in batch.held.items():
            if held:
                out.put(b"h" + board_id.encode(), self._encode(held))
            else:
                out.delete(b"h" + board_id.encode())
        if batch.changelog:
            out.put(_CHANGELOG, self._encode(self.changelog_positions() | batch.changelog))
        for token, erased in batch.erased.items():
            if erased:
                out.put(b"z" + token.encode(), b"")
            else:
                out.delete(b"z" + token.encode())
        for key, moderation in batch.moderation.items():
            out.put(_moderation_key(key), self._encode((moderation.sequence, moderation.hidden)))
        self._put_complete_since(out, batch.complete_since_ms)
        self._db.write(out, self._bulk if bulk else self._normal)
        self._moderation.update(batch.moderation)
        self._cutoffs.update(cutoffs)

    def _items(self, batch: StoreBatch) -> Iterator[tuple[bytes, bytes]]:
        """The players', their days' and the dedupe memory's keys and values. A replaced copy
        leaves its old time in the index; forgetting drops such entries without forgetting the copy."""
        encode = self._encode
        for key, state in batch.players.items():
            value = _Player(state.total, state.version, state.reached, state.buckets, state.contributions,
                            state.metadata, state.notes)  # fmt: skip
            yield _player_key(key), encode(value)
            yield _user_key(key), b""
        for entry in batch.days_added:
            yield _day_key(entry), b""
        for event_id, copy in batch.seen.items():
            raw_id = bytes.fromhex(event_id)
            yield b"d" + raw_id, pack_seen(copy.digest, copy.at_ms, copy.region, copy.amount)
            yield b"t" + _time(copy.at_ms) + raw_id, b""
        for block, counters in batch.sketch.items():
            yield _block_key(block), encode(counters)
        for board_id, listed in batch.candidates.items():
            yield b"q" + board_id.encode(), encode(listed)
        for raw_id, packed in batch.packed_seen.items():
            yield b"d" + raw_id, packed
            # The index key's time, order-preserving: the packed big-endian signed time with its
            # sign bit flipped is exactly ``_time`` of it.
            yield b"t" + bytes((packed[8] ^ 0x80,)) + packed[9:16] + raw_id, b""

    def _index_candidates(self, out: WriteBatch, lists: dict[str, CandidateList]) -> None:
        """The index of the lists each item is on, from the stored lists to ``lists``."""
        for board_id, listed in lists.items():
            before, after = ({item for item, _ in c.items} for c in (self.candidates(board_id), listed))
            for item in before - after:
                out.delete(b"v" + item.encode() + b"\x00" + board_id.encode())
            for item in after - before:
                out.put(b"v" + item.encode() + b"\x00" + board_id.encode(), b"")

    def flush(self) -> None:
        self._db.flush(wait=True)

    def _put_complete_since(self, out: WriteBatch, since: int | None) -> None:
        current = self.complete_since_ms()
        if since is not None and (current is None or since > current):
            out.put(_COMPLETE, since.to_bytes(8, "big", signed=True))

    def _forget(self, out: WriteBatch, forgotten: dict[bytes, int | None]) -> None:
        for raw_id, at_ms in forgotten.items():
            if at_ms is not None:
                out.delete(b"t" + _time(at_ms) + raw_id)
            current = self._get(b"d" + raw_id)
            if current is not None and (at_ms is None or unpack_seen(current)[1] == at_ms):
                out.delete(b"d" + raw_id)  # (a copy remembered since, at another time, stays)

    def oldest_seen(self, before_ms: int, limit: int) -> list[tuple[str, int]]:
        found = []
        for key, _ in self._scan(b"t", end=b"t" + _time(before_ms)):
            found.append((key[9:].hex(), int.from_bytes(key[1:9], "big") - _SIGN))
            if len(found) >= limit:
                break
        return found

    def players_count(self) -> int:
        return sum(1 for _ in self._scan(b"p"))

    def disk_bytes(self) -> int:
        return sum(f.stat().st_size for f in self._path.rglob("*") if f.is_file())

    def close(self) -> None:
        self._db.close()

    @staticmethod
    def destroy(path: Path) -> None:
        """Remove a store's directory (a store that cannot be opened is rebuilt from the changelog)."""
        shutil.rmtree(path, ignore_errors=True)


def store_options(cache_mib: int, write_buffer_mib: int) -> Options:
    """Options for every store of one process. Bounded memory: one block cache, shared by the stores,
    holds data, index and filter blocks, and the write buffers are charged to it, so the stores'
    memory stays about ``cache_mib`` whatever their size on disk and however many partitions."""
    cache = Cache(cache_mib << 20)
    table = BlockBasedOptions()
    table.set_block_cache(cache)
    table.set_bloom_filter(10, False)
    table.set_cache_index_and_filter_blocks(True)
    table.set_pin_l0_filter_and_index_blocks_in_cache(True)
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_block_based_table_factory(table)
    options.set_write_buffer_size(max(1, write_buffer_mib // 2) << 20)
    options.set_max_write_buffer_number(2)
    options.set_write_buffer_manager(
        WriteBufferManager.new_write_buffer_manager_with_cache(write_buffer_mib << 20, False, cache)
    )
    options.set_max_open_files(256)
    options.set_keep_log_file_num(2)
    options.set_max_background_jobs(1)
    return options


def open_store(base: Path, name: str, options: Options, *, slots: int = 8) -> RocksStore:
    """Open the store ``base/name``. When another process on this host holds it (two instances of
    one group on a laptop), use the next free slot ``name.1``, ``name.2``, ...: whichever store is
    found is checked against the changelogs before use. A store that cannot be opened for any other
    reason is removed and made anew (the changelogs rebuild it)."""
    for slot in range(slots):
        path = base / (name if slot == 0 else f"{name}.{slot}")
        try:
            return RocksStore(path, options)
        except Exception as exc:  # rocksdict raises plain exceptions carrying RocksDB's status
            if "lock" in str(exc).lower():
                continue
            log.warning(
                "removing the unreadable state store %s (%s); it is restored from the changelogs", path, exc
            )
            RocksStore.destroy(path)
            return RocksStore(path, options)
    raise RuntimeError(f"every state store slot under {base} for {name} is held by another process")
