/**
 * Telemetry (spec 2.12, 4.1, 4.7): per time bucket, the counts, success and error rates, status
 * codes, countries and response times of a client's (or one proxy's) proxied requests, aggregated
 * from the request logs by the stream consumers (docs/telemetry.md). Read-only.
 */
import { z } from "zod";
import { access, operation, pathParams } from "#lib/api/operation.ts";
import {
  DEFAULT_TELEMETRY_LIMIT,
  listClientTelemetry,
  listProxyTelemetry,
  MAX_TELEMETRY_LIMIT,
} from "#lib/domain/telemetry-reads.ts";
import { TELEMETRY_INTERVALS } from "#lib/shared/telemetry/buckets.ts";

const bySource = (what: string) =>
  z
    .record(z.string(), z.number())
    .describe(`${what}, keyed by source: proxy (inbound leg), target (forwarding leg)`);
const byCode = (what: string, key: string) =>
  z.record(z.string(), z.number()).describe(`${what}, keyed ${key}`);

/** One bucket (spec 2.12), with the maps derived on read. */
export const TelemetryRecordSchema = z.object({
  pKey: z.string().describe("The client id"),
  sKey: z
    .string()
    .describe("The bucket: YYYY-MM-DD-HH-MM, YYYY-MM-DD-HH, YYYY-MM-DD or YYYY-MM (UTC) by interval"),
  proxyId: z.string().optional().describe("The proxy (proxy telemetry only)"),
  countMap: bySource("Requests"),
  successCountMap: bySource("2xx and 3xx answers"),
  errorCountMap: bySource("4xx and 5xx answers"),
  totalResponseTimeMap: bySource("Cumulative response time, ms"),
  codeCountMap: byCode("Requests", "`<status>:<source>`"),
  codeTotalRTMap: byCode("Cumulative response time, ms", "`<status>:<source>`"),
  countryCountMap: byCode("Requests", "`<country>:<source>` (ISO 3166-1 alpha-2; XX unknown)"),
  countryTotalRTMap: byCode("Cumulative response time, ms", "`<country>:<source>`"),
  averageResponseTimeMap: bySource("Average response time, ms (derived)"),
  successRateMap: bySource("Fraction of answers that were 2xx or 3xx, 0..1 (derived)"),
  errorRateMap: bySource("Fraction of answers that were 4xx or 5xx, 0..1 (derived)"),
  countryAverageRTMap: byCode("Average response time, ms (derived)", "`<country>:<source>`"),
  p50ResponseTimeMap: bySource("Median response time, ms, within 1% (derived from histograms)"),
  p95ResponseTimeMap: bySource("95th percentile response time, ms, within 1%"),
  p99ResponseTimeMap: bySource("99th percentile response time, ms, within 1%"),
  ewmaResponseTime: z
    .number()
    .nullable()
    .describe("Exponentially weighted moving average of the inbound leg's response time, ms"),
});

/** The query of both routes, as documentation: checked by the domain after the access check. */
const TelemetryQuery = z.object({
  // `.meta` types them in the document; the domain parses the strings, with the spec's messages.
  interval: z
    .string()
    .optional()
    .meta({ enum: [...TELEMETRY_INTERVALS], default: "hour" })
    .describe(`One of ${TELEMETRY_INTERVALS.join(", ")}; default hour`),
  startDate: z.string().optional().meta({ format: "date-time" }).describe("ISO 8601 date-time, inclusive"),
  endDate: z.string().optional().meta({ format: "date-time" }).describe("ISO 8601 date-time, inclusive"),
  limit: z
    .string()
    .optional()
    .meta({ type: "integer", minimum: 1, maximum: MAX_TELEMETRY_LIMIT, default: DEFAULT_TELEMETRY_LIMIT })
    .describe(`Whole number from 1 to ${MAX_TELEMETRY_LIMIT}, default ${DEFAULT_TELEMETRY_LIMIT}`),
});

const TelemetryAnswer = z.object({
  message: z.string(),
  interval: z.enum(TELEMETRY_INTERVALS),
  telemetry: z.array(TelemetryRecordSchema),
});

const RANGE =
  "Buckets are UTC minutes, hours, days or calendar months (`interval`, default hour); `startDate` and `endDate` are inclusive (a bucket holding any instant of the range is in it). The answer holds the most recent `limit` buckets of the range (default 100, at most 1000), oldest first; a bucket without requests is not listed. Counts are exact; the percentiles are within 1% of the raw durations. Telemetry appears within 30 seconds of the requests.";

export const telemetryOperations = [
  operation({
    id: "getClientTelemetry",
    method: "GET",
    path: "/api/clients/{clientId}/telemetry",
    group: "telemetry",
    summary: "Get a client's telemetry",
    description: `Aggregated traffic of all the client's proxies, in every region merged into one answer: per time bucket, the request counts, success and error rates, status codes, countries and response times (averages, p50, p95, p99), each for the inbound leg (source proxy) and the forwarding leg (source target). ${RANGE}`,
    access: access.client("reader"),
    effect: "read",
    params: pathParams("clientId"),
    query: TelemetryQuery,
    response: { status: 200, schema: TelemetryAnswer },
    errors: [400, 403, 404],
    handler: async ({ member, query }) => ({
      body: { message: "Telemetry retrieved", ...(await listClientTelemetry(member, query)) },
    }),
  }),
  operation({
    id: "getProxyTelemetry",
    method: "GET",
    path: "/api/clients/{clientId}/proxies/{proxyId}/telemetry",
    group: "telemetry",
    summary: "Get a proxy's telemetry",
    description: `Aggregated traffic of one proxy, in the shape of the client's telemetry. ${RANGE}`,
    access: access.client("reader"),
    effect: "read",
    params: pathParams("clientId", "proxyId"),
    query: TelemetryQuery,
    response: { status: 200, schema: TelemetryAnswer },
    errors: [400, 403, 404],
    handler: async ({ member, params, query }) => ({
      body: { message: "Telemetry retrieved", ...(await listProxyTelemetry(member, params.proxyId, query)) },
    }),
  }),
];
