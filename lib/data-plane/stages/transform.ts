/**
 * Stage transform (issue 10; docs/transforms.md "Running"): the proxy's request and response
 * transforms, user code in the sandbox (lib/data-plane/sandbox.ts).
 *
 * - Request: runs in forward (stages/forward.ts) on the outgoing request, after admission and
 *   counting, before the single-use claim and before the target credential is applied: user code
 *   never sees a stored secret, and the credential is applied to the request it returns.
 * - Response: runs on the target's answer, before it is returned and before it is logged: the
 *   request log shows the response as transformed.
 * - Of each kind only the highest-priority matching active transform runs (transform-plan.ts).
 * - A failure (a throw, the deadline, the memory limit, an invalid return value) answers 500
 *   `transform-error` naming the transform and the reason; after a failed request transform the
 *   target is not called. A suspended transform (sandbox.ts) answers so without running; the call
 *   whose kill suspended it leaves `ctx.transforms.suspension` for the request log.
 *
 * Loaded on demand (import() from the pipeline) only when a proxy has transforms.
 */

import {
  type Admitted,
  type Answer,
  parseQuery,
  type RequestContext,
  serviceAnswer,
} from "#lib/data-plane/context.ts";
import { predicateRequestOf } from "#lib/data-plane/meter-plan.ts";
import type { CompiledTransform, TransformResult } from "#lib/data-plane/sandbox.ts";
import { SERVICE_HEADER_PREFIX } from "#lib/data-plane/target-response.ts";
import {
  type LoadedTransform,
  selectRequestTransform,
  selectResponseTransform,
  variablesOf,
} from "#lib/data-plane/transform-plan.ts";
import { isJsonContentType } from "#lib/domain/predicates/dot-path.ts";
import { preparePredicateRequest } from "#lib/domain/predicates/evaluate.ts";
import { loadOnce } from "#lib/lazy.ts";
import { HEADER_VALUE, RESERVED_HEADER_NAMES } from "#lib/net/header-rules.ts";
import { hasDotSegment } from "#lib/net/path-segments.ts";
import type { OutgoingRequest } from "#lib/vault/apply-credential.ts";
import { PROXY_METHODS } from "./locate.ts";

/** The request as a transform sees it and returns it. */
export interface TransformRequest {
  method: string;
  /** The target path after /api/{proxyId}. */
  path: string;
  query: Record<string, string | string[]>;
  /** Lower-case names; the caller's credential removed, the target credential not yet applied. */
  headers: Record<string, string>;
  /** Parsed JSON (JSON content type), else the text, or null without a body. */
  body: unknown;
}

/** The target's answer as a response transform sees it and returns it. */
export interface TransformResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

export interface TransformDeps {
  /** Runs a compiled transform (the sandbox's runTransform). */
  run: (compiled: CompiledTransform, args: unknown[]) => Promise<TransformResult>;
}

const sandboxModule = loadOnce(() => import("#lib/data-plane/sandbox.ts"));

export const sandboxRunner: TransformDeps = {
  async run(compiled, args) {
    const { runTransform } = await sandboxModule();
    return runTransform(compiled, args);
  },
};

/** Header names (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const MESSAGE_LIMIT = 600;

/** Headers a transform cannot set: the gateway frames the message and sets its own headers. */
const ignoredHeader = (name: string): boolean =>
  RESERVED_HEADER_NAMES.has(name) ||
  name === "content-encoding" ||
  name === "set-cookie" ||
  name === "x-request-id" ||
  name.startsWith(SERVICE_HEADER_PREFIX);

class InvalidReturn extends Error {}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The answer of a failed transform: 500 transform-error naming it and the reason. */
export function transformFailed(transform: LoadedTransform, reason: string, message: string): Answer {
  const kind = transform.kind === "request" ? "Request" : "Response";
  // The message is also a header value (service-proxy-message): printable ASCII only.
  const text = `${kind} transform ${transform.transformId} failed (${reason}): ${message}`
    .replace(/[^\x20-\x7e]/g, "?")
    .slice(0, MESSAGE_LIMIT);
  return serviceAnswer(500, { code: "transform-error", message: text });
}

/** A failed call's answer; a suspension its kill started goes to the request log (and so to the inbox). */
function failedCall(
  ctx: RequestContext,
  transform: LoadedTransform,
  result: TransformResult & { ok: false },
) {
  const { suspension } = result;
  if (suspension?.started) {
    ctx.transforms ??= {};
    ctx.transforms.suspension = {
      transformId: transform.transformId,
      kind: transform.kind,
      until: new Date(suspension.until).toISOString(),
      cooldownMs: suspension.cooldownMs,
    };
  }
  return transformFailed(transform, result.reason, result.message);
}

/** A body for user code: parsed JSON when its content type allows JSON and it parses, else text. */
function bodyView(body: Buffer | undefined, contentType: string | undefined): unknown {
  if (!body || body.length === 0) return null;
  const text = body.toString("utf8");
  if (isJsonContentType(contentType)) {
    try {
      return JSON.parse(text);
    } catch {
      // not JSON: the text
    }
  }
  return text;
}

/**
 * The returned body as bytes: null none, a string as UTF-8 (the original bytes when it is the
 * text given), anything else as JSON (with a JSON content type unless one is set).
 */
function bodyBytes(
  returned: unknown,
  given: unknown,
  original: Buffer | undefined,
  headers: Record<string, string>,
): Buffer | undefined {
  if (returned === null || returned === undefined) return undefined;
  if (typeof returned === "string") {
    if (typeof given === "string" && returned === given) return original;
    return Buffer.from(returned, "utf8");
  }
  const contentType = headers["content-type"];
  if (contentType === undefined || !isJsonContentType(contentType))
    headers["content-type"] = "application/json; charset=utf-8";
  return Buffer.from(JSON.stringify(returned), "utf8");
}

/** The returned headers, checked; those the gateway controls are left out. */
function checkedHeaders(value: unknown): Record<string, string> {
  if (!isPlainObject(value)) throw new InvalidReturn("headers must be an object of strings");
  const headers: Record<string, string> = Object.create(null);
  for (const [rawName, raw] of Object.entries(value)) {
    const name = rawName.toLowerCase();
    if (!HEADER_NAME.test(name))
      throw new InvalidReturn(`header name "${rawName.slice(0, 64)}" is not valid`);
    if (typeof raw !== "string") throw new InvalidReturn(`header ${name} must be a string`);
    if (!HEADER_VALUE.test(raw))
      throw new InvalidReturn(`header ${name} has a character a header cannot carry`);
    if (ignoredHeader(name)) continue;
    headers[name] = raw;
  }
  return headers;
}

function checkedQuery(value: unknown): Record<string, string | string[]> {
  if (!isPlainObject(value)) throw new InvalidReturn("query must be an object of strings or string arrays");
  for (const [name, raw] of Object.entries(value)) {
    const ok = typeof raw === "string" || (Array.isArray(raw) && raw.every((one) => typeof one === "string"));
    if (!ok)
      throw new InvalidReturn(`query parameter ${name.slice(0, 64)} must be a string or a string array`);
  }
  return value as Record<string, string | string[]>;
}

function searchOf(query: Record<string, string | string[]>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query))
    for (const one of Array.isArray(value) ? value : [value]) params.append(name, one);
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** The request transform's view of the outgoing request. */
export function requestView(ctx: RequestContext, outgoing: OutgoingRequest): TransformRequest {
  return {
    method: outgoing.method,
    path: ctx.apiPath,
    query: parseQuery(outgoing.url.searchParams),
    headers: { ...outgoing.headers },
    body: bodyView(outgoing.body, outgoing.headers["content-type"]),
  };
}

/** The target URL's path before the path after /api/{proxyId} (the target's base path). */
function basePathOf(outgoing: OutgoingRequest, apiPath: string): string {
  const pathname = outgoing.url.pathname;
  return pathname.endsWith(apiPath) ? pathname.slice(0, pathname.length - apiPath.length) : pathname;
}

/** The outgoing request for what the transform returned (checked; throws InvalidReturn). */
function requestFrom(
  ctx: RequestContext,
  outgoing: OutgoingRequest,
  given: TransformRequest,
  returned: unknown,
): { outgoing: OutgoingRequest; view: TransformRequest } {
  if (!isPlainObject(returned)) throw new InvalidReturn("a request transform must return the request object");
  const { method, path, query, headers, body } = returned;
  if (typeof method !== "string" || !PROXY_METHODS.has(method.toUpperCase()))
    throw new InvalidReturn(`method must be one of ${[...PROXY_METHODS].join(", ")}`);
  if (typeof path !== "string" || !path.startsWith("/") || path.length > 8192)
    throw new InvalidReturn('path must be a string starting with "/" (at most 8,192 characters)');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[?#\s\x00-\x1f\x7f]/.test(path) || hasDotSegment(path))
    throw new InvalidReturn("path must not contain ?, #, spaces, control characters or . and .. segments");
  const checkedQueryValue = checkedQuery(query);
  const checkedHeaderValues = checkedHeaders(headers);
  const url = new URL(outgoing.url);
  const basePath = basePathOf(outgoing, ctx.apiPath);
  url.pathname = `${basePath}${path}`;
  // An unchanged query keeps the caller's encoding; a changed one is encoded again.
  if (JSON.stringify(checkedQueryValue) !== JSON.stringify(given.query))
    url.search = searchOf(checkedQueryValue);
  const bytes = bodyBytes(body, given.body, outgoing.body, checkedHeaderValues);
  const next: OutgoingRequest = {
    method: method.toUpperCase(),
    url,
    headers: checkedHeaderValues,
    ...(bytes && bytes.length > 0 ? { body: bytes } : {}),
  };
  return {
    outgoing: next,
    view: { method: next.method, path, query: checkedQueryValue, headers: { ...checkedHeaderValues }, body },
  };
}

/** The `context` argument of a transform. */
function contextOf(ctx: Admitted, transform: LoadedTransform) {
  const { runtime } = ctx;
  const prepared = preparedRequest(ctx);
  return {
    requestId: ctx.requestId,
    clientId: runtime.clientId,
    proxyId: runtime.proxyId,
    region: runtime.region,
    receivedAt: ctx.receivedAt,
    callerIp: ctx.request.sourceIp,
    claims: ctx.admission.claims ?? null,
    variables: { ...variablesOf(transform, prepared) },
  };
}

/** The caller's request prepared for predicates, once for both transforms of the request. */
function preparedRequest(ctx: RequestContext) {
  ctx.transforms ??= {};
  ctx.transforms.prepared ??= predicateRequestOf(ctx);
  return ctx.transforms.prepared;
}

/**
 * Runs the request transform that applies, if any, on the outgoing request (target credential not
 * yet applied). Answers the request to send, or the 500 of a failed transform.
 */
export async function transformRequest(
  ctx: Admitted,
  outgoing: OutgoingRequest,
  deps: TransformDeps = sandboxRunner,
): Promise<OutgoingRequest | Answer> {
  const transforms = ctx.runtime.transforms;
  if (!transforms) return outgoing;
  const view = requestView(ctx, outgoing);
  ctx.transforms ??= {};
  ctx.transforms.request = view;
  const transform = selectRequestTransform(transforms.request, preparedRequest(ctx));
  if (!transform) return outgoing;
  ctx.transforms.requestTransformId = transform.transformId;
  const result = await deps.run(transform.compiled, [contextOf(ctx, transform), view]);
  if (!result.ok) return failedCall(ctx, transform, result);
  try {
    const next = requestFrom(ctx, outgoing, view, result.value);
    ctx.transforms.request = next.view;
    return next.outgoing;
  } catch (error) {
    if (error instanceof InvalidReturn) return transformFailed(transform, "invalid", error.message);
    throw error;
  }
}

/** The response for what the transform returned (checked; throws InvalidReturn). */
function responseFrom(answer: Answer, given: TransformResponse, returned: unknown): Answer["response"] {
  if (!isPlainObject(returned))
    throw new InvalidReturn("a response transform must return the response object");
  const { status, headers, body } = returned;
  if (typeof status !== "number" || !Number.isInteger(status) || status < 200 || status > 599)
    throw new InvalidReturn("status must be an integer from 200 to 599");
  const checked = checkedHeaders(headers);
  const bytes = bodyBytes(body, given.body, answer.response.body, checked);
  return {
    status,
    headers: checked,
    ...(answer.response.cookies ? { cookies: answer.response.cookies } : {}),
    body: bytes ?? Buffer.alloc(0),
  };
}

/**
 * Runs the response transform that applies, if any, on the target's answer (only when the target
 * answered). Answers the transformed answer, the answer unchanged, or the 500 of a failure.
 */
export async function transformResponse(
  ctx: Admitted,
  answer: Answer,
  deps: TransformDeps = sandboxRunner,
): Promise<Answer> {
  const transforms = ctx.runtime.transforms;
  if (!transforms || transforms.response.length === 0 || !ctx.processed || !ctx.target) return answer;
  const { response } = answer;
  const contentType = response.headers["content-type"];
  const responseRequest = preparePredicateRequest({
    method: ctx.request.method,
    path: ctx.apiPath,
    headers: response.headers,
    query: {},
    body: response.body,
    contentType: contentType ?? null,
  });
  const transform = selectResponseTransform(
    transforms.response,
    preparedRequest(ctx),
    responseRequest,
    response.status,
  );
  if (!transform) return answer;
  ctx.transforms ??= {};
  ctx.transforms.responseTransformId = transform.transformId;
  const view: TransformResponse = {
    status: response.status,
    headers: { ...response.headers },
    body: bodyView(response.body, contentType),
  };
  const result = await deps.run(transform.compiled, [
    contextOf(ctx, transform),
    ctx.transforms.request ?? null,
    view,
  ]);
  if (!result.ok) return failedCall(ctx, transform, result);
  try {
    const transformed = responseFrom(answer, view, result.value);
    ctx.transforms.response = { headers: transformed.headers, body: transformed.body };
    return { response: transformed, outcome: answer.outcome };
  } catch (error) {
    if (error instanceof InvalidReturn) return transformFailed(transform, "invalid", error.message);
    throw error;
  }
}
