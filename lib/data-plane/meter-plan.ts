/**
 * Which meters a request counts in, and in which windows (docs/meters.md "Counting on the data plane").
 *
 * A meter is compiled once per configuration load (its predicates with the rules' linear-time
 * engine). Per request: every active meter whose mode and predicates apply is used; a per-caller
 * meter (`limitBy`) counts in the partition of the caller's bound value.
 *
 * Windows a meter counts: each window with a limit, each window with an alert threshold (when its
 * alerts use the `threshold` trigger), and all four when it has neither (an aggregate-only meter
 * still accumulates usage). A limited window of a `request_count` meter is counted before the
 * target is called (it can refuse the request); a limited window of a `response_value` meter is
 * checked before (the request is admitted while the accumulated value is below the limit) and
 * added to afterwards; every other window is added to after the answer.
 */
import type { MeterItem } from "../db/entities/meter.ts";
import { type Extraction, extractResponseValue } from "../domain/meters/extraction.ts";
import {
  type CalendarWindow,
  callerHash,
  effectiveThreshold,
  METER_WINDOWS,
  type MeterWindow,
  windowAt,
  windowLimit,
} from "../domain/meters/windows.ts";
import {
  bindVariables,
  compileMeterMatcher,
  type Matcher,
  type PreparedPredicateRequest,
  preparePredicateRequest,
} from "../domain/predicates/evaluate.ts";
import { omitNames } from "../domain/request-view.ts";
import { callerCredentialNames } from "../vault/apply-credential.ts";
import type { RequestContext } from "./context.ts";
import type { CounterStep } from "./counters.ts";
import { counterKeys } from "./counters.ts";

export interface CompiledMeter {
  meterId: string;
  type: MeterItem["meterType"];
  applies: Matcher;
  /** The windows this meter counts, with their limits. */
  windows: { kind: MeterWindow; limit?: number }[];
  extraction: Extraction | null;
  variables: MeterItem["variables"];
  limitBy: string | null;
}

/** The active meters of a proxy, compiled; inactive meters are neither counted nor enforced. */
export function compileMeters(items: readonly MeterItem[]): CompiledMeter[] {
  return items
    .filter((item) => item.meterActive)
    .map((item) => {
      const thresholds =
        item.alerts?.enabled && item.alerts.notifyTrigger === "threshold" ? item.alerts : null;
      const counted = METER_WINDOWS.filter(
        (kind) =>
          windowLimit(item.limits, kind) !== null ||
          (thresholds !== null && effectiveThreshold(thresholds.alertThreshold, item.limits, kind) !== null),
      );
      const kinds = counted.length > 0 ? counted : [...METER_WINDOWS];
      return {
        meterId: item.meterId,
        type: item.meterType,
        applies: compileMeterMatcher(item),
        windows: kinds.map((kind) => {
          const limit = windowLimit(item.limits, kind);
          return limit === null ? { kind } : { kind, limit };
        }),
        extraction: item.extraction,
        variables: item.variables,
        limitBy: item.limitBy,
      };
    });
}

/** One meter a request counts in, with the windows of this moment. */
export interface MeterUse {
  meterId: string;
  type: MeterItem["meterType"];
  callerHash?: string;
  windows: { window: CalendarWindow; limit?: number }[];
  extraction: Extraction | null;
}

/**
 * The request as the predicates and variables of meters and transforms see it, prepared once for
 * all of them: without the caller's credential (its headers, `authorization` always, and query
 * parameters; a jwtVerify caller's verified claims stand for it).
 */
export function predicateRequestOf(ctx: RequestContext): PreparedPredicateRequest {
  const callerCredential = callerCredentialNames(ctx.admission?.proxyCredential);
  return preparePredicateRequest({
    method: ctx.request.method,
    path: ctx.apiPath,
    headers: omitNames(ctx.request.headers, callerCredential.headers),
    query: omitNames(ctx.query, new Set(callerCredential.query)),
    body: ctx.request.body ?? null,
    contentType: ctx.request.headers["content-type"] ?? null,
    claims: (ctx.admission?.claims as Record<string, unknown> | undefined) ?? null,
  });
}

/** The meters the request counts in (after admission). */
export function planMeters(ctx: RequestContext, nowMs: number): MeterUse[] {
  const meters = ctx.runtime?.meters ?? [];
  if (meters.length === 0) return [];
  const request = predicateRequestOf(ctx);
  const uses: MeterUse[] = [];
  for (const meter of meters) {
    if (!meter.applies(request)) continue;
    let caller: string | undefined;
    if (meter.limitBy !== null) {
      // A request without a value for the variable counts in one shared bucket ("").
      caller = callerHash(bindVariables(meter.variables, request)[meter.limitBy] ?? "");
    }
    uses.push({
      meterId: meter.meterId,
      type: meter.type,
      ...(caller !== undefined ? { callerHash: caller } : {}),
      windows: meter.windows.map(({ kind, limit }) =>
        limit === undefined ? { window: windowAt(kind, nowMs) } : { window: windowAt(kind, nowMs), limit },
      ),
      extraction: meter.extraction,
    });
  }
  return uses;
}

/**
 * What is added after the answer: for a `response_value` meter, the value taken from the target's
 * response in each of its windows; for a `request_count` meter, 1 in each window without a limit
 * (the limited ones were counted before the target was called). A request that got no response
 * from the target adds no response value.
 */
export function settlementSteps(ctx: RequestContext): CounterStep[] {
  const runtime = ctx.runtime;
  if (!runtime) return [];
  const steps: CounterStep[] = [];
  for (const use of ctx.meterUses ?? []) {
    let amount = 1;
    if (use.type === "response_value") {
      if (!ctx.target || !use.extraction) continue;
      const contentType = ctx.target.headers["content-type"];
      amount = extractResponseValue(use.extraction, {
        headers: ctx.target.headers,
        body: ctx.target.body ?? null,
        contentType: Array.isArray(contentType) ? contentType[0] : (contentType ?? null),
      });
      if (amount === 0) continue;
    }
    for (const { window, limit } of use.windows) {
      if (use.type === "request_count" && limit !== undefined) continue;
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
      });
    }
  }
  return steps;
}
