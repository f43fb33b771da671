/**
 * The MCP endpoint's public origin (functions/mcp.ts requestOf): the function URL's own domain, or
 * APP_URL's origin when the console's distribution forwarded APP_URL's host (X-Forwarded-Host, set
 * by its viewer-request function). Any other forwarded host is ignored.
 */
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import { resetConfig } from "#lib/config.ts";
import { requestOf } from "../../functions/mcp.ts";

const saved = process.env.APP_URL;
afterEach(() => {
  if (saved === undefined) delete process.env.APP_URL;
  else process.env.APP_URL = saved;
  resetConfig();
});

const event = (headers: Record<string, string>, apiId = "abc123"): APIGatewayProxyEventV2 =>
  ({
    version: "2.0",
    routeKey: "$default",
    rawPath: "/.well-known/oauth-protected-resource/mcp",
    rawQueryString: "",
    headers,
    isBase64Encoded: false,
    requestContext: {
      apiId,
      domainName: "abc123.lambda-url.us-east-1.on.aws",
      http: { method: "GET", path: "/.well-known/oauth-protected-resource/mcp", sourceIp: "192.0.2.1" },
      requestId: "r1",
    },
  }) as unknown as APIGatewayProxyEventV2;

describe("the MCP endpoint's public origin", () => {
  it("is the function URL's domain for a direct call", () => {
    process.env.APP_URL = "https://d111.cloudfront.net";
    resetConfig();
    expect(new URL(requestOf(event({})).url).origin).toBe("https://abc123.lambda-url.us-east-1.on.aws");
  });

  it("is APP_URL's origin when the distribution forwarded APP_URL's host", () => {
    process.env.APP_URL = "https://d111.cloudfront.net";
    resetConfig();
    const url = new URL(requestOf(event({ "x-forwarded-host": "D111.cloudfront.net" })).url);
    expect(url.origin).toBe("https://d111.cloudfront.net");
    expect(url.pathname).toBe("/.well-known/oauth-protected-resource/mcp");
  });

  it("ignores any other forwarded host, and the local runner's events", () => {
    process.env.APP_URL = "https://d111.cloudfront.net";
    resetConfig();
    expect(new URL(requestOf(event({ "x-forwarded-host": "evil.example" })).url).origin).toBe(
      "https://abc123.lambda-url.us-east-1.on.aws",
    );
    process.env.APP_URL = "http://localhost:3000";
    resetConfig();
    expect(new URL(requestOf(event({ "x-forwarded-host": "localhost:3000" }, "local-mcp")).url).origin).toBe(
      "http://abc123.lambda-url.us-east-1.on.aws",
    );
  });
});
