/**
 * Stage 4, forward: the outgoing request (caller headers minus hop-by-hop and the caller's
 * credential and the caller's own client-address headers, `X-Forwarded-For`, `X-Real-IP` and
 * `Forwarded` from the real address, the proxy's additions, the target credential applied), the call
 * to the target, and the target's answer as the caller's answer (hop-by-hop and service-proxy-*
 * headers dropped, cookies confined to this proxy). A proxy's request transform runs on the
 * outgoing request before the single-use claim and before the target credential is applied
 * (stages/transform.ts, through `deps.transformRequest`). A single-use proxy credential is claimed
 * here, just before the call; the pipeline settles the claim.
 */

import { type Admitted, type Answer, denied, notForwarded, serviceAnswer } from "#lib/data-plane/context.ts";
import type { LoadedCredential, ProxyRuntime } from "#lib/data-plane/runtime-config.ts";
import { forwardedResponseHeaders } from "#lib/data-plane/target-response.ts";
import { PROXY_TIMEOUT_SECONDS } from "#lib/db/entities/proxy.ts";
import { clientAddressHeaders, isClientAddressHeader, RESERVED_HEADER_NAMES } from "#lib/net/header-rules.ts";
import {
  OutboundBlockedError,
  OutboundConnectError,
  OutboundDecodeError,
  type OutboundResponse,
  OutboundTimeoutError,
  type sendOutbound,
} from "#lib/net/outbound.ts";
import { removeQueryPairs } from "#lib/net/query-pairs.ts";
import {
  applyTargetCredential,
  callerCredentialNames,
  mergeProxyAdditions,
  type OutgoingRequest,
} from "#lib/vault/apply-credential.ts";
import type { AuthType, TargetSecret } from "#lib/vault/secret-schemas.ts";
import type { SingleUseClaims } from "./claim.ts";
import { isStrippedHeader, routeOverride } from "./filter.ts";

/** Spec 8: responses above 6 MB are refused with 413 response-too-large. */
export const MAX_RESPONSE_BYTES = 6 * 1024 * 1024;
/** The proxy's timeout rule is the proxy entity's (lib/db/entities/proxy.ts). */
export const DEFAULT_TIMEOUT_SECONDS = PROXY_TIMEOUT_SECONDS.default;
export const MAX_TIMEOUT_SECONDS = PROXY_TIMEOUT_SECONDS.max;

/** Hop-by-hop headers (RFC 9110 7.6.1) and headers the gateway sets itself; never forwarded. */
const HOP_BY_HOP = new Set([...RESERVED_HEADER_NAMES, "proxy-authorization", "proxy-authenticate"]);

export interface ForwardDeps {
  claims: SingleUseClaims;
  send: typeof sendOutbound;
  /** The target credential's current token (customToken, oauth2), when it needs one. */
  dynamicToken: (runtime: ProxyRuntime, credential: LoadedCredential) => Promise<string | undefined>;
  now: () => number;
  /**
   * The request transform stage (stages/transform.ts): the request to send, or the answer of a
   * failed transform. Absent: no transform.
   */
  transformRequest?: (ctx: Admitted, outgoing: OutgoingRequest) => Promise<OutgoingRequest | Answer>;
}

/** Target URL: base URL + the path after /api/{proxyId} + the caller's query, unchanged. */
function targetUrl(base: string, apiPath: string, rawQuery: string): URL {
  const url = new URL(base);
  const basePath = url.pathname.replace(/\/$/, "");
  url.pathname = `${basePath}${apiPath.startsWith("/") ? apiPath : `/${apiPath}`}`;
  url.search = rawQuery ? `?${rawQuery}` : "";
  return url;
}

/** The request to send to the target, before the target credential is applied. */
export function outgoingRequest(ctx: Admitted): OutgoingRequest | Answer {
  const { runtime } = ctx;
  const callerCredential = callerCredentialNames(ctx.admission.proxyCredential);
  // Null prototype: a header of any name (`__proto__` included) is an own entry.
  const headers: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(ctx.request.headers)) {
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || callerCredential.headers.has(lower)) continue;
    if (isClientAddressHeader(lower)) continue; // set below from the real address
    if (isStrippedHeader(ctx, lower)) continue; // the proxy's header filter (docs/filters.md)
    headers[lower] = value;
  }
  Object.assign(headers, clientAddressHeaders(ctx.request.sourceIp));
  let url: URL;
  try {
    url = targetUrl(ctx.admission.target.targetBaseURL, ctx.apiPath, ctx.request.rawQuery);
  } catch {
    ctx.validation.requestConfigError = true;
    return notForwarded("The target URL is invalid");
  }
  removeQueryPairs(url, callerCredential.query);
  const body = ctx.request.body;
  // A path override's headers go over the proxy's own (later names win; names ignore case).
  const overrideHeaders = routeOverride(ctx)?.additionalHeaders;
  return mergeProxyAdditions(
    { method: ctx.request.method, url, headers, ...(body && body.length > 0 ? { body } : {}) },
    {
      headers: overrideHeaders
        ? { ...runtime.proxy.proxyAdditionalHeaders, ...overrideHeaders }
        : runtime.proxy.proxyAdditionalHeaders,
      queryParams: runtime.proxy.proxyAdditionalQueryParams,
      data: runtime.proxy.proxyAdditionalData,
    },
  );
}

export async function forward(ctx: Admitted, deps: ForwardDeps): Promise<Answer> {
  const { runtime } = ctx;
  const { proxyCredential, targetCredential } = ctx.admission;
  const v = ctx.validation;

  const built = outgoingRequest(ctx);
  if ("response" in built) return built;
  let outgoing = built;

  if (deps.transformRequest) {
    const transformed = await deps.transformRequest(ctx, outgoing);
    if ("response" in transformed) return transformed;
    outgoing = transformed;
  }

  if (proxyCredential.item.singleUse) {
    const { credentialId } = proxyCredential.item;
    if (!(await deps.claims.claim(runtime.clientId, credentialId))) {
      v.proxyAuthenticated = false;
      return denied("The single-use proxy credential was already used");
    }
    ctx.claim = { clientId: runtime.clientId, credentialId };
  }

  try {
    const dynamicToken = await deps.dynamicToken(runtime, targetCredential);
    ctx.dynamicToken = dynamicToken;
    outgoing = applyTargetCredential(
      outgoing,
      targetCredential.item.credentialAuthType as AuthType,
      targetCredential.secret as TargetSecret,
      { dynamicToken },
    );
  } catch {
    v.requestConfigError = true;
    return notForwarded("The target credential could not be applied (token endpoint failed)");
  }
  v.requestValid = true;

  const timeoutSeconds = Math.min(
    MAX_TIMEOUT_SECONDS,
    routeOverride(ctx)?.timeoutSeconds ?? runtime.proxy.proxyTimeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
  );
  const sentAt = deps.now();
  let response: OutboundResponse;
  try {
    v.requestSent = true;
    response = await deps.send({
      method: outgoing.method,
      url: outgoing.url,
      headers: outgoing.headers,
      body: outgoing.body,
      timeoutMs: timeoutSeconds * 1000,
      maxResponseBytes: MAX_RESPONSE_BYTES + 1,
    });
  } catch (error) {
    if (error instanceof OutboundTimeoutError)
      return serviceAnswer(504, {
        code: "proxy-access-granted",
        message: `The target did not answer within ${timeoutSeconds} s`,
      });
    if (error instanceof OutboundBlockedError) {
      v.requestSent = false;
      v.requestConfigError = true;
      return notForwarded("The target address is not allowed");
    }
    if (error instanceof OutboundConnectError) return notForwarded("The target could not be reached");
    if (error instanceof OutboundDecodeError) {
      v.responseReceived = true;
      return notForwarded(
        error.failure === "unsupported"
          ? `The target's response has a Content-Encoding the gateway cannot decode (${error.coding})`
          : `The target's response could not be decoded (${error.coding})`,
      );
    }
    throw error;
  }
  v.responseReceived = true;
  ctx.target = {
    sentAt,
    receivedAt: response.timings.endedAt,
    status: response.status,
    location: typeof response.headers.location === "string" ? response.headers.location : null,
    headers: response.headers,
    body: response.body,
  };
  if (response.truncated || response.body.length > MAX_RESPONSE_BYTES) {
    ctx.target.body = undefined;
    return serviceAnswer(413, { code: "response-too-large", message: "The target's response exceeds 6 MB" });
  }
  // Hop-by-hop and service-proxy-* headers dropped, cookies confined to this proxy.
  const forwarded = forwardedResponseHeaders(response.headers, ctx.proxyId);
  ctx.processed = true;
  const warnings: string[] = [];
  if (response.status === 401 || response.status === 403)
    warnings.push("The target refused the request: check the target credential");
  if (forwarded.droppedCookies.length > 0)
    warnings.push(`__Host- cookies of the target were dropped: ${forwarded.droppedCookies.join(", ")}`);
  return {
    response: {
      status: response.status,
      headers: forwarded.headers,
      cookies: forwarded.cookies,
      body: response.body,
    },
    outcome: {
      code: "proxy-access-granted",
      message: "Request forwarded to the target",
      ...(warnings.length > 0 ? { warning: warnings.join("; ") } : {}),
    },
  };
}
