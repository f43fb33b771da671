/**
 * The limits of dynamic client registration (docs/mcp-oauth.md, "Registration limits"), as plain
 * rules: registration is unauthenticated, so each source address (an IPv6 caller by its /64) may
 * register at most `perMinute` clients a minute (a fixed window, the project's rate counter), and
 * at most `pendingMax` registered clients may wait for their first approval at once. A client not
 * approved within PENDING_CLIENT_TTL_SECONDS expires; pending clients are counted per hour of
 * registration, so the live ones are those of the current hour and the PENDING_HOURS before it.
 */
import { isIPv4, isIPv6 } from "node:net";

/** A registration no user approved within a day expires (TTL) and frees its place. */
export const PENDING_CLIENT_TTL_SECONDS = 24 * 3600;
/** Pending clients are counted per hour of registration. */
export const PENDING_BUCKET_MS = 3_600_000;
/** Hours before the current one whose pending clients may still be alive (TTL 24 h). */
export const PENDING_HOURS = PENDING_CLIENT_TTL_SECONDS / (PENDING_BUCKET_MS / 1000);

export const DEFAULT_REGISTRATIONS_PER_MINUTE = 10;
export const DEFAULT_PENDING_CLIENTS_MAX = 1000;

export interface RegistrationLimits {
  /** Registrations per source address per UTC minute. */
  perMinute: number;
  /** Registered clients never approved (and not expired) at once, for the whole deployment. */
  pendingMax: number;
}

const LIMIT_VARIABLES = {
  perMinute: ["OAUTH_REGISTRATIONS_PER_MINUTE", DEFAULT_REGISTRATIONS_PER_MINUTE, 1000],
  pendingMax: ["OAUTH_PENDING_CLIENTS_MAX", DEFAULT_PENDING_CLIENTS_MAX, 1_000_000],
} as const;

/** The limits from the environment (defaults when unset); a value that is not a whole number in range throws. */
export function registrationLimitsOf(env: Readonly<Record<string, string | undefined>>): RegistrationLimits {
  const read = ([name, fallback, max]: readonly [string, number, number]) => {
    const text = env[name]?.trim();
    if (!text) return fallback;
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1 || value > max)
      throw new Error(`Invalid configuration: ${name}: must be a whole number from 1 to ${max}`);
    return value;
  };
  return { perMinute: read(LIMIT_VARIABLES.perMinute), pendingMax: read(LIMIT_VARIABLES.pendingMax) };
}

/** The 8 groups of an IPv6 address, expanded (`::` filled, an embedded IPv4 as two groups). */
function ipv6Groups(address: string): string[] {
  let text = address.toLowerCase().split("%")[0] ?? "";
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (v4) {
    const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, -v4.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const zeros = tail === undefined ? [] : Array(8 - left.length - right.length).fill("0");
  return [...left, ...zeros, ...right].map((group) => group.replace(/^0+(?=.)/, ""));
}

/**
 * Who a registration is counted for: an IPv4 address itself (IPv4-mapped IPv6 as IPv4), an IPv6
 * address by its /64 (one subscriber usually holds a whole /64), anything else as `unknown`.
 */
export function registrationSourceOf(sourceIp: string | undefined): string {
  const ip = sourceIp?.trim() ?? "";
  if (isIPv4(ip)) return ip;
  if (!isIPv6(ip)) return "unknown";
  const groups = ipv6Groups(ip);
  const mapped = groups.slice(0, 5).every((group) => group === "0") && groups[5] === "ffff";
  if (mapped) {
    const high = Number.parseInt(groups[6] ?? "0", 16);
    const low = Number.parseInt(groups[7] ?? "0", 16);
    return [high >> 8, high & 255, low >> 8, low & 255].join(".");
  }
  return `${groups.slice(0, 4).join(":")}::/64`;
}

/** The hour bucket a registration at `nowMs` is counted in, and the earlier buckets still alive. */
export function pendingBucketsAt(nowMs: number): { current: number; earlier: number[] } {
  const current = Math.floor(nowMs / PENDING_BUCKET_MS) * PENDING_BUCKET_MS;
  const earlier = Array.from(
    { length: PENDING_HOURS },
    (_, index) => current - (index + 1) * PENDING_BUCKET_MS,
  );
  return { current, earlier };
}

/**
 * When a bucket's count stops mattering (seconds): every client counted in it was registered before
 * the bucket's end, so it has expired PENDING_CLIENT_TTL_SECONDS after that. The bucket's own TTL.
 */
export const pendingBucketExpiry = (bucketStart: number): number =>
  (bucketStart + PENDING_BUCKET_MS) / 1000 + PENDING_CLIENT_TTL_SECONDS;

/**
 * Room left for pending clients in the current bucket, given the earlier buckets' counts (which only
 * go down: their hours are over, and approvals take clients out). At most `pendingMax` in all.
 */
export const pendingRoom = (pendingMax: number, earlierCounts: readonly number[]): number =>
  pendingMax - earlierCounts.reduce((sum, count) => sum + Math.max(0, count), 0);

/**
 * Seconds until the cap may have room again: when the oldest bucket that holds a pending client
 * expires (an approval may free a place sooner). At least 1.
 */
export function pendingRetryAfterSeconds(nowMs: number, counts: ReadonlyMap<number, number>): number {
  const holding = [...counts].filter(([, count]) => count > 0).map(([bucket]) => bucket);
  const oldest = holding.length
    ? Math.min(...holding)
    : Math.floor(nowMs / PENDING_BUCKET_MS) * PENDING_BUCKET_MS;
  return Math.max(1, Math.ceil(pendingBucketExpiry(oldest) - nowMs / 1000));
}
