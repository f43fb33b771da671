/**
 * An MSP's usage report and the budget draw-down of its managed clients (docs/msp-api.md, "Usage,
 * budget and top-ups"). API seconds are the sum of request durations (the proxy leg: received to
 * answered) that the telemetry consumer stores per client and month (docs/telemetry.md); amounts
 * are priced by lib/domain/msp-pricing.ts.
 */
import { getConfig } from "#lib/config.ts";
import { type BudgetDraw, drawDownBudgets } from "#lib/db/entities/budget.ts";
import { clientItemOf } from "#lib/db/entities/client.ts";
import { type ClientConfigItem, clientConfigItemOf } from "#lib/db/entities/client-config.ts";
import { findMspWithConfig, listClientLinksOfMsp } from "#lib/db/entities/msp.ts";
import { listTelemetryBuckets } from "#lib/db/entities/telemetry.ts";
import { keys } from "#lib/db/keys.ts";
import { batchGet } from "#lib/db/store.ts";
import { log } from "#lib/log.ts";
import { notFound } from "#lib/shared/errors.ts";
import type { BucketDelta } from "#lib/shared/telemetry/aggregate.ts";
import type { MspAccess } from "./access.ts";
import {
  apiSecondsAmountNanos,
  apiSecondsOf,
  CURRENCY,
  nanosToAmount,
  nanosToDecimal,
  priceUsage,
} from "./msp-pricing.ts";
import { MSP_NOT_FOUND } from "./msps.ts";

/** Telemetry Queries run at once while a report is built (clients × regions). */
const READ_CONCURRENCY = 16;

/** Runs `task` over `items`, at most `limit` at a time; results in the order of `items`. */
async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** A client's requests and request milliseconds in one month, summed over the deployment's regions. */
async function monthTelemetry(
  clientId: string,
  month: string,
): Promise<{ requests: number; apiMilliseconds: number }> {
  const perRegion = await Promise.all(
    getConfig().regions.map((region) =>
      listTelemetryBuckets(region, {
        scope: "client",
        id: clientId,
        interval: "month",
        from: month,
        to: month,
        limit: 1,
      }),
    ),
  );
  let requests = 0;
  let apiMilliseconds = 0;
  for (const bucket of perRegion.flat()) {
    requests += bucket.counts.countMap.proxy ?? 0;
    apiMilliseconds += bucket.counts.totalResponseTimeMap.proxy ?? 0;
  }
  return { requests, apiMilliseconds };
}

export interface UsageRow {
  clientId: string;
  clientName: string;
  billingTo: "client" | "msp";
  requests: number;
  apiSeconds: number;
  clientRate: number;
  amountAtClientRates: number;
  mspRate: number;
  amountAtMspRates: number;
}

export interface UsageReport {
  month: string;
  currency: string;
  usage: UsageRow[];
  totals: { requests: number; apiSeconds: number; amountAtClientRates: number; amountAtMspRates: number };
  pagination: { page: number; limit: number; total: number; pages: number };
}

/**
 * GET /api/msps/{mspId}/usage?month=YYYY-MM: every managed client's month (one Query per client
 * and region on its month bucket; at most 1,000 clients), priced at the client's current
 * `rates.apiSeconds` and at the MSP's. `totals` cover every managed client; `usage` is the asked
 * page of rows, in the order of the MSP's client links.
 */
export async function mspUsageReport(
  access: MspAccess,
  query: { month: string; page: number; limit: number },
): Promise<UsageReport> {
  const [links, found] = await Promise.all([
    listClientLinksOfMsp(access.mspId),
    findMspWithConfig(access.mspId),
  ]);
  if (!found?.config) throw notFound(MSP_NOT_FOUND);
  const mspRate = found.config.rates.apiSeconds;
  const ids = links.map((link) => link.clientId);
  const [clients, configs, telemetry] = await Promise.all([
    batchGet(ids.map(keys.client)),
    batchGet(ids.map(keys.clientConfig)),
    mapBounded(ids, READ_CONCURRENCY, (clientId) => monthTelemetry(clientId, query.month)),
  ]);
  const nameOf = new Map(clients.map(clientItemOf).map((client) => [client.clientId, client.clientName]));
  const configOf = new Map(configs.map(clientConfigItemOf).map((config) => [config.clientId, config]));
  const totals = { requests: 0, apiMilliseconds: 0, client: 0n, msp: 0n };
  const rows: UsageRow[] = [];
  ids.forEach((clientId, index) => {
    const config = configOf.get(clientId);
    const name = nameOf.get(clientId);
    if (!config || name === undefined) return; // a client being deleted
    const used = telemetry[index] as { requests: number; apiMilliseconds: number };
    const priced = priceUsage({
      apiMilliseconds: used.apiMilliseconds,
      clientRate: config.rates.apiSeconds,
      mspRate,
    });
    totals.requests += used.requests;
    totals.apiMilliseconds += used.apiMilliseconds;
    totals.client += priced.amountAtClientRatesNanos;
    totals.msp += priced.amountAtMspRatesNanos;
    rows.push({
      clientId,
      clientName: name,
      billingTo: config.billingTo,
      requests: used.requests,
      apiSeconds: priced.apiSeconds,
      clientRate: config.rates.apiSeconds,
      amountAtClientRates: nanosToAmount(priced.amountAtClientRatesNanos),
      mspRate,
      amountAtMspRates: nanosToAmount(priced.amountAtMspRatesNanos),
    });
  });
  const start = (query.page - 1) * query.limit;
  return {
    month: query.month,
    currency: CURRENCY,
    usage: rows.slice(start, start + query.limit),
    totals: {
      requests: totals.requests,
      apiSeconds: apiSecondsOf(totals.apiMilliseconds),
      amountAtClientRates: nanosToAmount(totals.client),
      amountAtMspRates: nanosToAmount(totals.msp),
    },
    pagination: {
      page: query.page,
      limit: query.limit,
      total: rows.length,
      pages: Math.ceil(rows.length / query.limit),
    },
  };
}

export const USAGE_CSV_COLUMNS = [
  "month",
  "clientId",
  "clientName",
  "billingTo",
  "requests",
  "apiSeconds",
  "clientRate",
  "amountAtClientRates",
  "mspRate",
  "amountAtMspRates",
  "currency",
] as const;

/** One CSV field (RFC 4180): quoted when it holds a comma, quote or line break; a leading =+-@ is defused. */
export function csvField(value: string | number): string {
  let text = String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The report's rows as CSV (header line first, CRLF line ends); amounts as fixed 9-place decimals. */
export function usageCsv(report: Pick<UsageReport, "month" | "currency" | "usage">): string {
  const amount = (value: number) => nanosToDecimal(BigInt(Math.round(value * 1e9)));
  const lines = [USAGE_CSV_COLUMNS.join(",")];
  for (const row of report.usage)
    lines.push(
      [
        report.month,
        row.clientId,
        row.clientName,
        row.billingTo,
        row.requests,
        row.apiSeconds.toFixed(3),
        row.clientRate,
        amount(row.amountAtClientRates),
        row.mspRate,
        amount(row.amountAtMspRates),
        report.currency,
      ]
        .map(csvField)
        .join(","),
    );
  return `${lines.join("\r\n")}\r\n`;
}

// ---- budget draw-down (the telemetry consumer, per stream part) ----

/** Request milliseconds per client in a part's aggregated deltas (its client month buckets). */
export function clientMillisecondsOf(deltas: readonly BucketDelta[]): Map<string, number> {
  const byClient = new Map<string, number>();
  for (const delta of deltas) {
    if (delta.ref.scope !== "client" || delta.ref.interval !== "month") continue;
    const ms = delta.counts.totalResponseTimeMap.proxy ?? 0;
    byClient.set(delta.ref.clientId, (byClient.get(delta.ref.clientId) ?? 0) + ms);
  }
  return byClient;
}

/** A client billed to its MSP: its usage draws its budget down. */
const billedToMsp = (config: ClientConfigItem) => config.mspId !== null && config.billingTo === "msp";

/** The draw of each billed client of a part, priced at the configuration's rate. */
export function drawsOf(
  milliseconds: ReadonlyMap<string, number>,
  configs: ReadonlyMap<string, ClientConfigItem>,
) {
  const draws: BudgetDraw[] = [];
  for (const [clientId, ms] of milliseconds) {
    const config = configs.get(clientId);
    if (!config || !billedToMsp(config)) continue;
    const nanos = apiSecondsAmountNanos(ms, config.rates.apiSeconds);
    if (nanos > 0n) draws.push({ clientId, amount: nanosToAmount(nanos), rate: config.rates.apiSeconds });
  }
  return draws;
}

const MAX_PRICING_ATTEMPTS = 4;

/**
 * Draws down the budgets of the clients billed to their MSP by one stream part's request time,
 * exactly once per part (lib/db/entities/budget.ts: the marker and the decrements are one
 * transaction). A configuration that changed between read and write (billing, rate) is read and
 * priced again. Answers the clients drawn down by this part (for the top-up check).
 */
export async function drawDownPart(digest: string, deltas: readonly BucketDelta[]): Promise<string[]> {
  const milliseconds = clientMillisecondsOf(deltas);
  if (milliseconds.size === 0) return [];
  const configs = new Map<string, ClientConfigItem>();
  let toRead = [...milliseconds.keys()];
  for (let attempt = 1; ; attempt++) {
    for (const item of await batchGet(toRead.map(keys.clientConfig))) {
      const config = clientConfigItemOf(item);
      configs.set(config.clientId, config);
    }
    const draws = drawsOf(milliseconds, configs);
    const result = await drawDownBudgets(digest, draws);
    // Already applied (a redelivery): the same clients, so a top-up check the first delivery missed runs now.
    if (result.outcome !== "stale") return draws.map((draw) => draw.clientId);
    if (attempt >= MAX_PRICING_ATTEMPTS)
      throw new Error(`Budgets kept changing while part ${digest} was priced`);
    log.info("Budget draw-down priced again: a configuration changed", { clients: result.clientIds.length });
    toRead = result.clientIds;
  }
}
