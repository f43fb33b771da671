/**
 * Request logs (spec 4.11): read-only records of what the data plane did with each proxied
 * request, stored in the proxy's region. The list and the detail answer different projections of
 * the same record (spec 2.11; docs/request-logs.md).
 */
import { z } from "zod";
import { access, operation, pathParams, wrapped } from "#lib/api/operation.ts";
import { VALIDATION_FIELDS } from "#lib/data-plane/request-log.ts";
import { getRequestLog, listRequestLogs, MAX_REQUEST_LOG_LIMIT } from "#lib/domain/request-logs.ts";

const HeaderMap = z.record(z.string(), z.union([z.string(), z.array(z.string())]));

/** What the proxy did (spec 2.11 proxyData); durations in seconds, times in Unix ms. */
const ProxyDataSchema = z.object({
  stage: z.string(),
  method: z.string(),
  apiPath: z.string().describe("The path after /api/{proxyId}"),
  receivedAt: z.number(),
  sentAt: z.number(),
  duration: z.number().describe("Seconds"),
  status: z.number().int().describe("The HTTP status the proxy answered"),
  code: z
    .string()
    .optional()
    .describe("The service-proxy-code the proxy answered (spec 4.13); absent on older records"),
  message: z.string().describe("The service-proxy-message the proxy answered"),
  arnBase: z.string(),
  apiHeaders: HeaderMap.describe("The caller's headers, sensitive values redacted"),
  apiParams: HeaderMap.describe("The caller's query parameters, sensitive values redacted"),
});

/** What the target did (spec 2.11 targetData); null when the request did not reach it. */
const TargetDataSchema = z.object({
  sentAt: z.number(),
  receivedAt: z.number(),
  duration: z.number().describe("Seconds"),
  status: z.number().int(),
  location: z.string().nullable(),
});

const ValidationDataSchema = z.object(
  Object.fromEntries(VALIDATION_FIELDS.map((field) => [field, z.boolean()])) as Record<
    (typeof VALIDATION_FIELDS)[number],
    z.ZodBoolean
  >,
);

/** A listed record (spec 2.11): no headers or bodies (those are in the detail). */
export const RequestLogSchema = z.object({
  pKey: z.string().describe("The proxy id"),
  sKey: z.string().describe("The request id"),
  requestId: z.string().describe("UUIDv7 of the moment the proxy received the request"),
  userId: z.string().nullable(),
  clientId: z.string().nullable(),
  parentId: z.string().describe("The proxy id"),
  processed: z.boolean(),
  processedAt: z.number().describe("Unix ms when the proxy received the request"),
  TTL: z.number().describe("Unix seconds when the record expires"),
  proxyData: ProxyDataSchema.nullable(),
  targetData: TargetDataSchema.nullable(),
  validationData: ValidationDataSchema.partial(),
  metering: z
    .object({
      applied: z.array(z.string()).describe("Ids of the proxy's meters that applied to the request"),
      refused: z
        .array(z.object({ meterId: z.string(), window: z.enum(["minute", "hour", "day", "month"]) }))
        .describe("The meter windows that refused the request (429)"),
    })
    .optional()
    .describe("Present when the proxy has active meters"),
});

const BodyEncoding = z.enum(["utf8", "base64"]);

/** The detail projection of spec 2.11 (docs/request-logs.md); null for what the record lacks. */
export const RequestLogDetailSchema = z.object({
  requestId: z.string(),
  method: z.string().nullable(),
  path: z.string().nullable().describe("proxyData.apiPath"),
  statusCode: z.number().int().nullable().describe("The HTTP status the proxy answered"),
  duration: z.number().nullable().describe("The proxy's time in milliseconds"),
  processedAt: z.number(),
  requestHeaders: HeaderMap.nullable().describe("Sensitive values are replaced by [redacted]"),
  requestHeadersTruncated: z.boolean().nullable(),
  requestBody: z.string().nullable().describe("Null when there was no body; at most 32 KiB stored"),
  requestBodyEncoding: BodyEncoding.nullable(),
  requestBodyTruncated: z.boolean().nullable(),
  requestBodyBytes: z.number().int().nullable().describe("The original size"),
  responseHeaders: HeaderMap.nullable().describe("The target's response headers"),
  responseHeadersTruncated: z.boolean().nullable(),
  responseBody: z.string().nullable(),
  responseBodyEncoding: BodyEncoding.nullable(),
  responseBodyTruncated: z.boolean().nullable(),
  responseBodyBytes: z.number().int().nullable(),
  apiParamsTruncated: z.boolean().nullable(),
});

/**
 * The list's query, as documentation: the values are checked by the domain (parseRequestLogQuery)
 * after the access check, so that a non-member learns nothing from a bad query (404 first).
 */
const RequestLogQuery = z.object({
  // `.meta` types them in the document; the domain parses the strings, with the spec's messages.
  limit: z
    .string()
    .optional()
    .meta({ type: "integer", minimum: 1, maximum: MAX_REQUEST_LOG_LIMIT, default: MAX_REQUEST_LOG_LIMIT })
    .describe(`Whole number from 1 to ${MAX_REQUEST_LOG_LIMIT}, default ${MAX_REQUEST_LOG_LIMIT}`),
  processedAfter: z
    .string()
    .optional()
    .meta({ format: "date-time" })
    .describe("ISO 8601 timestamp, inclusive (a date alone is midnight UTC; no offset means UTC)"),
  processedBefore: z
    .string()
    .optional()
    .meta({ format: "date-time" })
    .describe("ISO 8601 timestamp, inclusive"),
});

export const requestLogOperations = [
  operation({
    id: "listRequestLogs",
    method: "GET",
    path: "/api/clients/{clientId}/proxies/{proxyId}/requests",
    group: "requests",
    summary: "List a proxy's request logs",
    description:
      "Lists the records of the requests a proxy handled, newest first, optionally within a time range (`processedAfter`, `processedBefore`, both inclusive), at most `limit` of them (default and maximum 1000); `limitReached` says more matched. Records carry what the proxy and the target did and the 20 validation flags, but not headers or bodies (get one record for those). Records expire after the retention period.",
    access: access.client("reader"),
    effect: "read",
    params: pathParams("clientId", "proxyId"),
    query: RequestLogQuery,
    response: {
      status: 200,
      schema: wrapped("requests", RequestLogSchema).extend({
        totalRequests: z.number().int().describe("The number of records returned"),
        limitReached: z.boolean().describe("True when more records match than were returned"),
      }),
    },
    errors: [403, 404],
    handler: async ({ member, params, query }) => ({
      body: { message: "Requests retrieved", ...(await listRequestLogs(member, params.proxyId, query)) },
    }),
  }),
  operation({
    id: "getRequestLog",
    method: "GET",
    path: "/api/clients/{clientId}/proxies/{proxyId}/requests/{requestId}",
    group: "requests",
    summary: "Get one request log",
    description:
      "Answers one record in the detail projection: method, path, status, duration in milliseconds, and the request's and response's headers and bodies (sensitive header values and the secrets the request used are redacted; bodies are capped at 32 KiB, binary ones in base64).",
    access: access.client("reader"),
    effect: "read",
    params: pathParams("clientId", "proxyId", "requestId"),
    response: { status: 200, schema: wrapped("requests", RequestLogDetailSchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: {
        message: "Request retrieved",
        requests: [await getRequestLog(member, params.proxyId, params.requestId)],
      },
    }),
  }),
];
