/**
 * Filters and overrides of a proxy (docs/filters.md), as small steps around the other stages:
 *
 * - `screenCaller`, before admit: the caller's address against the IP deny and allow lists
 *   (403 `proxy-access-denied`), before the proxy credential is even looked at, so a refused
 *   network cannot probe credentials;
 * - `screenRequest`, after admit: the required headers (400 `required-header-missing`), before
 *   the request is counted;
 * - `routeOverride`, `isStrippedHeader`: read by forward (the path override's timeout and
 *   headers; the caller headers not forwarded);
 * - `filterResponse`, right after the target's answer: the fields removed from a JSON body, before
 *   response transforms (spec 1.5) and before the answer is returned or recorded in the log.
 *
 * No store call: everything comes from the compiled configuration (`runtime.policies`).
 */

import { type Answer, denied, type RequestContext, serviceAnswer } from "#lib/data-plane/context.ts";
import type { PathOverride } from "#lib/db/entities/proxy-policy.ts";
import { isJsonContentType } from "#lib/domain/predicates/dot-path.ts";
import type { IpDecision } from "#lib/net/ip-filter.ts";

/** A proxy's filters and overrides as the stages use them (compiled by lib/data-plane/policies.ts). */
export interface CompiledPolicies {
  checkCaller(address: string): IpDecision;
  /** Lowercase names. */
  requiredHeaders: readonly string[];
  stripHeaders: ReadonlySet<string>;
  /** Removes the configured fields from a parsed JSON value in place; absent when there are none. */
  removeFields?: (value: unknown) => number;
  /** The path override whose prefix covers the path, the longest one. */
  pathOverride(path: string): PathOverride | undefined;
}

/** A proxy without filters or overrides. */
export const NO_POLICIES: CompiledPolicies = {
  checkCaller: () => "allowed",
  requiredHeaders: [],
  stripHeaders: new Set(),
  pathOverride: () => undefined,
};

const policiesOf = (ctx: RequestContext) => ctx.runtime?.policies ?? NO_POLICIES;

/** The IP lists: 403 `proxy-access-denied` for a caller they refuse. */
export function screenCaller(ctx: RequestContext): Answer | undefined {
  const decision = policiesOf(ctx).checkCaller(ctx.request.sourceIp);
  if (decision === "allowed") return undefined;
  return denied(
    decision === "denied"
      ? "The caller's address is denied by the proxy's IP filter"
      : "The caller's address is not in the proxy's IP allow list",
  );
}

/** The required headers: 400 `required-header-missing` naming the first one missing. */
export function screenRequest(ctx: RequestContext): Answer | undefined {
  const required = policiesOf(ctx).requiredHeaders;
  if (required.length === 0) return undefined;
  const present = new Set(Object.keys(ctx.request.headers).map((name) => name.toLowerCase()));
  const missing = required.find((name) => !present.has(name));
  if (missing === undefined) return undefined;
  return serviceAnswer(400, {
    code: "required-header-missing",
    message: `The request must carry the header ${missing}`,
  });
}

/** True when the caller's header `name` (lowercase) is stripped before forwarding. */
export const isStrippedHeader = (ctx: RequestContext, name: string): boolean =>
  policiesOf(ctx).stripHeaders.has(name);

/** The path override that applies to this request (longest covering prefix), if any. */
export const routeOverride = (ctx: RequestContext): PathOverride | undefined =>
  policiesOf(ctx).pathOverride(ctx.apiPath);

function headerValue(headers: Record<string, string>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

/**
 * The payload filter: the configured fields removed from the target's JSON answer. A body that is
 * not JSON (by content type or content) is passed unchanged, and so is one where nothing matched
 * (byte for byte). The request log records the filtered body.
 */
export function filterResponse(ctx: RequestContext, answer: Answer): Answer {
  const remove = policiesOf(ctx).removeFields;
  if (!remove || !ctx.processed || answer.response.body.length === 0) return answer;
  if (!isJsonContentType(headerValue(answer.response.headers, "content-type"))) return answer;
  let value: unknown;
  try {
    value = JSON.parse(answer.response.body.toString("utf8"));
  } catch {
    return answer;
  }
  if (remove(value) === 0) return answer;
  const body = Buffer.from(JSON.stringify(value));
  if (ctx.target) ctx.target.body = body;
  return { ...answer, response: { ...answer.response, body } };
}
