/**
 * The request log record of spec 2.11, built by the data plane after each proxied request and
 * written to the proxy's regional table under REQLOG#<proxyId> / <requestId>. Pure: no I/O, no
 * clock (every time comes from the input), so the data plane decides when to write it.
 *
 * What leaves the caller's hands is made safe here, once: secret-looking headers and query
 * parameters are replaced by a redaction marker, the plaintext of every secret the request used
 * (in any of its forms, anywhere: headers, query, path, bodies, Location) is replaced by the marker
 * (lib/vault/secret-redaction.ts), and bodies and header maps are capped AFTER redaction so the
 * item stays far below DynamoDB's 400 KB item limit whatever the request carried (see
 * docs/request-logs.md). A stored body of 1 KiB or more is then gzip-compressed into a binary
 * attribute when that makes it smaller (lib/shared/body-compression.ts).
 */
import { keys } from "#lib/db/keys.ts";
import { compressStoredBody } from "#lib/shared/body-compression.ts";
import {
  REQUEST_LOG_BODY_CAP_BYTES,
  VALIDATION_FIELDS,
  type ValidationData,
} from "#lib/shared/request-log-fields.ts";
import {
  NO_REDACTION,
  REDACTED,
  redactedPrefix,
  type SecretRedactor,
  secretRedactor,
} from "#lib/vault/secret-redaction.ts";

// The caller's answer redacted on request: in this chunk, which the data plane loads anyway to log.
export { redactAnswer } from "./answer-redaction.ts";
/** The marker that replaces the value of a sensitive header or query parameter, and any secret. */
export { REDACTED };
/** Each stored header map (and the query parameter map) is at most this many bytes (names + values). */
export const REQUEST_LOG_HEADERS_CAP_BYTES = 8 * 1024;
/** At most this many entries in one header or query map. */
export const REQUEST_LOG_MAX_MAP_ENTRIES = 200;
/** Short strings of the record (path, message, stage, arnBase, location, names) are capped too. */
export const REQUEST_LOG_TEXT_CAP_BYTES = 2 * 1024;
/** Days a record is kept when neither the input nor REQUEST_LOG_RETENTION_DAYS says otherwise. */
export const REQUEST_LOG_DEFAULT_RETENTION_DAYS = 30;
/** Upper bound of a retention setting (ten years). */
export const REQUEST_LOG_MAX_RETENTION_DAYS = 3650;
/** A proxy id taken from an (unauthenticated) URL path is cut to this length before it becomes a key. */
export const MAX_PROXY_ID_LENGTH = 128;

export {
  REQUEST_LOG_BODY_CAP_BYTES,
  REQUEST_LOG_DETAIL_FIELDS,
  VALIDATION_FIELDS,
  type ValidationData,
  type ValidationField,
} from "#lib/shared/request-log-fields.ts";

export type BodyEncoding = "utf8" | "base64";

export interface RequestLogInput {
  /** UUIDv7 of the moment the request was received (see newRequestId). */
  requestId: string;
  /** The proxy as resolved; null when the proxy id of the path is unknown. */
  proxy: { proxyId: string; clientId: string; userId: string } | null;
  proxyIdFromPath: string;
  stage: string;
  method: string;
  /** Path after /api/{proxyId}. */
  apiPath: string;
  query: Record<string, string | string[]>;
  requestHeaders: Record<string, string>;
  requestBody: Buffer | undefined;
  /** Unix ms when the proxy received the request. */
  receivedAt: number;
  /** Unix ms when the proxy answered. */
  sentAt: number;
  /** HTTP status the proxy returned. */
  status: number;
  /** The `service-proxy-code` the proxy answered (spec 4.13), shown by the console's request logs. */
  code?: string;
  message: string;
  arnBase: string;
  /**
   * The caller's address as the function URL saw it. Stored for the telemetry consumer's country
   * lookup (docs/telemetry.md "Country"); never answered by the API; expires with the record.
   */
  sourceIp?: string;
  /** Null when the request did not reach the target. */
  target: null | {
    sentAt: number;
    receivedAt: number;
    status: number;
    location: string | null;
    responseHeaders: Record<string, string | string[]>;
    responseBody: Buffer | undefined;
  };
  validation: Partial<ValidationData>;
  processed: boolean;
  /**
   * A transform suspension this request started (docs/transforms.md "Suspension"): stored for the
   * stream consumer, which notifies the organisation; never answered by the API.
   */
  transformSuspension?: { transformId: string; kind: string; until: string; cooldownMs: number } | undefined;
  /** Extra lower-case header names to redact, e.g. the proxy credential's key header. */
  redactHeaders: string[];
  /** Extra query parameter names to redact, e.g. the credential's key parameter. */
  redactQuery: string[];
  /**
   * The plaintext of every secret the request used: the secret strings of the proxy and target
   * credentials (`secretValues`) and the token fetched for the target. Each, in each of its forms,
   * is replaced by the marker wherever it appears in the record.
   */
  secretValues?: readonly (string | undefined)[];
  /** Overrides REQUEST_LOG_RETENTION_DAYS. */
  retentionDays?: number;
}

// ---- request ids: request-id.ts (loaded at a cold start without the redaction code) ----

export {
  highestRequestIdAt,
  lowestRequestIdAt,
  newRequestId,
  requestIdTime,
} from "#lib/shared/request-id.ts";

// ---- retention ----

const validRetention = (days: unknown): days is number =>
  typeof days === "number" && Number.isInteger(days) && days >= 1 && days <= REQUEST_LOG_MAX_RETENTION_DAYS;

/**
 * Days a record is kept: REQUEST_LOG_RETENTION_DAYS (a whole number 1-3650), else 30. An invalid
 * setting falls back to the default rather than losing the log of a request already served.
 */
export function requestLogRetentionDays(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.REQUEST_LOG_RETENTION_DAYS?.trim();
  const days = raw ? Number(raw) : Number.NaN;
  return validRetention(days) ? days : REQUEST_LOG_DEFAULT_RETENTION_DAYS;
}

// ---- redaction ----

const SENSITIVE_HEADERS = new Set([
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie",
  "x-api-key",
]);
/** A header or parameter whose name contains one of these is sensitive. */
const SENSITIVE_FRAGMENTS = ["api-key", "api_key", "apikey", "token", "secret", "password", "passwd"];
/** Query parameters that commonly carry a key or signature under a short name. */
const SENSITIVE_QUERY_NAMES = new Set(["key", "sig", "signature", "auth", "code", "client_assertion"]);

const lowerSet = (names: readonly string[]) => new Set(names.map((n) => n.toLowerCase()));

/** True when a header of this name is replaced by the redaction marker. */
export function isSensitiveHeader(name: string, extra: readonly string[] = []): boolean {
  const lower = name.toLowerCase();
  return (
    SENSITIVE_HEADERS.has(lower) ||
    SENSITIVE_FRAGMENTS.some((fragment) => lower.includes(fragment)) ||
    lowerSet(extra).has(lower)
  );
}

/** True when a query parameter of this name is replaced by the redaction marker. */
export function isSensitiveQueryParam(name: string, extra: readonly string[] = []): boolean {
  const lower = name.toLowerCase();
  return isSensitiveHeader(lower, extra) || SENSITIVE_QUERY_NAMES.has(lower);
}

// ---- caps ----

const utf8Bytes = (text: string) => Buffer.byteLength(text, "utf8");

/** Cut a buffer to at most `max` bytes without splitting a UTF-8 sequence. */
function utf8Prefix(bytes: Buffer, max: number): Buffer {
  if (bytes.length <= max) return bytes;
  let end = max;
  // bytes[end] is the first byte left out: a continuation byte there means a split character.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}

/** A string cut to at most `max` UTF-8 bytes. */
export function truncateUtf8(text: string, max: number): string {
  if (text.length * 3 <= max) return text;
  const bytes = Buffer.from(text, "utf8");
  return bytes.length <= max ? text : utf8Prefix(bytes, max).toString("utf8");
}

const cappedText = (value: unknown, max = REQUEST_LOG_TEXT_CAP_BYTES) =>
  truncateUtf8(String(value ?? ""), max);

type HeaderValue = string | string[];

/**
 * Redact and cap a header or query map: at most REQUEST_LOG_MAX_MAP_ENTRIES entries and
 * REQUEST_LOG_HEADERS_CAP_BYTES bytes of names and values; a value that does not fit is cut, the
 * entries after the budget is spent are left out, and `truncated` says so.
 */
function safeMap<V extends HeaderValue>(
  source: Record<string, V> | undefined,
  sensitive: (name: string) => boolean,
  redactor: SecretRedactor,
  rewrite: (name: string, value: string) => string = (_name, value) => value,
): { map: Record<string, HeaderValue>; truncated: boolean } {
  // Collected in a Map and turned into own properties at the end: a "__proto__" name stays data.
  const entries = new Map<string, HeaderValue>();
  let budget = REQUEST_LOG_HEADERS_CAP_BYTES;
  let truncated = false;
  for (const [rawName, rawValue] of Object.entries(source ?? {})) {
    if (rawValue === undefined || rawValue === null) continue;
    if (entries.size >= REQUEST_LOG_MAX_MAP_ENTRIES || budget <= 0) {
      truncated = true;
      break;
    }
    const name = truncateUtf8(rawName, Math.min(256, budget));
    if (name !== rawName) truncated = true;
    budget -= utf8Bytes(name);
    if (!name || entries.has(name)) continue;
    if (sensitive(rawName)) {
      entries.set(name, REDACTED);
      budget -= utf8Bytes(REDACTED);
      continue;
    }
    const values = Array.isArray(rawValue) ? rawValue.map(String) : [String(rawValue)];
    const kept: string[] = [];
    for (const one of values) {
      if (budget <= 0) break;
      const safe = redactor.text(rewrite(rawName, one));
      const cut = truncateUtf8(safe, budget);
      if (cut !== safe) truncated = true;
      kept.push(cut);
      budget -= utf8Bytes(cut);
    }
    if (kept.length < values.length) truncated = true;
    entries.set(name, Array.isArray(rawValue) ? kept : (kept[0] ?? ""));
  }
  return { map: Object.fromEntries(entries), truncated };
}

/** A URL (the target's Location) with its sensitive query parameters and secrets redacted, capped. */
function safeLocation(
  rawLocation: string | null | undefined,
  extraQuery: readonly string[],
  redactor: SecretRedactor,
): string | null {
  if (rawLocation === null || rawLocation === undefined) return null;
  const location = redactor.text(String(rawLocation));
  const queryAt = location.indexOf("?");
  if (queryAt < 0) return cappedText(location);
  const hashAt = location.indexOf("#", queryAt);
  const query = location.slice(queryAt + 1, hashAt < 0 ? undefined : hashAt);
  const redacted = query
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      if (eq < 0) return pair;
      let name = pair.slice(0, eq);
      try {
        name = decodeURIComponent(name.replace(/\+/g, " "));
      } catch {
        // keep the raw name
      }
      return isSensitiveQueryParam(name, extraQuery)
        ? `${pair.slice(0, eq)}=${encodeURIComponent(REDACTED)}`
        : pair;
    })
    .join("&");
  return cappedText(`${location.slice(0, queryAt)}?${redacted}${hashAt < 0 ? "" : location.slice(hashAt)}`);
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A body as stored: UTF-8 text when it is valid UTF-8 without NUL bytes, else base64 (of the raw
 * bytes, redacted before encoding); secrets redacted first, then cut so the stored string is at
 * most REQUEST_LOG_BODY_CAP_BYTES bytes (a secret crossing the cut is replaced whole).
 */
export function storedBody(
  body: Buffer | undefined,
  redactor: SecretRedactor = NO_REDACTION,
): {
  body: string | null;
  encoding: BodyEncoding | null;
  truncated: boolean;
  bytes: number;
} {
  if (body === undefined || body === null) return { body: null, encoding: null, truncated: false, bytes: 0 };
  const cap = REQUEST_LOG_BODY_CAP_BYTES;
  const text = redactedPrefix(redactor, body, cap, { utf8: true });
  if (!text.bytes.includes(0)) {
    try {
      return {
        body: strictUtf8.decode(text.bytes),
        encoding: "utf8",
        truncated: text.truncated,
        bytes: body.length,
      };
    } catch {
      // not UTF-8: stored as base64 below
    }
  }
  const raw = redactedPrefix(redactor, body, Math.floor(cap / 4) * 3);
  return {
    body: raw.bytes.toString("base64"),
    encoding: "base64",
    truncated: raw.truncated,
    bytes: body.length,
  };
}

/**
 * The item attributes of one stored body under `prefix` ("request", "response"): the stored text,
 * or its gzip bytes plus `<prefix>BodyCompression: "gzip"` when compression makes it smaller.
 * Compresses what storedBody returned, so redaction and the cap always come first.
 */
function bodyAttributes(prefix: "request" | "response", stored: ReturnType<typeof storedBody>) {
  const packed = stored.body === null ? { body: null, compression: null } : compressStoredBody(stored.body);
  return {
    [`${prefix}Body`]: packed.body,
    ...(packed.compression ? { [`${prefix}BodyCompression`]: packed.compression } : {}),
    [`${prefix}BodyEncoding`]: stored.encoding,
    [`${prefix}BodyTruncated`]: stored.truncated,
    [`${prefix}BodyBytes`]: stored.bytes,
  };
}

// ---- the record ----

const finite = (value: unknown, fallback = 0) =>
  typeof value === "number" && Number.isFinite(value) ? value : fallback;
const seconds = (fromMs: number, toMs: number) => Math.max(0, toMs - fromMs) / 1000;

/** All 20 booleans; anything not given (or not exactly true) is false. */
export function completeValidation(partial: Partial<ValidationData> | undefined): ValidationData {
  return Object.fromEntries(
    VALIDATION_FIELDS.map((field) => [field, partial?.[field] === true]),
  ) as ValidationData;
}

/** The DynamoDB item of one request, physical keys included (spec 2.11 plus the detail fields). */
export function buildRequestLogItem(input: RequestLogInput): Record<string, unknown> {
  const proxyId = input.proxy?.proxyId ?? String(input.proxyIdFromPath ?? "").slice(0, MAX_PROXY_ID_LENGTH);
  const receivedAt = finite(input.receivedAt);
  const sentAt = finite(input.sentAt, receivedAt);
  const retentionDays = validRetention(input.retentionDays) ? input.retentionDays : requestLogRetentionDays();

  const redactor = secretRedactor(input.secretValues ?? []);
  const headerIsSensitive = (name: string) => isSensitiveHeader(name, input.redactHeaders ?? []);
  const paramIsSensitive = (name: string) => isSensitiveQueryParam(name, input.redactQuery ?? []);
  const requestHeaders = safeMap(input.requestHeaders, headerIsSensitive, redactor);
  const apiParams = safeMap(input.query, paramIsSensitive, redactor);
  const requestBody = storedBody(input.requestBody, redactor);

  const target = input.target;
  // A Location (or Content-Location) header may carry a token in its query: redacted like the query.
  const responseHeaders = safeMap(target?.responseHeaders, headerIsSensitive, redactor, (name, value) =>
    /^(content-)?location$/i.test(name)
      ? (safeLocation(value, input.redactQuery ?? [], redactor) ?? "")
      : value,
  );
  const responseBody = storedBody(target?.responseBody, redactor);
  const targetData = target
    ? {
        sentAt: finite(target.sentAt),
        receivedAt: finite(target.receivedAt),
        duration: seconds(finite(target.sentAt), finite(target.receivedAt)),
        status: finite(target.status),
        location: safeLocation(target.location, input.redactQuery ?? [], redactor),
      }
    : null;

  return {
    ...keys.requestLog(proxyId, input.requestId),
    entity: "requestLog",
    requestId: input.requestId,
    proxyId,
    userId: input.proxy?.userId ?? null,
    clientId: input.proxy?.clientId ?? null,
    parentId: proxyId,
    processed: input.processed === true,
    processedAt: receivedAt,
    TTL: Math.floor(receivedAt / 1000) + retentionDays * 86_400,
    ...(input.sourceIp ? { sourceIp: cappedText(input.sourceIp, 64) } : {}),
    proxyData: {
      stage: cappedText(input.stage, 128),
      method: cappedText(input.method, 16),
      apiPath: cappedText(redactor.text(String(input.apiPath ?? ""))),
      receivedAt,
      sentAt,
      duration: seconds(receivedAt, sentAt),
      status: finite(input.status),
      ...(input.code ? { code: cappedText(input.code, 64) } : {}),
      message: cappedText(redactor.text(String(input.message ?? ""))),
      arnBase: cappedText(input.arnBase),
      apiHeaders: requestHeaders.map,
      apiParams: apiParams.map,
    },
    targetData,
    validationData: completeValidation(input.validation),
    requestHeaders: requestHeaders.map,
    requestHeadersTruncated: requestHeaders.truncated,
    ...bodyAttributes("request", requestBody),
    responseHeaders: responseHeaders.map,
    responseHeadersTruncated: responseHeaders.truncated,
    ...bodyAttributes("response", responseBody),
    apiParamsTruncated: apiParams.truncated,
    ...(input.transformSuspension ? { transformSuspension: input.transformSuspension } : {}),
  };
}
