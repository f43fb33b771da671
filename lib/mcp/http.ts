/**
 * The MCP endpoint's whole HTTP behaviour (spec 4.15, issue 13), for a web `Request`:
 * 0. the Host checked against MCP_ALLOWED_HOSTS when set (the local runner: DNS rebinding), 403;
 * 1. `/.well-known/*` and `/oauth/*`: the OAuth 2.1 authorization server (lib/oauth);
 * 2. `/mcp` only (404 elsewhere); POST only: GET and DELETE (and anything else) get 405 with
 *    `Allow: POST` (stateless: no SSE stream, no session to delete);
 * 3. Origin validation against DNS rebinding: no Origin header (a non-browser client) is allowed,
 *    an Origin equal to the request's own origin or listed in MCP_ALLOWED_ORIGINS (comma list)
 *    is allowed, any other is 403;
 * 4. authentication (lib/mcp/auth.ts), 401 with WWW-Authenticate;
 * 5. the Core API's rate limit per user token (the same counter, lib/domain/rate-limit.ts), 429;
 * 6. the tool selection (toolsets, read-only, DELETE_ENABLED), 400 naming an unknown toolset;
 * 7. a JSON-RPC batch (a JSON array) is refused, 400 with -32600 (lib/mcp/rpc.ts);
 * 8. a new McpServer and a new stateless transport answering JSON, for this request only; error
 *    messages are sent without McpError's `MCP error <code>: ` prefix (lib/mcp/rpc.ts).
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { isServiceUnavailable } from "#lib/aws/clients.ts";
import { consumeRequest } from "#lib/domain/rate-limit.ts";
import { SERVICE_UNAVAILABLE_MESSAGE } from "#lib/infra/api-manifest.ts";
import { describeError, log } from "#lib/log.ts";
import { handleOAuthRequest } from "#lib/oauth/http.ts";
import { authenticateMcp, unauthorizedResponse } from "./auth.ts";
import { batchRefusal, isBatchBody, wireMessage } from "./rpc.ts";
import { createMcpServer } from "./server.ts";
import { selectionOf, UnknownToolsetError } from "./toolsets.ts";

export interface McpHttpContext {
  /** The platform's request id (Lambda's), quoted in 5xx answers and logs. */
  requestId: string;
  /** The Core API's public base URL, for links in answers (default: the request's origin). */
  baseUrl?: string;
  /** The caller's address as the function URL saw it (the OAuth registration limit counts by it). */
  sourceIp?: string;
  env?: NodeJS.ProcessEnv;
}

export const MCP_PATH = "/mcp";

const NO_STORE = { "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff" };

const jsonResponse = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  Response.json(body, { status, headers: { ...NO_STORE, ...headers } });

/**
 * Whether the request's Host names this server (DNS rebinding: a page on `evil.example` whose name
 * now resolves to the local server sends `Host: evil.example`). With `MCP_ALLOWED_HOSTS` (comma list
 * of host names, ports ignored; the local runner sets its loopback names) the host must be one of
 * them. Deployed, the host is the function URL's own domain from the event, never a header, so the
 * list is not needed there.
 */
export function isAllowedHost(request: Request, env: NodeJS.ProcessEnv = process.env): boolean {
  const allowed = (env.MCP_ALLOWED_HOSTS ?? "")
    .split(",")
    .map((entry) => entry.trim().toLowerCase())
    .filter(Boolean);
  return allowed.length === 0 || allowed.includes(new URL(request.url).hostname.toLowerCase());
}

/** Whether a browser's Origin may call the endpoint (absent: not a browser, allowed). */
export function isAllowedOrigin(request: Request, env: NodeJS.ProcessEnv = process.env): boolean {
  const origin = request.headers.get("origin");
  if (origin === null) return true;
  if (origin === new URL(request.url).origin) return true;
  const allowed = (env.MCP_ALLOWED_ORIGINS ?? "")
    .split(",")
    .map((entry) => entry.trim().replace(/\/$/, ""))
    .filter(Boolean);
  return allowed.includes(origin);
}

export async function handleMcpHttp(request: Request, context: McpHttpContext): Promise<Response> {
  const env = context.env ?? process.env;
  const url = new URL(request.url);
  try {
    if (!isAllowedHost(request, env)) return jsonResponse(403, { message: "Forbidden: host not allowed" });
    // `/.well-known/*` and `/oauth/*`: the OAuth 2.1 authorization server (lib/oauth).
    const oauth = await handleOAuthRequest(request, { sourceIp: context.sourceIp });
    if (oauth) return oauth;
    if (url.pathname !== MCP_PATH && url.pathname !== `${MCP_PATH}/`)
      return jsonResponse(404, { message: "Not found" });
    if (request.method !== "POST")
      return jsonResponse(
        405,
        { message: `Method ${request.method} is not supported on ${MCP_PATH}; use POST` },
        { Allow: "POST" },
      );
    if (!isAllowedOrigin(request, env))
      return jsonResponse(403, { message: "Forbidden: origin not allowed" });

    const caller = await authenticateMcp(request);
    if (!caller) return unauthorizedResponse(request);
    const decision = await consumeRequest(
      `TOKEN#${caller.tokenId || caller.userId}`,
      caller.rateLimitPerMinute,
    );
    const limitHeaders = {
      "X-RateLimit-Limit": String(decision.limit),
      "X-RateLimit-Remaining": String(decision.allowed ? decision.remaining : 0),
    };
    if (!decision.allowed)
      return jsonResponse(
        429,
        { message: "Too many requests: rate limit exceeded", retryAfter: decision.retryAfterSeconds },
        { ...limitHeaders, "Retry-After": String(decision.retryAfterSeconds) },
      );

    let selection: ReturnType<typeof selectionOf>;
    try {
      selection = selectionOf(request, env);
    } catch (error) {
      if (error instanceof UnknownToolsetError) return jsonResponse(400, { message: error.message });
      throw error;
    }
    // One JSON-RPC message per POST (lib/mcp/rpc.ts): a batch would run many calls for one unit
    // of the rate limit above.
    const text = await request.text();
    if (isBatchBody(text)) return jsonResponse(400, batchRefusal(), limitHeaders);
    const server = createMcpServer(selection, {
      principal: { userId: caller.userId, tokenId: caller.tokenId, systemAdmin: caller.systemAdmin },
      requestId: context.requestId,
      baseUrl: context.baseUrl ?? url.origin,
    });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    // Error messages go out without McpError's `MCP error <code>: ` (a client adds it once).
    const send = transport.send.bind(transport);
    transport.send = (message, options) => send(wireMessage(message), options);
    try {
      await server.connect(transport);
      const response = await transport.handleRequest(
        new Request(request.url, { method: request.method, headers: request.headers, body: text }),
      );
      const headers = new Headers(response.headers);
      for (const [name, value] of Object.entries({ ...NO_STORE, ...limitHeaders })) headers.set(name, value);
      const body = await response.text();
      return new Response(body.length ? body : null, { status: response.status, headers });
    } finally {
      await server.close();
    }
  } catch (error) {
    const unavailable = isServiceUnavailable(error);
    log.error(unavailable ? "Service unavailable" : "Unhandled error", {
      ...describeError(error),
      path: url.pathname,
      requestId: context.requestId,
    });
    return unavailable
      ? jsonResponse(503, { message: SERVICE_UNAVAILABLE_MESSAGE, requestId: context.requestId })
      : jsonResponse(500, { message: "Internal server error", requestId: context.requestId });
  }
}
