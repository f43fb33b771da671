/**
 * The IETF RateLimit header fields of a refusal (429), in the structured-field form of
 * draft-ietf-httpapi-ratelimit-headers-11 (May 2026; sections 3 and 4):
 *
 *   RateLimit-Policy: "<name>";q=<quota>;w=<window seconds>[;pk=:<base64>:]
 *   RateLimit:        "<name>";r=<available>;t=<seconds until reset>[;pk=:<base64>:]
 *
 * Both are Lists of Items whose value is a String; `q`, `r`, `w` and `t` are non-negative Integers
 * (`w` non-zero), `pk` a Byte Sequence. The default quota unit (`qu`) is "requests", so it is left
 * out for request counts; a `response_value` meter's unit is not a registered one, so its policy
 * carries the vendor-prefixed comment parameter `pg-unit="value"` instead (section 3.1 allows
 * vendor-prefixed parameters). `Retry-After` (RFC 9110 10.2.3) is the longest wait among the
 * refused windows; the draft (section 6) wants it no earlier than the end of the effective window.
 * Pure; see docs/predicates.md ("Rate-limit headers").
 */
import { retryAfterSeconds, type TimeWindow, windowSeconds } from "#lib/shared/meter-windows.ts";

/** Largest Integer a structured field may carry (RFC 9651 3.3.1). */
const SF_INTEGER_MAX = 999_999_999_999_999;

export interface QuotaState {
  /** Policy name, e.g. meterPolicyName(meterId, "minute"). */
  name: string;
  /** The window's limit (a positive number; rounded up: requests are admitted while below it). */
  limit: number;
  /** The window's accumulated value. */
  used: number;
  window: TimeWindow;
  /** `requests` (default) or `value` (a response_value meter). */
  unit?: "requests" | "value";
  /** For a per-caller meter, the caller hash (hex, windows.ts callerHash): sent as `pk`. */
  partitionKey?: string;
}

/** The policy name of a meter's window: `<meterId>-<window>`, e.g. `m_123-minute`. */
export const meterPolicyName = (meterId: string, window: string): string => `${meterId}-${window}`;

/** An sf-string (RFC 9651 3.3.3): printable ASCII, `"` and `\` escaped; other characters become `?`. */
export function sfString(value: string): string {
  let out = '"';
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    if (code < 0x20 || code > 0x7e) out += "?";
    else if (char === '"' || char === "\\") out += `\\${char}`;
    else out += char;
  }
  return `${out}"`;
}

/** An sf-integer: a whole number between 0 and the structured-field maximum. */
const sfInteger = (value: number): string =>
  String(Math.min(SF_INTEGER_MAX, Math.max(0, Number.isFinite(value) ? Math.ceil(value) : 0)));

/** An sf-binary (`:base64:`) of a hex string's bytes. */
const sfBinary = (hex: string): string => `:${Buffer.from(hex, "hex").toString("base64")}:`;

const partition = (state: QuotaState): string =>
  state.partitionKey && /^[0-9a-f]+$/i.test(state.partitionKey) && state.partitionKey.length % 2 === 0
    ? `;pk=${sfBinary(state.partitionKey)}`
    : "";

/** One RateLimit-Policy item: quota (the limit rounded up), window length, unit, partition key. */
export function policyItem(state: QuotaState): string {
  const unit = state.unit === "value" ? ';pg-unit="value"' : "";
  return `${sfString(state.name)};q=${sfInteger(state.limit)}${unit};w=${Math.max(1, windowSeconds(state.window))}${partition(state)}`;
}

/** The quota still available: 0 once the window is at or above its limit. */
export const availableQuota = (state: Pick<QuotaState, "limit" | "used">): number =>
  state.used >= state.limit ? 0 : Math.ceil(state.limit - state.used);

/** One RateLimit item: available quota and seconds until the window resets. */
export function serviceLimitItem(state: QuotaState, nowMs: number): string {
  return `${sfString(state.name)};r=${sfInteger(availableQuota(state))};t=${retryAfterSeconds(nowMs, state.window)}${partition(state)}`;
}

export interface RefusalHeaders {
  ratelimit: string;
  "ratelimit-policy": string;
  "retry-after": string;
}

/**
 * The headers of a 429 for the refused windows (at least one; each is at or above its limit, so its
 * `r` is 0). Header names in lower case, as the data plane writes them.
 */
export function refusalHeaders(refused: readonly QuotaState[], nowMs: number): RefusalHeaders {
  if (refused.length === 0) throw new Error("refusalHeaders needs at least one refused window");
  const retryAfter = Math.max(...refused.map((state) => retryAfterSeconds(nowMs, state.window)));
  return {
    ratelimit: refused.map((state) => serviceLimitItem({ ...state, used: state.limit }, nowMs)).join(", "),
    "ratelimit-policy": refused.map(policyItem).join(", "),
    "retry-after": String(retryAfter),
  };
}
