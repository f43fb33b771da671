/**
 * JWKS cache of the data plane (spec 2.5 jwtVerify, 5.4): the public keys of each jwtVerify proxy
 * credential, per credential, for the life of the warm function.
 *
 * - The key set is fetched when absent or older than its lifetime: the credential's
 *   `jwksRefreshHint`, else the `Cache-Control: max-age` of the last response (clamped to
 *   60 s - 24 h), else `defaultTtlMs` (3600 s).
 * - An unknown `kid` (key rotation) triggers at most one refetch per `cooldownMs` per credential,
 *   so a flood of tokens with random `kid`s makes one fetch, not one per token.
 * - A failed fetch is not retried before `cooldownMs` either; meanwhile `fail-open` serves the
 *   stale keys and `fail-closed` answers "unreachable".
 * - Concurrent callers share one in-flight fetch.
 * - Fetches go through `sendOutbound` (SSRF policy), 3 s deadline, 256 KiB body cap. Only public
 *   keys are kept (members carrying private or symmetric material are dropped), and after every
 *   successful fetch `persist` receives them so the engine can store them on the credential
 *   record; `seed` loads that stored copy into a cold function.
 * See docs/caller-authentication.md.
 */
import type { CryptoKey, JWK, LocalJWKSet } from "jose";
import { now } from "#lib/clock.ts";
import { type OutboundPolicy, sendOutbound } from "#lib/net/outbound.ts";
import { persistJwks } from "./jwks-homes.ts";

export type VerificationKey = CryptoKey;

let jose: Promise<typeof import("./jose-subset.ts")> | undefined;
/**
 * jose, loaded on the first jwtVerify request (not at a data-plane cold start: the bundle keeps it
 * in a chunk of its own). Later calls return the same module.
 */
export function loadJose(): Promise<typeof import("./jose-subset.ts")> {
  jose ??= import("./jose-subset.ts");
  return jose;
}

export interface JwksDocument {
  keys: JWK[];
  /** Epoch milliseconds of the fetch. */
  fetchedAt: number;
}

export interface JwksPolicy {
  /** The credential's `jwksRefreshHint` (seconds); overrides the response's max-age. */
  refreshHintSeconds?: number;
  failPolicy: "fail-closed" | "fail-open";
}

export interface JwksHeader {
  kid?: string;
  alg: string;
}

export interface JwksCacheOptions {
  /** Minimum time between two fetches of one credential's key set (default 30 s). */
  cooldownMs?: number;
  /** Lifetime of a key set without refresh hint or max-age (default 3600 s). */
  defaultTtlMs?: number;
  /** Deadline of one fetch (default 3 s). */
  fetchTimeoutMs?: number;
  /** Body size cap of one fetch (default 256 KiB). */
  maxResponseBytes?: number;
  /** Called after every successful fetch with the public keys (errors are ignored). */
  persist?: (credentialId: string, jwks: JwksDocument) => Promise<void>;
  now?: () => number;
  /** Outbound policy for the fetch (default: from the environment). */
  outboundPolicy?: OutboundPolicy;
  /** Credentials kept at most (least recently used dropped first; default 1000). */
  maxEntries?: number;
}

export const DEFAULT_JWKS_COOLDOWN_MS = 30_000;
export const DEFAULT_JWKS_TTL_MS = 3_600_000;
export const DEFAULT_JWKS_FETCH_TIMEOUT_MS = 3_000;
export const MAX_JWKS_BYTES = 256 * 1024;
/** Keys kept from one key set. */
export const MAX_JWKS_KEYS = 100;
const MIN_MAX_AGE_MS = 60_000;
const MAX_MAX_AGE_MS = 86_400_000;

/** JWK members that only private or symmetric keys carry. */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"] as const;

interface Entry {
  keys?: JWK[];
  /** Built from `keys` on first use (select), so that seeding needs no jose. */
  resolver?: LocalJWKSet;
  fetchedAt?: number;
  /** From the response's Cache-Control, when present. */
  maxAgeMs?: number;
  /** Start of the last fetch attempt (successful or not) in this process. */
  lastAttemptAt?: number;
  /** Start of the last fetch made because a token named a kid the set did not have. */
  lastMissFetchAt?: number;
  inFlight?: Promise<boolean>;
}

/** The last attempt succeeded (the key set is from it). */
const fetchedSince = (entry: Entry) =>
  entry.fetchedAt !== undefined &&
  entry.lastAttemptAt !== undefined &&
  entry.fetchedAt >= entry.lastAttemptAt;

class JwksFetchError extends Error {
  override name = "JwksFetchError";
}

function maxAgeOf(cacheControl: string | string[] | undefined): number | undefined {
  const value = Array.isArray(cacheControl) ? cacheControl.join(",") : cacheControl;
  if (!value) return undefined;
  if (/(^|,)\s*(no-store|no-cache)\s*(,|$)/i.test(value)) return MIN_MAX_AGE_MS;
  const match = /(?:^|,)\s*max-age\s*=\s*"?(\d{1,10})"?\s*(?:,|$)/i.exec(value);
  if (!match) return undefined;
  const ms = Number(match[1]) * 1000;
  return Math.min(MAX_MAX_AGE_MS, Math.max(MIN_MAX_AGE_MS, ms));
}

/** The public signature keys of a parsed key set document (throws when it is not a key set). */
function publicKeysOf(document: unknown): JWK[] {
  if (
    document === null ||
    typeof document !== "object" ||
    !Array.isArray((document as { keys?: unknown }).keys)
  ) {
    throw new JwksFetchError("not a JSON Web Key Set");
  }
  const keys: JWK[] = [];
  for (const key of (document as { keys: unknown[] }).keys) {
    if (keys.length >= MAX_JWKS_KEYS) break;
    if (key === null || typeof key !== "object" || Array.isArray(key)) continue;
    const jwk = key as Record<string, unknown>;
    if (typeof jwk.kty !== "string" || jwk.kty === "oct") continue;
    if (PRIVATE_MEMBERS.some((member) => member in jwk)) continue;
    if (jwk.use !== undefined && jwk.use !== "sig") continue;
    keys.push(jwk as JWK);
  }
  return keys;
}

export class JwksCache {
  private readonly entries = new Map<string, Entry>();
  private readonly cooldownMs: number;
  private readonly defaultTtlMs: number;
  private readonly fetchTimeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly outboundPolicy: OutboundPolicy | undefined;
  private readonly persist: JwksCacheOptions["persist"];
  /** Fetch attempts made (for tests and metrics). */
  fetches = 0;

  constructor(options: JwksCacheOptions = {}) {
    this.cooldownMs = options.cooldownMs ?? DEFAULT_JWKS_COOLDOWN_MS;
    this.defaultTtlMs = options.defaultTtlMs ?? DEFAULT_JWKS_TTL_MS;
    this.fetchTimeoutMs = options.fetchTimeoutMs ?? DEFAULT_JWKS_FETCH_TIMEOUT_MS;
    this.maxResponseBytes = options.maxResponseBytes ?? MAX_JWKS_BYTES;
    this.maxEntries = options.maxEntries ?? 1000;
    this.now = options.now ?? now;
    this.outboundPolicy = options.outboundPolicy;
    this.persist = options.persist;
  }

  /**
   * Loads the copy stored on the credential record. Ignored when this process already holds a
   * copy at least as recent. Members carrying private material are dropped.
   */
  seed(credentialId: string, jwks: JwksDocument): void {
    const entry = this.entries.get(credentialId);
    if (entry?.fetchedAt !== undefined && entry.fetchedAt >= jwks.fetchedAt) return;
    let keys: JWK[];
    try {
      keys = publicKeysOf(jwks);
    } catch {
      return;
    }
    const next: Entry = entry ?? {};
    next.keys = keys;
    next.resolver = undefined;
    next.fetchedAt = jwks.fetchedAt;
    next.maxAgeMs = undefined;
    this.store(credentialId, next);
  }

  /** The keys currently cached for a credential (public keys only), if any. */
  peek(credentialId: string): JwksDocument | undefined {
    const entry = this.entries.get(credentialId);
    if (!entry?.keys || entry.fetchedAt === undefined) return undefined;
    return { keys: structuredClone(entry.keys), fetchedAt: entry.fetchedAt };
  }

  /** Forgets one credential (deleted) or everything. */
  clear(credentialId?: string): void {
    if (credentialId === undefined) this.entries.clear();
    else this.entries.delete(credentialId);
  }

  /**
   * The verification key for a token header: a CryptoKey, `"unreachable"` when the key set could
   * not be obtained (fail-closed, or nothing cached at all), or undefined when no single key of
   * the set fits the header (unknown `kid`, no key of the algorithm's type, several candidates).
   */
  async keyFor(
    credentialId: string,
    jwksUri: string,
    header: JwksHeader,
    policy: JwksPolicy,
  ): Promise<VerificationKey | "unreachable" | undefined> {
    const entry = this.entries.get(credentialId) ?? {};
    this.store(credentialId, entry);
    const failOpen = policy.failPolicy === "fail-open";
    let fetchedNow = false;

    if (entry.inFlight) {
      fetchedNow = await entry.inFlight;
      if (!fetchedNow && !(failOpen && entry.keys)) return "unreachable";
    } else if (!entry.keys || this.isStale(entry, policy)) {
      if (this.coolingDown(entry)) {
        // The last attempt failed recently (a success would have made the entry fresh).
        if (!(failOpen && entry.keys)) return "unreachable";
      } else {
        fetchedNow = await this.refresh(credentialId, jwksUri, entry);
        if (!fetchedNow && !(failOpen && entry.keys)) return "unreachable";
      }
    }

    const found = await this.select(entry, header);
    if (found !== "no-match" || fetchedNow) return found === "no-match" ? undefined : found;

    // Unknown kid (or no key of the type): maybe the issuer rotated its keys, so refetch at once;
    // but at most one such refetch per cooldown (a flood of invented kids makes one fetch), none
    // while a failed attempt is recent, and concurrent callers join the fetch under way.
    let refetched: boolean;
    if (entry.inFlight) refetched = await entry.inFlight;
    else if (this.missCoolingDown(entry) || (this.coolingDown(entry) && !fetchedSince(entry)))
      return undefined;
    else {
      entry.lastMissFetchAt = this.now();
      refetched = await this.refresh(credentialId, jwksUri, entry);
    }
    if (!refetched) return failOpen ? undefined : "unreachable";
    const again = await this.select(entry, header);
    return again === "no-match" ? undefined : again;
  }

  private isStale(entry: Entry, policy: JwksPolicy): boolean {
    if (entry.fetchedAt === undefined) return true;
    const ttl =
      policy.refreshHintSeconds !== undefined
        ? policy.refreshHintSeconds * 1000
        : (entry.maxAgeMs ?? this.defaultTtlMs);
    return this.now() - entry.fetchedAt >= ttl;
  }

  private missCoolingDown(entry: Entry): boolean {
    return entry.lastMissFetchAt !== undefined && this.now() - entry.lastMissFetchAt < this.cooldownMs;
  }

  private coolingDown(entry: Entry): boolean {
    return entry.lastAttemptAt !== undefined && this.now() - entry.lastAttemptAt < this.cooldownMs;
  }

  /** Keeps the map bounded, most recently used last. */
  private store(credentialId: string, entry: Entry): void {
    this.entries.delete(credentialId);
    this.entries.set(credentialId, entry);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  private async select(entry: Entry, header: JwksHeader): Promise<VerificationKey | "no-match" | undefined> {
    if (!entry.keys) return "no-match";
    const { createLocalJWKSet, errors } = await loadJose();
    try {
      entry.resolver ??= createLocalJWKSet({ keys: entry.keys });
      return await entry.resolver({
        alg: header.alg,
        ...(header.kid !== undefined ? { kid: header.kid } : {}),
      });
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey) return "no-match";
      // Several candidates (no kid, or a repeated kid), an unsupported alg, a malformed key.
      return undefined;
    }
  }

  /** Starts (or joins) the fetch of one credential's key set; true when it succeeded. */
  private refresh(credentialId: string, jwksUri: string, entry: Entry): Promise<boolean> {
    if (entry.inFlight) return entry.inFlight;
    entry.lastAttemptAt = this.now();
    this.fetches++;
    const run = async (): Promise<boolean> => {
      try {
        const { keys, maxAgeMs } = await this.fetchKeys(jwksUri);
        const fetchedAt = this.now();
        Object.assign(entry, { keys, resolver: undefined, fetchedAt, maxAgeMs });
        if (this.persist) {
          await this.persist(credentialId, { keys: structuredClone(keys), fetchedAt }).catch(() => undefined);
        }
        return true;
      } catch {
        return false;
      } finally {
        entry.inFlight = undefined;
      }
    };
    entry.inFlight = run();
    return entry.inFlight;
  }

  private async fetchKeys(jwksUri: string): Promise<{ keys: JWK[]; maxAgeMs: number | undefined }> {
    const response = await sendOutbound({
      method: "GET",
      url: jwksUri,
      headers: { accept: "application/jwk-set+json, application/json" },
      timeoutMs: this.fetchTimeoutMs,
      maxResponseBytes: this.maxResponseBytes,
      maxRedirects: 2,
      ...(this.outboundPolicy ? { policy: this.outboundPolicy } : {}),
    });
    if (response.status !== 200) throw new JwksFetchError(`status ${response.status}`);
    if (response.truncated) throw new JwksFetchError("key set too large");
    let document: unknown;
    try {
      document = JSON.parse(response.body.toString("utf8"));
    } catch {
      throw new JwksFetchError("key set is not JSON");
    }
    return { keys: publicKeysOf(document), maxAgeMs: maxAgeOf(response.headers["cache-control"]) };
  }
}

/** The instance of the warm function (one per process); fetched keys are stored on the record. */
export const jwksCache = new JwksCache({ persist: persistJwks });
