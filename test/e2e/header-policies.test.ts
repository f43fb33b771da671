/**
 * Header policies (issue 7) over real HTTP: a proxy's additional headers follow the credential
 * secrets' rules (400 naming the field), and what a target answers cannot speak for the gateway
 * (service-proxy-*) nor set cookies beyond its own proxy on the shared data-plane origin.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callDataPlane,
  createClientFor,
  created,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const REGION = "us-east-1";
let stack: TestStack;
let owner: TestUser;
let clientId: string;
let target: Server;
let targetBase: string;
const received: IncomingMessage["headers"][] = [];

beforeAll(async () => {
  stack = await startTestStack();
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Header Policies Co");
  target = createServer((req, res) => {
    received.push(req.headers);
    req.resume();
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      res.setHeader("x-target", "yes");
      // A target speaking for the gateway, and cookies reaching for the whole origin.
      res.setHeader("service-proxy-warning", "forged by the target");
      res.setHeader("Service-Proxy-Code", "forged-code");
      res.setHeader("service-proxy-message", "forged message");
      res.setHeader("set-cookie", [
        "wide=1; Domain=127.0.0.1; Path=/",
        "scoped=2; Path=/v1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly",
        "__Host-session=3; Path=/; Secure",
      ]);
      res.end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
});
afterAll(async () => {
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
  await stack?.stop();
});

const api = () => `/api/clients/${clientId}`;

async function parents() {
  const [proxyCredential, targetCredential, theTarget] = await Promise.all([
    created(
      owner.api.post(`${api()}/credentials`, {
        credentialName: "caller",
        credentialType: "proxy",
        authType: "apiKey",
        region: REGION,
        secret: { keyName: "x-api-key", keyValue: "caller-key-1234567890" },
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api()}/credentials`, {
        credentialName: "upstream",
        credentialType: "target",
        authType: "none",
        region: REGION,
        secret: {},
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api()}/targets`, {
        targetName: "echo",
        targetRegion: REGION,
        targetBaseURL: targetBase,
        targetTestPath: "/health",
      }),
      "targets",
    ),
  ]);
  return {
    proxyName: "p",
    proxyRegion: REGION,
    proxyProxyCredentialId: proxyCredential.credentialId,
    proxyTargetId: theTarget.targetId,
    proxyTargetCredentialId: targetCredential.credentialId,
  };
}

describe("proxy additional headers and query parameters", () => {
  it.each([
    [{ Host: "evil.example" }, "proxyAdditionalHeaders.Host", /managed by the gateway/],
    [{ connection: "close" }, "proxyAdditionalHeaders.connection", /managed by the gateway/],
    [{ "Content-Length": "5" }, "proxyAdditionalHeaders.Content-Length", /managed by the gateway/],
    [
      { "Transfer-Encoding": "chunked" },
      "proxyAdditionalHeaders.Transfer-Encoding",
      /managed by the gateway/,
    ],
    [{ Upgrade: "websocket" }, "proxyAdditionalHeaders.Upgrade", /managed by the gateway/],
    [{ "bad name": "x" }, "proxyAdditionalHeaders.bad name", /valid HTTP header name/],
    [{ "X-Ctl": "a\u0001b" }, "proxyAdditionalHeaders.X-Ctl", /control characters/],
    [{ "X-Ctl": "a\r\nX-Injected: 1" }, "proxyAdditionalHeaders.X-Ctl", /control characters/],
    [{ "X-Wide": "snow \u2603" }, "proxyAdditionalHeaders.X-Wide", /beyond Latin-1/],
    [{ "X-A": "1", "x-a": "2" }, "proxyAdditionalHeaders.x-a", /repeats a header name/],
  ])("refuses %j with a 400 naming %s, on create and on update", async (headers, field, problem) => {
    const body = await parents();
    const refused = await owner.api.post(`${api()}/proxies`, { ...body, proxyAdditionalHeaders: headers });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.fields).toEqual([field]);
    expect(refused.body.errors[0]).toMatch(problem);

    const proxy = await created(owner.api.post(`${api()}/proxies`, body), "proxies");
    const update = await owner.api.put(`${api()}/proxies/${proxy.proxyId}`, {
      proxyAdditionalHeaders: headers,
    });
    expect(update.status, JSON.stringify(update.body)).toBe(400);
    expect(update.body.fields).toEqual([field]);
  });

  it.each([
    [{ "a\nb": "1" }, "proxyAdditionalQueryParams.a\nb"],
    [{ tenant: "x\u0000" }, "proxyAdditionalQueryParams.tenant"],
    [{ "": "x" }, "proxyAdditionalQueryParams."],
  ])("refuses query parameters %j with a 400 naming the field", async (query, field) => {
    const refused = await owner.api.post(`${api()}/proxies`, {
      ...(await parents()),
      proxyAdditionalQueryParams: query,
    });
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.fields).toEqual([field]);
  });

  it("sends valid additional headers, Latin-1 values included, without breaking the request", async () => {
    const proxy = await created(
      owner.api.post(`${api()}/proxies`, {
        ...(await parents()),
        proxyAdditionalHeaders: { "X-Team": "caf\u00e9", "X-Plain": "a b\tc" },
        proxyAdditionalQueryParams: { tenant: "acme corp" },
      }),
      "proxies",
    );
    received.length = 0;
    const response = await callDataPlane(`${stack.regions[REGION]}/api/${proxy.proxyId}/x`, {
      headers: { "x-api-key": "caller-key-1234567890" },
    });
    expect(response.status, response.text).toBe(200);
    expect(received).toHaveLength(1);
    expect(received[0]!["x-team"]).toBe("caf\u00e9");
    expect(received[0]!["x-plain"]).toBe("a b\tc");
    expect(received[0]!.host).toBe(new URL(targetBase).host);
  });
});

describe("the target's answer", () => {
  it("cannot set service-proxy-* headers, and its cookies are confined to the proxy", async () => {
    const proxy = await created(owner.api.post(`${api()}/proxies`, await parents()), "proxies");
    const response = await callDataPlane(`${stack.regions[REGION]}/api/${proxy.proxyId}/v1/items`, {
      headers: { "x-api-key": "caller-key-1234567890" },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.headers.get("x-target")).toBe("yes");
    // The gateway's own headers, not the target's forgeries.
    expect(response.headers.get("service-proxy-code")).toBe("proxy-access-granted");
    expect(response.headers.get("service-proxy-message")).toBe("Request forwarded to the target");
    expect(response.headers.get("service-proxy-warning")).toBe(
      "__Host- cookies of the target were dropped: __Host-session",
    );
    expect(response.headers.get("x-request-id")).toEqual(expect.any(String));
    // Each cookie its own header: host-only, under /api/{proxyId}.
    expect(response.headers.getSetCookie()).toEqual([
      `wide=1; Path=/api/${proxy.proxyId}`,
      `scoped=2; Path=/api/${proxy.proxyId}/v1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; HttpOnly`,
    ]);
  });
});
