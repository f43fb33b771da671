/**
 * Caller authentication of the data plane (spec 5.3, 5.4): does a request carry the proxy
 * credential? Called by the proxy engine once per request; no I/O except the JWKS fetch of
 * jwtVerify credentials (lib/data-plane/jwks-cache.ts).
 *
 * - apiKey: only where the credential says: header `keyName` (name case-insensitive) equal to
 *   `<prefix> <keyValue>` (or `keyValue` without prefix), or query parameter `keyName` equal to
 *   `keyValue` for query placement.
 * - bearer: `Authorization: <prefix> <token>` (prefix default `Bearer`; empty prefix: the token).
 * - basicAuth: `Authorization: Basic base64(username:password)`.
 * - jwt: `Authorization` equal to the token, or `<prefix> <token>` when the secret has a prefix.
 * - jwtVerify: `Authorization: Bearer <JWT>`, verified with jose against the credential's JWKS or
 *   shared secret; iss, aud, sub (trailing `*` wildcard), requiredClaims, exp (required), nbf,
 *   clock skew. The last verified token of each credential is approved again by a constant-time
 *   hash comparison while its `exp` has not passed.
 * Scheme words and prefixes compare case-insensitively; every secret compares in constant time
 * (SHA-256 digests through `timingSafeEqual`, so lengths do not leak either). Refusal reasons are
 * short, for the request log, and never contain a presented or stored secret.
 * See docs/caller-authentication.md.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { loadOnce } from "#lib/lazy.ts";
import type {
  ApiKeySecret,
  BasicAuthSecret,
  BearerSecret,
  JwtSecret,
  JwtVerifySecret,
  ProxySecret,
} from "#lib/vault/secret-schemas.ts";
import type { JwksCache } from "./jwks-cache.ts";

/** Token verification (caller-jwt.ts: jose and the JWKS cache), loaded on the first token to verify. */
const jwtVerification = loadOnce(() => import("./caller-jwt.ts"));

export interface CallerRequest {
  /** Lower-case header names. */
  headers: Record<string, string | undefined>;
  /** Decoded query parameters (a repeated one: its values; the first is checked). */
  query: Record<string, string | string[] | undefined>;
}

export interface CallerCredential {
  credentialId: string;
  authType: "apiKey" | "bearer" | "basicAuth" | "jwt" | "jwtVerify";
  secret: ProxySecret;
}

/** A jwtVerify caller's verified claims, for meter predicates and variables (`token`). */
export type CallerClaims = Readonly<Record<string, unknown>>;

export type CallerAuthResult = { ok: true; claims?: CallerClaims } | { ok: false; reason: string };

export interface CallerAuthDeps {
  jwks?: JwksCache;
  now?: () => number;
  lastVerified?: LastVerifiedTokens;
}

/** Longest token or header value examined (longer ones are refused before any work). */
export const MAX_PRESENTED_LENGTH = 16_384;

// ---------------------------------------------------------------------------------------------
// Constant-time comparison
// ---------------------------------------------------------------------------------------------

const sha256 = (value: string | Buffer): Buffer => createHash("sha256").update(value).digest();

/**
 * Compares two secrets in constant time: both sides are hashed with SHA-256 first, so neither
 * the content nor the length of the stored value leaks through timing.
 */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

// ---------------------------------------------------------------------------------------------
// The last verified token (jwtVerify)
// ---------------------------------------------------------------------------------------------

/**
 * Per credential, the SHA-256 of the last token that verified and its `exp` (epoch seconds).
 * Bounded (least recently verified credentials dropped first).
 */
export class LastVerifiedTokens {
  private readonly tokens = new Map<string, { hash: Buffer; exp: number; claims?: CallerClaims }>();
  constructor(private readonly maxEntries = 10_000) {}

  /** True when `token` is the last verified token of the credential and `exp` has not passed. */
  matches(credentialId: string, token: string, nowMs: number, skewSeconds = 0): boolean {
    return this.approved(credentialId, token, nowMs, skewSeconds) !== undefined;
  }

  /** The claims of `token` when it is the credential's last verified token and `exp` has not passed. */
  approved(
    credentialId: string,
    token: string,
    nowMs: number,
    skewSeconds = 0,
  ): { claims: CallerClaims } | undefined {
    const last = this.tokens.get(credentialId);
    if (!last) return undefined;
    const same = timingSafeEqual(last.hash, sha256(token));
    return same && nowMs < (last.exp + skewSeconds) * 1000 ? { claims: last.claims ?? {} } : undefined;
  }

  remember(credentialId: string, token: string, exp: number, claims?: CallerClaims): void {
    this.tokens.delete(credentialId);
    this.tokens.set(credentialId, { hash: sha256(token), exp, ...(claims ? { claims } : {}) });
    while (this.tokens.size > this.maxEntries) {
      const oldest = this.tokens.keys().next().value;
      if (oldest === undefined) break;
      this.tokens.delete(oldest);
    }
  }

  forget(credentialId?: string): void {
    if (credentialId === undefined) this.tokens.clear();
    else this.tokens.delete(credentialId);
  }
}

/** The instance of the warm function. */
export const lastVerifiedTokens = new LastVerifiedTokens();

/** Full (jose) verifications performed, for tests and metrics. */
export const jwtVerifyStats = { verifications: 0 };

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const deny = (reason: string): CallerAuthResult => ({ ok: false, reason });
const OK: CallerAuthResult = { ok: true };

/** A header by name, whatever the case of the stored name. */
function headerOf(request: CallerRequest, name: string): string | undefined {
  const lower = name.toLowerCase();
  // Own entries only: a key named `constructor` must not find Object's constructor.
  const direct = Object.hasOwn(request.headers, lower) ? request.headers[lower] : undefined;
  if (typeof direct === "string") return direct;
  for (const [key, value] of Object.entries(request.headers)) {
    if (value !== undefined && key.toLowerCase() === lower) return value;
  }
  return undefined;
}

/**
 * Splits `<prefix> <rest>` when `presented` starts with `prefix` (case-insensitive) followed by
 * spaces; returns the rest, or undefined when the prefix is not there.
 */
function afterPrefix(presented: string, prefix: string): string | undefined {
  if (presented.length <= prefix.length) return undefined;
  if (presented.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase()) return undefined;
  const rest = presented.slice(prefix.length);
  if (rest[0] !== " " && rest[0] !== "\t") return undefined;
  const value = rest.replace(/^[ \t]+/, "");
  return value.length > 0 ? value : undefined;
}

/**
 * Checks `<prefix> <expected>` (or `expected` alone when the prefix is empty or absent). The prefix
 * is not secret; the value is compared in constant time.
 */
function checkPrefixed(
  presented: string,
  prefix: string | undefined,
  expected: string,
  what: string,
): CallerAuthResult {
  let value = presented.trim();
  if (prefix) {
    const rest = afterPrefix(value, prefix);
    if (rest === undefined) return deny(`${what}: expected ${prefix} prefix`);
    value = rest;
  }
  return constantTimeEqual(value, expected) ? OK : deny(`${what} mismatch`);
}

// ---------------------------------------------------------------------------------------------
// The auth types
// ---------------------------------------------------------------------------------------------

function checkApiKey(request: CallerRequest, secret: ApiKeySecret): CallerAuthResult {
  if (secret.placement === "query") {
    const presented = [request.query[secret.keyName]].flat()[0];
    if (presented === undefined) return deny(`missing query parameter ${secret.keyName}`);
    if (presented.length > MAX_PRESENTED_LENGTH) return deny("api key too long");
    return constantTimeEqual(presented, secret.keyValue) ? OK : deny("api key mismatch");
  }
  const presented = headerOf(request, secret.keyName);
  if (presented === undefined) return deny(`missing header ${secret.keyName.toLowerCase()}`);
  if (presented.length > MAX_PRESENTED_LENGTH) return deny("api key too long");
  return checkPrefixed(presented, secret.prefix, secret.keyValue, "api key");
}

function authorizationOf(request: CallerRequest): string | undefined {
  return headerOf(request, "authorization");
}

function checkBearer(request: CallerRequest, secret: BearerSecret): CallerAuthResult {
  const presented = authorizationOf(request);
  if (presented === undefined) return deny("missing authorization header");
  if (presented.length > MAX_PRESENTED_LENGTH) return deny("authorization header too long");
  return checkPrefixed(presented, secret.prefix ?? "Bearer", secret.token, "bearer token");
}

function checkJwtStatic(request: CallerRequest, secret: JwtSecret): CallerAuthResult {
  const presented = authorizationOf(request);
  if (presented === undefined) return deny("missing authorization header");
  if (presented.length > MAX_PRESENTED_LENGTH) return deny("authorization header too long");
  return checkPrefixed(presented, secret.prefix, secret.token, "jwt");
}

function checkBasic(request: CallerRequest, secret: BasicAuthSecret): CallerAuthResult {
  const presented = authorizationOf(request);
  if (presented === undefined) return deny("missing authorization header");
  if (presented.length > MAX_PRESENTED_LENGTH) return deny("authorization header too long");
  const encoded = afterPrefix(presented.trim(), "Basic");
  if (encoded === undefined) return deny("basic auth: expected Basic scheme");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return deny("malformed basic credentials");
  const decoded = Buffer.from(encoded, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return deny("malformed basic credentials");
  // Both comparisons always run, so the time does not tell which one failed.
  const userOk = constantTimeEqual(decoded.slice(0, colon), secret.username);
  const passwordOk = constantTimeEqual(decoded.slice(colon + 1), secret.password);
  return userOk && passwordOk ? OK : deny("basic credentials mismatch");
}

// ---------------------------------------------------------------------------------------------
// jwtVerify
// ---------------------------------------------------------------------------------------------

async function checkJwtVerify(
  request: CallerRequest,
  credentialId: string,
  secret: JwtVerifySecret,
  deps: CallerAuthDeps,
): Promise<CallerAuthResult> {
  const presented = authorizationOf(request);
  if (presented === undefined) return deny("missing authorization header");
  if (presented.length > MAX_PRESENTED_LENGTH) return deny("authorization header too long");
  const token = afterPrefix(presented.trim(), "Bearer");
  if (token === undefined) return deny("jwt: expected Bearer prefix");

  const now = deps.now ?? Date.now;
  const skew = secret.clockSkewSeconds ?? 30;
  const last = deps.lastVerified ?? lastVerifiedTokens;
  // Spec 5.4: the last verified token is approved by comparison, without re-verification.
  const approved = last.approved(credentialId, token, now(), skew);
  if (approved) return { ok: true, claims: approved.claims };

  // Verification (jose, the JWKS cache) is loaded on the first token to verify, not at a cold start.
  const { verifyJwt } = await jwtVerification();
  const verified = await verifyJwt(token, credentialId, secret, {
    jwks: deps.jwks,
    now: now(),
    skew,
    stats: jwtVerifyStats,
  });
  if (!verified.ok) return verified;
  const { payload } = verified;
  const claims = Object.freeze({ ...payload }) as CallerClaims;
  if (typeof payload.exp === "number") last.remember(credentialId, token, payload.exp, claims);
  return { ok: true, claims };
}

// ---------------------------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------------------------

/** Does the request carry the proxy credential? Never throws for a bad request. */
export async function authenticateCaller(
  request: CallerRequest,
  credential: CallerCredential,
  deps: CallerAuthDeps = {},
): Promise<CallerAuthResult> {
  switch (credential.authType) {
    case "apiKey":
      return checkApiKey(request, credential.secret as ApiKeySecret);
    case "bearer":
      return checkBearer(request, credential.secret as BearerSecret);
    case "basicAuth":
      return checkBasic(request, credential.secret as BasicAuthSecret);
    case "jwt":
      return checkJwtStatic(request, credential.secret as JwtSecret);
    case "jwtVerify":
      return checkJwtVerify(request, credential.credentialId, credential.secret as JwtVerifySecret, deps);
    default:
      return deny("unsupported proxy credential type");
  }
}
