/**
 * The HTTP edge of the Core API's Lambdas: the caller from the authorizer's context, the JSON body
 * checked before anything reads it, JSON answers, and errors turned into answers. The dispatch
 * itself is derived from the operation registry (lib/api/dispatch.ts).
 */
import type middy from "@middy/core";
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from "aws-lambda";
import { isServiceUnavailable } from "#lib/aws/clients.ts";
import { SERVICE_UNAVAILABLE_MESSAGE } from "#lib/infra/api-manifest.ts";
import { describeError, log, logReady, setCorrelationId } from "#lib/log.ts";
import { DomainError, HttpError, httpErrorOf, validationFailed } from "./errors.ts";
import { parseJsonInput, queryIssues } from "./input-checks.ts";

/** Who is calling, as established by the authorizer (API Gateway passes its context through). */
export interface Caller {
  userId: string;
  tokenId: string;
  rateLimitPerMinute: number;
  systemAdmin: boolean;
}

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

/**
 * Turn thrown errors into responses: exposed 4xx as `{message, ...}`, an AWS service that is
 * unavailable a 503, everything else a bare 500.
 */
/**
 * Structured logging of an API invocation: the logger is ready before the handler runs, and the
 * API request's id is the correlation id of its lines (lib/log.ts).
 */
export const invocationLogging = (): middy.MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> => ({
  before: async (request) => {
    await logReady();
    setCorrelationId(request.event.requestContext?.requestId);
  },
  after: () => setCorrelationId(undefined),
  onError: () => setCorrelationId(undefined),
});

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
