/**
 * Reading telemetry (spec 4.1 client telemetry, 4.7 proxy telemetry; docs/telemetry.md "Reading"):
 * the stored buckets of the asked interval, merged across regions (a client whose proxies are in
 * two regions sees one answer), with the derived maps and percentiles computed on read.
 *
 * The query: `interval` minute | hour | day | month (default hour); `startDate`, `endDate` ISO 8601
 * date-times, both inclusive (a bucket is in the range when it holds any instant of it); `limit`
 * 1..1000 (default 100). The answer holds the most recent `limit` buckets of the range, in time
 * order (oldest first). Buckets without requests are not listed.
 */
import { getConfig } from "#lib/config.ts";
import { listTelemetryBuckets, MAX_TELEMETRY_BUCKETS } from "#lib/db/entities/telemetry.ts";
import { mergeBuckets, type TelemetryRecord } from "#lib/domain/telemetry/read.ts";
import { validationFailed } from "#lib/shared/errors.ts";
import { bucketKey, TELEMETRY_INTERVALS, type TelemetryInterval } from "#lib/shared/telemetry/buckets.ts";
import type { ClientAccess } from "./access.ts";
import { requireProxy } from "./proxies.ts";
import { parseIsoTimestamp } from "./request-logs.ts";

export const DEFAULT_TELEMETRY_LIMIT = 100;
export { MAX_TELEMETRY_BUCKETS as MAX_TELEMETRY_LIMIT };

export interface TelemetryQuery {
  interval: TelemetryInterval;
  /** Bucket keys, both inclusive. */
  from: string;
  to: string;
  limit: number;
}

/** Lower and upper bounds of any bucket key (digits and dashes sort between them). */
const FIRST_KEY = "0";
const LAST_KEY = "9999-99";

/** The query of both telemetry routes, checked: 400 naming each bad field. */
export function parseTelemetryQuery(query: Record<string, string | undefined>): TelemetryQuery {
  const issues: { field: string; problem: string }[] = [];
  let interval: TelemetryInterval = "hour";
  if (query.interval !== undefined) {
    if ((TELEMETRY_INTERVALS as readonly string[]).includes(query.interval))
      interval = query.interval as TelemetryInterval;
    else issues.push({ field: "interval", problem: `must be one of ${TELEMETRY_INTERVALS.join(", ")}` });
  }
  let limit = DEFAULT_TELEMETRY_LIMIT;
  if (query.limit !== undefined) {
    const raw = query.limit.trim();
    const parsed = /^\d{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > MAX_TELEMETRY_BUCKETS)
      issues.push({ field: "limit", problem: `must be a whole number from 1 to ${MAX_TELEMETRY_BUCKETS}` });
    else limit = parsed;
  }
  const date = (field: "startDate" | "endDate") => {
    const raw = query[field];
    if (raw === undefined) return undefined;
    const ms = parseIsoTimestamp(raw);
    if (ms === undefined || ms < 0)
      issues.push({ field, problem: "must be an ISO 8601 date-time such as 2025-01-31T12:00:00Z" });
    return ms;
  };
  const start = date("startDate");
  const end = date("endDate");
  if (issues.length === 0 && start !== undefined && end !== undefined && start > end)
    issues.push({ field: "startDate", problem: "must not be later than endDate" });
  if (issues.length) throw validationFailed(issues);
  return {
    interval,
    from: start === undefined ? FIRST_KEY : bucketKey(interval, start),
    to: end === undefined ? LAST_KEY : bucketKey(interval, end),
    limit,
  };
}

export interface TelemetryAnswer {
  interval: TelemetryInterval;
  telemetry: (TelemetryRecord & { pKey: string; proxyId?: string })[];
}

async function read(
  regions: readonly string[],
  scope: "client" | "proxy",
  id: string,
  query: TelemetryQuery,
): Promise<TelemetryRecord[]> {
  // Each region's newest `limit` buckets: together they hold the newest `limit` of the merge.
  const perRegion = await Promise.all(
    regions.map((region) =>
      listTelemetryBuckets(region, {
        scope,
        id,
        interval: query.interval,
        from: query.from,
        to: query.to,
        limit: query.limit,
        newestFirst: true,
      }),
    ),
  );
  const newest = mergeBuckets(perRegion.flat(), { limit: query.limit, newestFirst: true });
  return newest.reverse();
}

/** GET /api/clients/{clientId}/telemetry: every region of the deployment, merged. */
export async function listClientTelemetry(
  { clientId }: ClientAccess,
  rawQuery: Record<string, string | undefined>,
): Promise<TelemetryAnswer> {
  const query = parseTelemetryQuery(rawQuery);
  const records = await read(getConfig().regions, "client", clientId, query);
  return { interval: query.interval, telemetry: records.map((record) => ({ ...record, pKey: clientId })) };
}

/** GET /api/clients/{clientId}/proxies/{proxyId}/telemetry: the proxy's region. */
export async function listProxyTelemetry(
  { clientId }: ClientAccess,
  proxyId: string,
  rawQuery: Record<string, string | undefined>,
): Promise<TelemetryAnswer> {
  const { region } = await requireProxy(clientId, proxyId);
  const query = parseTelemetryQuery(rawQuery);
  const records = await read([region], "proxy", proxyId, query);
  return {
    interval: query.interval,
    telemetry: records.map((record) => ({ ...record, pKey: clientId, proxyId })),
  };
}
