/**
 * The settlement of a request's meters after the answer (docs/meters.md "Counting on the data
 * plane"), written with the request log (stages/log.ts). Loaded on demand, after the first answer:
 * the cold start does not carry it, nor the response value extraction.
 */
import { dynamo } from "#lib/aws/clients.ts";
import { TransactWriteCommand, UpdateCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { tableName, transactItemsOf } from "#lib/db/store.ts";
import { extractResponseValue } from "#lib/domain/meters/extraction.ts";
import { learnValue, reservationOf, shouldRecordMean } from "#lib/domain/meters/reservation.ts";
import { describeError, log } from "#lib/log.ts";
import type { RequestContext } from "./context.ts";
import { type CounterStep, clientRequestToken, counterKeys, counterTransaction } from "./counters.ts";
import { valueMeans } from "./meter-plan.ts";
import { meterStepName } from "./stages/count.ts";

/**
 * What is added after the answer to each meter window's `value` (the admitted count, what its
 * readers see): for a `response_value` meter, the value taken from the target's response (0 when
 * there was none); for a `request_count` meter, 1 in every window (a limited one took its unit
 * from a quota lease before the target was called). In a limited window of a response_value
 * meter the reservation taken from the lease is settled at the value (counter-leases.ts): less
 * goes back to the instance's block, more is spent from it, and what the block cannot cover is
 * added to the item's `leased` here (`leaseDelta`). The value also updates the meter's mean
 * (`valueMeans`).
 */
export function settlementSteps(ctx: RequestContext): CounterStep[] {
  const runtime = ctx.runtime;
  if (!runtime) return [];
  const steps: CounterStep[] = [];
  for (const use of ctx.meterUses ?? []) {
    let amount = 1;
    if (use.type === "response_value") {
      amount = 0;
      if (ctx.target && use.extraction) {
        const contentType = ctx.target.headers["content-type"];
        amount = extractResponseValue(use.extraction, {
          headers: ctx.target.headers,
          body: ctx.target.body ?? null,
          contentType: Array.isArray(contentType) ? contentType[0] : (contentType ?? null),
        });
        valueMeans.set(use.meterId, learnValue(valueMeans.get(use.meterId), amount));
      }
    }
    for (const { window, reserved } of use.windows) {
      const leaseDelta =
        reserved !== undefined ? (ctx.leases?.settle(meterStepName(use.meterId, window), amount) ?? 0) : 0;
      if (amount === 0 && leaseDelta === 0) continue;
      steps.push({
        name: `settle:${use.meterId}:${window.kind}`,
        key: counterKeys.meter(use.meterId, use.callerHash, window),
        window,
        owner: {
          entity: "meterCounter",
          clientId: runtime.clientId,
          proxyId: runtime.proxyId,
          counterOf: use.meterId,
        },
        mode: "add",
        amount,
        ...(leaseDelta !== 0 ? { leaseDelta } : {}),
      });
    }
  }
  return steps;
}

/** The mean this instance last recorded on each meter (by meter id). */
const recordedMeans = new Map<string, number>();

/**
 * Record this instance's mean value per request on a reserving meter (`valueMean` on the meter
 * item, read with the configuration by instances that have seen no value yet) when none is
 * recorded or it is off by more than a factor of 2 (shouldRecordMean). Off the caller's wait;
 * never throws (a failed write is logged: the next settlement tries again).
 */
export async function recordMeans(region: string, ctx: RequestContext): Promise<void> {
  const runtime = ctx.runtime;
  if (!runtime || !ctx.target) return;
  for (const use of ctx.meterUses ?? []) {
    const learned = valueMeans.get(use.meterId);
    if (!learned || !use.windows.some((window) => window.reserved !== undefined)) continue;
    const mean = reservationOf(learned, 0);
    const recorded =
      recordedMeans.get(use.meterId) ??
      runtime.meters.find((meter) => meter.meterId === use.meterId)?.valueMean;
    if (!shouldRecordMean(recorded, mean)) continue;
    recordedMeans.set(use.meterId, mean);
    try {
      await dynamo(region).send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.meter(runtime.clientId, runtime.proxyId, use.meterId),
          UpdateExpression: "SET valueMean = :mean",
          // Only a meter that still exists (a deleted one is not written back).
          ConditionExpression: "entity = :meter",
          ExpressionAttributeValues: { ":mean": mean, ":meter": "meter" },
        }),
      );
    } catch (error) {
      // A meter deleted meanwhile stays marked (its next configuration drops it); else retry later.
      if ((error as Error).name === "ConditionalCheckFailedException") continue;
      recordedMeans.delete(use.meterId);
      log.warn("Meter mean could not be recorded", { ...describeError(error), meterId: use.meterId });
    }
  }
}

/**
 * Most actions of one TransactWriteItems. A settlement has at most one step per meter and window
 * (20 meters x 4 windows) plus the log, so it is one transaction (test/integration/stages/log.test.ts
 * checks the bound); the parts below are only a guard should those limits grow.
 */
const MAX_TRANSACTION_ACTIONS = 100;

/**
 * The request log and the settlement in one TransactWriteItems (stages/log.ts), idempotent under
 * an SDK retry by its ClientRequestToken (derived from the request id). Throws what the store
 * throws (the caller logs it).
 */
export async function writeSettlement(
  region: string,
  requestId: string,
  item: Record<string, unknown> | undefined,
  settlement: readonly CounterStep[],
): Promise<void> {
  const counters = transactItemsOf(counterTransaction(settlement, undefined));
  const actions = [...(item ? [{ Put: { TableName: tableName(), Item: item } }] : []), ...counters];
  for (let start = 0, part = 0; start < actions.length; start += MAX_TRANSACTION_ACTIONS, part++) {
    await dynamo(region).send(
      new TransactWriteCommand({
        TransactItems: actions.slice(start, start + MAX_TRANSACTION_ACTIONS),
        ClientRequestToken: clientRequestToken(requestId, `settle:${part}`),
      }),
    );
  }
}
