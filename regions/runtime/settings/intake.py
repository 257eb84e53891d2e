"""The intake's section: the awards endpoint, its keys, limits and board catalog cache."""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr

from regions.runtime.settings.fields import ListenHost, UnknownBoards, Workers

DEV_AWARD_KEY_ID = "dev"
DEV_AWARD_SECRET = "dev-secret"


class IntakeSettings(BaseModel):
    host: ListenHost = "127.0.0.1"
    port: int = Field(8081, description="Listen port of POST /internal/awards.")
    award_keys: dict[str, SecretStr] = Field(
        {DEV_AWARD_KEY_ID: SecretStr(DEV_AWARD_SECRET)},
        description="HMAC secrets per key id (JSON object).",
    )
    max_clock_skew_s: int = Field(300, ge=1, description="Accepted |now - X-Award-Timestamp|.")
    max_batch: int = Field(500, ge=1, description="Most awards in one request.")
    max_body_bytes: int = Field(1_048_576, ge=1024, description="Largest request body.")
    rate_per_key: float = Field(
        20_000,
        gt=0,
        description="Awards per second per key id, held by each intake pod on its own (not across the "
        "region): N intake replicas accept up to N times this from one key id.",
    )
    burst_per_key: float = Field(
        40_000, gt=0, description="Burst of awards per key id, per intake pod like rate_per_key."
    )
    max_in_flight_awards: int = Field(
        500,
        ge=1,
        description="Awards (a batch of 10 counts 10) an intake process holds between reading a request and "
        "Kafka's acknowledgement; more get 503 overloaded with Retry-After, refused before the body is parsed "
        "when the bound is full, and nothing of theirs is produced. A request arriving while none is in "
        "flight is always admitted, whatever its size. The default is about 200 ms of what one process has "
        "Kafka acknowledge on a 2-core machine (~2,500 awards/s) and one full batch (max_batch).",
    )
    ack_target_ms: float = Field(
        100.0,
        ge=0,
        description="The bound of awards in flight follows the region's own Kafka's acknowledgements (not a "
        "HOME_ROUTED board's home region's): while the p90 of a "
        "quarter second's acknowledgements is over this, the bound is lowered (to 20 at least), and it climbs "
        "back toward max_in_flight_awards while they are faster and the bound is reached "
        "(regions/core/admission.py, AckTarget). A machine past its knee then refuses the excess at once "
        "instead of accepting awards at any latency. 0: the bound stays max_in_flight_awards.",
    )
    max_loop_behind_ms: float = Field(
        50.0,
        ge=0,
        description="Requests are answered 503 overloaded, before anything is read, while the process's event "
        "loop has been more than this far behind its work for the last 100 ms (regions/runtime/loop_lag.py): "
        "the process is over its CPU, and requests queue before they are read, where no count of awards in "
        "flight sees them. A refusal costs far less than an acceptance, so the backlog clears and accepted "
        "awards keep their latency. 0: off.",
    )
    admission_wait_s: float = Field(
        0.0,
        ge=0,
        le=10,
        description="How long an award may wait for room under max_in_flight_awards before it is refused "
        "(0: refused at once, which keeps the answer to an overloaded request within milliseconds).",
    )
    overload_retry_after_s: int = Field(
        1, ge=1, le=60, description="Retry-After (seconds) of a 503 overloaded answer."
    )
    keep_alive_s: int = Field(
        75,
        ge=1,
        le=3_600,
        description="How long an idle keep-alive connection stays open. A server that closes an idle "
        "connection while a client sends on it loses that request at the transport (the client sees an error "
        "for an award that was never read): keep this longer than the idle timeout of every client and load "
        "balancer in front (commonly 60 s), so they close first.",
    )
    catalog_ttl_s: float = Field(
        2.0,
        ge=0,
        description="How long a board lookup is served without reading the catalog again: an intake "
        "refuses a closing board's awards at most this long after the close began.",
    )
    erasure_refresh_s: float = Field(
        5.0,
        gt=0,
        description="How often the intake (and the audit sink) reads the erasure change log for new "
        "entries (the whole list is read once, at start): an erased player's awards are refused (410 "
        "player_erased), and a lifted one's taken again, at most this long after the change reached the "
        "region's Cassandra data center (those acknowledged before are dropped by the processors); an "
        "erasure removes the player's Cassandra rows no sooner than twice this after it was asked.",
    )
    catalog_max_stale_s: float = Field(
        30.0,
        ge=0,
        description="While the catalog cannot be read, how long after its last answer a board is still "
        "served from that answer (at least catalog_ttl_s); then the board's awards get 503 "
        "store_unavailable until it is read again.",
    )
    max_unknown_boards: UnknownBoards = 10_000
    workers: Workers = Field(
        1,
        description="Intake processes sharing the port (SO_REUSEPORT), one Kafka producer each; the "
        "award rate per key is shared among them (each process allows rate_per_key / workers).",
    )
    heartbeat_interval_s: float = Field(
        2.0,
        gt=0,
        description="How often a heartbeat is written to every awards partition, so positions advance while "
        "the region is idle and a silent region is told apart (keep well below gateway.region_stale_after_s: "
        "an idle region's positions are about this old, plus the processor's idle_round_interval_ms at most). "
        "Each interval costs every region's processor about one transaction per partition (the regions' "
        "heartbeats share it: processor.idle_round_interval_ms).",
    )
    applied_poll_ms: float = Field(
        10.0,
        ge=1,
        le=1000,
        description="While awards wait for this region's projection (POST /internal/awards?wait=applied), "
        "how often each intake process reads the projection's positions: one read per interval whatever "
        "the number of awards waiting, and none while none waits.",
    )
    home_delivery_timeout_s: float = Field(
        5.0,
        gt=0,
        le=60,
        description="Awards of a HOME_ROUTED board received outside its home region are produced into the "
        "home region's awards topic (acks=all, idempotent): the longest wait for the home's "
        "acknowledgement (also that producer's request timeout), after which the request gets 503 "
        "home_unavailable with Retry-After and nothing is accepted here.",
    )
