/**
 * The request log record (spec 2.11) as stored: written by the data plane after each proxied
 * request (lib/data-plane/request-log.ts buildRequestLogItem) in the proxy's regional table, read
 * here by the Core API (lib/domain/request-logs.ts), which works on RequestLogItem, never on an
 * untyped item. The read side is tolerant: attributes it does not know are dropped, not refused,
 * so the data plane can add one before the reader declares it.
 *
 * Bodies: a stored body is text, or (from 1 KiB, when it helps) the gzip bytes of that text as a
 * binary attribute flagged `<request|response>BodyCompression: "gzip"`. RequestLogItem always holds
 * the text: it is inflated here (bounded), so every reader gets what it got before compression.
 *
 * Key: `REQLOG#<proxyId>` / `<requestId>`. Request ids are UUIDv7, so the sort key is time order:
 * a time range is a sort-key range (the lowest and highest UUIDv7 of its end milliseconds).
 */
import { z } from "zod";
import { keys } from "#lib/db/keys.ts";
import { getInRegion } from "#lib/db/regional.ts";
import { isExpired, nowSeconds, parseStored, queryAll } from "#lib/db/store.ts";
import { log } from "#lib/log.ts";
import { storedBodyText, UnreadableBodyError } from "#lib/shared/body-compression.ts";
import { highestRequestIdAt, lowestRequestIdAt } from "#lib/shared/request-id.ts";
import {
  REQUEST_LOG_BODY_CAP_BYTES,
  REQUEST_LOG_DETAIL_FIELDS,
  VALIDATION_FIELDS,
} from "#lib/shared/request-log-fields.ts";

const HeaderMap = z.record(z.string(), z.union([z.string(), z.array(z.string())]));

/** What the proxy did; times in Unix ms, durations in seconds. */
export const StoredProxyData = z.object({
  stage: z.string(),
  method: z.string(),
  apiPath: z.string(),
  receivedAt: z.number(),
  sentAt: z.number(),
  duration: z.number(),
  status: z.number(),
  /** The service-proxy-code answered; absent on records written before it was stored. */
  code: z.string().optional(),
  message: z.string(),
  arnBase: z.string(),
  apiHeaders: HeaderMap,
  apiParams: HeaderMap,
});

/** What the target did; null when the request did not reach it. */
export const StoredTargetData = z.object({
  sentAt: z.number(),
  receivedAt: z.number(),
  duration: z.number(),
  status: z.number(),
  location: z.string().nullable(),
});

/** The 20 validation booleans (spec 2.11); a flag not stored reads as absent. */
export const StoredValidationData = z
  .object(
    Object.fromEntries(VALIDATION_FIELDS.map((field) => [field, z.boolean()])) as Record<
      (typeof VALIDATION_FIELDS)[number],
      z.ZodBoolean
    >,
  )
  .partial();

/** Which meters applied to the request and which refused it (absent when the proxy has no meters). */
export const StoredMetering = z.object({
  applied: z.array(z.string()),
  refused: z.array(z.object({ meterId: z.string(), window: z.enum(["minute", "hour", "day", "month"]) })),
});

const BodyEncoding = z.enum(["utf8", "base64"]);

/** The list projection: every field of the record except the detail fields (headers and bodies). */
const listFields = {
  /** The request id. */
  sKey: z.string(),
  requestId: z.string(),
  proxyId: z.string(),
  /** Null when the proxy id of the path was unknown (the record is then nobody's). */
  userId: z.string().nullable(),
  clientId: z.string().nullable(),
  parentId: z.string(),
  processed: z.boolean(),
  /** Unix ms when the proxy received the request. */
  processedAt: z.number(),
  /** Expiry, Unix seconds (the table's TTL attribute). */
  TTL: z.number(),
  proxyData: StoredProxyData.nullable(),
  targetData: StoredTargetData.nullable(),
  validationData: StoredValidationData,
  /** Which meters applied and which refused (absent when the proxy had no meters). */
  metering: StoredMetering.optional(),
};

export const RequestLogListItem = z.object(listFields);
export type RequestLogListItem = z.infer<typeof RequestLogListItem>;

/** A stored body: text, or gzip bytes when its compression flag says so. */
const StoredBody = z.union([z.string(), z.instanceof(Uint8Array)]).nullable();
const BodyCompression = z.literal("gzip");

/** The record as stored (bodies possibly compressed). */
const StoredRequestLogItem = z.object({
  ...listFields,
  pKey: z.string(),
  entity: z.literal("requestLog"),
  /** The caller's address, for telemetry's country (never answered by the API). */
  sourceIp: z.string().optional(),
  requestHeaders: HeaderMap.nullable(),
  requestHeadersTruncated: z.boolean().nullable(),
  requestBody: StoredBody,
  /** Present when requestBody holds the gzip bytes of the stored text (absent in older records). */
  requestBodyCompression: BodyCompression.optional(),
  requestBodyEncoding: BodyEncoding.nullable(),
  requestBodyTruncated: z.boolean().nullable(),
  requestBodyBytes: z.number().int().nullable(),
  responseHeaders: HeaderMap.nullable(),
  responseHeadersTruncated: z.boolean().nullable(),
  responseBody: StoredBody,
  responseBodyCompression: BodyCompression.optional(),
  responseBodyEncoding: BodyEncoding.nullable(),
  responseBodyTruncated: z.boolean().nullable(),
  responseBodyBytes: z.number().int().nullable(),
  apiParamsTruncated: z.boolean().nullable(),
});
type StoredRequestLogItem = z.infer<typeof StoredRequestLogItem>;

/**
 * One body of a stored record as the text the data plane stored, or `unreadable` (with the reason,
 * logged) when it cannot be read back: corrupt, not what its flag says, or inflating past the cap.
 */
function readableBody(
  item: StoredRequestLogItem,
  prefix: "request" | "response",
): { text: string | null; unreadable: boolean } {
  const body = item[`${prefix}Body`];
  if (body === null) return { text: null, unreadable: false };
  try {
    const compression = item[`${prefix}BodyCompression`];
    return { text: storedBodyText(body, compression, REQUEST_LOG_BODY_CAP_BYTES), unreadable: false };
  } catch (error) {
    if (!(error instanceof UnreadableBodyError)) throw error;
    log.warn("Request log body unreadable, omitted", {
      proxyId: item.proxyId,
      requestId: item.requestId,
      body: prefix,
      reason: error.message,
    });
    return { text: null, unreadable: true };
  }
}

/**
 * The record as its readers see it: every body is the stored text (compression undone). A body that
 * cannot be read back reads as omitted (body and encoding null, truncated true, the original size
 * kept), never as an exception that would fail the whole read.
 */
export const RequestLogItem = StoredRequestLogItem.transform((item) => {
  const { requestBodyCompression: _request, responseBodyCompression: _response, ...rest } = item;
  const request = readableBody(item, "request");
  const response = readableBody(item, "response");
  return {
    ...rest,
    requestBody: request.text,
    requestBodyEncoding: request.unreadable ? null : item.requestBodyEncoding,
    requestBodyTruncated: request.unreadable ? true : item.requestBodyTruncated,
    responseBody: response.text,
    responseBodyEncoding: response.unreadable ? null : item.responseBodyEncoding,
    responseBodyTruncated: response.unreadable ? true : item.responseBodyTruncated,
  };
});
export type RequestLogItem = z.output<typeof RequestLogItem>;

/** The attributes a list reads besides the sort key (its ProjectionExpression): the list item's fields. */
const LIST_ATTRIBUTES = Object.keys(listFields).filter((field) => field !== "sKey");

/** What a record written before a field existed reads as. */
const listDefaults = (item: Record<string, unknown>) => ({
  requestId: item.sKey,
  parentId: item.proxyId,
  userId: null,
  clientId: null,
  proxyData: null,
  targetData: null,
  validationData: {},
});

/** A listed (projected) record as a RequestLogListItem; throws naming the fields that fail. */
export const requestLogListItemOf = (item: Record<string, unknown>): RequestLogListItem =>
  parseStored(RequestLogListItem, "request log", {
    ...listDefaults(item),
    ...item,
  });

/** A whole stored record as a RequestLogItem; a detail field the record lacks reads as null. */
export const requestLogItemOf = (item: Record<string, unknown>): RequestLogItem =>
  parseStored(RequestLogItem, "request log", {
    entity: "requestLog",
    ...listDefaults(item),
    ...Object.fromEntries(REQUEST_LOG_DETAIL_FIELDS.map((field) => [field, null])),
    ...item,
  });

export const requestLogKeys = {
  item: keys.requestLog,
  partition: keys.requestLogPartition,
} as const;

/** The sort-key condition of a time range (both ends inclusive, to the millisecond). */
export function sortKeyRange(after?: number, before?: number) {
  const values: Record<string, string> = {};
  let condition = "#pk = :pk";
  if (after !== undefined && before !== undefined) {
    condition += " AND #sk BETWEEN :from AND :to";
    values[":from"] = lowestRequestIdAt(after);
    values[":to"] = highestRequestIdAt(before);
  } else if (after !== undefined) {
    condition += " AND #sk >= :from";
    values[":from"] = lowestRequestIdAt(after);
  } else if (before !== undefined) {
    condition += " AND #sk <= :to";
    values[":to"] = highestRequestIdAt(before);
  }
  return { condition, values };
}

/**
 * Access pattern "request logs of a proxy in a time range, newest first": one Query on
 * `REQLOG#<proxyId>` with the range as sort-key bounds, at most `max` records, in the list
 * projection. Only the client's records, and no expired one: both filters run in DynamoDB (so they
 * do not use up `max`) and again here. Eventually consistent: logs are append-only, and the read
 * costs half (it may miss the last second of traffic).
 */
export async function listRequestLogsOfProxy(
  region: string,
  query: { proxyId: string; clientId: string; after?: number; before?: number; max: number },
): Promise<RequestLogListItem[]> {
  const now = nowSeconds();
  const range = sortKeyRange(query.after, query.before);
  const names: Record<string, string> = { "#pk": "pKey", "#sk": "sKey", "#ttl": "TTL", "#cid": "clientId" };
  LIST_ATTRIBUTES.forEach((attribute, index) => {
    names[`#a${index}`] = attribute;
  });
  const items = await queryAll(
    {
      KeyConditionExpression: range.condition,
      FilterExpression: "#cid = :cid AND (attribute_not_exists(#ttl) OR #ttl > :now)",
      ProjectionExpression: ["#sk", ...LIST_ATTRIBUTES.map((_, index) => `#a${index}`)].join(", "),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: {
        ":pk": requestLogKeys.partition(query.proxyId),
        ":cid": query.clientId,
        ":now": now,
        ...range.values,
      },
      ScanIndexForward: false,
      ConsistentRead: false,
    },
    { region, max: query.max },
  );
  return items
    .filter((item) => !isExpired(item, now) && item.clientId === query.clientId)
    .map(requestLogListItemOf);
}

/** Access pattern "request log detail": a consistent GetItem; an expired record is not found. */
export async function findRequestLog(
  region: string,
  proxyId: string,
  requestId: string,
): Promise<RequestLogItem | undefined> {
  const item = await getInRegion(region, requestLogKeys.item(proxyId, requestId));
  return item ? requestLogItemOf(item) : undefined;
}
