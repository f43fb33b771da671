/**
 * Stage 3, count: the request is taken from every window that can refuse it (the plan's rate
 * limit per proxy credential, a managed client's limits per client, and each limited window of
 * each meter that applies), all or none, from the quota leases this instance holds
 * (lib/data-plane/counter-leases.ts: no store call while the blocks cover it, never a
 * transaction); in parallel, the check that the configuration it was admitted on is still current
 * (lib/data-plane/freshness.ts: strict, one GetItem; relaxed, none within the bound). Refused: 429
 * with `Retry-After` and the IETF RateLimit headers, nothing counted, the target never called.
 * Stale configuration: every unit taken goes back, the pipeline reloads and admits again.
 */

import type { Admitted, Answer, CountedLeases } from "#lib/data-plane/context.ts";
import { type CounterStep, counterKeys } from "#lib/data-plane/counters.ts";
import { type MeterUse, planMeters, valueMeans } from "#lib/data-plane/meter-plan.ts";
import { reservationOf } from "#lib/domain/meters/reservation.ts";
import { loadOnce } from "#lib/lazy.ts";
import { type CalendarWindow, windowAt } from "#lib/shared/meter-windows.ts";

/** The 429's code (stages/refusal.ts), loaded at the first refusal: a cold start does not carry it. */
const refusalModule = loadOnce(() => import("#lib/data-plane/stages/refusal.ts"));

/** What the limited counters answer for one request (counter-leases.ts CounterLeases.take). */
export type TakeOutcome = { refused: string[] } | { taken: CountedLeases & { restore(): void } };

/** The counters and the freshness check of the count stage (pipeline.ts makes them per instance). */
export interface Counting {
  /** Take the request in every limited step, or in none. */
  take(steps: readonly CounterStep[]): Promise<TakeOutcome>;
  /** Whether a configuration loaded at `version` may decide the request (`fresh`: read by it). */
  isCurrent(clientId: string, version: number, fresh: boolean): Promise<boolean>;
}

/** The step name of the plan's rate counter. */
export const RATE_STEP = "rate";
/** The step names of a managed client's limits: `client:minute`, `client:day`. */
export const CLIENT_STEP = "client:";

/**
 * The counters written before the target is called: the rate window, a managed client's limited
 * windows, and every limited meter window.
 */
export function countSteps(ctx: Admitted, uses: readonly MeterUse[], nowMs: number): CounterStep[] {
  const { runtime, admission } = ctx;
  const rateWindow = windowAt("minute", nowMs);
  const steps: CounterStep[] = [
    {
      name: RATE_STEP,
      key: counterKeys.rate(admission.credentialId, rateWindow),
      window: rateWindow,
      owner: {
        entity: "rateCounter",
        clientId: runtime.clientId,
        proxyId: runtime.proxyId,
        counterOf: admission.credentialId,
      },
      mode: "add",
      amount: 1,
      limit: admission.rateLimit,
    },
  ];
  // A managed client's limits (docs/msp-api.md "Enforcement"): one counter per client and window.
  for (const [kind, limit] of [
    ["minute", runtime.requestsPerMinute],
    ["day", runtime.requestsPerDay],
  ] as const) {
    if (limit === null) continue;
    const window = windowAt(kind, nowMs);
    steps.push({
      name: `${CLIENT_STEP}${kind}`,
      key: counterKeys.client(runtime.clientId, window),
      window,
      owner: {
        entity: "clientCounter",
        clientId: runtime.clientId,
        proxyId: runtime.proxyId,
        counterOf: runtime.clientId,
      },
      mode: "add",
      amount: 1,
      limit,
    });
  }
  for (const use of uses) {
    for (const window of use.windows) {
      if (window.limit === undefined) continue;
      // A response_value meter reserves room for the value to come (settled after the answer).
      if (use.type === "response_value")
        window.reserved = reservationOf(valueMeans.get(use.meterId), window.limit);
      const amount = window.reserved ?? 1;
      steps.push({
        name: meterStepName(use.meterId, window.window),
        key: counterKeys.meter(use.meterId, use.callerHash, window.window),
        window: window.window,
        owner: {
          entity: "meterCounter",
          clientId: runtime.clientId,
          proxyId: runtime.proxyId,
          counterOf: use.meterId,
        },
        mode: use.type === "request_count" ? "add" : "reserve",
        amount,
        limit: window.limit,
      });
    }
  }
  return steps;
}

export const meterStepName = (meterId: string, window: CalendarWindow) => `meter:${meterId}:${window.kind}`;

/**
 * Count the request. Answers a 429 when a window refuses it, "stale" when the configuration
 * changed since admission, undefined when counted (the request goes on).
 */
export async function count(
  ctx: Admitted,
  deps: { counting: Counting; now: () => number },
  options: { checkVersion: boolean },
): Promise<Answer | "stale" | undefined> {
  const { runtime } = ctx;
  const nowMs = deps.now();
  const uses = planMeters(ctx, nowMs);
  ctx.meterUses = uses;
  if (runtime.meters.length > 0) ctx.metering = { applied: uses.map((use) => use.meterId), refused: [] };
  const steps = countSteps(ctx, uses, nowMs);
  // The freshness check and the leases in parallel: in a steady state the leases answer locally.
  const [current, taken] = await Promise.allSettled([
    options.checkVersion ? deps.counting.isCurrent(runtime.clientId, runtime.version, ctx.fresh) : true,
    deps.counting.take(steps),
  ]);
  const held = taken.status === "fulfilled" && "taken" in taken.value ? taken.value.taken : undefined;
  if (current.status === "rejected" || taken.status === "rejected") {
    held?.restore();
    throw current.status === "rejected" ? current.reason : (taken as PromiseRejectedResult).reason;
  }
  if (!current.value) {
    held?.restore();
    return "stale";
  }
  if ("refused" in taken.value)
    return (await refusalModule()).refusal(ctx, steps, taken.value.refused, nowMs, uses);
  ctx.counted = true;
  ctx.leases = held;
  return undefined;
}
