/**
 * The 429 of the count stage (stages/count.ts) when a window refuses the request: `Retry-After`,
 * the IETF RateLimit headers and the service code of the refused window. Loaded on demand, at the
 * first refusal.
 */
import type { Answer, RequestContext } from "#lib/data-plane/context.ts";
import { serviceAnswer } from "#lib/data-plane/context.ts";
import type { CounterStep } from "#lib/data-plane/counters.ts";
import type { MeterUse } from "#lib/data-plane/meter-plan.ts";
import { meterPolicyName, type QuotaState, refusalHeaders } from "#lib/domain/meters/rate-limit-headers.ts";

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
