/**
 * The data plane (spec 4.13): one proxied request, from the caller's request to the target and
 * back, with the request log written before the answer leaves.
 *
 * Order of checks (each failure answers with the service headers and is logged): proxy exists ->
 * proxy active -> billing not suspended -> caller authenticated by the proxy credential -> rate
 * limit of that credential -> access rules (credential, proxy, target) -> single use claimed ->
 * target called with the target credential applied.
 */

import { dynamo, isServiceUnavailable } from "../aws/clients.ts";
import { PutCommand, UpdateCommand } from "../db/document-client.ts";
import { keys } from "../db/keys.ts";
import { isConditionalCheckFailure, tableName } from "../db/store.ts";
import { deleteWithDependants, usesCredential } from "../domain/cascade.ts";
import { rateLimitForPlan } from "../domain/plans.ts";
import { consumeRequest } from "../domain/rate-limit.ts";
import { evaluateAccess } from "../domain/rules/rule-evaluator.ts";
import { ALARMED_METRICS, describeError, log, metricFields } from "../log.ts";
import { RESERVED_HEADER_NAMES } from "../net/header-rules.ts";
import {
  OutboundBlockedError,
  OutboundConnectError,
  type OutboundResponse,
  OutboundTimeoutError,
  sendOutbound,
} from "../net/outbound.ts";
import { removeQueryPairs } from "../net/query-pairs.ts";
import {
  applyTargetCredential,
  credentialHeaderNames,
  credentialQueryParamNames,
  mergeProxyAdditions,
  type OutgoingRequest,
} from "../vault/apply-credential.ts";
import { getCustomToken } from "../vault/custom-token.ts";
import { secretValues } from "../vault/secret-redaction.ts";
import type { AuthType, CustomTokenSecret, ProxySecret, TargetSecret } from "../vault/secret-schemas.ts";
import { authenticateCaller } from "./caller-auth.ts";
import { currentOAuthToken } from "./oauth-tokens.ts";
import { consumeRateWindow } from "./rate-window.ts";
import { buildRequestLogItem, newRequestId, type ValidationData } from "./request-log.ts";
import { type LoadedCredential, loadProxyRuntime, type ProxyRuntime } from "./runtime-config.ts";
import { forwardedResponseHeaders } from "./target-response.ts";

/** Spec 8: responses above 6 MB are refused with 413 response-too-large. */
export const MAX_RESPONSE_BYTES = 6 * 1024 * 1024;
export const DEFAULT_TIMEOUT_SECONDS = 30;
export const MAX_TIMEOUT_SECONDS = 60;

/** Hop-by-hop headers (RFC 9110 7.6.1) and headers the gateway sets itself; never forwarded. */
const HOP_BY_HOP = new Set([...RESERVED_HEADER_NAMES, "proxy-authorization", "proxy-authenticate"]);

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

export interface DataPlaneRequest {
  method: string;
  /** Path as received, e.g. /api/<proxyId>/v1/items */
  path: string;
  /** Raw query string without `?`, passed to the target unchanged. */
  rawQuery: string;
  headers: Record<string, string>;
  body?: Buffer;
  sourceIp: string;
  stage: string;
  arnBase: string;
}

export interface DataPlaneResponse {
  status: number;
  headers: Record<string, string>;
  /** `Set-Cookie` values, one each (a function URL answers them in `cookies`). */
  cookies?: string[];
  body: Buffer;
}

type Outcome = { code: string; message: string; warning?: string };

interface Trace {
  requestId: string;
  receivedAt: number;
  proxyId: string;
  apiPath: string;
  validation: Partial<ValidationData>;
  runtime?: ProxyRuntime;
  target: null | {
    sentAt: number;
    receivedAt: number;
    status: number;
    location: string | null;
    headers: Record<string, string | string[]>;
    body?: Buffer;
  };
  processed: boolean;
  /** The token fetched for the target credential (customToken, oauth2): redacted from the log. */
  dynamicToken?: string;
}

function serviceResponse(
  status: number,
  outcome: Outcome,
  extra: Record<string, string> = {},
): DataPlaneResponse {
  const body = Buffer.from(JSON.stringify({ message: outcome.message, code: outcome.code }));
  return {
    status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      ...extra,
      "service-proxy-code": outcome.code,
      "service-proxy-message": outcome.message,
      ...(outcome.warning ? { "service-proxy-warning": outcome.warning } : {}),
    },
    body,
  };
}

const denied = (message: string) => serviceResponse(403, { code: "proxy-access-denied", message });

function parseQuery(raw: string): Record<string, string> {
  // Null prototype: `constructor` or `toString` must not be found already set on Object.prototype.
  const query: Record<string, string> = Object.create(null);
  for (const [name, value] of new URLSearchParams(raw)) query[name] ??= value;
  return query;
}

/** Target URL: base URL + the path after /api/{proxyId} + the caller's query, unchanged. */
/**
 * True when the path has a segment the URL parser would resolve: `.` or `..` in any spelling
 * (`%2e`, `%2E.`), or a backslash, which WHATWG URLs treat as `/` for http(s). Joined to the target's
 * base URL such a path would climb out of the base path (`/v1/tenant-a/%2e%2e/tenant-b`) and reach
 * the target as a path the access rules never saw (`/x/..%2fadmin` is fine: `%2f` stays a
 * character). The data plane refuses them.
 */
export function hasDotSegment(apiPath: string): boolean {
  if (apiPath.includes("\\")) return true;
  return apiPath.split("/").some((segment) => {
    const plain = segment.replace(/%2e/gi, ".");
    return plain === "." || plain === "..";
  });
}

function targetUrl(base: string, apiPath: string, rawQuery: string): URL {
  const url = new URL(base);
  const basePath = url.pathname.replace(/\/$/, "");
  url.pathname = `${basePath}${apiPath.startsWith("/") ? apiPath : `/${apiPath}`}`;
  url.search = rawQuery ? `?${rawQuery}` : "";
  return url;
}

/** The target credential's current dynamic token (customToken, oauth2), when it needs one. */
async function dynamicTokenFor(runtime: ProxyRuntime): Promise<string | undefined> {
  const credential = runtime.targetCredential!;
  const authType = String(credential.item.credentialAuthType);
  if (authType === "customToken") {
    const token = await getCustomToken(
      `${runtime.clientId}/${credential.item.credentialId}`,
      credential.secret as CustomTokenSecret,
    );
    return token.token;
  }
  if (authType === "oauth2") return currentOAuthToken(runtime.region, credential);
  return undefined;
}

/** Claim a single-use proxy credential: only one request may ever pass this. */
async function claimSingleUse(region: string, clientId: string, credentialId: string): Promise<boolean> {
  try {
    await dynamo(region).send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.credential(clientId, credentialId),
        UpdateExpression: "SET usedAt = :now",
        ConditionExpression:
          "attribute_exists(pKey) AND attribute_not_exists(usedAt) AND attribute_not_exists(deletingAt)",
        ExpressionAttributeValues: { ":now": new Date().toISOString() },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionalCheckFailure(error)) return false;
    throw error;
  }
}

async function releaseSingleUse(region: string, clientId: string, credentialId: string): Promise<void> {
  await dynamo(region)
    .send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.credential(clientId, credentialId),
        UpdateExpression: "REMOVE usedAt",
        ConditionExpression: "attribute_exists(pKey)",
      }),
    )
    .catch(() => undefined);
}

/** After its first successful use a single-use credential is deleted, with the proxies using it. */
async function consumeSingleUse(region: string, clientId: string, credentialId: string): Promise<void> {
  await deleteWithDependants(
    region,
    clientId,
    credentialId,
    keys.credential(clientId, credentialId),
    usesCredential(credentialId),
  );
}

type Admission =
  | { denial: DataPlaneResponse }
  | {
      proxyCredential: LoadedCredential;
      targetCredential: LoadedCredential;
      authType: string;
      credentialId: string;
      limit: number;
    };

/**
 * Whether the configuration lets this request through: proxy active, billing not suspended,
 * caller authenticated by the proxy credential, access rules of credential, proxy and target,
 * target and target credential present. Records each stage passed in `trace.validation`.
 */
async function admit(trace: Trace, request: DataPlaneRequest, runtime: ProxyRuntime): Promise<Admission> {
  const v = trace.validation;
  v.proxyExists = true;
  const { proxy } = runtime;
  if (proxy.proxyActive !== true || proxy.deletingAt) return { denial: denied("The proxy is inactive") };
  if (runtime.clientStatus === "pendingDeletion")
    return { denial: denied("The organisation is scheduled for deletion") };
  v.proxyActive = true;
  if (runtime.billingStatus === "suspended") {
    return {
      denial: serviceResponse(402, {
        code: "billing-suspended",
        message: "Payment required: the account's billing is suspended",
      }),
    };
  }
  const proxyCredential = runtime.proxyCredential;
  if (!proxyCredential) return { denial: denied("Invalid proxy credential") };
  v.proxyCredentialExists = true;
  v.proxyCredentialActive = true;
  v.proxyCredentialRelationship = proxyCredential.item.credentialType === "proxy";
  const authType = String(proxyCredential.item.credentialAuthType);
  const query = parseQuery(request.rawQuery);
  const auth = await authenticateCaller(
    { headers: request.headers, query },
    {
      credentialId: String(proxyCredential.item.credentialId),
      authType: authType as never,
      secret: proxyCredential.secret as ProxySecret,
    },
  );
  if (!auth.ok) return { denial: denied("Invalid proxy credential") };
  v.proxyAuthenticated = true;
  v.proxyCredentialScopeValid = true;

  const target = runtime.target;
  if (!target) {
    return {
      denial: serviceResponse(502, {
        code: "proxy-access-granted",
        message: "The proxy's target is not available",
      }),
    };
  }
  v.targetExists = true;
  v.targetRelationship = true;
  const effect = (value: unknown) => (value === "deny" ? "deny" : "allow") as "allow" | "deny";
  const decision = evaluateAccess(
    [
      {
        name: "credential",
        defaultEffect: effect(proxyCredential.item.credentialDefaultRuleEffect),
        rules: runtime.compiledRules.credential,
      },
      {
        name: "proxy",
        defaultEffect: effect(proxy.proxyDefaultRuleEffect),
        rules: runtime.compiledRules.proxy,
      },
      {
        name: "target",
        defaultEffect: effect(target.targetDefaultRuleEffect),
        rules: runtime.compiledRules.target,
      },
    ],
    { method: request.method, path: trace.apiPath, headers: request.headers, query },
  );
  if (!decision.allowed) {
    if (decision.layer === "target") v.proxyScopeValid = true;
    return {
      denial: serviceResponse(403, {
        code: "proxy-access-granted",
        message: `Access denied by an access rule: ${decision.reason}`,
      }),
    };
  }
  v.proxyScopeValid = true;
  v.targetScopeValid = true;

  const targetCredential = runtime.targetCredential;
  if (!targetCredential) {
    v.requestConfigError = true;
    return {
      denial: serviceResponse(502, {
        code: "proxy-access-granted",
        message: "The proxy's target credential is not available",
      }),
    };
  }
  v.targetCredentialExists = true;
  v.targetCredentialActive = true;
  v.targetCredentialRelationship = targetCredential.item.credentialType === "target";
  v.targetCredentialScopeValid = true;
  return {
    proxyCredential,
    targetCredential,
    authType,
    credentialId: String(proxyCredential.item.credentialId),
    // Data-plane rate limit (section 8): per proxy credential, by the client's plan.
    limit: rateLimitForPlan({ planTier: runtime.planTier as never, planStatus: runtime.planStatus as never }),
  };
}

/** `/api/{proxyId}` and the path after it. */
const PROXY_PATH = /^\/api\/([^/]+)(\/.*)?$/;

export function createDataPlane(region: string) {
  async function writeLog(
    trace: Trace,
    request: DataPlaneRequest,
    response: DataPlaneResponse,
    outcome: Outcome,
  ) {
    const runtime = trace.runtime;
    const credentials = [runtime?.proxyCredential, runtime?.targetCredential].filter(
      (credential): credential is LoadedCredential => credential !== undefined,
    );
    const namesOf = (pick: typeof credentialHeaderNames) =>
      credentials.flatMap((credential) =>
        pick(String(credential.item.credentialAuthType) as AuthType, credential.secret as never),
      );
    const redactHeaders = namesOf(credentialHeaderNames);
    const redactQuery = namesOf(credentialQueryParamNames);
    // Every secret the request used, wherever a target echoes it (issue 7).
    const usedSecrets = [
      ...credentials.flatMap((credential) =>
        secretValues(String(credential.item.credentialAuthType), credential.secret),
      ),
      ...(trace.dynamicToken ? [trace.dynamicToken] : []),
    ];
    const item = buildRequestLogItem({
      requestId: trace.requestId,
      proxy: runtime
        ? { proxyId: runtime.proxyId, clientId: runtime.clientId, userId: String(runtime.proxy.userId ?? "") }
        : null,
      proxyIdFromPath: trace.proxyId,
      stage: request.stage,
      method: request.method,
      apiPath: trace.apiPath,
      query: parseQuery(request.rawQuery),
      requestHeaders: request.headers,
      requestBody: request.body,
      receivedAt: trace.receivedAt,
      sentAt: Date.now(),
      status: response.status,
      message: outcome.message,
      arnBase: request.arnBase,
      target: trace.target
        ? {
            sentAt: trace.target.sentAt,
            receivedAt: trace.target.receivedAt,
            status: trace.target.status,
            location: trace.target.location,
            responseHeaders: trace.target.headers,
            responseBody: trace.target.body,
          }
        : null,
      validation: trace.validation,
      processed: trace.processed,
      redactHeaders,
      redactQuery,
      secretValues: usedSecrets,
    });
    // A request to an unknown proxy id has no proxy to file it under: it is not stored.
    if (!runtime) return;
    try {
      await dynamo(region).send(new PutCommand({ TableName: tableName(), Item: item }));
    } catch (error) {
      // Never a silent loss: the error line also counts in a metric that raises an alarm.
      log.error("Request log could not be written", {
        ...describeError(error),
        requestId: trace.requestId,
        ...metricFields(ALARMED_METRICS.requestLogWriteFailures, "data-plane"),
      });
    }
  }

  async function finish(
    trace: Trace,
    request: DataPlaneRequest,
    response: DataPlaneResponse,
    outcome: Outcome,
  ): Promise<DataPlaneResponse> {
    response.headers["service-proxy-code"] = outcome.code;
    response.headers["service-proxy-message"] = outcome.message;
    if (outcome.warning) response.headers["service-proxy-warning"] = outcome.warning;
    response.headers["x-request-id"] = trace.requestId;
    await writeLog(trace, request, response, outcome);
    return response;
  }

  const reply = (trace: Trace, request: DataPlaneRequest, response: DataPlaneResponse) =>
    finish(trace, request, response, {
      code: response.headers["service-proxy-code"] ?? "proxy-access-denied",
      message: response.headers["service-proxy-message"] ?? "",
      warning: response.headers["service-proxy-warning"],
    });

  async function handle(request: DataPlaneRequest, trace: Trace): Promise<DataPlaneResponse> {
    const match = PROXY_PATH.exec(request.path);
    if (!match || !/^[A-Za-z0-9-]{1,64}$/.test(trace.proxyId))
      return reply(trace, request, denied("Unknown proxy"));
    if (!PROXY_METHODS.has(request.method)) {
      return reply(
        trace,
        request,
        serviceResponse(
          405,
          { code: "proxy-access-denied", message: `Method ${request.method.slice(0, 20)} is not supported` },
          { allow: [...PROXY_METHODS].join(", ") },
        ),
      );
    }

    // Admission is decided on the cached configuration; the rate-limit transaction then checks
    // that the configuration version is still current (one round trip for both). A denial from a
    // cached configuration is confirmed against the current version before it is answered.
    let loaded = await loadProxyRuntime(region, trace.proxyId, { revalidate: false });
    if (loaded && hasDotSegment(trace.apiPath)) {
      trace.runtime = loaded.runtime;
      return reply(
        trace,
        request,
        serviceResponse(400, {
          code: "proxy-access-denied",
          message: "The path must not contain . or .. segments (in any encoding) or backslashes",
        }),
      );
    }
    let admission: Admission | undefined;
    for (let attempt = 1; ; attempt++) {
      if (!loaded) return reply(trace, request, denied("Unknown proxy"));
      trace.validation = {};
      trace.runtime = loaded.runtime;
      admission = await admit(trace, request, loaded.runtime);
      if ("denial" in admission) {
        if (loaded.fresh) return reply(trace, request, admission.denial);
        const current = await loadProxyRuntime(region, trace.proxyId, { revalidate: true });
        if (current && loaded && current.runtime === loaded.runtime)
          return reply(trace, request, admission.denial);
        loaded = current;
        continue;
      }
      let rate = await consumeRateWindow(region, loaded.runtime, admission.credentialId, admission.limit);
      if (rate === "stale" && attempt < 3) {
        loaded = await loadProxyRuntime(region, trace.proxyId, { revalidate: true });
        continue;
      }
      // Configuration changing under every attempt: decide on the one just loaded, still counted.
      if (rate === "stale")
        rate = await consumeRequest(`CRED#${admission.credentialId}`, admission.limit, { region });
      if (!rate.allowed) {
        const response = serviceResponse(
          429,
          {
            code: "proxy-access-granted",
            message: "Too many requests: the proxy credential's rate limit is exceeded",
          },
          {
            "retry-after": String(rate.retryAfterSeconds),
            "x-ratelimit-limit": String(admission.limit),
            "x-ratelimit-remaining": "0",
          },
        );
        return reply(trace, request, response);
      }
      break;
    }
    const v = trace.validation;
    const runtime = trace.runtime!;
    const { proxy } = runtime;
    const { proxyCredential, targetCredential, authType } = admission;
    const target = runtime.target!;

    const singleUse = proxyCredential.item.singleUse === true;
    const credentialId = String(proxyCredential.item.credentialId);
    if (singleUse && !(await claimSingleUse(region, runtime.clientId, credentialId))) {
      v.proxyAuthenticated = false;
      return reply(trace, request, denied("The single-use proxy credential was already used"));
    }

    // The outgoing request.
    // Null prototype: a header of any name (`__proto__` included) is an own entry.
    const headers: Record<string, string> = Object.create(null);
    const callerSecretHeaders = new Set(
      credentialHeaderNames(authType as AuthType, proxyCredential.secret as never),
    );
    for (const [name, value] of Object.entries(request.headers)) {
      const lower = name.toLowerCase();
      if (HOP_BY_HOP.has(lower) || callerSecretHeaders.has(lower) || lower === "authorization") continue;
      if (lower.startsWith("x-forwarded-") || lower === "forwarded") continue;
      headers[lower] = value;
    }
    headers["x-forwarded-for"] = request.sourceIp;
    let url: URL;
    try {
      url = targetUrl(String(target.targetBaseURL), trace.apiPath, request.rawQuery);
    } catch {
      v.requestConfigError = true;
      return reply(
        trace,
        request,
        serviceResponse(502, { code: "proxy-access-granted", message: "The target URL is invalid" }),
      );
    }
    removeQueryPairs(url, credentialQueryParamNames(authType as AuthType, proxyCredential.secret as never));
    let outgoing: OutgoingRequest = {
      method: request.method,
      url,
      headers,
      ...(request.body && request.body.length > 0 ? { body: request.body } : {}),
    };
    outgoing = mergeProxyAdditions(outgoing, {
      headers: proxy.proxyAdditionalHeaders as Record<string, string> | undefined,
      queryParams: proxy.proxyAdditionalQueryParams as Record<string, string> | undefined,
      data: proxy.proxyAdditionalData as Record<string, unknown> | undefined,
    });
    try {
      const dynamicToken = await dynamicTokenFor(runtime);
      trace.dynamicToken = dynamicToken;
      outgoing = applyTargetCredential(
        outgoing,
        String(targetCredential.item.credentialAuthType) as AuthType,
        targetCredential.secret as TargetSecret,
        { dynamicToken },
      );
    } catch (error) {
      v.requestConfigError = true;
      log.warn("Target credential could not be applied", { ...describeError(error), proxyId: trace.proxyId });
      if (singleUse) await releaseSingleUse(region, runtime.clientId, credentialId);
      return reply(
        trace,
        request,
        serviceResponse(502, {
          code: "proxy-access-granted",
          message: "The target credential could not be applied (token endpoint failed)",
        }),
      );
    }
    v.requestValid = true;

    const timeoutSeconds = Math.min(
      MAX_TIMEOUT_SECONDS,
      Number(proxy.proxyTimeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS),
    );
    const sentAt = Date.now();
    let response: OutboundResponse;
    try {
      v.requestSent = true;
      response = await sendOutbound({
        method: outgoing.method,
        url: outgoing.url,
        headers: outgoing.headers,
        body: outgoing.body,
        timeoutMs: timeoutSeconds * 1000,
        maxResponseBytes: MAX_RESPONSE_BYTES + 1,
      });
    } catch (error) {
      if (singleUse) await releaseSingleUse(region, runtime.clientId, credentialId);
      if (error instanceof OutboundTimeoutError)
        return reply(
          trace,
          request,
          serviceResponse(504, {
            code: "proxy-access-granted",
            message: `The target did not answer within ${timeoutSeconds} s`,
          }),
        );
      if (error instanceof OutboundBlockedError) {
        v.requestSent = false;
        v.requestConfigError = true;
        return reply(
          trace,
          request,
          serviceResponse(502, {
            code: "proxy-access-granted",
            message: "The target address is not allowed",
          }),
        );
      }
      if (error instanceof OutboundConnectError)
        return reply(
          trace,
          request,
          serviceResponse(502, { code: "proxy-access-granted", message: "The target could not be reached" }),
        );
      v.systemError = true;
      throw error;
    }
    v.responseReceived = true;
    trace.target = {
      sentAt,
      receivedAt: response.timings.endedAt,
      status: response.status,
      location: typeof response.headers.location === "string" ? response.headers.location : null,
      headers: response.headers,
      body: response.body,
    };
    if (response.truncated || response.body.length > MAX_RESPONSE_BYTES) {
      trace.target.body = undefined;
      if (singleUse) await releaseSingleUse(region, runtime.clientId, credentialId);
      return reply(
        trace,
        request,
        serviceResponse(413, { code: "response-too-large", message: "The target's response exceeds 6 MB" }),
      );
    }
    // Hop-by-hop and service-proxy-* headers dropped, cookies confined to this proxy.
    const forwarded = forwardedResponseHeaders(response.headers, trace.proxyId);
    trace.processed = true;
    const success = response.status < 400;
    const warnings: string[] = [];
    if (response.status === 401 || response.status === 403)
      warnings.push("The target refused the request: check the target credential");
    if (forwarded.droppedCookies.length > 0)
      warnings.push(`__Host- cookies of the target were dropped: ${forwarded.droppedCookies.join(", ")}`);
    const warning = warnings.length > 0 ? warnings.join("; ") : undefined;
    if (singleUse) {
      if (success) {
        await consumeSingleUse(region, runtime.clientId, credentialId).catch((error) =>
          log.error("Single-use credential could not be deleted", { ...describeError(error), credentialId }),
        );
      } else {
        await releaseSingleUse(region, runtime.clientId, credentialId);
      }
    }
    return finish(
      trace,
      request,
      {
        status: response.status,
        headers: forwarded.headers,
        cookies: forwarded.cookies,
        body: response.body,
      },
      { code: "proxy-access-granted", message: "Request forwarded to the target", warning },
    );
  }

  return {
    async handle(request: DataPlaneRequest): Promise<DataPlaneResponse> {
      const receivedAt = Date.now();
      const match = PROXY_PATH.exec(request.path);
      const trace: Trace = {
        requestId: newRequestId(receivedAt),
        receivedAt,
        proxyId: match?.[1] ?? "",
        apiPath: match?.[2] ?? "/",
        validation: {},
        target: null,
        processed: false,
      };
      try {
        return await handle(request, trace);
      } catch (error) {
        // Never a bare 500: the caller gets the service headers and the request id, and the
        // request is logged when the log can be written. A store that stalls or fails (timeouts
        // bound every call, lib/aws/clients.ts) is a 503 the caller may retry.
        const unavailable = isServiceUnavailable(error);
        log.error(unavailable ? "Data plane: store unavailable" : "Data plane failure", {
          ...describeError(error),
          path: request.path,
          requestId: trace.requestId,
        });
        trace.validation.systemError = true;
        const response = unavailable
          ? serviceResponse(503, {
              code: "proxy-error",
              message: "The gateway's store is unavailable; try again shortly",
            })
          : serviceResponse(500, { code: "proxy-error", message: "Internal error of the gateway" });
        try {
          return await reply(trace, request, response);
        } catch (logError) {
          log.error("Request log could not be written", {
            ...describeError(logError),
            requestId: trace.requestId,
          });
          response.headers["x-request-id"] = trace.requestId;
          return response;
        }
      }
    },
  };
}
