/**
 * A Lambda's dispatch, derived from the operations of its group: API Gateway has already matched
 * the resource, so the operation is an exact look-up by method and resource. Then, in this order
 * and in this one place:
 * 1. the principal (from the authorizer's context: the authorizer runs for every request, so a
 *    revoked token or session is a 401 on its next request), the CSRF rule for a session caller
 *    (and for /auth/*: `checkOrigin`) and the rate limit per token (per user for a session),
 *    unless public;
 * 2. path parameters decoded (400 naming a malformed one);
 * 3. the declared access checked (self, client role, system admin), before any other input is
 *    read, so a caller without access learns nothing from validation;
 * 3b. query and body parsed with the declared schemas (400 naming every failing field);
 * 4. the handler (it calls one domain function);
 * 5. the answer shaped by the declared response schema: a field that is not declared never
 *    leaves, whatever the stored item holds; then, for an operation with `alternatives`, rendered
 *    as the media type the request's `Accept` prefers (JSON unless another is preferred).
 */

import middy from "@middy/core";
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from "aws-lambda";
import { loadAppUrl } from "#lib/app-url.ts";
import { requireClientAccess, requireMspAccess, sharedKindOf } from "#lib/domain/access.ts";
import { consumeRequest } from "#lib/domain/rate-limit.ts";
import {
  callerFromEvent,
  errorResponses,
  invocationLogging,
  json,
  parseBody,
  publicBaseUrl,
} from "#lib/http/api-handler.ts";
import { headerValue, preferredMediaType } from "#lib/http/content-negotiation.ts";
import { methodNotAllowed, tooManyRequests } from "#lib/http/errors.ts";
import { decodePathParameter } from "#lib/http/input-checks.ts";
import { isOwnOrigin, SAFE_METHODS } from "#lib/http/origin.ts";
import { parseInput } from "#lib/http/validation.ts";
import { log } from "#lib/log.ts";
import { forbidden } from "#lib/shared/errors.ts";
import type { Access, Granted, Operation, Principal } from "./operation.ts";

const TEXT_HEADERS = { "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" };

export const operationKey = (method: string, path: string) => `${method} ${path}`;

/** Message of the 403 answered when the path's user is not the caller. */
export const NOT_SELF_MESSAGE = "Forbidden: you can only access your own user resources";

const pathParam = (params: Record<string, unknown>, name: string) =>
  typeof params[name] === "string" ? params[name] : undefined;

/** Checks the declared access and answers what it grants: the member for `client`, the msp for `msp`. */
async function checkAccess(
  operation: Operation,
  principal: Principal | undefined,
  params: Record<string, unknown>,
): Promise<Granted<Access>> {
  const needed = operation.access;
  if (needed.kind === "public" || needed.kind === "user") return {};
  if (!principal) throw forbidden();
  switch (needed.kind) {
    case "self":
      if (params.userId !== principal.userId) throw forbidden(NOT_SELF_MESSAGE);
      return {};
    case "systemAdmin":
      if (!principal.systemAdmin) throw forbidden("Forbidden: requires a system administrator");
      return {};
    case "client":
      return {
        member: await requireClientAccess(
          pathParam(params, "clientId") ?? "",
          principal.userId,
          needed.role,
          sharedKindOf(operation.path),
        ),
      };
    case "msp":
      return {
        msp: await requireMspAccess(
          pathParam(params, "mspId") ?? "",
          principal,
          needed.role,
          pathParam(params, "clientId"),
        ),
      };
  }
}

/** The declared path parameters, decoded (a malformed escape is a 400 naming the parameter). */
function pathParamsOf(operation: Operation, event: APIGatewayProxyEvent): Record<string, string> {
  const raw = event.pathParameters ?? {};
  return Object.fromEntries(
    pathParamNames(operation).map((name) => [name, decodePathParameter(name, raw[name])]),
  );
}

/** The names of the operation's path parameters, in path order. */
export const pathParamNames = (operation: Operation): string[] =>
  [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);

/** The answer's body, shaped by the declared schema; a handler that breaks its contract is a 500. */
function shape(operation: Operation, body: unknown): Record<string, unknown> | string {
  const result = operation.response.schema.safeParse(body);
  if (result.success) return result.data;
  log.error("Response does not match its declared schema", {
    operationId: operation.id,
    issues: result.error.issues.slice(0, 5).map((issue) => `${issue.path.join(".")}: ${issue.message}`),
  });
  throw new Error(`Response of ${operation.id} does not match its declared schema`);
}

/** An operation's input as it arrives: decoded path parameters, then (read after the access check) the query and the body. */
export interface RawOperationInput {
  params: Record<string, string>;
  /** Called once the access is granted: the query's values and the parsed body (undefined: none sent). */
  read(): { query: Record<string, unknown>; body: unknown };
}

export interface OperationContext {
  requestId: string;
  baseUrl: string;
  /** The request's headers, names lower-cased (none for an MCP tool call). */
  headers?: Readonly<Record<string, string>>;
  /** The request's body as received (none for an MCP tool call): what a signed webhook is verified on. */
  rawBody?: string;
}

export interface OperationAnswer {
  status: number;
  /** Shaped by the declared response schema. */
  body: Record<string, unknown> | string;
  headers: Record<string, string>;
}

/**
 * One call of an operation, after authentication and the rate limit: the access check, then the
 * query and the body parsed, the handler, and the answer shaped. The Lambda dispatch and the MCP
 * tools (lib/mcp/tools.ts) both run operations through it, so a tool call is checked and shaped
 * exactly as the HTTP request is. Domain errors are thrown as they are.
 */
export async function runOperation(
  operation: Operation,
  principal: Principal | undefined,
  input: RawOperationInput,
  context: OperationContext,
): Promise<OperationAnswer> {
  const params = parseInput(operation.params, input.params, "path");
  // Access before the query and the body: a caller without access learns nothing from how
  // its input would have been validated (a non-member gets 404 whatever it sends).
  const granted = await checkAccess(operation, principal, params);
  const raw = input.read();
  const query = parseInput(operation.query, raw.query, "query");
  const body = operation.body ? parseInput(operation.body, raw.body ?? {}) : undefined;
  const result = await operation.handler({
    ...granted,
    principal: principal ?? { userId: "", tokenId: "", systemAdmin: false },
    params,
    query,
    body,
    requestId: context.requestId,
    baseUrl: context.baseUrl,
    headers: context.headers ?? {},
    rawBody: context.rawBody,
  });
  return {
    status: result.status ?? operation.response.status,
    body: shape(operation, result.body),
    headers: result.headers ?? {},
  };
}

/** The body's text exactly as it arrived (decoded from base64 when API Gateway encoded it). */
function rawBodyOf(event: APIGatewayProxyEvent): string | undefined {
  if (event.body === null || event.body === undefined) return undefined;
  return event.isBase64Encoded ? Buffer.from(event.body, "base64").toString("utf8") : event.body;
}

/** A request's headers with lower-cased names (API Gateway keeps the client's spelling). */
function lowerCasedHeaders(
  headers: APIGatewayProxyEvent["headers"] | null | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {}))
    if (typeof value === "string") out[name.toLowerCase()] = value;
  return out;
}

/** Message of the 403 of a cookie-authenticated unsafe request without this service's Origin. */
export const SESSION_ORIGIN_MESSAGE =
  "Forbidden: a request signed in with a session cookie must come from this service's own pages (Origin header)";

/** Message of the 403 of an /auth/* request (sign-in, sign-out...) sent from another site's page. */
export const FOREIGN_ORIGIN_MESSAGE =
  "Forbidden: this request comes from another site's page (Origin header)";

/**
 * The CSRF rule (issue 21, docs/accounts.md): a request authenticated by the session cookie whose
 * method is not GET, HEAD or OPTIONS must carry this service's own `Origin` (a browser always sends
 * it on such a request, and another site's page cannot forge it). A request authenticated by a
 * token is not checked (a cross-site page cannot attach one). The public /auth/* operations that
 * change state (sign-in, sign-out, session revocation) refuse a foreign `Origin` when one is sent
 * (login CSRF; without one, the caller is not a browser on another site's page).
 */
function checkOrigin(operation: Operation, event: APIGatewayProxyEvent, authMethod: unknown): void {
  if (SAFE_METHODS.has(event.httpMethod.toUpperCase())) return;
  const origin = headerValue(event.headers, "origin");
  if (operation.access.kind === "public") {
    if (
      operation.path.startsWith("/auth/") &&
      origin !== undefined &&
      !isOwnOrigin(origin, publicBaseUrl(event))
    )
      throw forbidden(FOREIGN_ORIGIN_MESSAGE);
    return;
  }
  if (authMethod === "session" && !isOwnOrigin(origin, publicBaseUrl(event)))
    throw forbidden(SESSION_ORIGIN_MESSAGE);
}

export function createOperationHandler(operations: readonly Operation[]) {
  const byKey = new Map(
    operations.map((operation) => [operationKey(operation.method, operation.path), operation]),
  );
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(invocationLogging())
    .use(errorResponses())
    .handler(async (event) => {
      await loadAppUrl();
      const operation = byKey.get(operationKey(event.httpMethod, event.resource));
      if (!operation) {
        const allowed = operations.filter((o) => o.path === event.resource).map((o) => o.method);
        throw methodNotAllowed(`Method ${event.httpMethod} is not supported on ${event.resource}`, allowed);
      }
      let principal: Principal | undefined;
      const headers: Record<string, string> = {};
      if (operation.access.kind === "public") checkOrigin(operation, event, undefined);
      else {
        // The authorizer (a REQUEST authorizer API Gateway invokes for every request, without a
        // cache) has authenticated the caller: a revoked token or session never gets here.
        const caller = callerFromEvent(event);
        const authMethod = event.requestContext?.authorizer?.authMethod;
        checkOrigin(operation, event, authMethod);
        principal = {
          userId: caller.userId,
          tokenId: caller.tokenId,
          systemAdmin: caller.systemAdmin,
          session: authMethod === "session",
        };
        // Rate limit (section 8): one conditional counter update per request, per token; a
        // session caller (no token) counts in its user's window, shared by all its sessions.
        const decision = await consumeRequest(
          `TOKEN#${caller.tokenId || caller.userId}`,
          caller.rateLimitPerMinute,
        );
        if (!decision.allowed) throw tooManyRequests(decision.retryAfterSeconds, decision.limit);
        headers["X-RateLimit-Limit"] = String(decision.limit);
        headers["X-RateLimit-Remaining"] = String(decision.remaining);
      }
      const params = pathParamsOf(operation, event);
      const answer = await runOperation(
        operation,
        principal,
        { params, read: () => ({ body: parseBody(event), query: event.queryStringParameters ?? {} }) },
        {
          requestId: event.requestContext?.requestId ?? "",
          baseUrl: publicBaseUrl(event),
          headers: lowerCasedHeaders(event.headers),
          rawBody: rawBodyOf(event),
        },
      );
      const { status, body: shaped } = answer;
      const { contentType } = operation.response;
      // A non-JSON answer (the reference page) is the handler's text, sent as it is.
      if (contentType && typeof shaped === "string") {
        return {
          statusCode: status,
          headers: { ...TEXT_HEADERS, "Content-Type": contentType, ...answer.headers, ...headers },
          body: shaped,
        };
      }
      // Another representation of the same answer when the caller's Accept prefers it (the usage CSV).
      const alternatives = operation.response.alternatives ?? [];
      if (alternatives.length) {
        const chosen = preferredMediaType(headerValue(event.headers, "accept"), [
          "application/json",
          ...alternatives.map((alternative) => alternative.contentType),
        ]);
        const alternative = alternatives.find((candidate) => candidate.contentType === chosen);
        if (alternative)
          return {
            statusCode: status,
            headers: {
              ...TEXT_HEADERS,
              "Content-Type": `${alternative.contentType}; charset=utf-8`,
              Vary: "Accept",
              ...answer.headers,
              ...headers,
            },
            body: alternative.render(shaped),
          };
        headers.Vary = "Accept";
      }
      return json(status, shaped, { ...answer.headers, ...headers });
    });
}
