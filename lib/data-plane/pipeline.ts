/**
 * The data plane (spec 4.13) as ordered stages over one request context (docs/data-plane.md):
 *
 *   locate -> [screen caller] -> admit -> [screen request] -> count
 *     -> forward (request transform inside) -> [filter response] -> response transform
 *     -> [answer] -> settle -> log
 *
 * - locate (stages/locate.ts): the proxy and its cached configuration; then the caller's body is
 *   decoded from its Content-Encoding (stages/decode.ts), before anything reads it;
 * - admit (stages/admit.ts): proxy active, billing, caller authentication, access rules;
 * - count (stages/count.ts): the rate window, the client's and the meters' limited windows from
 *   quota leases held by the instance (counter-leases.ts), and the configuration version check
 *   (freshness.ts), in parallel, never a transaction; 429 when a window refuses;
 * - forward (stages/forward.ts): the single-use claim, the target credential, the call;
 * - filters (stages/filter.ts, docs/filters.md): the IP lists before admit, the required headers
 *   after it, the payload filter right after the target's answer;
 * - the answer is handed back here; then, off the caller's wait,
 * - settle (meter-settlement.ts, loaded on demand): response values, reservations, unlimited windows;
 * - log (stages/log.ts): the request log, in one write with the settlement (the admitted count
 *   of every meter window); the leases the request used are topped up, and in relaxed freshness
 *   the configuration version read again when due.
 *
 * - transform (stages/transform.ts, loaded on demand when the proxy has transforms): the request
 *   transform inside forward, before the claim and the target credential; the response transform
 *   on the target's answer, before it is answered and logged.
 *
 * Exactly one place settles a single-use claim (`settleClaim`, before the answer) and exactly one
 * place writes the log (`finish`), on every path: a refusal, a target failure, and an internal
 * error, which is answered 500 (503 when the store is unavailable) with the service headers and
 * the request id, and logged with `systemError` true.
 *
 * A denial decided on a cached configuration is confirmed on the current one before it is
 * answered; a count refused as stale reloads the configuration and admits again (at most three
 * times, then the request is decided on the configuration just loaded, still counted).
 */
import { isServiceUnavailable } from "#lib/aws/clients.ts";
import { now } from "#lib/clock.ts";
import { type Authenticate, admit } from "#lib/data-plane/stages/admit.ts";
import { type SingleUseClaims, settleClaim, singleUseClaims } from "#lib/data-plane/stages/claim.ts";
import { type Counting, count } from "#lib/data-plane/stages/count.ts";
import { filterResponse, screenCaller, screenRequest } from "#lib/data-plane/stages/filter.ts";
import { forward } from "#lib/data-plane/stages/forward.ts";
import { checkRequestShape, type LoadRuntime, locate } from "#lib/data-plane/stages/locate.ts";
import type { writeLogAndSettlement } from "#lib/data-plane/stages/log.ts";
import type { TransformDeps } from "#lib/data-plane/stages/transform.ts";
import { loadOnce } from "#lib/lazy.ts";
import { describeError, log, logSettled } from "#lib/log.ts";
import { ACCEPTED_CODINGS, sendOutbound } from "#lib/net/outbound.ts";
import { newRequestId } from "#lib/shared/request-id.ts";
import type { OutgoingRequest } from "#lib/vault/apply-credential.ts";
import type { CustomTokenSecret } from "#lib/vault/secret-schemas.ts";
import { authenticateCaller } from "./caller-auth.ts";
import {
  type Admitted,
  type Answer,
  type DataPlaneRequest,
  type DataPlaneResponse,
  isAnswer,
  newContext,
  REDACT_HEADER,
  type RequestContext,
  serviceAnswer,
} from "./context.ts";
import { type LoadedCredential, loadProxyRuntime, type ProxyRuntime } from "./runtime-config.ts";

export {
  DEFAULT_TIMEOUT_SECONDS,
  MAX_RESPONSE_BYTES,
  MAX_TIMEOUT_SECONDS,
} from "#lib/data-plane/stages/forward.ts";
export { PROXY_METHODS } from "#lib/data-plane/stages/locate.ts";
export { hasDotSegment } from "#lib/net/path-segments.ts";
export type { DataPlaneRequest, DataPlaneResponse } from "./context.ts";

/** Attempts decided with the configuration-version check before deciding without it. */
const VERSIONED_ATTEMPTS = 3;

export interface PipelineDeps {
  region: string;
  now: () => number;
  loadRuntime: LoadRuntime;
  authenticate: Authenticate;
  /** The limited counters and the freshness check (made per data-plane object: one instance). */
  counting: Counting & { afterAnswer?: (clientId: string) => Promise<void> };
  claims: SingleUseClaims;
  send: typeof sendOutbound;
  dynamicToken: (runtime: ProxyRuntime, credential: LoadedCredential) => Promise<string | undefined>;
  /** What happens after the answer: the log and the settlement (tests may observe it). */
  writeAfter: typeof writeLogAndSettlement;
  /** Transforms (stages/transform.ts): the sandbox's runner. */
  transformDeps?: TransformDeps;
}

// ---- transforms (issue 10): the stage is loaded only when the proxy has transforms ----------

// Modules loaded on demand, each resolved once per instance (lib/lazy.ts).
const transformStage = loadOnce(() => import("#lib/data-plane/stages/transform.ts"));
// The request log and the settlement's write run after the answer (and the redaction of an MCP answer).
const logStage = loadOnce(() => import("#lib/data-plane/stages/log.ts"));
const customTokenModule = loadOnce(() => import("#lib/vault/custom-token.ts"));
const oauthTokensModule = loadOnce(() => import("./oauth-tokens.ts"));
const requestMetricsModule = loadOnce(() => import("./request-metrics.ts"));
const settlementModule = loadOnce(() => import("./meter-settlement.ts"));
const decodeStage = loadOnce(() => import("#lib/data-plane/stages/decode.ts"));
const countingModule = loadOnce(() => import("./counter-leases.ts"));

/**
 * The counting of one data-plane object, its code loaded at the first count (not at a cold start):
 * its leases and the versions it read are this object's (one warm instance).
 */
function lazyCounting(region: string, now: () => number): PipelineDeps["counting"] {
  let made: Promise<PipelineDeps["counting"]> | undefined;
  const get = () => {
    made ??= countingModule().then(({ createCounting }) => createCounting(region, { now }));
    return made;
  };
  return {
    take: async (steps) => (await get()).take(steps),
    isCurrent: async (clientId, version, fresh) => (await get()).isCurrent(clientId, version, fresh),
    afterAnswer: async (clientId) => (await get()).afterAnswer?.(clientId),
  };
}

/** The request transform hook of forward: runs the stage when the proxy has transforms. */
async function requestTransformOf(
  ctx: Admitted,
  outgoing: OutgoingRequest,
  deps: PipelineDeps,
): Promise<OutgoingRequest | Answer> {
  if (!ctx.runtime.transforms) return outgoing;
  const { transformRequest } = await transformStage();
  return transformRequest(ctx, outgoing, deps.transformDeps);
}

/** The response transform, when the proxy has one and the target answered. */
async function responseTransformOf(ctx: Admitted, answer: Answer, deps: PipelineDeps): Promise<Answer> {
  if (!ctx.runtime.transforms?.response.length || !ctx.processed) return answer;
  const { transformResponse } = await transformStage();
  return transformResponse(ctx, answer, deps.transformDeps);
}

/** A caller's Content-Encoding body decoded (stages/decode.ts, loaded only when one comes). */
async function decodedRequest(ctx: RequestContext): Promise<Answer | undefined> {
  if (!Object.keys(ctx.request.headers).some((name) => name.toLowerCase() === "content-encoding"))
    return undefined;
  const { decodeRequestBody } = await decodeStage();
  const refusal = await decodeRequestBody(ctx.request);
  if (!refusal) return undefined;
  // RFC 9110 15.5.16: a 415 for a coding names the codings that would be accepted.
  const extra: Record<string, string> = refusal.status === 415 ? { "accept-encoding": ACCEPTED_CODINGS } : {};
  return serviceAnswer(refusal.status, { code: "proxy-access-denied", message: refusal.message }, extra);
}

/**
 * The target credential's current dynamic token (customToken, oauth2), when it needs one. Their
 * code is loaded on demand (its own chunk in the bundle): most targets use neither.
 */
async function dynamicTokenFor(
  runtime: ProxyRuntime,
  credential: LoadedCredential,
): Promise<string | undefined> {
  const authType = credential.item.credentialAuthType;
  if (authType === "customToken") {
    const { getCustomToken } = await customTokenModule();
    const token = await getCustomToken(
      `${runtime.clientId}/${credential.item.credentialId}`,
      credential.secret as CustomTokenSecret,
    );
    return token.token;
  }
  if (authType === "oauth2") {
    const { currentOAuthToken } = await oauthTokensModule();
    return currentOAuthToken(runtime.region, credential);
  }
  return undefined;
}

export function defaultDeps(region: string): PipelineDeps {
  return {
    region,
    now,
    loadRuntime: (proxyId, options) => loadProxyRuntime(region, proxyId, options),
    authenticate: authenticateCaller,
    counting: lazyCounting(region, now),
    claims: singleUseClaims(region),
    send: sendOutbound,
    dynamicToken: dynamicTokenFor,
    writeAfter: async (...args) => (await logStage()).writeLogAndSettlement(...args),
  };
}

/** locate -> admit -> count -> forward: the answer of the request. */
async function decide(ctx: RequestContext, deps: PipelineDeps): Promise<Answer> {
  const malformed = checkRequestShape(ctx);
  if (malformed) return malformed;
  let revalidate = false;
  for (let attempt = 1; ; attempt++) {
    const located = await locate(ctx, deps.loadRuntime, { revalidate });
    if (isAnswer(located)) return located;
    const undecoded = await decodedRequest(located);
    if (undecoded) return undecoded;
    const screened = screenCaller(located) ?? (await admit(located, deps.authenticate));
    const admitted = isAnswer(screened) ? screened : (screenRequest(screened) ?? screened);
    if (isAnswer(admitted)) {
      if (ctx.fresh) return admitted;
      revalidate = true; // confirm a denial of a cached configuration on the current one
      continue;
    }
    const counted = await count(admitted, deps, { checkVersion: attempt <= VERSIONED_ATTEMPTS });
    if (counted === "stale") {
      revalidate = true;
      continue;
    }
    if (counted) return counted;
    const answered = await forward(admitted, {
      ...deps,
      transformRequest: (c, outgoing) => requestTransformOf(c, outgoing, deps),
    });
    // Payload filters, right after the target's answer and before response transforms (spec 1.5).
    return responseTransformOf(admitted, await filterResponse(admitted, answered), deps);
  }
}

/** The answer to an internal error: never a bare 500 (service headers, request id, logged). */
function internalError(ctx: RequestContext, error: unknown): Answer {
  // A store that stalls or fails (timeouts bound every call, lib/aws/clients.ts) is a 503 the
  // caller may retry.
  const unavailable = isServiceUnavailable(error);
  log.error(unavailable ? "Data plane: store unavailable" : "Data plane failure", {
    ...describeError(error),
    path: ctx.request.path,
    requestId: ctx.requestId,
  });
  ctx.validation.systemError = true;
  return unavailable
    ? serviceAnswer(503, {
        code: "proxy-error",
        message: "The gateway's store is unavailable; try again shortly",
      })
    : serviceAnswer(500, { code: "proxy-error", message: "Internal error of the gateway" });
}

/** The answer as sent: the service headers of spec 4.13 and the request id. */
function shaped(answer: Answer, requestId: string): DataPlaneResponse {
  const { response, outcome } = answer;
  response.headers["service-proxy-code"] = outcome.code;
  response.headers["service-proxy-message"] = outcome.message;
  if (outcome.warning) response.headers["service-proxy-warning"] = outcome.warning;
  response.headers["x-request-id"] = requestId;
  return response;
}

export interface Served {
  response: DataPlaneResponse;
  /** The work after the answer (settlement and request log). Never rejects. */
  finish(): Promise<void>;
}

export function createDataPlane(region: string, overrides: Partial<PipelineDeps> = {}) {
  const deps: PipelineDeps = { ...defaultDeps(region), ...overrides };
  if (!overrides.counting) deps.counting = lazyCounting(region, () => deps.now());

  /** Decide the answer; the caller sends it, then awaits `finish`. */
  async function serve(request: DataPlaneRequest): Promise<Served> {
    const receivedAt = deps.now();
    // `service-proxy-redact` (answer-redaction.ts): the gateway's, never forwarded nor logged.
    const redact = REDACT_HEADER in request.headers;
    delete request.headers[REDACT_HEADER];
    const ctx = newContext(request, newRequestId(receivedAt), receivedAt);
    let answer: Answer;
    try {
      answer = await decide(ctx, deps);
    } catch (error) {
      answer = internalError(ctx, error);
    }
    // Consumed when the target answered with success (a response transform cannot change that:
    // the credential has been used at the target), released otherwise.
    await settleClaim(ctx, deps.claims, ctx.processed && (ctx.target?.status ?? 500) < 400);
    let response = shaped(answer, ctx.requestId);
    if (redact) {
      const { requestLogModule, requestSecretValues } = await logStage();
      response = (await requestLogModule()).redactAnswer(ctx, response, requestSecretValues);
    }
    const answeredAt = deps.now();
    return {
      response,
      async finish() {
        try {
          const settle = ctx.counted && ctx.meterUses?.length ? await settlementModule() : undefined;
          const settlement = settle?.settlementSteps(ctx) ?? [];
          const { requestLogItem } = await logStage();
          // The log with the settlement, the leases' top-up and (relaxed) the version, together.
          await Promise.all([
            requestLogItem(ctx, answer, answeredAt).then((item) =>
              deps.writeAfter(region, ctx, item, settlement),
            ),
            ctx.leases?.topUp(),
            ctx.runtime ? deps.counting.afterAnswer?.(ctx.runtime.clientId) : undefined,
          ]);
          await settle?.recordMeans(region, ctx);
        } catch (error) {
          log.error("Request log could not be built", { ...describeError(error), requestId: ctx.requestId });
        }
        try {
          // Loaded after the first answer: the cold start does not carry it (docs/performance.md).
          const { publishRequestMetrics, requestMetricFacts } = await requestMetricsModule();
          await publishRequestMetrics(requestMetricFacts(ctx, answer));
        } catch (error) {
          log.error("Request metrics could not be written", {
            ...describeError(error),
            requestId: ctx.requestId,
          });
        }
        // Lines logged during the request are written before the invocation ends.
        await logSettled();
      },
    };
  }

  return {
    serve,
    /** Serve and finish: the answer once the log is written (tests, buffered invocations). */
    async handle(request: DataPlaneRequest): Promise<DataPlaneResponse> {
      const served = await serve(request);
      await served.finish();
      return served.response;
    },
  };
}
