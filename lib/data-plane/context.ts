/**
 * One proxied request as it moves through the data plane's stages (lib/data-plane/pipeline.ts):
 * what arrived, what each stage decided, and the answer. A stage reads and writes the context and
 * either lets the request go on or ends it with an answer; it never writes the log or releases a
 * single-use claim itself (the pipeline does both, once, on every path).
 */

import type { TransformRequest } from "#lib/data-plane/stages/transform.ts";
import type { TargetItem } from "#lib/db/entities/target.ts";
import type { PreparedPredicateRequest } from "#lib/domain/predicates/evaluate.ts";
import { normalisePath } from "#lib/domain/request-view.ts";
import type { MeterUse } from "./meter-plan.ts";
import type { ValidationData } from "./request-log.ts";
import type { LoadedCredential, ProxyRuntime } from "./runtime-config.ts";

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

/** The service headers of an answer (spec 4.13). */
export interface Outcome {
  code: string;
  message: string;
  warning?: string;
}

export interface Answer {
  response: DataPlaneResponse;
  outcome: Outcome;
}

/** What the caller authentication and the access rules decided (stage admit). */
export interface Admission {
  proxyCredential: LoadedCredential;
  /** The proxy's target (admit refuses a request whose target is missing). */
  target: TargetItem;
  targetCredential: LoadedCredential;
  /** The proxy credential's id (the rate counter's owner). */
  credentialId: string;
  /** Requests per minute of the client's plan, per proxy credential (spec 8). */
  rateLimit: number;
  /** The verified claims of a jwtVerify caller. */
  claims?: Readonly<Record<string, unknown>>;
}

/** A meter window that refused the request. */
export interface RefusedWindow {
  meterId: string;
  window: "minute" | "hour" | "day" | "month";
}

/** What the target answered (stage forward). */
export interface TargetTrace {
  sentAt: number;
  receivedAt: number;
  status: number;
  location: string | null;
  headers: Record<string, string | string[]>;
  body?: Buffer;
}

/** The part of counter-leases.ts's TakenCounters the stages after the answer use. */
export interface CountedLeases {
  /** Settle a reservation at the real value; answers what the store's `leased` must still add. */
  settle(stepName: string, value: number): number;
  /** Top up the leases the request used (off the caller's wait; never throws). */
  topUp(): Promise<void>;
}

export interface RequestContext {
  readonly requestId: string;
  readonly receivedAt: number;
  readonly request: DataPlaneRequest;
  /** The proxy id of the path ("" when the path has none). */
  readonly proxyId: string;
  /** The path after /api/{proxyId}, "/" at least, normalised (request-view.ts normalisePath). */
  readonly apiPath: string;
  /** True when the path is /api/{proxyId}[/...]. */
  readonly pathMatched: boolean;
  /** The caller's query parameters, decoded; a repeated name has all its values (null prototype). */
  readonly query: Record<string, string | string[]>;
  validation: Partial<ValidationData>;
  runtime?: ProxyRuntime;
  /** True when `runtime` was read from the table during this request (its version is current). */
  fresh: boolean;
  admission?: Admission;
  /** The meters that applied and the windows that refused (absent when the proxy has none). */
  metering?: { applied: string[]; refused: RefusedWindow[] };
  /** The meters the request counts in (stage count), settled after the answer. */
  meterUses?: MeterUse[];
  /** True once every limited counter took the request (stages/count.ts): it was counted. */
  counted: boolean;
  /**
   * What the limited counters hold for the counted request (counter-leases.ts): reservations to
   * settle and leases to top up after the answer.
   */
  leases?: CountedLeases;
  /** A single-use proxy credential claimed for this request (released or consumed by the pipeline). */
  claim?: { clientId: string; credentialId: string };
  target: TargetTrace | null;
  processed: boolean;
  /** The token fetched for the target credential (customToken, oauth2): redacted from the log. */
  dynamicToken?: string;
  /** What the transform stage did (stages/transform.ts), when the proxy has transforms. */
  transforms?: {
    /** The caller's request prepared for the transforms' predicates. */
    prepared?: PreparedPredicateRequest;
    /** The request as sent to the target, without the target credential (a response transform's `request`). */
    request?: TransformRequest;
    requestTransformId?: string;
    responseTransformId?: string;
    /** The response as the response transform returned it: the request log shows it. */
    response?: { headers: Record<string, string>; body: Buffer };
    /**
     * A suspension this request's kill started (docs/transforms.md "Suspension"): stored on the
     * request log, from which the stream consumer notifies the organisation.
     */
    suspension?: { transformId: string; kind: string; until: string; cooldownMs: number };
  };
}

/**
 * The context once locate found the proxy: its configuration is there, by type. The stages after
 * locate take it (or `Admitted`), so none of them checks or asserts what an earlier stage set.
 */
export type Located = RequestContext & { runtime: ProxyRuntime };

/** The context once admit let the request in: its admission is there, by type. */
export type Admitted = Located & { admission: Admission };

/** A stage's answer that ends the request, told from the context it passes on. */
export const isAnswer = (result: Answer | RequestContext): result is Answer => "response" in result;

/** A caller header asking for the answer with the request's secrets redacted (answer-redaction.ts). */
export const REDACT_HEADER = "service-proxy-redact";

/** `/api/{proxyId}` and the path after it. */
const PROXY_PATH = /^\/api\/([^/]+)(\/.*)?$/;

export function parseQuery(raw: string | URLSearchParams): Record<string, string | string[]> {
  // Null prototype: `constructor` or `toString` must not be found already set on Object.prototype.
  const query: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of new URLSearchParams(raw)) {
    const seen = query[name];
    query[name] = seen === undefined ? value : [seen, value].flat();
  }
  return query;
}

export function newContext(request: DataPlaneRequest, requestId: string, receivedAt: number): RequestContext {
  const match = PROXY_PATH.exec(request.path);
  return {
    requestId,
    receivedAt,
    request,
    proxyId: match?.[1] ?? "",
    apiPath: normalisePath(match?.[2] ?? "/"),
    pathMatched: match !== null,
    query: parseQuery(request.rawQuery),
    validation: {},
    fresh: false,
    counted: false,
    target: null,
    processed: false,
  };
}

/** An answer of the gateway itself: a JSON body and the service headers. */
export function serviceAnswer(status: number, outcome: Outcome, extra: Record<string, string> = {}): Answer {
  return {
    response: {
      status,
      headers: { "content-type": "application/json; charset=utf-8", ...extra },
      body: Buffer.from(JSON.stringify({ message: outcome.message, code: outcome.code })),
    },
    outcome,
  };
}

export const denied = (message: string): Answer =>
  serviceAnswer(403, { code: "proxy-access-denied", message });

/** The gateway granted access but could not complete the request (502). */
export const notForwarded = (message: string): Answer =>
  serviceAnswer(502, { code: "proxy-access-granted", message });
