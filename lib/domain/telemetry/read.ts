/**
 * Telemetry as read (spec 2.12, for the routes of 4.1 and 4.7): stored buckets of the same key
 * (several regions, several proxies) summed, then the derived maps computed, never stored:
 * averageResponseTimeMap, successRateMap, errorRateMap (fractions 0..1, per source),
 * countryAverageRTMap, the EWMA, and the p50/p95/p99 response times per source from the merged
 * histograms. Pure.
 */
import { mergeCounts, TELEMETRY_SOURCES, type TelemetryCounts } from "#lib/shared/telemetry/aggregate.ts";
import { type Histogram, histogramPercentile } from "#lib/shared/telemetry/histogram.ts";

export const PERCENTILES = { p50: 0.5, p95: 0.95, p99: 0.99 } as const;
export type PercentileName = keyof typeof PERCENTILES;

export interface TelemetryRecord {
  /** The bucket key (spec 2.12 sKey). */
  sKey: string;
  countMap: Record<string, number>;
  successCountMap: Record<string, number>;
  errorCountMap: Record<string, number>;
  totalResponseTimeMap: Record<string, number>;
  codeCountMap: Record<string, number>;
  codeTotalRTMap: Record<string, number>;
  countryCountMap: Record<string, number>;
  countryTotalRTMap: Record<string, number>;
  averageResponseTimeMap: Record<string, number>;
  successRateMap: Record<string, number>;
  errorRateMap: Record<string, number>;
  countryAverageRTMap: Record<string, number>;
  /** Per source, ms (within 1 % of the raw nearest-rank percentile). */
  p50ResponseTimeMap: Record<string, number>;
  p95ResponseTimeMap: Record<string, number>;
  p99ResponseTimeMap: Record<string, number>;
  /** Proxy leg, ms; null when the bucket has no request. */
  ewmaResponseTime: number | null;
}

const ratios = (numerators: Record<string, number>, denominators: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(denominators)
      .filter(([, d]) => d > 0)
      .map(([key, d]) => [key, (numerators[key] ?? 0) / d]),
  );

/** Per source, the histogram held in `histogramMap` (`<source>:<bucket>` -> count). */
export function histogramsOf(counts: TelemetryCounts): Map<string, Map<number, number>> {
  const bySource = new Map<string, Map<number, number>>();
  for (const [key, count] of Object.entries(counts.histogramMap)) {
    const at = key.lastIndexOf(":");
    const source = key.slice(0, at);
    const bucket = Number(key.slice(at + 1));
    if (!Number.isInteger(bucket)) continue;
    const histogram = bySource.get(source) ?? new Map<number, number>();
    histogram.set(bucket, (histogram.get(bucket) ?? 0) + count);
    bySource.set(source, histogram);
  }
  return bySource;
}

function percentileMaps(counts: TelemetryCounts): Record<PercentileName, Record<string, number>> {
  const histograms = histogramsOf(counts);
  const maps = { p50: {}, p95: {}, p99: {} } as Record<PercentileName, Record<string, number>>;
  for (const source of TELEMETRY_SOURCES) {
    const histogram: Histogram | undefined = histograms.get(source);
    if (!histogram) continue;
    for (const [name, p] of Object.entries(PERCENTILES) as [PercentileName, number][]) {
      const value = histogramPercentile(histogram, p);
      if (value !== null) maps[name][source] = value;
    }
  }
  return maps;
}

/** The record of one bucket: its stored counters and everything derived from them. */
export function telemetryRecordOf(sKey: string, counts: TelemetryCounts): TelemetryRecord {
  const percentiles = percentileMaps(counts);
  return {
    sKey,
    countMap: counts.countMap,
    successCountMap: counts.successCountMap,
    errorCountMap: counts.errorCountMap,
    totalResponseTimeMap: counts.totalResponseTimeMap,
    codeCountMap: counts.codeCountMap,
    codeTotalRTMap: counts.codeTotalRTMap,
    countryCountMap: counts.countryCountMap,
    countryTotalRTMap: counts.countryTotalRTMap,
    averageResponseTimeMap: ratios(counts.totalResponseTimeMap, counts.countMap),
    successRateMap: ratios(counts.successCountMap, counts.countMap),
    errorRateMap: ratios(counts.errorCountMap, counts.countMap),
    countryAverageRTMap: ratios(counts.countryTotalRTMap, counts.countryCountMap),
    p50ResponseTimeMap: percentiles.p50,
    p95ResponseTimeMap: percentiles.p95,
    p99ResponseTimeMap: percentiles.p99,
    ewmaResponseTime: counts.ewmaWeight > 0 ? counts.ewmaWeightedSum / counts.ewmaWeight : null,
  };
}

/**
 * Buckets from several sources (regions, proxies) merged: those of the same key summed, ordered
 * by key (time order), newest first when `newestFirst`, at most `limit`.
 */
export function mergeBuckets(
  buckets: Iterable<{ bucket: string; counts: TelemetryCounts }>,
  options: { limit?: number; newestFirst?: boolean } = {},
): TelemetryRecord[] {
  const byKey = new Map<string, TelemetryCounts[]>();
  for (const { bucket, counts } of buckets) byKey.set(bucket, [...(byKey.get(bucket) ?? []), counts]);
  const keys = [...byKey.keys()].sort();
  if (options.newestFirst) keys.reverse();
  return keys
    .slice(0, options.limit ?? keys.length)
    .map((key) => telemetryRecordOf(key, mergeCounts(byKey.get(key) ?? [])));
}
