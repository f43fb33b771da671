/**
 * The MCP endpoint's Lambda, behind a function URL in the home stack (payload 2.0, buffered): the
 * event becomes a web `Request`, lib/mcp/http.ts answers it, and the `Response` becomes the
 * function URL's result. The local runner serves the same handler at `{base_url}/mcp` (and
 * `/.well-known/*`, `/oauth/*`).
 */

import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { loadAppUrl } from "#lib/app-url.ts";
import { getConfig } from "#lib/config.ts";
import { logReady, setCorrelationId } from "#lib/log.ts";
import { handleMcpHttp } from "#lib/mcp/http.ts";

/** The function URL event as the web request it stands for. */
export function requestOf(event: APIGatewayProxyEventV2): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(event.headers ?? {}))
    if (value !== undefined) headers.set(name, value);
  if (event.cookies?.length) headers.set("cookie", event.cookies.join("; "));
  // The function URL's own domain; the local runner marks its events with an `apiId` of `local...`
  // and serves plain HTTP. Behind the console's distribution (cdk/constructs/console-site.ts), its
  // viewer-request function forwards the viewer's Host as X-Forwarded-Host: when that is APP_URL's
  // host, the endpoint's public origin (its OAuth metadata, its resource) is APP_URL's. Any other
  // forwarded value is ignored, so a caller cannot make the endpoint name a host of its choosing.
  const local = event.requestContext.apiId.startsWith("local");
  const appUrl = new URL(getConfig().appUrl);
  const forwarded = headers.get("x-forwarded-host")?.toLowerCase();
  const origin =
    !local && forwarded === appUrl.host.toLowerCase()
      ? appUrl.origin
      : `${local ? "http" : "https"}://${event.requestContext.domainName}`;
  const query = event.rawQueryString ? `?${event.rawQueryString}` : "";
  const method = event.requestContext.http.method;
  const body =
    event.body === undefined || method === "GET" || method === "HEAD"
      ? undefined
      : event.isBase64Encoded
        ? Buffer.from(event.body, "base64")
        : event.body;
  return new Request(`${origin}${event.rawPath}${query}`, { method, headers, body });
}

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  await logReady();
  await loadAppUrl();
  const requestId = event.requestContext.requestId;
  setCorrelationId(requestId);
  try {
    const response = await handleMcpHttp(requestOf(event), {
      requestId,
      baseUrl: process.env.API_BASE_URL?.replace(/\/$/, ""),
      sourceIp: event.requestContext.http.sourceIp,
    });
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      if (name !== "set-cookie") headers[name] = value;
    });
    const cookies = response.headers.getSetCookie();
    return {
      statusCode: response.status,
      headers,
      ...(cookies.length ? { cookies } : {}),
      body: await response.text(),
      isBase64Encoded: false,
    };
  } finally {
    setCorrelationId(undefined);
  }
}
