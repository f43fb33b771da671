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

// ---- usage pricing (docs/msp-api.md, "Usage, budget and top-ups") ----

/**
 * The retail (list) price of one API second, in nano-US-dollars: 100,000 nano-USD = $0.0001 per
 * API second ($0.36 per hour of request time). A client's and an MSP's `rates.apiSeconds` are
 * fractions of it. The one place the list price is declared.
 */
export const API_SECOND_RETAIL_NANOS = 100_000;
/** The currency of amounts, budgets and top-up charges. */
export const CURRENCY = "usd";
/** Amounts are exact in nano-dollars: 9 decimal places. */
export const AMOUNT_DECIMALS = 9;
const NANOS_PER_UNIT = 1_000_000_000n;
/** Rates take part in pricing to 6 decimal places (0.123456). */
const RATE_SCALE = 1_000_000n;

/** a / b rounded half up, for a ≥ 0, b > 0. */
const divideHalfUp = (a: bigint, b: bigint) => (2n * a + b) / (2n * b);

/**
 * The price of `apiMilliseconds` of request time at `rate` (a fraction of retail), in whole
 * nano-dollars: ms × 100 nano-USD (the retail price per ms) × rate, rounded half up once. Integer
 * arithmetic: no binary floating-point error.
 */
export function apiSecondsAmountNanos(apiMilliseconds: number, rate: number): bigint {
  if (!Number.isFinite(apiMilliseconds) || apiMilliseconds < 0) throw new RangeError("apiMilliseconds ≥ 0");
  if (!Number.isFinite(rate) || rate < 0) throw new RangeError("rate ≥ 0");
  const ms = BigInt(Math.round(apiMilliseconds));
  const scaledRate = BigInt(Math.round(rate * Number(RATE_SCALE)));
  return divideHalfUp(ms * (BigInt(API_SECOND_RETAIL_NANOS) / 1000n) * scaledRate, RATE_SCALE);
}

/**
 * Nano-dollars as a JSON number of dollars. Below $1,000,000 (15 significant digits) the number's
 * shortest text is exactly the 9-place decimal, so DynamoDB adds it exactly.
 */
export const nanosToAmount = (nanos: bigint): number => Number(nanos) / Number(NANOS_PER_UNIT);

/** Nano-dollars as a fixed 9-place decimal text ("0.000012345"), for CSV. */
export function nanosToDecimal(nanos: bigint): string {
  const sign = nanos < 0n ? "-" : "";
  const abs = nanos < 0n ? -nanos : nanos;
  return `${sign}${abs / NANOS_PER_UNIT}.${(abs % NANOS_PER_UNIT).toString().padStart(AMOUNT_DECIMALS, "0")}`;
}

/** API seconds from stored milliseconds (3 decimal places, exact). */
export const apiSecondsOf = (apiMilliseconds: number) => Math.round(apiMilliseconds) / 1000;

/** One managed client's month, priced at the client's and at the MSP's `apiSeconds` rate. */
export function priceUsage(input: { apiMilliseconds: number; clientRate: number; mspRate: number }) {
  return {
    apiSeconds: apiSecondsOf(input.apiMilliseconds),
    amountAtClientRatesNanos: apiSecondsAmountNanos(input.apiMilliseconds, input.clientRate),
    amountAtMspRatesNanos: apiSecondsAmountNanos(input.apiMilliseconds, input.mspRate),
  };
}

// ---- top-ups ----

/** Budget fields that decide a top-up. */
export interface BudgetState {
  current: number;
  minimumTopUpThreshold: number;
  maximumTopUpThreshold: number;
}

/** After a refused automatic charge, automatic top-ups wait this long (a declined card is not retried per batch). */
export const AUTOMATIC_TOP_UP_PAUSE_MS = 3_600_000;

/**
 * Automatic top-up: due when billed to the MSP by Stripe, `automatic`, `current` below the
 * minimum, and no automatic charge was refused in the last hour.
 */
export function automaticTopUpDue(
  config: {
    billingTo: string;
    billingType: string;
    topUpMethod: string;
    budget: BudgetState;
    automaticTopUpFailedAt: string | null;
  },
  nowMs: number,
): boolean {
  const failedAt = config.automaticTopUpFailedAt ? Date.parse(config.automaticTopUpFailedAt) : Number.NaN;
  return (
    thresholdsApply(config.billingTo, config.billingType) &&
    config.topUpMethod === "automatic" &&
    config.budget.current < config.budget.minimumTopUpThreshold &&
    !(nowMs - failedAt < AUTOMATIC_TOP_UP_PAUSE_MS)
  );
}

/**
 * The automatic top-up charge, in cents: what brings `current` up to `maximum`, rounded up to a
 * whole cent (so the balance lands on the maximum or less than a cent above it). 0 when none is due.
 */
export function automaticTopUpCents(budget: BudgetState): number {
  const missing = budget.maximumTopUpThreshold - budget.current;
  if (missing <= 0) return 0;
  // To whole nano-dollars first (amounts are exact to 9 places): 15.2 - 0.1 is 15.099999999999998
  // in floating point, which is 1510 cents, not 1511.
  return Math.ceil(Math.round(missing * 1e9) / 1e7);
}

/** Stripe's smallest USD charge, in cents. */
export const MIN_CHARGE_CENTS = 50;

/**
 * A manual top-up of `amount` dollars: whole cents, at least $0.50 (the processor's minimum), and
 * never beyond the maximum: `current + amount ≤ maximumTopUpThreshold`. Answers the problem, or
 * undefined when the amount may be charged.
 */
export function manualTopUpProblem(amount: number, budget: BudgetState): string | undefined {
  if (!Number.isFinite(amount) || Math.abs(amount * 100 - Math.round(amount * 100)) > 1e-6)
    return "must be an amount in whole cents";
  if (Math.round(amount * 100) < MIN_CHARGE_CENTS) return "must be at least 0.50";
  if (Math.round((budget.current + amount) * 1e6) > Math.round(budget.maximumTopUpThreshold * 1e6))
    return `must not raise the budget above its maximum (${budget.maximumTopUpThreshold}; room: ${Math.max(0, Math.floor((budget.maximumTopUpThreshold - budget.current) * 100) / 100)})`;
  return undefined;
}
