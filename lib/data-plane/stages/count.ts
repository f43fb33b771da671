/**
 * Stage 3, count: the request is counted in every window that can refuse it (the plan's rate
 * limit per proxy credential, a managed client's limits per client, and each limited window of
 * each meter that applies), together with
 * the check that the configuration it was admitted on is still current, in ONE transaction
 * (lib/data-plane/counters.ts). Refused: 429 with `Retry-After` and the IETF RateLimit headers,
 * nothing counted, the target never called. Stale configuration: the pipeline reloads and admits
 * again.
 */

import type { Admitted, Answer, RequestContext } from "#lib/data-plane/context.ts";
import { serviceAnswer } from "#lib/data-plane/context.ts";
import {
  type CountDecision,
  type CounterStep,
  clientRequestToken,
  type commitCounters,
  counterKeys,
} from "#lib/data-plane/counters.ts";
import { type MeterUse, planMeters, valueMeans } from "#lib/data-plane/meter-plan.ts";
import { meterPolicyName, type QuotaState, refusalHeaders } from "#lib/domain/meters/rate-limit-headers.ts";
import { reservationOf } from "#lib/domain/meters/reservation.ts";
import { type CalendarWindow, windowAt } from "#lib/shared/meter-windows.ts";

export type CommitCounters = typeof commitCounters;

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

/** The 429 for the refused steps: `Retry-After` is the longest wait among them. */
export function refusal(
  ctx: RequestContext,
  steps: readonly CounterStep[],
  refused: readonly string[],
  nowMs: number,
  uses: readonly MeterUse[] = [],
): Answer {
  const refusedSteps = steps.filter((step) => refused.includes(step.name));
  const meters = refusedSteps.filter((step) => step.owner.entity === "meterCounter");
  if (ctx.metering)
    ctx.metering.refused = meters.map((step) => ({
      meterId: step.owner.counterOf,
      window: step.window.kind,
    }));
  const states: QuotaState[] = refusedSteps.map((step) => {
    const use = uses.find((candidate) => candidate.meterId === step.owner.counterOf);
    return {
      name:
        step.owner.entity === "meterCounter"
          ? meterPolicyName(step.owner.counterOf, step.window.kind)
          : step.name.replace(":", "-"),
      limit: step.limit ?? 0,
      used: step.limit ?? 0,
      window: step.window,
      ...(use?.type === "response_value" ? { unit: "value" as const } : {}),
      ...(use?.callerHash ? { partitionKey: use.callerHash } : {}),
    };
  });
  const headers = refusalHeaders(states, nowMs);
  const client = refusedSteps.find((step) => step.owner.entity === "clientCounter");
  if (client)
    return serviceAnswer(
      429,
      {
        code: "client-limit-exceeded",
        message: `Too many requests: the client's limit of ${client.limit} requests per ${client.window.kind} is reached`,
      },
      { ...headers },
    );
  const first = meters[0];
  if (!first) {
    return serviceAnswer(
      429,
      {
        code: "proxy-access-granted",
        message: "Too many requests: the proxy credential's rate limit is exceeded",
      },
      { ...headers, "x-ratelimit-limit": String(refusedSteps[0]?.limit ?? 0), "x-ratelimit-remaining": "0" },
    );
  }
  return serviceAnswer(
    429,
    {
      code: "meter-limit-exceeded",
      message: `Too many requests: the ${first.window.kind} limit of meter ${first.owner.counterOf} is reached`,
    },
    { ...headers },
  );
}

/**
 * Count the request. Answers a 429 when a window refuses it, "stale" when the configuration
 * changed since admission, undefined when counted (the request goes on).
 */
export async function count(
  ctx: Admitted,
  deps: { region: string; commit: CommitCounters; now: () => number },
  options: { attempt: number; checkVersion: boolean },
): Promise<Answer | "stale" | undefined> {
  const { runtime } = ctx;
  const nowMs = deps.now();
  const uses = planMeters(ctx, nowMs);
  ctx.meterUses = uses;
  if (runtime.meters.length > 0) ctx.metering = { applied: uses.map((use) => use.meterId), refused: [] };
  const steps = countSteps(ctx, uses, nowMs);
  const decision: CountDecision = await deps.commit(deps.region, steps, {
    ...(options.checkVersion ? { version: { clientId: runtime.clientId, version: runtime.version } } : {}),
    token: clientRequestToken(ctx.requestId, `count:${options.attempt}`),
  });
  if (decision.outcome === "stale") return "stale";
  if (decision.outcome === "refused") return refusal(ctx, steps, decision.refused, nowMs, uses);
  ctx.counted = true;
  return undefined;
}
