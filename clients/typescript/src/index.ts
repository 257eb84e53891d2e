// Client of the leaderboard platform's award intake (POST /internal/awards) for game services, on
// fetch and WebCrypto (Node 20+, Deno, Bun, browsers behind a proxy that holds no secret). It signs
// every request, retries the same award on timeouts, network errors, 5xx and 429 with backoff and
// jitter (at least the intake's Retry-After), and fails over to the next region's intake after
// repeated failures. An award's event id comes from what it is (board, match, player, award type),
// so the same award sent again, to any region, is counted once.

export interface Award {
  leaderboardId: string;
  userId: string;
  matchId: string;
  awardType: string;
  /** The change of a SUM board's total; exactly one of delta and score. */
  delta?: number;
  /** The score on a MAX, MIN or LATEST board. */
  score?: number;
  /** RFC 3339 with an offset; required on boards with a time window. Set it once, when the award happens. */
  occurredAt?: string;
  /** A JSON object of at most 512 bytes, shown with the entry while this award holds its score. */
  metadata?: Record<string, unknown>;
}

export interface Applied { score: number; rank: number; sharedRank: number; changed: boolean }

export interface Accepted {
  eventId: string;
  region: string;
  partition: number;
  offset: number;
  /** With waitAppliedMs: the entry once this region's projection covers the award; null if the wait ended first. */
  applied?: Applied | null;
}

export interface RetryPolicy {
  /** Attempts per send, over every endpoint (8). */
  attempts: number;
  /** Failures in a row on one endpoint before the next one is used (2). */
  failoverAfter: number;
  /** The first retry waits up to this (ms), doubled per failure (100). */
  backoffMs: number;
  /** ... and at most this (ms) (5000). */
  maxBackoffMs: number;
}

export const DEFAULT_POLICY: RetryPolicy = { attempts: 8, failoverAfter: 2, backoffMs: 100, maxBackoffMs: 5000 };
const RETRIED = new Set([500, 502, 503, 504]);
const THROTTLED = 429;
const MAX_WAIT_MS = 2000;

export interface FieldProblem { field: string; rule: string }

/** The intake refused the request for what it is: sending it again gets the same answer. */
export class AwardRefused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly fields: FieldProblem[],
  ) {
    const named = fields.map((f) => `${f.field}: ${f.rule}`).join("; ");
    super(`HTTP ${status} ${code}: ${detail}${named ? ` (${named})` : ""}`);
    this.name = "AwardRefused";
  }
}

/** No endpoint accepted the award; the last attempt's outcome may be unknown. Sending the same award later is safe. */
export class IntakeUnavailable extends Error {
  constructor(readonly attempts: number, readonly last: string) {
    super(`no intake accepted the award after ${attempts} attempts; last: ${last}`);
    this.name = "IntakeUnavailable";
  }
}

export interface ClientOptions {
  /** The intakes' base URLs, this region's first (the others are the failover). */
  endpoints: string[];
  keyId: string;
  secret: string;
  policy?: Partial<RetryPolicy>;
  /** Bounds each attempt (5000 ms), plus the wait for waitAppliedMs. */
  timeoutMs?: number;
  /** Unix seconds for the signature (Date.now() / 1000). */
  clock?: () => number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

interface Answer { status: number | null; retryAfterMs: number | null; error: string; body?: unknown; text?: string }

const encoder = new TextEncoder();

/** X-Award-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>. */
export async function sign(secret: string, timestampS: number, body: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(`${timestampS}.${body}`));
  return "v1=" + Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The wait before the next attempt after `failures` failures (full jitter), at least Retry-After. */
export function delayMs(policy: RetryPolicy, failures: number, retryAfterMs: number | null, draw: number): number {
  const ceiling = Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** Math.max(0, failures - 1));
  return Math.max(draw * ceiling, retryAfterMs ?? 0);
}

export class IntakeClient {
  readonly endpoints: string[];
  private readonly policy: RetryPolicy;
  private current = 0;
  private failures = 0;

  constructor(private readonly options: ClientOptions) {
    if (options.endpoints.length === 0) throw new Error("at least one intake endpoint (base URL) is needed");
    this.endpoints = options.endpoints.map((e) => e.replace(/\/+$/, ""));
    this.policy = { ...DEFAULT_POLICY, ...options.policy };
    if (this.policy.attempts < 1 || this.policy.failoverAfter < 1) throw new Error("attempts and failoverAfter must be at least 1");
  }

  /** Where the next send goes first. */
  get currentEndpoint(): string {
    return this.endpoints[this.current]!;
  }

  async send(award: Award, options: { waitAppliedMs?: number } = {}): Promise<Accepted> {
    return (await this.sendBatch([award], options))[0]!;
  }

  /** Awards in one request: all accepted, or the request refused as a whole. */
  async sendBatch(awards: Award[], options: { waitAppliedMs?: number } = {}): Promise<Accepted[]> {
    const wait = options.waitAppliedMs;
    if (wait !== undefined && !(Number.isInteger(wait) && wait > 0 && wait <= MAX_WAIT_MS)) {
      throw new RangeError(`waitAppliedMs must be an integer 1..${MAX_WAIT_MS}`);
    }
    const body = JSON.stringify(awards.length === 1 ? awards[0] : { awards });
    const sleep = this.options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    const random = this.options.random ?? Math.random;
    let last: Answer = { status: null, retryAfterMs: null, error: "not sent" };
    let delay = 0;
    for (let made = 1; made <= this.policy.attempts; made++) {
      await sleep(delay);
      const endpoint = this.current;
      last = await this.attempt(endpoint, body, wait);
      if (last.status !== null && !RETRIED.has(last.status) && last.status !== THROTTLED) {
        if (endpoint === this.current) this.failures = 0;
        return this.result(last, made);
      }
      if (last.status !== THROTTLED) this.failed(endpoint);
      delay = delayMs(this.policy, made, last.retryAfterMs, random());
    }
    throw new IntakeUnavailable(this.policy.attempts, last.error || `HTTP ${last.status}: ${(last.text ?? "").slice(0, 200)}`);
  }

  private failed(endpoint: number): void {
    if (endpoint !== this.current) return; // a late answer of an endpoint already left behind
    this.failures += 1;
    if (this.failures >= this.policy.failoverAfter) {
      this.current = (this.current + 1) % this.endpoints.length;
      this.failures = 0;
    }
  }

  private async attempt(endpoint: number, body: string, wait: number | undefined): Promise<Answer> {
    const timestamp = Math.floor((this.options.clock ?? (() => Date.now() / 1000))());
    const query = wait === undefined ? "" : `?wait=applied&timeoutMs=${wait}`;
    try {
      const response = await fetch(`${this.endpoints[endpoint]}/internal/awards${query}`, {
        method: "POST",
        body,
        headers: {
          "content-type": "application/json",
          "x-award-key-id": this.options.keyId,
          "x-award-timestamp": String(timestamp),
          "x-award-signature": await sign(this.options.secret, timestamp, body),
        },
        signal: AbortSignal.timeout((this.options.timeoutMs ?? 5000) + (wait ?? 0)),
      });
      const text = await response.text();
      let parsed: unknown = undefined;
      try { parsed = JSON.parse(text); } catch { parsed = undefined; }
      const retryAfter = Number(response.headers.get("retry-after"));
      return {
        status: response.status, error: "", body: parsed, text,
        retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : null,
      };
    } catch (err) {
      return { status: null, retryAfterMs: null, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
    }
  }

  private result(answer: Answer, made: number): Accepted[] {
    const body = answer.body as { accepted?: Accepted[]; error?: { code?: string; message?: string; fields?: FieldProblem[] } } | undefined;
    if (answer.status === 202 && body?.accepted) return body.accepted;
    if (answer.status === 202) throw new IntakeUnavailable(made, `HTTP 202 with a body that is not an answer: ${(answer.text ?? "").slice(0, 200)}`);
    const error = body?.error ?? {};
    throw new AwardRefused(answer.status ?? 0, error.code ?? "http_error", error.message ?? "", error.fields ?? []);
  }
}
