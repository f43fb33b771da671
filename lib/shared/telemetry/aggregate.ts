/**
 * The telemetry of spec 2.12, aggregated from request-log records (spec 2.11) in memory: each
 * request becomes an observation (one leg for the proxy, one more when the request reached the
 * target), each observation adds to 8 buckets (per client and per proxy, per minute, hour, day and
 * month), and a batch of observations sums into one set of counters per bucket. Counters add, so
 * stored buckets are written with ADD and several buckets (proxies, regions) merge by summing.
 * Pure: no I/O, no clock.
 *
 * Definitions (spec 2.12): success is a 2xx or 3xx status, error a 4xx or 5xx status; response
 * times are milliseconds: the proxy leg from receiving the request to answering it
 * (proxyData.sentAt - receivedAt), the target leg from sending to the target to its answer
 * (targetData.receivedAt - sentAt).
 */
import { z } from "zod";
import { type TimeWindow, windowAt } from "#lib/shared/meter-windows.ts";
import { bucketKey, TELEMETRY_INTERVALS, type TelemetryInterval } from "./buckets.ts";
import { type CountryLookup, type CountrySettings, countryOf } from "./country.ts";
import { histogramBucket } from "./histogram.ts";

/** `proxy`: the inbound leg (caller -> gateway); `target`: the forwarding leg (gateway -> target). */
export const TELEMETRY_SOURCES = ["proxy", "target"] as const;
export type TelemetrySource = (typeof TELEMETRY_SOURCES)[number];

/** The counter maps of a bucket: the maps of spec 2.12 plus the response-time histogram. */
export const COUNTER_MAPS = [
  "countMap",
  "successCountMap",
  "errorCountMap",
  "totalResponseTimeMap",
  "codeCountMap",
  "codeTotalRTMap",
  "countryCountMap",
  "countryTotalRTMap",
  /** `<source>:<bucket>` -> requests (lib/shared/telemetry/histogram.ts). */
  "histogramMap",
] as const;
export type CounterMapName = (typeof COUNTER_MAPS)[number];

/**
 * The EWMA's two sums (see ewmaWeight): ewmaResponseTime = ewmaWeightedSum / ewmaWeight, derived
 * on read. Both add, so the average merges across proxies and regions like every other counter.
 */
export const COUNTER_SCALARS = ["ewmaWeightedSum", "ewmaWeight"] as const;
export type CounterScalarName = (typeof COUNTER_SCALARS)[number];

export type TelemetryCounts = Record<CounterMapName, Record<string, number>> &
  Record<CounterScalarName, number>;

export function emptyCounts(): TelemetryCounts {
  const counts = Object.fromEntries(COUNTER_MAPS.map((name) => [name, {}])) as Record<
    CounterMapName,
    Record<string, number>
  >;
  return { ...counts, ewmaWeightedSum: 0, ewmaWeight: 0 };
}

const bump = (map: Record<string, number>, key: string, by: number) => {
  map[key] = (map[key] ?? 0) + by;
};

/** `into` plus `add` (mutates and answers `into`). */
export function addCounts(into: TelemetryCounts, add: TelemetryCounts): TelemetryCounts {
  for (const name of COUNTER_MAPS)
    for (const [key, by] of Object.entries(add[name])) bump(into[name], key, by);
  for (const name of COUNTER_SCALARS) into[name] += add[name];
  return into;
}

export const mergeCounts = (all: Iterable<TelemetryCounts>): TelemetryCounts => {
  const sum = emptyCounts();
  for (const counts of all) addCounts(sum, counts);
  return sum;
};

// ---- observations ----

/** One leg of a request: its status and response time. */
export interface TelemetryLeg {
  source: TelemetrySource;
  status: number;
  ms: number;
}

/** What one request log record contributes. */
export interface TelemetryObservation {
  clientId: string;
  proxyId: string;
  /** When the proxy received the request (epoch ms): the buckets it counts in. */
  at: number;
  /** ISO 3166-1 alpha-2, `XX` when unknown. */
  country: string;
  legs: TelemetryLeg[];
}

const HeaderMap = z.record(z.string(), z.union([z.string(), z.array(z.string())]));

/** The request-log fields telemetry reads (contract: entity "requestLog", spec 2.11). */
const RequestLogImage = z.object({
  entity: z.literal("requestLog"),
  clientId: z.string().min(1),
  proxyId: z.string().min(1),
  processedAt: z.number().optional(),
  proxyData: z.object({
    receivedAt: z.number(),
    sentAt: z.number(),
    status: z.number().int(),
    apiHeaders: HeaderMap.optional(),
  }),
  targetData: z.object({ sentAt: z.number(), receivedAt: z.number(), status: z.number().int() }).nullish(),
  /** The caller's address (the data plane stores it for this lookup). */
  sourceIp: z.string().optional(),
});

const elapsed = (from: number, to: number) => Math.max(0, to - from);

/**
 * The observation of a request-log image, or undefined when it counts for nobody: not a request
 * log, or the request named no known proxy (no client to count it for).
 */
export function observationOf(
  image: Record<string, unknown> | undefined,
  lookup?: CountryLookup,
  countrySettings?: CountrySettings,
): TelemetryObservation | undefined {
  const parsed = RequestLogImage.safeParse(image);
  if (!parsed.success) return undefined;
  const { clientId, proxyId, proxyData, targetData } = parsed.data;
  const legs: TelemetryLeg[] = [
    { source: "proxy", status: proxyData.status, ms: elapsed(proxyData.receivedAt, proxyData.sentAt) },
  ];
  if (targetData)
    legs.push({
      source: "target",
      status: targetData.status,
      ms: elapsed(targetData.sentAt, targetData.receivedAt),
    });
  return {
    clientId,
    proxyId,
    at: proxyData.receivedAt,
    country: countryOf(proxyData.apiHeaders, parsed.data.sourceIp, lookup, countrySettings),
    legs,
  };
}

export const isSuccess = (status: number) => status >= 200 && status < 400;
export const isError = (status: number) => status >= 400 && status < 600;

// ---- buckets ----

/** Which stored bucket a contribution goes to: per client or per proxy, per interval. */
export interface TelemetryBucketRef {
  scope: "client" | "proxy";
  clientId: string;
  /** Set when scope is `proxy`. */
  proxyId?: string;
  interval: TelemetryInterval;
  bucket: string;
  window: TimeWindow;
}

export const bucketRefId = (ref: TelemetryBucketRef) =>
  `${ref.scope}|${ref.scope === "proxy" ? ref.proxyId : ref.clientId}|${ref.interval}|${ref.bucket}`;

/**
 * The EWMA's time constant τ: an eighth of the bucket (minute 7.5 s, hour 7.5 min, day 3 h, a
 * 30-day month 3.75 days). A request at `at` weighs e^((at − start) / τ), at most e^8 ≈ 2981, so
 * ewmaResponseTime = Σ wᵢ·msᵢ / Σ wᵢ. Between requests Δt apart the smoothing factor is, in the
 * steady state, α = 1 − e^(−Δt/τ): the classic EWMA `ewma += α·(x − ewma)` with α set by elapsed time
 * rather than per request, so that it does not depend on the order in which shards, regions or
 * batches add their requests.
 */
export const EWMA_BUCKET_FRACTION = 1 / 8;
export const ewmaWeight = (window: TimeWindow, at: number) =>
  Math.exp(
    (Math.min(Math.max(at, window.start), window.end) - window.start) /
      ((window.end - window.start) * EWMA_BUCKET_FRACTION),
  );

/** The counters one observation adds to any bucket holding it (the EWMA uses the proxy leg). */
export function countsOf(observation: TelemetryObservation, window: TimeWindow): TelemetryCounts {
  const counts = emptyCounts();
  for (const leg of observation.legs) {
    const { source, status, ms } = leg;
    bump(counts.countMap, source, 1);
    if (isSuccess(status)) bump(counts.successCountMap, source, 1);
    if (isError(status)) bump(counts.errorCountMap, source, 1);
    bump(counts.totalResponseTimeMap, source, ms);
    bump(counts.codeCountMap, `${status}:${source}`, 1);
    bump(counts.codeTotalRTMap, `${status}:${source}`, ms);
    bump(counts.countryCountMap, `${observation.country}:${source}`, 1);
    bump(counts.countryTotalRTMap, `${observation.country}:${source}`, ms);
    bump(counts.histogramMap, `${source}:${histogramBucket(ms)}`, 1);
    if (source === "proxy") {
      const weight = ewmaWeight(window, observation.at);
      counts.ewmaWeightedSum += weight * ms;
      counts.ewmaWeight += weight;
    }
  }
  return counts;
}

/** The 8 buckets an observation counts in: its client's and its proxy's, for each interval. */
export function bucketRefsOf(observation: TelemetryObservation): TelemetryBucketRef[] {
  return TELEMETRY_INTERVALS.flatMap((interval) => {
    const { start, end } = windowAt(interval, observation.at);
    const common = {
      clientId: observation.clientId,
      interval,
      bucket: bucketKey(interval, observation.at),
      window: { start, end },
    };
    return [
      { scope: "client", ...common } satisfies TelemetryBucketRef,
      { scope: "proxy", proxyId: observation.proxyId, ...common } satisfies TelemetryBucketRef,
    ];
  });
}

export interface BucketDelta {
  ref: TelemetryBucketRef;
  counts: TelemetryCounts;
}

/** What one observation adds, bucket by bucket. */
export const deltasOf = (observation: TelemetryObservation): BucketDelta[] =>
  bucketRefsOf(observation).map((ref) => ({ ref, counts: countsOf(observation, ref.window) }));

/** A batch of observations summed per bucket (buckets in order of first appearance). */
export function aggregate(observations: Iterable<TelemetryObservation>): BucketDelta[] {
  const byBucket = new Map<string, BucketDelta>();
  for (const observation of observations) {
    for (const delta of deltasOf(observation)) {
      const id = bucketRefId(delta.ref);
      const existing = byBucket.get(id);
      if (existing) addCounts(existing.counts, delta.counts);
      else byBucket.set(id, delta);
    }
  }
  return [...byBucket.values()];
}
