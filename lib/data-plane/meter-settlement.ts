/**
 * The settlement of a request's meters after the answer (docs/meters.md "Counting on the data
 * plane"), written with the request log (stages/log.ts). Loaded on demand, after the first answer:
 * the cold start does not carry it, nor the response value extraction.
 */
import { extractResponseValue } from "../domain/meters/extraction.ts";
import { learnValue } from "../domain/meters/reservation.ts";
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
