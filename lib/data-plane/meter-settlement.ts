/**
 * The settlement of a request's meters after the answer (docs/meters.md "Counting on the data
 * plane"), written with the request log (stages/log.ts). Loaded on demand, after the first answer:
 * the cold start does not carry it, nor the response value extraction.
 */
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { tableName } from "#lib/db/store.ts";
import { extractResponseValue } from "#lib/domain/meters/extraction.ts";
import { learnValue, reservationOf, shouldRecordMean } from "#lib/domain/meters/reservation.ts";
import { describeError, log } from "#lib/log.ts";
import type { RequestContext } from "./context.ts";
import { type CounterStep, counterKeys } from "./counters.ts";
import { valueMeans } from "./meter-plan.ts";

/**
 * What is added after the answer: for a `response_value` meter, the value taken from the target's
 * response in each of its windows, and in each limited window the reservation made before the
 * target was called given back (also when there was no response: it settles at 0); for a
 * `request_count` meter, 1 in each window without a limit (the limited ones were counted before
 * the target was called). The value also updates the meter's mean (`valueMeans`).
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
    for (const { window, limit, reserved } of use.windows) {
      if (use.type === "request_count" && limit !== undefined) continue;
      if (amount === 0 && reserved === undefined) continue;
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
        ...(reserved !== undefined ? { reserved } : {}),
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
