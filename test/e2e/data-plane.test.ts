/**
 * The data plane (spec 4.13) over real HTTP: caller -> local data plane (the regional function
 * URL handler) -> a real target server on loopback, with proxies configured through the Core API.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { setClientBillingStatus } from "../../cli/client-plan.ts";
import { MINUTE_MS, TestClock } from "../support/clock.ts";
import { loggedRecords } from "../support/request-logs.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const EU = "eu-west-1";

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let target: Server;
let targetBase: string;
const received: Received[] = [];
const secrets = new Set<string>();
/** The stack's clock (lib/clock.ts): the rate-limit burst starts in a fresh minute of it. */
const clock = new TestClock();

const secret = (label: string) => {
  const value = `${label}-${randomUUID()}`;
  secrets.add(value);
  return value;
};

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
  target = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      const path = (req.url ?? "").split("?")[0];
      if (path?.endsWith("/binary")) {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        return res.end(body.length ? body : Buffer.from([0, 1, 2, 255, 254, 253]));
      }
      if (path?.endsWith("/huge")) {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        return res.end(Buffer.alloc(6 * 1024 * 1024 + 10, 7));
      }
      if (path?.endsWith("/slow")) return; // never answers
      if (path?.endsWith("/status/418")) {
        res.writeHead(418, { "content-type": "text/plain" });
        return res.end("teapot");
      }
      if (path?.endsWith("/unauthorized")) {
        res.writeHead(401, { "content-type": "application/json" });
        return res.end("{}");
      }
      res.writeHead(200, { "content-type": "application/json", "x-target": "yes", connection: "close" });
      res.end(JSON.stringify({ ok: true, path: req.url }));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}/base`;
});
afterAll(async () => {
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
  await stack?.stop();
});
beforeEach(async () => {
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Data Plane Co");
  received.length = 0;
});

const api = () => `/api/clients/${clientId}`;

interface Setup {
  proxyId: string;
  url: string;
  key: string;
  upstream: string;
  proxyCredentialId: string;
  targetId: string;
}

async function setup(
  options: {
    region?: string;
    proxy?: Record<string, unknown>;
    proxySecret?: Record<string, unknown>;
    proxyAuthType?: string;
    singleUse?: boolean;
    baseUrl?: string;
  } = {},
): Promise<Setup> {
  const region = options.region ?? US;
  const key = secret("caller-key");
  const upstream = secret("upstream-token");
  const [proxyCredential, targetCredential, theTarget] = await Promise.all([
    created(
      owner.api.post(`${api()}/credentials`, {
        credentialName: "caller",
        credentialType: "proxy",
        authType: options.proxyAuthType ?? "apiKey",
        region,
        singleUse: options.singleUse,
        secret: options.proxySecret ?? { keyName: "x-api-key", keyValue: key },
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api()}/credentials`, {
        credentialName: "upstream",
        credentialType: "target",
        authType: "bearer",
        region,
        secret: { token: upstream },
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api()}/targets`, {
        targetName: "echo",
        targetRegion: region,
        targetBaseURL: options.baseUrl ?? targetBase,
        targetTestPath: "/health",
      }),
      "targets",
    ),
  ]);
  const proxy = await created(
    owner.api.post(`${api()}/proxies`, {
      proxyName: "main",
      proxyRegion: region,
      proxyProxyCredentialId: proxyCredential.credentialId,
      proxyTargetId: theTarget.targetId,
      proxyTargetCredentialId: targetCredential.credentialId,
      ...options.proxy,
    }),
    "proxies",
  );
  return {
    proxyId: proxy.proxyId,
    url: `${stack.regions[region]}/api/${proxy.proxyId}`,
    key,
    upstream,
    proxyCredentialId: proxyCredential.credentialId,
    targetId: theTarget.targetId,
  };
}

const call = callDataPlane;

const withKey = (key: string, headers: Record<string, string> = {}) => ({ "x-api-key": key, ...headers });

describe("forwarding", () => {
  it("forwards method, path and query unchanged, replaces Authorization, keeps headers, adds X-Forwarded-For", async () => {
    const s = await setup({
      proxy: {
        proxyAdditionalHeaders: { "X-Team": "payments" },
        proxyAdditionalQueryParams: { tenant: "acme" },
      },
    });
    const response = await call(`${s.url}/v1/items?b=2&a=1&a=3&sp=a%20b`, {
      method: "POST",
      headers: withKey(s.key, {
        authorization: "Bearer caller-junk",
        "content-type": "application/json",
        accept: "application/json",
        "user-agent": "test-agent/1.0",
        "x-custom": "kept",
        connection: "keep-alive",
      }),
      body: JSON.stringify({ hello: "world" }),
    });
    expect(response.status, response.text).toBe(200);
    expect(response.headers.get("service-proxy-code")).toBe("proxy-access-granted");
    expect(response.headers.get("service-proxy-message")).toEqual(expect.any(String));
    expect(response.headers.get("x-target")).toBe("yes");
    expect(received).toHaveLength(1);
    const got = received[0]!;
    expect(got.method).toBe("POST");
    expect(got.url).toBe("/base/v1/items?b=2&a=1&a=3&sp=a%20b&tenant=acme");
    expect(got.headers.host).toBe(new URL(targetBase).host);
    expect(got.headers.authorization).toBe(`Bearer ${s.upstream}`);
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers.accept).toBe("application/json");
    expect(got.headers["user-agent"]).toBe("test-agent/1.0");
    expect(got.headers["x-custom"]).toBe("kept");
    expect(got.headers["x-team"]).toBe("payments");
    expect(got.headers["x-forwarded-for"]).toMatch(/^(127\.0\.0\.1|::1)$/);
    // The caller's own key never reaches the target.
    expect(got.headers["x-api-key"]).toBeUndefined();
    expect(JSON.parse(got.body.toString())).toEqual({ hello: "world" });
  });

  it.each(["GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])("supports %s", async (method) => {
    const s = await setup();
    const response = await call(`${s.url}/m`, { method, headers: withKey(s.key) });
    expect(response.status).toBe(200);
    expect(response.headers.get("service-proxy-code")).toBe("proxy-access-granted");
    expect(received.at(-1)?.method).toBe(method);
  });

  it("carries binary bodies byte for byte both ways, and passes the target's 4xx through", async () => {
    const s = await setup();
    const payload = randomBytes(256 * 1024);
    const response = await call(`${s.url}/binary`, {
      method: "PUT",
      headers: withKey(s.key, { "content-type": "application/octet-stream" }),
      body: payload,
    });
    expect(response.status).toBe(200);
    expect(Buffer.compare(received.at(-1)!.body, payload)).toBe(0);
    expect(Buffer.compare(response.body, payload)).toBe(0);

    // Large: 5 MB up and the same 5 MB back (under the 6 MB limits of both directions).
    const large = randomBytes(5 * 1024 * 1024);
    const echoed = await call(`${s.url}/binary`, {
      method: "POST",
      headers: withKey(s.key, { "content-type": "application/octet-stream" }),
      body: large,
    });
    expect(echoed.status).toBe(200);
    expect(Buffer.compare(received.at(-1)!.body, large)).toBe(0);
    expect(Buffer.compare(echoed.body, large)).toBe(0);

    const teapot = await call(`${s.url}/status/418`, { headers: withKey(s.key) });
    expect(teapot.status).toBe(418);
    expect(teapot.text).toBe("teapot");
    expect(teapot.headers.get("service-proxy-code")).toBe("proxy-access-granted");

    const refused = await call(`${s.url}/unauthorized`, { headers: withKey(s.key) });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("service-proxy-warning")).toMatch(/target credential/);
  });

  it("merges proxy additional data into POST JSON bodies only", async () => {
    const s = await setup({ proxy: { proxyAdditionalData: { source: "gateway" } } });
    await call(`${s.url}/data`, {
      method: "POST",
      headers: withKey(s.key, { "content-type": "application/json" }),
      body: JSON.stringify({ a: 1 }),
    });
    expect(JSON.parse(received.at(-1)!.body.toString())).toEqual({ a: 1, source: "gateway" });
    await call(`${s.url}/data`, { method: "GET", headers: withKey(s.key) });
    expect(received.at(-1)!.body.length).toBe(0);
  });
});

describe("refusals and errors", () => {
  it("answers 403 proxy-access-denied for an unknown proxy, a bad or missing key, and an inactive proxy", async () => {
    const s = await setup();
    for (const [url, headers] of [
      [`${stack.regions[US]}/api/${randomUUID()}/x`, withKey(s.key)],
      [`${s.url}/x`, withKey("wrong")],
      [`${s.url}/x`, {}],
      // A proxy lives in one region only.
      [`${stack.regions[EU]}/api/${s.proxyId}/x`, withKey(s.key)],
    ] as [string, Record<string, string>][]) {
      const response = await call(url, { headers });
      expect(response.status).toBe(403);
      expect(response.headers.get("service-proxy-code")).toBe("proxy-access-denied");
      expect(response.headers.get("service-proxy-message")).toEqual(expect.any(String));
    }
    const deactivated = await owner.api.put(`${api()}/proxies/${s.proxyId}`, { proxyActive: false });
    expect(deactivated.status).toBe(200);
    // Takes effect on the very next request (the warm cache is revalidated by version).
    const inactive = await call(`${s.url}/x`, { headers: withKey(s.key) });
    expect(inactive.status).toBe(403);
    expect(inactive.headers.get("service-proxy-message")).toMatch(/inactive/);
    expect(received).toHaveLength(0);
    await owner.api.put(`${api()}/proxies/${s.proxyId}`, { proxyActive: true });
    expect((await call(`${s.url}/x`, { headers: withKey(s.key) })).status).toBe(200);
  });

  it("applies a new access rule on the next request, with proxy-access-granted and a clear message", async () => {
    const s = await setup();
    expect((await call(`${s.url}/admin/users`, { method: "DELETE", headers: withKey(s.key) })).status).toBe(
      200,
    );
    const rule = await owner.api.post(`${api()}/proxies/${s.proxyId}/rules`, {
      effect: "deny",
      priority: 100,
      methods: ["DELETE"],
      path: { pattern: "^/admin", presence: "present" },
    });
    expect(rule.status).toBe(201);
    const denied = await call(`${s.url}/admin/users`, { method: "DELETE", headers: withKey(s.key) });
    expect(denied.status).toBe(403);
    expect(denied.headers.get("service-proxy-code")).toBe("proxy-access-granted");
    expect(denied.headers.get("service-proxy-message")).toMatch(/rule/);
    expect((await call(`${s.url}/admin/users`, { headers: withKey(s.key) })).status).toBe(200);
    // A target rule and the target's default effect take part too.
    await owner.api.put(`${api()}/targets/${s.targetId}`, { targetDefaultRuleEffect: "deny" });
    expect((await call(`${s.url}/public`, { headers: withKey(s.key) })).status).toBe(403);
    await owner.api.post(`${api()}/targets/${s.targetId}/rules`, {
      effect: "allow",
      priority: 1,
      path: { pattern: "^/public", presence: "present" },
    });
    expect((await call(`${s.url}/public`, { headers: withKey(s.key) })).status).toBe(200);
  });

  it("answers 402 billing-suspended while the client's billing is suspended", async () => {
    const s = await setup();
    await setClientBillingStatus(clientId, "suspended");
    const response = await call(`${s.url}/x`, { headers: withKey(s.key) });
    expect(response.status).toBe(402);
    expect(response.headers.get("service-proxy-code")).toBe("billing-suspended");
    await setClientBillingStatus(clientId, "active");
    expect((await call(`${s.url}/x`, { headers: withKey(s.key) })).status).toBe(200);
  });

  it("answers 413 response-too-large above 6 MB, 504 on timeout, 502 when unreachable or not allowed", async () => {
    const s = await setup({ proxy: { proxyTimeoutSeconds: 1 } });
    const huge = await call(`${s.url}/huge`, { headers: withKey(s.key) });
    expect(huge.status).toBe(413);
    expect(huge.headers.get("service-proxy-code")).toBe("response-too-large");
    const slow = await call(`${s.url}/slow`, { headers: withKey(s.key) });
    expect(slow.status).toBe(504);
    expect(slow.headers.get("service-proxy-code")).toBe("proxy-access-granted");

    const closed = await setup({ baseUrl: "http://127.0.0.1:9/base" });
    const unreachable = await call(`${closed.url}/x`, { headers: withKey(closed.key) });
    expect(unreachable.status).toBe(502);
    expect(unreachable.headers.get("service-proxy-message")).toMatch(/could not be reached/);

    // SSRF: metadata (also decimal-encoded and IPv4-mapped IPv6) and private ranges are refused
    // before any connection; loopback is allowed only because the local stack allows it.
    for (const baseUrl of [
      "http://169.254.169.254/latest",
      "http://2852039166/latest",
      "http://[::ffff:169.254.169.254]/latest",
      "http://10.0.0.1/internal",
      "http://192.168.1.1/router",
    ]) {
      const blockedSetup = await setup({ baseUrl });
      const blocked = await call(`${blockedSetup.url}/meta-data`, { headers: withKey(blockedSetup.key) });
      expect(blocked.status, baseUrl).toBe(502);
      expect(blocked.headers.get("service-proxy-code")).toBe("proxy-access-granted");
      expect(blocked.headers.get("service-proxy-message")).toMatch(/not allowed/);
    }
  }, 60_000);

  it("enforces the plan's rate limit per proxy credential with 429 and Retry-After", async () => {
    const s = await setup();
    // Counting is per fixed one-minute window: the burst starts 1 s into a fresh one.
    const windowBefore = Math.floor(clock.toNextWindow() / MINUTE_MS);
    const responses = await Promise.all(
      Array.from({ length: 110 }, () => call(`${s.url}/r`, { headers: withKey(s.key) })),
    );
    expect(Math.floor(clock.now() / MINUTE_MS), "the burst must end inside one window").toBe(windowBefore);
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(100);
    const limited = responses.filter((r) => r.status === 429);
    expect(limited).toHaveLength(10);
    // Until the end of the window, which began about 1 s before.
    const retryAfter = Number(limited[0]!.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(59);
    expect(retryAfter).toBeGreaterThanOrEqual(
      Math.ceil(((windowBefore + 1) * MINUTE_MS - clock.now()) / 1000),
    );
    expect(limited[0]!.headers.get("service-proxy-code")).toEqual(expect.any(String));
    // The next window has the whole limit again.
    clock.toNextWindow();
    expect((await call(`${s.url}/r`, { headers: withKey(s.key) })).status).toBe(200);
  }, 90_000);

  it("uses a single-use credential once, even when two requests race, then deletes it and its proxy", async () => {
    const s = await setup({ singleUse: true });
    const responses = await Promise.all([
      call(`${s.url}/once`, { headers: withKey(s.key) }),
      call(`${s.url}/once`, { headers: withKey(s.key) }),
      call(`${s.url}/once`, { headers: withKey(s.key) }),
    ]);
    expect(responses.map((r) => r.status).sort()).toEqual([200, 403, 403]);
    expect(received).toHaveLength(1);
    expect(await storedItem(keys.credential(clientId, s.proxyCredentialId), US)).toBeUndefined();
    expect((await call(`${s.url}/once`, { headers: withKey(s.key) })).status).toBe(403);
  });
});

describe("client deletion", () => {
  it("a client marked for deletion stops serving traffic at once", async () => {
    const s = await setup();
    expect((await call(`${s.url}/x`, { headers: withKey(s.key) })).status).toBe(200);
    const marked = await owner.api.delete(api());
    expect(marked.status, JSON.stringify(marked.body)).toBe(200);
    const response = await call(`${s.url}/x`, { headers: withKey(s.key) });
    expect(response.status).toBe(403);
    expect(response.headers.get("service-proxy-message")).toMatch(/scheduled for deletion/);
    expect(received).toHaveLength(1);
  });

  it("deleting the client immediately removes its regional resources in every region, and its proxies stop", async () => {
    const us = await setup();
    const eu = await setup({ region: EU });
    expect((await call(`${us.url}/x`, { headers: withKey(us.key) })).status).toBe(200);
    expect((await call(`${eu.url}/x`, { headers: withKey(eu.key) })).status).toBe(200);
    const deleted = await owner.api.delete(api(), { immediatelyDelete: true });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    for (const [s, region] of [
      [us, US],
      [eu, EU],
    ] as const) {
      const response = await call(`${s.url}/x`, { headers: withKey(s.key) });
      expect(response.status).toBe(403);
      expect(response.headers.get("service-proxy-code")).toBe("proxy-access-denied");
      expect(await storedItem(keys.proxy(clientId, s.proxyId), region)).toBeUndefined();
      expect(await storedItem(keys.proxyRuntime(s.proxyId), region)).toBeUndefined();
      expect(await storedItem(keys.credential(clientId, s.proxyCredentialId), region)).toBeUndefined();
      expect(await storedItem(keys.target(clientId, s.targetId), region)).toBeUndefined();
      expect(await storedItem(keys.clientRuntime(clientId), region)).toBeUndefined();
    }
  });
});

describe("odd input never gives a bare 500", () => {
  it("answers every malformed path, method and header with the service headers", async () => {
    const s = await setup();
    const base = stack.regions[US]!;
    const cases: [string, RequestInit, number][] = [
      [`${base}/`, { headers: withKey(s.key) }, 403],
      [`${base}/api`, { headers: withKey(s.key) }, 403],
      [`${base}/api/`, { headers: withKey(s.key) }, 403],
      [`${base}/api/${"x".repeat(300)}/a`, { headers: withKey(s.key) }, 403],
      [`${base}/api/..%2F..%2Fetc/passwd`, { headers: withKey(s.key) }, 403],
      [`${s.url}`, { headers: withKey(s.key) }, 200],
      [`${s.url}/%E0%A4%A/bad-escape?x=%ZZ`, { headers: withKey(s.key) }, 200],
      [`${s.url}/x`, { method: "PROPFIND", headers: withKey(s.key) }, 405],
      [
        `${s.url}/x`,
        {
          method: "POST",
          headers: withKey(s.key, { "content-type": "application/json" }),
          body: "{not json",
        },
        200,
      ],
      [`${s.url}/x`, { headers: { "x-api-key": "k".repeat(10_000) } }, 403],
    ];
    for (const [url, init, status] of cases) {
      const response = await call(url, init);
      expect(response.status, `${init.method ?? "GET"} ${url.slice(0, 80)}`).toBe(status);
      expect(response.headers.get("service-proxy-code"), url.slice(0, 80)).toEqual(expect.any(String));
      expect(response.headers.get("service-proxy-message")).toEqual(expect.any(String));
    }
  });

  it("drops hop-by-hop headers and keeps Content-Length in step with the body", async () => {
    const s = await setup();
    const body = JSON.stringify({ a: "b".repeat(1000) });
    // node:http, not fetch: fetch refuses to send hop-by-hop headers at all.
    const status = await new Promise<number>((resolve, reject) => {
      const outgoing = httpRequest(
        `${s.url}/hop`,
        {
          method: "POST",
          headers: withKey(s.key, {
            "content-type": "application/json",
            "content-length": String(Buffer.byteLength(body)),
            "keep-alive": "timeout=5",
            te: "trailers",
            "proxy-authorization": "Basic c2VjcmV0",
            "x-forwarded-host": "evil.example",
          }),
        },
        (response) => {
          response.resume();
          response.on("end", () => resolve(response.statusCode ?? 0));
        },
      );
      outgoing.on("error", reject);
      outgoing.end(body);
    });
    expect(status).toBe(200);
    const got = received.at(-1)!;
    for (const name of ["keep-alive", "te", "proxy-authorization", "x-forwarded-host", "x-api-key"])
      expect(got.headers[name], name).toBeUndefined();
    expect(got.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    expect(got.body.toString()).toBe(body);
  });

  it("sets every client-address header from the real address: a caller's own X-Real-IP, Forwarded and kin never reach the target", async () => {
    const s = await setup();
    const spoofed = "203.0.113.66";
    const response = await call(`${s.url}/whoami`, {
      headers: withKey(s.key, {
        "x-forwarded-for": spoofed,
        "x-real-ip": spoofed,
        "true-client-ip": spoofed,
        forwarded: `for=${spoofed};proto=https`,
        "cf-connecting-ip": spoofed,
        "fastly-client-ip": spoofed,
        "x-client-ip": spoofed,
        "x-cluster-client-ip": spoofed,
        "client-ip": spoofed,
      }),
    });
    expect(response.status).toBe(200);
    const got = received.at(-1)!;
    expect(JSON.stringify(got.headers)).not.toContain(spoofed);
    const real = got.headers["x-forwarded-for"] as string;
    expect(real).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(got.headers["x-real-ip"]).toBe(real);
    expect(got.headers.forwarded).toBe(real.includes(":") ? `for="[${real}]"` : `for=${real}`);
    for (const name of [
      "true-client-ip",
      "cf-connecting-ip",
      "fastly-client-ip",
      "x-client-ip",
      "x-cluster-client-ip",
      "client-ip",
    ])
      expect(got.headers[name], name).toBeUndefined();
  });
});

describe("request logs", () => {
  it("records every request with the stages it passed, and no secret", async () => {
    const s = await setup();
    await call(`${s.url}/logged?q=1`, { headers: withKey(s.key, { cookie: "session=abc" }) });
    await call(`${s.url}/logged`, { headers: withKey("wrong") });
    await loggedRecords(owner.api, clientId, s.proxyId, 2);
    const list = await owner.api.get(`${api()}/proxies/${s.proxyId}/requests`);
    expect(list.status).toBe(200);
    expect(list.body.totalRequests).toBe(2);
    const [refused, ok] = list.body.requests as any[];
    expect(ok.proxyData).toMatchObject({ method: "GET", apiPath: "/logged", status: 200 });
    expect(ok.targetData).toMatchObject({ status: 200 });
    expect(ok.validationData).toMatchObject({
      proxyExists: true,
      proxyActive: true,
      proxyAuthenticated: true,
      requestSent: true,
      responseReceived: true,
      systemError: false,
    });
    expect(ok.processed).toBe(true);
    expect(refused.proxyData.status).toBe(403);
    expect(refused.targetData).toBeNull();
    expect(refused.validationData.proxyAuthenticated).toBe(false);
    const detail = await owner.api.get(`${api()}/proxies/${s.proxyId}/requests/${ok.sKey}`);
    expect(detail.status).toBe(200);
    const record = detail.body.requests[0];
    expect(record).toMatchObject({ method: "GET", statusCode: 200 });
    expect(JSON.stringify(detail.body)).not.toContain(s.key);
    expect(JSON.stringify(detail.body)).not.toContain("session=abc");
    for (const value of secrets) expect(JSON.stringify(list.body)).not.toContain(value);
  });
});

describe("user-named keys (issue 7: a `Constructor` header stopped the log)", () => {
  it("logs a request whose headers and query are named constructor, __proto__, toString, hasOwnProperty", async () => {
    const s = await setup();
    // Pairs, not an object literal: `{ __proto__: "2" }` would set a prototype, not a header.
    const hostile: [string, string][] = [
      ["Constructor", "1"],
      ["__proto__", "2"],
      ["toString", "3"],
      ["hasOwnProperty", "4"],
    ];
    // node:http sends any header name (fetch silently drops a `__proto__` header).
    const grantedStatus = await new Promise<number>((resolve, reject) => {
      const outgoing = httpRequest(
        `${s.url}/named?constructor=1&__proto__=2&toString=3&hasOwnProperty=4&valueOf=5`,
        (response) => {
          response.resume();
          response.on("end", () => resolve(response.statusCode ?? 0));
        },
      );
      outgoing.setHeader("x-api-key", s.key);
      for (const [name, value] of hostile) outgoing.setHeader(name, value);
      outgoing.on("error", reject);
      outgoing.end();
    });
    expect(grantedStatus).toBe(200);
    const denied = await call(`${s.url}/named`, { headers: { constructor: "1" } });
    expect(denied.status).toBe(403);

    await loggedRecords(owner.api, clientId, s.proxyId, 2);
    const list = await owner.api.get(`${api()}/proxies/${s.proxyId}/requests`);
    expect(list.status).toBe(200);
    // Both requests, the refused one and the forwarded one, were logged.
    expect(list.body.totalRequests).toBe(2);
    const forwarded = (list.body.requests as any[]).find((r) => r.proxyData.status === 200);
    const detail = await owner.api.get(`${api()}/proxies/${s.proxyId}/requests/${forwarded.sKey}`);
    expect(detail.status).toBe(200);
    const record = detail.body.requests[0];
    const loggedHeaders = Object.fromEntries(
      Object.entries(record.requestHeaders as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
    );
    expect(loggedHeaders).toMatchObject({ constructor: "1", tostring: "3", hasownproperty: "4" });
    // Every name is stored, `__proto__` included; the API's answer (shaped by zod, which never
    // builds a `__proto__` entry) leaves that one name out (docs/request-logs.md).
    const stored = await storedItem(keys.requestLog(s.proxyId, forwarded.sKey));
    expect(Object.hasOwn(stored?.requestHeaders, "__proto__")).toBe(true);
    expect(Object.hasOwn(stored?.proxyData.apiParams, "__proto__")).toBe(true);
    expect(Object.hasOwn(loggedHeaders, "__proto__")).toBe(false);
    // Query parameters named after Object.prototype's members are logged too.
    expect(record.apiParams ?? forwarded.proxyData.apiParams).toMatchObject({
      constructor: "1",
      toString: "3",
      hasOwnProperty: "4",
      valueOf: "5",
    });
  });

  it("stores and answers a proxy's additions keyed constructor, toString and hasOwnProperty", async () => {
    const additions = {
      proxyAdditionalHeaders: { constructor: "h1", toString: "h2", hasOwnProperty: "h3" },
      proxyAdditionalQueryParams: { constructor: "q1", toString: "q2", valueOf: "q3" },
      proxyAdditionalData: { constructor: { name: "Set" }, toString: "d2", nested: { constructor: 1 } },
    };
    const s = await setup({ proxy: additions });
    const read = await owner.api.get(`${api()}/proxies/${s.proxyId}`);
    expect(read.status).toBe(200);
    expect(read.body.proxies[0]).toMatchObject(additions);
    const response = await call(`${s.url}/named`, {
      method: "POST",
      headers: withKey(s.key, { "content-type": "application/json" }),
      body: JSON.stringify({ caller: true }),
    });
    expect(response.status, response.text).toBe(200);
    const got = received.at(-1)!;
    expect(got.headers).toMatchObject({ constructor: "h1", tostring: "h2", hasownproperty: "h3" });
    expect(got.url).toBe("/base/named?constructor=q1&toString=q2&valueOf=q3");
    expect(JSON.parse(got.body.toString())).toEqual({ caller: true, ...additions.proxyAdditionalData });
    // `__proto__` cannot be kept by the schemas: refused with the field named, never dropped silently.
    const refused = await owner.api.put(
      `${api()}/proxies/${s.proxyId}`,
      '{"proxyAdditionalHeaders":{"__proto__":"x"}}',
    );
    expect(refused.status).toBe(400);
    expect(refused.body.fields).toEqual(["proxyAdditionalHeaders"]);
  });
});

describe("dot segments (issue 7 review: a path must not climb out of the target's base path)", () => {
  /** A request with the path sent exactly as written (fetch and URL would resolve the dots first). */
  const rawGet = (url: string, rawPath: string, key: string) =>
    new Promise<{ status: number; code: string | undefined; requestId: string | undefined }>(
      (resolve, reject) => {
        const { hostname, port } = new URL(url);
        const outgoing = httpRequest(
          { hostname, port, path: rawPath, method: "GET", headers: withKey(key) },
          (response) => {
            response.resume();
            response.on("end", () =>
              resolve({
                status: response.statusCode ?? 0,
                code: response.headers["service-proxy-code"] as string | undefined,
                requestId: response.headers["x-request-id"] as string | undefined,
              }),
            );
          },
        );
        outgoing.on("error", reject);
        outgoing.end();
      },
    );

  it("refuses . and .. segments in any encoding, and backslashes, before the target is called", async () => {
    const s = await setup();
    const base = new URL(s.url).pathname;
    for (const path of [
      "/x/%2e%2e/%2E%2e/escape",
      "/x/../../escape",
      "/x/.%2E/escape",
      "/x/./escape",
      "/x/%2e/escape",
      "/x/..\\escape",
      "/..",
    ]) {
      const answer = await rawGet(s.url, `${base}${path}`, s.key);
      expect(answer.status, path).toBe(400);
      expect(answer.code).toBe("proxy-access-denied");
      expect(answer.requestId).toEqual(expect.any(String));
    }
    expect(received).toHaveLength(0);
    // Dots inside a segment and an encoded slash are ordinary characters.
    const fine = await rawGet(s.url, `${base}/v1.2/..hidden/a%2F..%2Fb`, s.key);
    expect(fine.status).toBe(200);
    expect(received.at(-1)?.url).toBe("/base/v1.2/..hidden/a%2F..%2Fb");
    await loggedRecords(owner.api, clientId, s.proxyId, 8);
    const list = await owner.api.get(`${api()}/proxies/${s.proxyId}/requests`);
    expect(list.body.totalRequests).toBe(8);
  });
});
