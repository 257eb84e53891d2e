"""Automatic persisted queries, the pure part: which document a request runs, and what is remembered."""

from __future__ import annotations

from gateway.core.persisted import Document, NotFound, PersistedDocuments, Refused, sha256_hex


def named(query: str, version: object = 1) -> dict[str, object]:
    return {"persistedQuery": {"version": version, "sha256Hash": sha256_hex(query)}}


def test_a_document_is_remembered_under_its_hash_and_only_its_own_hash() -> None:
    documents = PersistedDocuments()
    assert documents.resolve(None, named("{ a }")) == NotFound(sha256_hex("{ a }"))
    assert documents.resolve("{ a }", named("{ a }")) == Document("{ a }")
    assert documents.resolve(None, named("{ a }")) == Document("{ a }")
    assert isinstance(documents.resolve("{ b }", named("{ a }")), Refused)
    assert documents.resolve(None, named("{ b }")) == NotFound(sha256_hex("{ b }"))


def test_without_persisted_query_the_request_runs_its_own_document() -> None:
    assert PersistedDocuments().resolve("{ a }", {"other": 1}) == Document("{ a }")
    assert PersistedDocuments().resolve("{ a }", None) == Document("{ a }")


def test_an_unknown_version_or_a_malformed_hash_is_refused() -> None:
    documents = PersistedDocuments()
    assert isinstance(documents.resolve("{ a }", named("{ a }", version=2)), Refused)
    assert isinstance(
        documents.resolve("{ a }", {"persistedQuery": {"version": 1, "sha256Hash": "ab"}}), Refused
    )
    assert isinstance(documents.resolve("{ a }", {"persistedQuery": "x"}), Refused)


def test_the_least_recently_used_documents_leave_first_by_entries_and_by_bytes() -> None:
    documents = PersistedDocuments(max_entries=2, max_bytes=1000)
    for query in ("{ a }", "{ b }"):
        documents.resolve(query, named(query))
    documents.resolve(None, named("{ a }"))  # used: b is now the oldest
    documents.resolve("{ c }", named("{ c }"))
    assert len(documents) == 2
    assert isinstance(documents.resolve(None, named("{ b }")), NotFound)
    assert documents.resolve(None, named("{ a }")) == Document("{ a }")

    small = PersistedDocuments(max_entries=10, max_bytes=12)
    small.resolve("{ aaaaa }", named("{ aaaaa }"))
    small.resolve("{ bbbbb }", named("{ bbbbb }"))
    assert len(small) == 1 and isinstance(small.resolve(None, named("{ aaaaa }")), NotFound)
