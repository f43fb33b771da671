/**
 * Tokens of customToken credentials (spec 2.5): fetched from the user's authentication endpoint,
 * read at `tokenPath`, expiring per `expiryMethod`, cached in memory and refreshed before expiry.
 *
 * By default the request goes through `sendOutbound` (lib/net/outbound.ts), the SSRF-guarded client
 * for every user-supplied URL; `options.fetch` replaces it (tests, or a caller with its own client).
 * Errors carry a `reason` and never contain the token, the response body or the URL's path/query.
 */
import { createHash } from "node:crypto";
import { now as clockNow } from "#lib/clock.ts";
import { OutboundBlockedError, OutboundTimeoutError, sendOutbound } from "#lib/net/outbound.ts";
import type { CustomTokenSecret } from "./secret-schemas.ts";

export const TOKEN_REQUEST_TIMEOUT_MS = 10_000;
export const TOKEN_RESPONSE_MAX_BYTES = 1024 * 1024;
export const TOKEN_MAX_LENGTH = 16_384;
/** Refresh this long before expiry (or at half the lifetime of a shorter-lived token). */
export const REFRESH_MARGIN_MS = 30_000;
/** Upper bound on how long a token is cached, whatever expiry the endpoint announces. */
export const MAX_CACHE_MS = 24 * 60 * 60_000;
export const TOKEN_CACHE_MAX_ENTRIES = 1000;

export type CustomTokenFailure =
  | "blocked" // the URL or its address is not allowed (SSRF policy)
  | "timeout"
  | "request_failed" // no response (connection refused, DNS, TLS...)
  | "redirect" // the endpoint answered with a redirect; token endpoints are not followed
  | "http_error" // a non-2xx status
  | "too_large"
  | "not_json"
  | "token_missing" // nothing at tokenPath
  | "token_invalid"; // something at tokenPath, but not a usable token string

export class CustomTokenError extends Error {
  override name = "CustomTokenError";
  readonly reason: CustomTokenFailure;
  /** HTTP status of the token endpoint's answer, when there was one. */
  readonly status?: number;
  constructor(
    reason: CustomTokenFailure,
    message: string,
    options: { status?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.reason = reason;
    if (options.status !== undefined) this.status = options.status;
  }
}

export interface CustomToken {
  token: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  /** `response`: read at expiryPath; `default`: defaultTtlSeconds (no expiryMethod, or no usable value). */
  expirySource: "response" | "default";
}

export interface CustomTokenOptions {
  fetch?: typeof fetch;
  now?: () => number;
  timeoutMs?: number;
}

interface RawResponse {
  status: number;
  body: Buffer;
  /** The body was longer than TOKEN_RESPONSE_MAX_BYTES (and was not read to its end). */
  truncated: boolean;
}

/**
 * Read a dot path (`data.items.0.token`) with own properties only. Digit segments index arrays.
 */
export function readPath(document: unknown, path: string): unknown {
  let current: unknown = document;
  for (const segment of path.split(".")) {
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else if (typeof current === "object" && current !== null && Object.hasOwn(current, segment)) {
      current = (current as Record<string, unknown>)[segment];
    } else {
      return undefined;
    }
  }
  return current;
}

function buildRequest(secret: CustomTokenSecret): {
  url: URL;
  headers: Record<string, string>;
  body?: Buffer;
} {
  const url = new URL(secret.tokenUrl);
  const extra = Object.entries(secret.requestQueryParams ?? {}).map(
    ([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`,
  );
  if (extra.length > 0) url.search = [url.search.slice(1), ...extra].filter(Boolean).join("&");
  const headers: Record<string, string> = { accept: "application/json" };
  let body: Buffer | undefined;
  if (secret.method === "POST" && secret.requestBody !== undefined) {
    body = Buffer.from(JSON.stringify(secret.requestBody), "utf8");
    headers["content-type"] = "application/json";
  }
  for (const [name, value] of Object.entries(secret.requestHeaders ?? {}))
    headers[name.toLowerCase()] = value;
  return { url, headers, ...(body ? { body } : {}) };
}

async function viaFetch(
  fetchImpl: typeof fetch,
  method: string,
  request: ReturnType<typeof buildRequest>,
  timeoutMs: number,
): Promise<RawResponse> {
  const host = request.url.host;
  let response: Response;
  try {
    response = await fetchImpl(request.url, {
      method,
      headers: request.headers,
      ...(request.body ? { body: new Uint8Array(request.body) } : {}),
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const name = error instanceof Error ? error.name : "";
    if (name === "TimeoutError" || name === "AbortError") {
      throw new CustomTokenError("timeout", `Token endpoint ${host} did not answer within ${timeoutMs} ms`, {
        cause: error,
      });
    }
    throw new CustomTokenError("request_failed", `Token endpoint ${host} could not be reached`, {
      cause: error,
    });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    if (response.body) {
      for await (const chunk of response.body) {
        size += chunk.byteLength;
        if (size > TOKEN_RESPONSE_MAX_BYTES) {
          // Leaving the loop cancels the stream.
          return { status: response.status, body: Buffer.alloc(0), truncated: true };
        }
        chunks.push(Buffer.from(chunk));
      }
    }
  } catch (error) {
    throw new CustomTokenError("request_failed", `Token endpoint ${host} broke off its answer`, {
      status: response.status,
      cause: error,
    });
  }
  return { status: response.status, body: Buffer.concat(chunks), truncated: false };
}

async function viaOutbound(
  method: string,
  request: ReturnType<typeof buildRequest>,
  timeoutMs: number,
): Promise<RawResponse> {
  const host = request.url.host;
  try {
    const response = await sendOutbound({
      method,
      url: request.url,
      headers: request.headers,
      ...(request.body ? { body: request.body } : {}),
      timeoutMs,
      maxRedirects: 0,
      maxResponseBytes: TOKEN_RESPONSE_MAX_BYTES,
    });
    return { status: response.status, body: response.body, truncated: response.truncated };
  } catch (error) {
    if (error instanceof OutboundBlockedError) {
      throw new CustomTokenError("blocked", `Token endpoint ${host} is not allowed: ${error.reason}`, {
        cause: error,
      });
    }
    if (error instanceof OutboundTimeoutError) {
      throw new CustomTokenError("timeout", `Token endpoint ${host} did not answer within ${timeoutMs} ms`, {
        cause: error,
      });
    }
    throw new CustomTokenError("request_failed", `Token endpoint ${host} could not be reached`, {
      cause: error,
    });
  }
}

const finiteNumber = (value: unknown): number | undefined => {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "string" && /^\s*-?\d+(\.\d+)?\s*$/.test(value)) return Number(value);
  return undefined;
};

/** The expiry announced by the response, or undefined when there is no usable value. */
function expiryOf(secret: CustomTokenSecret, document: unknown, now: number): number | undefined {
  if (!secret.expiryMethod || !secret.expiryPath) return undefined;
  const value = readPath(document, secret.expiryPath);
  switch (secret.expiryMethod) {
    case "expires_in": {
      const seconds = finiteNumber(value);
      return seconds === undefined ? undefined : now + seconds * 1000;
    }
    case "expires_in_ms": {
      const ms = finiteNumber(value);
      return ms === undefined ? undefined : now + ms;
    }
    case "expires_at": {
      const seconds = finiteNumber(value);
      return seconds === undefined ? undefined : seconds * 1000;
    }
    case "expires_at_iso": {
      if (typeof value !== "string") return undefined;
      const at = Date.parse(value);
      return Number.isNaN(at) ? undefined : at;
    }
  }
}

/** Fetch one token from the endpoint (no cache). */
export async function fetchCustomToken(
  secret: CustomTokenSecret,
  options: CustomTokenOptions = {},
): Promise<CustomToken> {
  const now = options.now ?? clockNow;
  const timeoutMs = options.timeoutMs ?? TOKEN_REQUEST_TIMEOUT_MS;
  const method = secret.method ?? "POST";
  const request = buildRequest(secret);
  const host = request.url.host;
  const response = options.fetch
    ? await viaFetch(options.fetch, method, request, timeoutMs)
    : await viaOutbound(method, request, timeoutMs);
  const { status } = response;

  if (status >= 300 && status < 400) {
    throw new CustomTokenError("redirect", `Token endpoint ${host} answered with a redirect (${status})`, {
      status,
    });
  }
  if (status < 200 || status >= 300) {
    throw new CustomTokenError("http_error", `Token endpoint ${host} answered with status ${status}`, {
      status,
    });
  }
  if (response.truncated) {
    throw new CustomTokenError("too_large", `Token endpoint ${host} answered with more than 1 MiB`, {
      status,
    });
  }
  let document: unknown;
  try {
    document = JSON.parse(response.body.toString("utf8"));
  } catch {
    throw new CustomTokenError("not_json", `Token endpoint ${host} did not answer with JSON`, { status });
  }
  const value = readPath(document, secret.tokenPath);
  if (value === undefined || value === null) {
    throw new CustomTokenError(
      "token_missing",
      `No token at tokenPath "${secret.tokenPath}" in the answer of ${host}`,
      {
        status,
      },
    );
  }
  if (
    typeof value !== "string" ||
    value.length === 0 ||
    value.length > TOKEN_MAX_LENGTH ||
    !/^[\x21-\x7e\x80-\xff](?:[\t\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?$/.test(value)
  ) {
    throw new CustomTokenError(
      "token_invalid",
      `The value at tokenPath "${secret.tokenPath}" is not a usable token (a non-empty string without control characters)`,
      { status },
    );
  }
  const fetchedAt = now();
  const announced = expiryOf(secret, document, fetchedAt);
  return announced === undefined
    ? { token: value, expiresAt: fetchedAt + secret.defaultTtlSeconds * 1000, expirySource: "default" }
    : { token: value, expiresAt: announced, expirySource: "response" };
}

// ---------------------------------------------------------------------------------------------
// Cache with single flight
// ---------------------------------------------------------------------------------------------

interface CachedToken extends CustomToken {
  fingerprint: string;
  refreshAt: number;
}

const tokens = new Map<string, CachedToken>();
const inflight = new Map<string, { fingerprint: string; promise: Promise<CustomToken> }>();

/** Secrets are immutable, but a cache key reused with another secret must not get its token. */
const fingerprintOf = (secret: CustomTokenSecret) =>
  createHash("sha256").update(JSON.stringify(secret)).digest("hex");

function refreshAtOf(token: CustomToken, fetchedAt: number): number {
  const lifetime = token.expiresAt - fetchedAt;
  const margin = Math.min(REFRESH_MARGIN_MS, Math.max(0, lifetime / 2));
  return Math.min(token.expiresAt - margin, fetchedAt + MAX_CACHE_MS);
}

/**
 * The cached token for `cacheKey` (e.g. `${clientId}/${credentialId}`), fetched when missing or
 * within 30 s of expiry. Concurrent callers of one key share one fetch; failures are not cached.
 */
export async function getCustomToken(
  cacheKey: string,
  secret: CustomTokenSecret,
  options: CustomTokenOptions = {},
): Promise<CustomToken> {
  const now = options.now ?? clockNow;
  const fingerprint = fingerprintOf(secret);
  const cached = tokens.get(cacheKey);
  if (cached && cached.fingerprint === fingerprint && now() < cached.refreshAt) {
    return { token: cached.token, expiresAt: cached.expiresAt, expirySource: cached.expirySource };
  }
  const running = inflight.get(cacheKey);
  if (running && running.fingerprint === fingerprint) return running.promise;

  const promise = fetchCustomToken(secret, options)
    .then((token) => {
      const fetchedAt = now();
      const refreshAt = refreshAtOf(token, fetchedAt);
      tokens.delete(cacheKey);
      if (refreshAt > fetchedAt) {
        while (tokens.size >= TOKEN_CACHE_MAX_ENTRIES) tokens.delete(tokens.keys().next().value as string);
        tokens.set(cacheKey, { ...token, fingerprint, refreshAt });
      }
      return token;
    })
    .finally(() => {
      if (inflight.get(cacheKey)?.promise === promise) inflight.delete(cacheKey);
    });
  inflight.set(cacheKey, { fingerprint, promise });
  return promise;
}

/** Drop one cached token (e.g. after the target rejected it with 401). */
export function invalidateCustomToken(cacheKey: string): void {
  tokens.delete(cacheKey);
}

export function clearCustomTokenCache(): void {
  tokens.clear();
  inflight.clear();
}
