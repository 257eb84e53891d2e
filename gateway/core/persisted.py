"""Automatic persisted queries, Apollo's protocol: a client names its document by the SHA-256 of
its text in ``extensions.persistedQuery`` (``{"version": 1, "sha256Hash": "<64 hex>"}``).

- Hash only: the document remembered under the hash, or ``NotFound``; the client then sends the
  document with its hash once, and the hash alone afterwards (also as a cacheable GET).
- Hash and document: the hash must be the document's (else ``Refused``); the document is remembered.
- No ``persistedQuery``: the request's own document, as without this protocol.

Pure: the caller passes the request's ``query`` and ``extensions``. What is remembered is bounded by
entries and by bytes (least recently used first out) and is per process: a process that does not
know a hash answers ``NotFound`` and learns the document from the client's retry.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

NOT_FOUND_MESSAGE = "PersistedQueryNotFound"
NOT_FOUND_CODE = "PERSISTED_QUERY_NOT_FOUND"
MISMATCH_MESSAGE = "provided sha does not match query"


@dataclass(frozen=True, slots=True)
class Document:
    query: str | None  # None: the request had no document and named none (the executor says so)


@dataclass(frozen=True, slots=True)
class NotFound:
    sha256: str


@dataclass(frozen=True, slots=True)
class Refused:
    message: str


Resolved = Document | NotFound | Refused


def sha256_hex(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()


@dataclass(slots=True)
class PersistedDocuments:
    max_entries: int = 1024
    max_bytes: int = 8 << 20
    _documents: OrderedDict[str, str] = field(default_factory=OrderedDict)
    _bytes: int = 0

    def resolve(self, query: str | None, extensions: Mapping[str, object] | None) -> Resolved:
        """The document a request runs, or why it runs none."""
        persisted = None if extensions is None else extensions.get("persistedQuery")
        if persisted is None:
            return Document(query)
        if not isinstance(persisted, Mapping) or persisted.get("version") != 1:
            return Refused("Unsupported persisted query version: extensions.persistedQuery.version must be 1")
        digest = persisted.get("sha256Hash")
        if not isinstance(digest, str) or len(digest) != 64:
            return Refused("extensions.persistedQuery.sha256Hash must be 64 hexadecimal characters")
        digest = digest.lower()
        if query is None:
            known = self._documents.get(digest)
            if known is None:
                return NotFound(digest)
            self._documents.move_to_end(digest)
            return Document(known)
        if sha256_hex(query) != digest:
            return Refused(MISMATCH_MESSAGE)
        self._remember(digest, query)
        return Document(query)

    def _remember(self, digest: str, query: str) -> None:
        if digest in self._documents:
            self._documents.move_to_end(digest)
            return
        self._documents[digest] = query
        self._bytes += len(query)
        while len(self._documents) > self.max_entries or self._bytes > self.max_bytes:
            _, dropped = self._documents.popitem(last=False)
            self._bytes -= len(dropped)

    def __len__(self) -> int:
        return len(self._documents)
