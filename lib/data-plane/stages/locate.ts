/**
 * Stage 1, locate: which proxy the request is for, and its configuration (cached in the warm
 * function; read from the region's table on a miss, lib/data-plane/runtime-config.ts).
 */

import {
  type Answer,
  denied,
  type Located,
  type RequestContext,
  serviceAnswer,
} from "#lib/data-plane/context.ts";
import type { LoadedRuntime } from "#lib/data-plane/runtime-config.ts";
import { hasDotSegment } from "#lib/net/path-segments.ts";

/** Spec 4.13: the methods the data plane forwards. */
export const PROXY_METHODS: ReadonlySet<string> = new Set([
  "GET",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
  "HEAD",
]);

const PROXY_ID = /^[A-Za-z0-9-]{1,64}$/;

/** What the request can be refused for before any configuration is read. */
export function checkRequestShape(ctx: RequestContext): Answer | undefined {
  if (!ctx.pathMatched || !PROXY_ID.test(ctx.proxyId)) return denied("Unknown proxy");
  if (!PROXY_METHODS.has(ctx.request.method)) {
    return serviceAnswer(
      405,
      { code: "proxy-access-denied", message: `Method ${ctx.request.method.slice(0, 20)} is not supported` },
      { allow: [...PROXY_METHODS].join(", ") },
    );
  }
  return undefined;
}

export type LoadRuntime = (
  proxyId: string,
  options: { revalidate: boolean },
) => Promise<LoadedRuntime | undefined>;

/**
 * Find the proxy's configuration: `revalidate` false takes the cached copy without a call (the
 * count stage's freshness check then proves it current). Sets `ctx.runtime` and `ctx.fresh`, and
 * answers the context as `Located` (or the refusal).
 */
export async function locate(
  ctx: RequestContext,
  loadRuntime: LoadRuntime,
  options: { revalidate: boolean },
): Promise<Answer | Located> {
  const loaded = await loadRuntime(ctx.proxyId, options);
  ctx.validation = {};
  ctx.fresh = loaded?.fresh ?? true;
  if (!loaded) {
    ctx.runtime = undefined;
    return denied("Unknown proxy");
  }
  const located = Object.assign(ctx, { runtime: loaded.runtime });
  located.validation.proxyExists = true;
  if (hasDotSegment(ctx.apiPath)) {
    return serviceAnswer(400, {
      code: "proxy-access-denied",
      message: "The path must not contain . or .. segments (in any encoding) or backslashes",
    });
  }
  return located;
}
