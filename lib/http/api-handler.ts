/**
 * The Core API's Lambda handler factory. middy runs the middleware in order (rate limit before the
 * route; errors shaped last), then a route table keyed by "METHOD /resource/{path}" (API Gateway
 * has already matched the resource, so dispatch is an exact look-up).
 */
import middy from "@middy/core";
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from "aws-lambda";
import { isServiceUnavailable } from "../aws/clients.ts";
import { consumeRequest } from "../domain/rate-limit.ts";
import { type RouteKey, SERVICE_UNAVAILABLE_MESSAGE } from "../infra/api-manifest.ts";
import { describeError, log } from "../log.ts";
import {
  DomainError,
  HttpError,
  httpErrorOf,
  methodNotAllowed,
  tooManyRequests,
  validationFailed,
} from "./errors.ts";
import { parseJsonInput, queryIssues } from "./input-checks.ts";

/** Who is calling, as established by the authorizer (API Gateway passes its context through). */
export interface Caller {
  userId: string;
  tokenId: string;
  rateLimitPerMinute: number;
  systemAdmin: boolean;
}

export interface ApiRequest {
  caller: Caller;
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  /** Parsed JSON body; undefined when the request has none. */
  body: unknown;
  headers: Record<string, string | undefined>;
  requestId: string;
  /** The Core API's public base URL (`{base_url}`), for links back to it such as the OAuth2 redirect. */
  baseUrl: string;
}

export interface ApiResponse {
  status?: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

export type RouteHandler = (request: ApiRequest) => Promise<ApiResponse>;
export type RouteTable = Partial<Record<RouteKey, RouteHandler>>;

const JSON_HEADERS = {
  "Content-Type": "application/json; charset=utf-8",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
};

export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return { statusCode: status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}

export function callerFromEvent(event: APIGatewayProxyEvent): Caller {
  const context = (event.requestContext?.authorizer ?? {}) as Record<string, unknown>;
  const userId = typeof context.userId === "string" ? context.userId : "";
  if (!userId) throw new HttpError(401, "Unauthorized");
  const limit = Number(context.rateLimitPerMinute);
  return {
    userId,
    tokenId: String(context.tokenId ?? ""),
    rateLimitPerMinute: Number.isFinite(limit) && limit > 0 ? limit : 100,
    systemAdmin: context.systemAdmin === true || context.systemAdmin === "true",
  };
}

/**
 * The JSON body, parsed and checked (depth, well-formed strings and keys, finite numbers) before
 * any handler reads it; the query parameters are checked for well-formed Unicode here too, as they
 * come in the same event (lib/http/input-checks.ts).
 */
export function parseBody(event: APIGatewayProxyEvent): unknown {
  const queryProblems = queryIssues(event.queryStringParameters, event.multiValueQueryStringParameters);
  if (queryProblems.length > 0) throw validationFailed(queryProblems);
  if (event.body === null || event.body === undefined || event.body === "") return undefined;
  const raw = event.isBase64Encoded ? Buffer.from(event.body, "base64").toString("utf8") : event.body;
  return parseJsonInput(raw);
}

/** Rate limit per user token (section 8): one conditional counter update per request. */
export const rateLimit = (): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> => ({
  before: async (request) => {
    const caller = callerFromEvent(request.event);
    const decision = await consumeRequest(
      `TOKEN#${caller.tokenId || caller.userId}`,
      caller.rateLimitPerMinute,
    );
    if (!decision.allowed) throw tooManyRequests(decision.retryAfterSeconds, decision.limit);
    (request.internal as Record<string, unknown>).rateHeaders = {
      "X-RateLimit-Limit": String(decision.limit),
      "X-RateLimit-Remaining": String(decision.remaining),
    };
  },
  after: async (request) => {
    const rateHeaders = (request.internal as Record<string, unknown>).rateHeaders as
      | Record<string, string>
      | undefined;
    if (request.response && rateHeaders)
      request.response.headers = { ...request.response.headers, ...rateHeaders };
  },
});

/**
 * Turn thrown errors into responses: exposed 4xx as `{message, ...}`, an AWS service that is
 * unavailable a 503, everything else a bare 500.
 */
export const errorResponses = (): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> => ({
  onError: async (request) => {
    const requestId = request.event.requestContext?.requestId ?? "";
    const error = request.error instanceof DomainError ? httpErrorOf(request.error) : request.error;
    if (error instanceof HttpError && error.expose) {
      request.response = json(error.status, error.body, error.headers);
      return;
    }
    // A store (or KMS, SES) that stalled or failed after the client's bounded retries
    // (lib/aws/clients.ts), or said so itself: 503, a generic message, nothing of the error shown.
    const unavailable = isServiceUnavailable(error) || (error instanceof HttpError && error.status === 503);
    log.error(unavailable ? "Service unavailable" : "Unhandled error", {
      ...describeError(request.error),
      resource: request.event.resource,
      method: request.event.httpMethod,
      requestId,
    });
    // A 5xx body says nothing of the error: a generic message and the request id to quote.
    request.response = unavailable
      ? json(503, { message: SERVICE_UNAVAILABLE_MESSAGE, requestId })
      : json(500, { message: "Internal server error", requestId });
  },
});

export function createApiHandler(routes: RouteTable) {
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(errorResponses())
    .use(rateLimit())
    .handler(async (event) => {
      const key = `${event.httpMethod} ${event.resource}` as RouteKey;
      const route = routes[key];
      if (!route) {
        const allowed = Object.keys(routes)
          .filter((k) => k.endsWith(` ${event.resource}`))
          .map((k) => k.split(" ")[0] ?? "");
        throw methodNotAllowed(`Method ${event.httpMethod} is not supported on ${event.resource}`, allowed);
      }
      const result = await route({
        caller: callerFromEvent(event),
        params: (event.pathParameters ?? {}) as Record<string, string>,
        query: event.queryStringParameters ?? {},
        body: parseBody(event),
        headers: event.headers ?? {},
        requestId: event.requestContext?.requestId ?? "",
        baseUrl: publicBaseUrl(event),
      });
      return json(result.status ?? 200, result.body, result.headers);
    });
}

/**
 * `{base_url}` as the caller reached it: API_BASE_URL when set (a custom domain), else the API
 * Gateway domain and stage, or, locally, the host the request came to.
 */
export function publicBaseUrl(event: APIGatewayProxyEvent): string {
  const configured = process.env.API_BASE_URL;
  if (configured) return configured.replace(/\/$/, "");
  const context = event.requestContext;
  const host = context?.domainName ?? event.headers?.Host ?? event.headers?.host ?? "localhost";
  if (context?.apiId === "local") return `http://${host}`;
  return `https://${host}/${context?.stage ?? ""}`.replace(/\/$/, "");
}

/** A route that exists in the API only to explain what to use instead (spec: "unsupported"). */
export function unsupported(message: string, allow: string[]): RouteHandler {
  return async () => {
    throw methodNotAllowed(message, allow);
  };
}
