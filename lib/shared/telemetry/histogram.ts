/**
 * Log-scale response-time histograms (the DDSketch mapping): a duration of `v` ms falls in bucket
 * `1 + ceil(log_γ v)` with γ = (1 + ε) / (1 − ε), and a bucket reads back as 2γ^k / (γ + 1), which
 * is within a relative error ε of every value the bucket holds. ε = 1 %, so γ ≈ 1.0202 and 75 s
 * (the data plane's timeout) is bucket 563. Durations below 1 ms (0 ms: the clock's resolution)
 * share bucket 0, read back as 0.
 *
 * Buckets are plain counters, so histograms add: a percentile from the sum of several histograms
 * (proxies, regions, minutes) is exactly as accurate as from one. Percentiles are nearest-rank
 * (the smallest value with at least p·n values at or below it) and are within ε of the nearest-rank
 * percentile of the raw durations. Pure.
 */

/** Relative accuracy of every percentile read from a histogram. */
export const HISTOGRAM_RELATIVE_ERROR = 0.01;
export const HISTOGRAM_GAMMA = (1 + HISTOGRAM_RELATIVE_ERROR) / (1 - HISTOGRAM_RELATIVE_ERROR);
const LOG_GAMMA = Math.log(HISTOGRAM_GAMMA);
/** Durations below this (ms) go to bucket 0. */
export const HISTOGRAM_MIN_MS = 1;

/** The bucket of a duration in milliseconds (0 for durations below 1 ms, and for non-numbers). */
export function histogramBucket(ms: number): number {
  if (!(ms >= HISTOGRAM_MIN_MS)) return 0;
  // The epsilon keeps exact powers of γ in their own bucket despite rounding of the logarithm.
  return 1 + Math.max(0, Math.ceil(Math.log(ms) / LOG_GAMMA - 1e-9));
}

/** The value a bucket reads back as (ms). */
export function histogramValue(bucket: number): number {
  if (bucket <= 0) return 0;
  return (2 * HISTOGRAM_GAMMA ** (bucket - 1)) / (HISTOGRAM_GAMMA + 1);
}

/** Bucket -> count. */
export type Histogram = ReadonlyMap<number, number>;

/** The sum of histograms. */
export function mergeHistograms(histograms: Iterable<Histogram>): Map<number, number> {
  const sum = new Map<number, number>();
  for (const histogram of histograms)
    for (const [bucket, count] of histogram) sum.set(bucket, (sum.get(bucket) ?? 0) + count);
  return sum;
}

/** The nearest-rank percentile `p` (0 < p <= 1) of a histogram, in ms; null when it is empty. */
export function histogramPercentile(histogram: Histogram, p: number): number | null {
  const buckets = [...histogram].filter(([, count]) => count > 0).sort(([a], [b]) => a - b);
  const total = buckets.reduce((sum, [, count]) => sum + count, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (const [bucket, count] of buckets) {
    seen += count;
    if (seen >= rank) return histogramValue(bucket);
  }
  return histogramValue((buckets.at(-1) as [number, number])[0]);
}

/** The nearest-rank percentile of raw values (what a histogram percentile approximates). */
export function exactPercentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1] as number;
}
