/**
 * The regional table's stream consumer, declared once as data: the function, its event source
 * mapping settings and the filter criteria of each processor. The CDK regional stack
 * (cdk/stacks/regional-stack.ts) builds the Lambda event source mapping from it; the local stream
 * poller (local/stream-poller.ts) reads the stream with the same batch size, retry and bisect
 * rules and applies the same filters (lib/streams/event-filter.ts) before calling the same handler
 * (functions/region-stream.ts). Like table-definition.ts, no aws-cdk-lib or SDK import here.
 *
 * Filter patterns are Lambda event filtering patterns over the stream record as Lambda delivers
 * it (AttributeValue form): https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html
 */

/** One filter pattern: nested keys down to arrays of allowed values or matchers. */
export type FilterValue =
  | string
  | number
  | boolean
  | null
  | { exists: boolean }
  | { prefix: string }
  | { "anything-but": readonly (string | number)[] };
export interface FilterPattern {
  readonly [key: string]: FilterPattern | readonly FilterValue[];
}

export const REGION_STREAM_FUNCTION = {
  /** functions/region-stream.ts */
  name: "region-stream",
} as const;

/** Event source mapping settings (AWS::Lambda::EventSourceMapping), also honoured by the local poller. */
export const REGION_STREAM_SETTINGS = {
  /** Records per invocation (the consumer writes at most one transaction per 100 actions). */
  batchSize: 100,
  /** Wait up to this long to fill a batch (fewer, fuller invocations). */
  maxBatchingWindowSeconds: 1,
  /** Retries of a failing batch (or of its unprocessed tail) before it goes to the failure queue. */
  maximumRetryAttempts: 5,
  /** Split a batch whose invocation failed outright (timeout, crash) to isolate a poison record. */
  bisectBatchOnFunctionError: true,
  /** Records older than this go to the failure queue instead of being retried (stream keeps 24 h). */
  maximumRecordAgeSeconds: 6 * 3600,
  /** One invocation per shard at a time: records of a shard are processed in order. */
  parallelizationFactor: 1,
  /** Where a new mapping starts reading (the local poller starts there too). */
  startingPosition: "LATEST",
} as const;

/**
 * The records each processor reads. The mapping's filter is the union (Lambda allows 5 patterns per
 * mapping by default); inside the handler each processor gets only the records its own patterns
 * match. Issue 11's telemetry adds its entry here.
 */
export const REGION_STREAM_FILTERS = {
  /** Meter alert occurrences (docs/meters.md, "Alert digests"). */
  meterAlerts: [
    /** A new request log: `metering.applied` (predicate_match) and `metering.refused` (exceed). */
    { eventName: ["INSERT"], dynamodb: { NewImage: { entity: { S: ["requestLog"] } } } },
    /** A meter counter created or incremented: threshold crossings (old < threshold <= new). */
    { eventName: ["INSERT", "MODIFY"], dynamodb: { NewImage: { entity: { S: ["meterCounter"] } } } },
  ],
  /** Transform suspensions (docs/transforms.md "Suspension"): a request log that started one. */
  transformSuspensions: [
    {
      eventName: ["INSERT"],
      dynamodb: {
        NewImage: {
          entity: { S: ["requestLog"] },
          transformSuspension: { M: { transformId: { S: [{ exists: true }] } } },
        },
      },
    },
  ],
} as const satisfies Record<string, readonly FilterPattern[]>;

export type RegionStreamProcessorName = keyof typeof REGION_STREAM_FILTERS;

/** Lambda's default maximum of filter patterns on one event source mapping. */
export const MAX_FILTER_PATTERNS = 5;

/** The mapping's filter patterns: every processor's, each distinct pattern once. */
export function regionStreamFilterPatterns(): FilterPattern[] {
  const seen = new Map<string, FilterPattern>();
  for (const patterns of Object.values(REGION_STREAM_FILTERS) as readonly (readonly FilterPattern[])[]) {
    for (const pattern of patterns) seen.set(JSON.stringify(pattern), pattern);
  }
  return [...seen.values()];
}

/**
 * The telemetry consumer (docs/telemetry.md): a second event source mapping on the same stream,
 * into its own function (functions/telemetry-stream.ts), because its exactly-once rule is per
 * batch part (a marker per part's sequence numbers), not per record: it must not share a batch
 * with processors whose failures would make Lambda redeliver records it has already counted. Two
 * consumers per shard is DynamoDB Streams' recommended maximum; this is the second.
 */
export const TELEMETRY_STREAM_FUNCTION = {
  /** functions/telemetry-stream.ts */
  name: "telemetry-stream",
  /** The function's timeout; the handler writes no new part within DEADLINE_MARGIN of it. */
  timeoutSeconds: 60,
  deadlineMarginMs: 15_000,
} as const;

/** The same settings as the region stream's mapping (bounded retries, bisect, one batch per shard). */
export const TELEMETRY_STREAM_SETTINGS = REGION_STREAM_SETTINGS;

/** Request-log inserts only: one stream record per proxied request (spec 2.11). */
export const TELEMETRY_STREAM_FILTERS = [
  { eventName: ["INSERT"], dynamodb: { NewImage: { entity: { S: ["requestLog"] } } } },
] as const satisfies readonly FilterPattern[];

/** Every consumer of the regional table's stream: the CDK stack and the local runner build one mapping each. */
export const STREAM_CONSUMERS = [
  {
    function: REGION_STREAM_FUNCTION.name,
    settings: REGION_STREAM_SETTINGS,
    patterns: regionStreamFilterPatterns,
  },
  {
    function: TELEMETRY_STREAM_FUNCTION.name,
    settings: TELEMETRY_STREAM_SETTINGS,
    patterns: (): FilterPattern[] => [...TELEMETRY_STREAM_FILTERS],
  },
] as const;

/**
 * `<package>/<path>` of the telemetry consumer's GeoIP database (lib/streams/geoip.ts), copied
 * beside its bundle when deployed.
 */
export const GEOIP_DATABASE_FILE = "@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb";
