/**
 * The pricing rules of a managed client's configuration (spec 4.14, 8), as pure functions. The MSP
 * API (lib/domain/msp-clients.ts) reads the stored configuration and the MSP's rates, applies
 * these, and writes the result; nothing else decides a stored rate or threshold.
 *
 * 1. stored rate = max(clamp(submitted, 0.7, 1), the MSP's rate for the same metric); out-of-range
 *    values are moved into range, not rejected; an omitted metric keeps its stored value.
 * 2. Budget thresholds apply only when the resulting billingTo is `msp` and billingType `stripe`:
 *    the minimum is raised to 5, the maximum to at least 20 and at least 10 above the minimum.
 *    Otherwise the stored thresholds are left unchanged. `budget.current` is never set here.
 */

export const RATE_METRICS = ["apiSeconds", "storageGB", "aiTokens", "plan"] as const;
export type RateMetric = (typeof RATE_METRICS)[number];
export type Rates = Record<RateMetric, number>;

export const MIN_CLIENT_RATE = 0.7;
export const MAX_CLIENT_RATE = 1;
export const MIN_TOP_UP_THRESHOLD = 5;
export const MIN_MAX_TOP_UP_THRESHOLD = 20;
export const MIN_TOP_UP_SPREAD = 10;

export const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

/** One metric: clamp into [0.7, 1], then never below the MSP's own rate. */
export const storedRate = (submitted: number, mspRate: number): number =>
  Math.max(clamp(submitted, MIN_CLIENT_RATE, MAX_CLIENT_RATE), mspRate);

/** The rates to store: submitted metrics by rule 1, omitted ones as they are. */
export function applyRates(current: Rates, submitted: Partial<Rates> | undefined, msp: Rates): Rates {
  const next = { ...current };
  for (const metric of RATE_METRICS) {
    const value = submitted?.[metric];
    if (value !== undefined) next[metric] = storedRate(value, msp[metric]);
  }
  return next;
}

export interface Thresholds {
  minimumTopUpThreshold: number;
  maximumTopUpThreshold: number;
}

/** Rule 2's floors, for thresholds that apply. */
export function raiseThresholds(input: Thresholds): Thresholds {
  const minimum = Math.max(input.minimumTopUpThreshold, MIN_TOP_UP_THRESHOLD);
  const maximum = Math.max(
    input.maximumTopUpThreshold,
    MIN_MAX_TOP_UP_THRESHOLD,
    minimum + MIN_TOP_UP_SPREAD,
  );
  return { minimumTopUpThreshold: minimum, maximumTopUpThreshold: maximum };
}

export const thresholdsApply = (billingTo: string, billingType: string) =>
  billingTo === "msp" && billingType === "stripe";

/**
 * The thresholds to store: when they apply, the submitted ones (an omitted one keeps its stored
 * value) raised to the floors; when they do not, the stored ones unchanged.
 */
export function applyThresholds(
  current: Thresholds,
  submitted: Partial<Thresholds> | undefined,
  context: { billingTo: string; billingType: string },
): Thresholds {
  if (!thresholdsApply(context.billingTo, context.billingType)) return { ...current };
  return raiseThresholds({
    minimumTopUpThreshold: submitted?.minimumTopUpThreshold ?? current.minimumTopUpThreshold,
    maximumTopUpThreshold: submitted?.maximumTopUpThreshold ?? current.maximumTopUpThreshold,
  });
}
