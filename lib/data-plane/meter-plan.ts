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
 * target is called (it can refuse the request); in a limited window of a `response_value` meter
 * the request reserves room before (admitted while the value and the reservations in flight are
 * below the limit) and the reservation is settled to the real value afterwards; every other
 * window is added to after the answer.
 */
import type { MeterItem } from "#lib/db/entities/meter.ts";
import type { Extraction } from "#lib/domain/meters/extraction.ts";
import type { ValueMean } from "#lib/domain/meters/reservation.ts";
import {
  bindVariables,
  compileMeterMatcher,
  type Matcher,
  type PreparedPredicateRequest,
  preparePredicateRequest,
} from "#lib/domain/predicates/evaluate.ts";
import { omitNames } from "#lib/domain/request-view.ts";
import {
  type CalendarWindow,
  callerHash,
  countedWindows,
  type MeterWindow,
  windowAt,
  windowLimit,
} from "#lib/shared/meter-windows.ts";
import { callerCredentialNames } from "#lib/vault/apply-credential.ts";
import type { RequestContext } from "./context.ts";

/**
 * What this instance has learned of each response_value meter's value per request (by meter id):
 * the reservation of its next requests (lib/domain/meters/reservation.ts).
 */
export const valueMeans = new Map<string, ValueMean>();

export interface CompiledMeter {
  meterId: string;
  type: MeterItem["meterType"];
  applies: Matcher;
  /** The windows this meter counts, with their limits. */
  windows: { kind: MeterWindow; limit?: number }[];
  extraction: Extraction | null;
  variables: MeterItem["variables"];
  limitBy: string | null;
  /** The mean value per request recorded on the meter (response_value), when there is one. */
  valueMean?: number | undefined;
}

/** The active meters of a proxy, compiled; inactive meters are neither counted nor enforced. */
export function compileMeters(items: readonly MeterItem[]): CompiledMeter[] {
  return items
    .filter((item) => item.meterActive)
    .map((item) => {
      const kinds = countedWindows(item);
      // An instance that has seen no value of the meter starts from the mean recorded on it.
      if (item.valueMean !== undefined && !valueMeans.has(item.meterId))
        valueMeans.set(item.meterId, { sum: item.valueMean, n: 1 });
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
        valueMean: item.valueMean,
      };
    });
}

/** One meter a request counts in, with the windows of this moment. */
export interface MeterUse {
  meterId: string;
  type: MeterItem["meterType"];
  callerHash?: string;
  /** `reserved`: the room a response_value meter's limited window reserved for this request. */
  windows: { window: CalendarWindow; limit?: number; reserved?: number }[];
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
