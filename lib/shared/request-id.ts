/**
 * Request ids (UUIDv7: the request log's sort key orders by time). Apart from request-log.ts, which
 * re-exports them, so the data plane names a request at once without loading the log's redaction
 * code (that is loaded after the answer, stages/log.ts). The UUIDv7 layout is written here (it was
 * the `uuid` package's `v7({ msecs })`, the same bits: 48 of time, then version, variant and 74
 * random bits), which keeps that package's 1.2 KiB out of the data plane's cold start.
 */
import { randomFillSync } from "node:crypto";

/** Random bytes drawn 10 at a time from a pool filled 250 at a time (as `uuid` does). */
const pool = Buffer.alloc(250);
let drawn = pool.length;
function randomHex10(): string {
  if (drawn === pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  drawn += 10;
  return pool.toString("hex", drawn - 10, drawn);
}

/** A new request id whose UUIDv7 timestamp is `receivedAt` (Unix ms), so processedAt and the key agree. */
export function newRequestId(receivedAt: number = Date.now()): string {
  const random = randomHex10();
  // The variant's two bits (10) above 2 random bits: 8, 9, a or b.
  const variant = (8 | (Number.parseInt(random.slice(4, 5), 16) & 3)).toString(16);
  return withTime(receivedAt, `7${random.slice(1, 4)}-${variant}${random.slice(5, 8)}-${random.slice(8)}`);
}

const MAX_UUIDV7_MS = 2 ** 48 - 1;
const clampMs = (ms: number) => Math.min(MAX_UUIDV7_MS, Math.max(0, Math.floor(ms)));
const timeHex = (ms: number) => clampMs(ms).toString(16).padStart(12, "0");
const withTime = (ms: number, rest: string) => {
  const hex = timeHex(ms);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${rest}`;
};

/** The lowest UUIDv7 string of a millisecond: every request id of that ms sorts at or after it. */
export const lowestRequestIdAt = (ms: number) => withTime(ms, "7000-8000-000000000000");
/** The highest UUIDv7 string of a millisecond: every request id of that ms sorts at or before it. */
export const highestRequestIdAt = (ms: number) => withTime(ms, "7fff-bfff-ffffffffffff");

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The Unix ms a (lower-case) UUIDv7 carries, or undefined for anything else. */
export function requestIdTime(requestId: string): number | undefined {
  if (!UUID_V7.test(requestId)) return undefined;
  return Number.parseInt(requestId.slice(0, 8) + requestId.slice(9, 13), 16);
}
