/**
 * Request logs (spec 2.11, 4.11): read-only, stored by the data plane in the proxy's regional table
 * under REQLOG#<proxyId>. Request ids are UUIDv7, so the sort key is time order: a list is one
 * Query newest first, and processedAfter / processedBefore become sort-key bounds (the lowest and
 * highest UUIDv7 of their millisecond) instead of a filter over the whole partition.
 */

import {
  findRequestLog,
  listRequestLogsOfProxy,
  type RequestLogItem,
  type RequestLogListItem,
} from "#lib/db/entities/request-log.ts";
import { notFound, validationFailed } from "#lib/shared/errors.ts";
import { REQUEST_LOG_DETAIL_FIELDS } from "#lib/shared/request-log-fields.ts";
import type { ClientAccess } from "./access.ts";
import { requireProxy } from "./proxies.ts";

export const REQUEST_NOT_FOUND = "Request not found";
/** Spec 8: request log limit, default 1000; also the most one call returns. */
export const DEFAULT_REQUEST_LOG_LIMIT = 1000;
export const MAX_REQUEST_LOG_LIMIT = 1000;

export interface RequestLogQuery {
  limit: number;
  /** Inclusive lower bound, Unix ms. */
  after?: number;
  /** Inclusive upper bound, Unix ms. */
  before?: number;
}

const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/**
 * An ISO 8601 date or date-time as Unix ms, or undefined when it is not one (including impossible
 * dates such as February 30). Without an offset the time is UTC.
 */
export function parseIsoTimestamp(value: string): number | undefined {
  const match = ISO_8601.exec(value.trim());
  if (!match) return undefined;
  const [, y, mo, d, h = "0", mi = "0", s = "0", fraction = "", zone = "Z"] = match;
  const [year, month, day, hour, minute, second] = [
    Number(y),
    Number(mo),
    Number(d),
    Number(h),
    Number(mi),
    Number(s),
  ];
  const ms = Number(fraction.padEnd(3, "0").slice(0, 3));
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  const check = new Date(utc);
  if (
    check.getUTCFullYear() !== year ||
    check.getUTCMonth() !== month - 1 ||
    check.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  )
    return undefined;
  if (zone.toUpperCase() === "Z") return utc;
  const sign = zone.startsWith("-") ? -1 : 1;
  const digits = zone.slice(1).replace(":", "");
  const offsetHours = Number(digits.slice(0, 2));
  const offsetMinutes = Number(digits.slice(2) || "0");
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;
  return utc - sign * (offsetHours * 60 + offsetMinutes) * 60_000;
}

/** Validate the list query (spec 4.11): 400 naming each bad field. */
export function parseRequestLogQuery(query: Record<string, string | undefined>): RequestLogQuery {
  const issues: { field: string; problem: string }[] = [];
  let limit = DEFAULT_REQUEST_LOG_LIMIT;
  if (query.limit !== undefined) {
    const raw = query.limit.trim();
    const parsed = /^\d{1,7}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > MAX_REQUEST_LOG_LIMIT)
      issues.push({ field: "limit", problem: `must be a whole number from 1 to ${MAX_REQUEST_LOG_LIMIT}` });
    else limit = parsed;
  }
  const timestamp = (field: "processedAfter" | "processedBefore") => {
    const raw = query[field];
    if (raw === undefined) return undefined;
    const ms = parseIsoTimestamp(raw);
    if (ms === undefined || ms < 0)
      issues.push({ field, problem: "must be an ISO 8601 timestamp such as 2025-01-31T12:00:00Z" });
    return ms;
  };
  const after = timestamp("processedAfter");
  const before = timestamp("processedBefore");
  if (issues.length === 0 && after !== undefined && before !== undefined && after > before)
    issues.push({ field: "processedAfter", problem: "must not be later than processedBefore" });
  if (issues.length) throw validationFailed(issues);
  return { limit, after, before };
}

/** A listed record (spec 2.11): pKey is the proxy id, sKey the request id; no detail fields. */
export function toApiRequestLog(item: RequestLogListItem) {
  return {
    pKey: item.proxyId,
    sKey: item.requestId,
    requestId: item.requestId,
    userId: item.userId,
    clientId: item.clientId,
    parentId: item.parentId,
    processed: item.processed,
    processedAt: item.processedAt,
    TTL: item.TTL,
    proxyData: item.proxyData,
    targetData: item.targetData,
    validationData: item.validationData,
    ...(item.metering ? { metering: item.metering } : {}),
  };
}
export type ApiRequestLog = ReturnType<typeof toApiRequestLog>;

/** The detail projection of spec 2.11 (duration in milliseconds). */
export function toApiRequestDetail(item: RequestLogItem) {
  const receivedAt = item.proxyData?.receivedAt ?? item.processedAt;
  const sentAt = item.proxyData?.sentAt ?? receivedAt;
  const detail = Object.fromEntries(REQUEST_LOG_DETAIL_FIELDS.map((field) => [field, item[field]])) as Pick<
    RequestLogItem,
    (typeof REQUEST_LOG_DETAIL_FIELDS)[number]
  >;
  return {
    requestId: item.requestId,
    method: item.proxyData?.method ?? null,
    path: item.proxyData?.apiPath ?? null,
    statusCode: item.proxyData?.status ?? null,
    duration: Number.isFinite(sentAt - receivedAt) ? Math.max(0, sentAt - receivedAt) : null,
    processedAt: item.processedAt,
    ...detail,
  };
}
export type ApiRequestDetail = ReturnType<typeof toApiRequestDetail>;

/**
 * The newest records of a proxy first, within the optional time range: `limit` of them at most;
 * `limitReached` says more exist in the range. Expired records (TTL passed, not yet removed by
 * DynamoDB) are never listed.
 */
export async function listRequestLogs(
  { clientId }: ClientAccess,
  proxyId: string,
  query: Record<string, string | undefined>,
) {
  const { limit, after, before } = parseRequestLogQuery(query);
  const { region } = await requireProxy(clientId, proxyId);
  // One more than asked for tells whether the limit cut the answer.
  const live = await listRequestLogsOfProxy(region, { proxyId, clientId, after, before, max: limit + 1 });
  const requests = live.slice(0, limit).map(toApiRequestLog);
  return { totalRequests: requests.length, limitReached: live.length > limit, requests };
}

const ANY_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One record in the detail projection; 404 Request not found when it does not exist (or expired). */
export async function getRequestLog({ clientId }: ClientAccess, proxyId: string, requestId: string) {
  const { region } = await requireProxy(clientId, proxyId);
  if (!ANY_UUID.test(requestId)) throw notFound(REQUEST_NOT_FOUND);
  const item = await findRequestLog(region, proxyId, requestId.toLowerCase());
  if (!item || item.clientId !== clientId) throw notFound(REQUEST_NOT_FOUND);
  return toApiRequestDetail(item);
}
