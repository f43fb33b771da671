/**
 * Filters and overrides (issue 10; docs/filters.md) over real HTTP against the local stack, with a
 * real loopback target and the data plane listening on IPv4 and IPv6 (dual stack), so a proxy is
 * called from 127.0.0.1 and from ::1:
 * - IP allow and deny lists (IPv4, IPv6, IPv4-mapped IPv6): 403 proxy-access-denied, the target
 *   not called; each change effective on the next request;
 * - required headers (400 required-header-missing) and stripped headers;
 * - the payload filter (fields removed from JSON answers, and from the request log);
 * - path-prefix overrides of the timeout and additional headers (longest prefix wins);
 * - system-administrator plan limit overrides, taking effect on the next request, refused to others;
 * - every 400 naming its field, and the proxy cascade taking the filters and overrides.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { setSystemAdmin } from "#lib/domain/users.ts";
import { setClientPlan } from "../../cli/client-plan.ts";
import { TestClock } from "../support/clock.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyParts,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const KEY = "filters-caller-key-1234567890";

let stack: TestStack;
let owner: TestUser;
let admin: TestUser;
let clientId: string;
let target: Server;
let targetBase: string;
/** What the target received, newest last. */
const received: { url: string; headers: IncomingMessage["headers"] }[] = [];
/** The stack's clock (lib/clock.ts): the rate-limit checks start in a fresh minute of it. */
const clock = new TestClock();

beforeAll(async () => {
  stack = await startTestStack({ dataPlaneHost: "::", clock: clock.now });
  [owner, admin] = await Promise.all([stack.newUser(), stack.newUser()]);
  await setSystemAdmin(admin!.userId, true);
  clientId = await createClientFor(owner!, "Filters Co");
  // The team plan's 1,000 calls a minute: this file makes a few hundred with one token.
  await setClientPlan(clientId, "team");
  target = createServer((req, res) => {
    received.push({ url: req.url ?? "", headers: req.headers });
    req.resume();
    req.on("end", () => {
      const url = req.url ?? "/";
      const answer = () => {
        if (url.startsWith("/text")) {
          res.writeHead(200, { "content-type": "text/plain" });
          res.end('{"secret":"visible in text"}');
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            id: 7,
            secret: "top-secret-value",
            user: { name: "Ada", ssn: "ssn-123-45" },
            items: [
              { id: 1, internal: "internal-1" },
              { id: 2, internal: "internal-2" },
            ],
          }),
        );
      };
      // /slow and below answer after 2 s.
      if (url === "/slow" || url.startsWith("/slow/") || url.startsWith("/slowly")) setTimeout(answer, 2000);
      else answer();
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
const v6Base = () => stack.regions[US]!;
const v4Base = () => stack.regions[US]!.replace("[::1]", "127.0.0.1");

async function newProxy(extra: Record<string, unknown> = {}, key = KEY): Promise<string> {
  const parts = await createProxyParts(owner, clientId, { region: US, key, targetBaseURL: targetBase });
  const proxy = await created(
    owner.api.post(`${api()}/proxies`, {
      proxyName: "filtered",
      proxyRegion: US,
      proxyProxyCredentialId: parts.proxyCredentialId,
      proxyTargetId: parts.targetId,
      proxyTargetCredentialId: parts.targetCredentialId,
      ...extra,
    }),
    "proxies",
  );
  return proxy.proxyId as string;
}

function call(
  proxyId: string,
  path = "/items",
  options: { family?: 4 | 6; headers?: Record<string, string>; key?: string } = {},
) {
  const base = options.family === 6 ? v6Base() : v4Base();
  return callDataPlane(`${base}/api/${proxyId}${path}`, {
    headers: { "x-api-key": options.key ?? KEY, ...options.headers },
  });
}

const filtersPath = (proxyId: string) => `${api()}/proxies/${proxyId}/filters`;
const overridesPath = (proxyId: string) => `${api()}/proxies/${proxyId}/overrides`;

async function setFilters(proxyId: string, body: Record<string, unknown>) {
  const response = await owner.api.put(filtersPath(proxyId), body);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.filters[0];
}

async function setOverrides(proxyId: string, body: Record<string, unknown>) {
  const response = await owner.api.put(overridesPath(proxyId), body);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.overrides[0];
}

describe("IP allow and deny lists", () => {
  it("are read back as set, partially updated and cleared", async () => {
    const proxyId = await newProxy();
    const empty = await owner.api.get(filtersPath(proxyId));
    expect(empty.status).toBe(200);
    expect(empty.body.filters).toEqual([
      {
        proxyId,
        ipAllow: [],
        ipDeny: [],
        requiredHeaders: [],
        stripHeaders: [],
        removeResponseFields: [],
        updatedAt: null,
      },
    ]);
    await setFilters(proxyId, { ipAllow: ["10.0.0.0/8", "2001:db8::/32"], requiredHeaders: ["X-Tenant"] });
    const partial = await setFilters(proxyId, { ipDeny: ["10.9.0.0/16"], ipAllow: null });
    expect(partial).toMatchObject({ ipAllow: [], ipDeny: ["10.9.0.0/16"], requiredHeaders: ["x-tenant"] });
    expect((await owner.api.get(filtersPath(proxyId))).body.filters[0]).toEqual(partial);
    expect((await owner.api.delete(filtersPath(proxyId))).status).toBe(200);
    expect((await owner.api.get(filtersPath(proxyId))).body.filters[0].ipDeny).toEqual([]);
  });

  it("refuse a denied IPv4 or IPv6 caller with 403 proxy-access-denied, effective on the next request", async () => {
    const proxyId = await newProxy();
    expect((await call(proxyId, "/items", { family: 4 })).status).toBe(200);
    expect((await call(proxyId, "/items", { family: 6 })).status).toBe(200);

    await setFilters(proxyId, { ipDeny: ["127.0.0.0/8"] });
    const hits = received.length;
    const deniedV4 = await call(proxyId, "/items", { family: 4 });
    expect(deniedV4.status).toBe(403);
    expect(deniedV4.headers.get("service-proxy-code")).toBe("proxy-access-denied");
    expect(JSON.parse(deniedV4.text)).toEqual({
      code: "proxy-access-denied",
      message: "The caller's address is denied by the proxy's IP filter",
    });
    expect(received.length).toBe(hits); // the target was not called
    expect((await call(proxyId, "/items", { family: 6 })).status).toBe(200);

    await setFilters(proxyId, { ipDeny: ["::1/128"] });
    const deniedV6 = await call(proxyId, "/items", { family: 6 });
    expect(deniedV6.status).toBe(403);
    expect(deniedV6.headers.get("service-proxy-code")).toBe("proxy-access-denied");
    expect((await call(proxyId, "/items", { family: 4 })).status).toBe(200);

    // An IPv4-mapped IPv6 range covers the IPv4 caller.
    await setFilters(proxyId, { ipDeny: ["::ffff:127.0.0.0/104"] });
    expect((await call(proxyId, "/items", { family: 4 })).status).toBe(403);
    expect((await call(proxyId, "/items", { family: 6 })).status).toBe(200);

    expect((await owner.api.delete(filtersPath(proxyId))).status).toBe(200);
    expect((await call(proxyId, "/items", { family: 4 })).status).toBe(200);
    expect((await call(proxyId, "/items", { family: 6 })).status).toBe(200);
  });

  it("let only callers inside the allow list through, before the caller's credential is checked", async () => {
    const proxyId = await newProxy();
    await setFilters(proxyId, { ipAllow: ["::1"] });
    const notAllowed = await call(proxyId, "/items", { family: 4 });
    expect(notAllowed.status).toBe(403);
    expect(JSON.parse(notAllowed.text).message).toBe(
      "The caller's address is not in the proxy's IP allow list",
    );
    // A wrong key from a refused address gets the address refusal, not a credential answer.
    expect(JSON.parse((await call(proxyId, "/items", { family: 4, key: "wrong" })).text).message).toMatch(
      /IP allow list/,
    );
    expect((await call(proxyId, "/items", { family: 6 })).status).toBe(200);

    await setFilters(proxyId, { ipAllow: ["127.0.0.0/8"] });
    expect((await call(proxyId, "/items", { family: 4 })).status).toBe(200);
    expect((await call(proxyId, "/items", { family: 6 })).status).toBe(403);
    // Deny wins over allow.
    await setFilters(proxyId, { ipDeny: ["127.0.0.1"] });
    expect((await call(proxyId, "/items", { family: 4 })).status).toBe(403);
  });

  it.each([
    [{ ipAllow: ["10.0.0.0/33"] }, "ipAllow.0", /prefix length from 0 to 32/],
    [{ ipDeny: ["2001:db8::/129"] }, "ipDeny.0", /prefix length from 0 to 128/],
    [{ ipDeny: ["127.0.0.1", "localhost"] }, "ipDeny.1", /IPv4 or IPv6/],
    [{ ipAllow: "10.0.0.0/8" }, "ipAllow", /array/],
    [{ ipAllow: Array.from({ length: 101 }, (_, i) => `10.${i}.0.0/16`) }, "ipAllow", /at most 100/],
    [{ ipList: [] }, "ipList", /not a field/],
  ])("refuses a body with 400 naming $1", async (body, field, problem) => {
    const proxyId = await newProxy();
    const refused = await owner.api.put(filtersPath(proxyId), body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.fields).toEqual([field]);
    expect(refused.body.errors.join("\n")).toMatch(problem);
  });
});

describe("header filters", () => {
  it("answer 400 required-header-missing without a required header, and forward with it", async () => {
    const proxyId = await newProxy();
    await setFilters(proxyId, { requiredHeaders: ["X-Tenant", "x-trace-id"] });
    const hits = received.length;
    const missing = await call(proxyId, "/items", { headers: { "X-Tenant": "acme" } });
    expect(missing.status).toBe(400);
    expect(missing.headers.get("service-proxy-code")).toBe("required-header-missing");
    expect(JSON.parse(missing.text).message).toBe("The request must carry the header x-trace-id");
    expect(received.length).toBe(hits);
    const passed = await call(proxyId, "/items", { headers: { "X-Tenant": "acme", "X-Trace-Id": "t1" } });
    expect(passed.status).toBe(200);
    await setFilters(proxyId, { requiredHeaders: null });
    expect((await call(proxyId, "/items")).status).toBe(200);
  });

  it("strip the named headers before forwarding, keeping the others", async () => {
    const proxyId = await newProxy();
    await setFilters(proxyId, { stripHeaders: ["X-Debug", "cookie"] });
    const response = await call(proxyId, "/strip", {
      headers: { "X-Debug": "1", Cookie: "session=abc", "X-Keep": "kept" },
    });
    expect(response.status).toBe(200);
    const seen = received.at(-1)!;
    expect(seen.url).toBe("/strip");
    expect(seen.headers["x-debug"]).toBeUndefined();
    expect(seen.headers.cookie).toBeUndefined();
    expect(seen.headers["x-keep"]).toBe("kept");
  });

  it.each([
    [{ requiredHeaders: ["bad header"] }, "requiredHeaders.0", /valid HTTP header name/],
    [{ stripHeaders: ["Host"] }, "stripHeaders.0", /managed by the gateway/],
    [{ stripHeaders: Array.from({ length: 21 }, (_, i) => `x-h${i}`) }, "stripHeaders", /at most 20/],
  ])("refuses a body with 400 naming $1", async (body, field, problem) => {
    const proxyId = await newProxy();
    const refused = await owner.api.put(filtersPath(proxyId), body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.fields).toEqual([field]);
    expect(refused.body.errors.join("\n")).toMatch(problem);
  });
});

describe("payload filters", () => {
  it("remove JSON fields from the answer and from the request log, and leave other bodies alone", async () => {
    const proxyId = await newProxy();
    await setFilters(proxyId, { removeResponseFields: ["secret", "user.ssn", "items.*.internal"] });
    const response = await call(proxyId, "/items");
    expect(response.status).toBe(200);
    expect(JSON.parse(response.text)).toEqual({
      id: 7,
      user: { name: "Ada" },
      items: [{ id: 1 }, { id: 2 }],
    });
    const requestId = response.headers.get("x-request-id")!;
    const logged = await vi.waitFor(
      async () => {
        const item = await storedItem(keys.requestLog(proxyId, requestId), US);
        if (!item) throw new Error("not logged yet");
        return JSON.stringify(item);
      },
      { timeout: 5000 },
    );
    expect(logged).toContain("Ada");
    expect(logged).not.toContain("ssn-123-45");
    expect(logged).not.toContain("top-secret-value");
    expect(logged).not.toContain("internal-1");

    const text = await call(proxyId, "/text");
    expect(text.text).toBe('{"secret":"visible in text"}');

    await setFilters(proxyId, { removeResponseFields: null });
    expect(JSON.parse((await call(proxyId, "/items")).text).secret).toBe("top-secret-value");
  });

  it.each([
    [{ removeResponseFields: ["a..b"] }, "removeResponseFields.0", /dot path/],
    [{ removeResponseFields: [7] }, "removeResponseFields.0", /string/],
  ])("refuses a body with 400 naming $1", async (body, field, problem) => {
    const proxyId = await newProxy();
    const refused = await owner.api.put(filtersPath(proxyId), body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.fields).toEqual([field]);
    expect(refused.body.errors.join("\n")).toMatch(problem);
  });
});

describe("path-prefix overrides", () => {
  it("give a path prefix its own timeout (longest prefix, segment boundaries), effective on the next request", async () => {
    const proxyId = await newProxy({ proxyTimeoutSeconds: 1 });
    expect((await call(proxyId, "/slow")).status).toBe(504);
    await setOverrides(proxyId, {
      pathOverrides: [
        { pathPrefix: "/slow", timeoutSeconds: 5 },
        { pathPrefix: "/slow/strict", timeoutSeconds: 1 },
      ],
    });
    expect((await call(proxyId, "/slow")).status).toBe(200);
    expect((await call(proxyId, "/slow/report")).status).toBe(200);
    const strict = await call(proxyId, "/slow/strict/x");
    expect(strict.status).toBe(504);
    expect(JSON.parse(strict.text).message).toBe("The target did not answer within 1 s");
    // /slowly is not under /slow: the proxy's own 1 s applies.
    expect((await call(proxyId, "/slowly")).status).toBe(504);

    expect((await owner.api.delete(overridesPath(proxyId))).status).toBe(200);
    expect((await owner.api.get(overridesPath(proxyId))).body.overrides[0].pathOverrides).toEqual([]);
    expect((await call(proxyId, "/slow")).status).toBe(504);
  });

  it("add headers over the proxy's additional headers for a path prefix", async () => {
    const proxyId = await newProxy({ proxyAdditionalHeaders: { "X-Version": "proxy", "X-Proxy": "p" } });
    const stored = await setOverrides(proxyId, {
      pathOverrides: [
        { pathPrefix: "/v2", additionalHeaders: { "X-Version": "2" } },
        { pathPrefix: "/v2/beta", additionalHeaders: { "x-version": "beta", "X-Beta": "yes" } },
      ],
    });
    expect(stored.pathOverrides).toHaveLength(2);
    const headersFor = async (path: string) => {
      expect((await call(proxyId, path)).status).toBe(200);
      return received.at(-1)!.headers;
    };
    expect(await headersFor("/v1/items")).toMatchObject({ "x-version": "proxy", "x-proxy": "p" });
    expect(await headersFor("/v2/items")).toMatchObject({ "x-version": "2", "x-proxy": "p" });
    const beta = await headersFor("/v2/beta/items");
    expect(beta).toMatchObject({ "x-version": "beta", "x-beta": "yes", "x-proxy": "p" });
    expect((await headersFor("/v2"))["x-beta"]).toBeUndefined();
  });

  it.each([
    [
      { pathOverrides: [{ pathPrefix: "/a", timeoutSeconds: 61 }] },
      "pathOverrides.0.timeoutSeconds",
      /at most 60/,
    ],
    [
      { pathOverrides: [{ pathPrefix: "a", timeoutSeconds: 5 }] },
      "pathOverrides.0.pathPrefix",
      /start with \//,
    ],
    [
      { pathOverrides: [{ pathPrefix: "/a/../b", timeoutSeconds: 5 }] },
      "pathOverrides.0.pathPrefix",
      /segments/,
    ],
    [{ pathOverrides: [{ pathPrefix: "/a" }] }, "pathOverrides.0", /timeoutSeconds or additionalHeaders/],
    [
      { pathOverrides: [{ pathPrefix: "/a", additionalHeaders: { Host: "evil" } }] },
      "pathOverrides.0.additionalHeaders.Host",
      /managed by the gateway/,
    ],
    [
      {
        pathOverrides: [
          { pathPrefix: "/a", timeoutSeconds: 5 },
          { pathPrefix: "/a", timeoutSeconds: 6 },
        ],
      },
      "pathOverrides.1.pathPrefix",
      /repeats/,
    ],
    [
      { pathOverrides: Array.from({ length: 51 }, (_, i) => ({ pathPrefix: `/p${i}`, timeoutSeconds: 5 })) },
      "pathOverrides",
      /at most 50/,
    ],
  ])("refuses a body with 400 naming $1", async (body, field, problem) => {
    const proxyId = await newProxy();
    const refused = await owner.api.put(overridesPath(proxyId), body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.fields).toEqual([field]);
    expect(refused.body.errors.join("\n")).toMatch(problem);
  });

  it("are deleted with their proxy, and answer 404 for an unknown proxy", async () => {
    const proxyId = await newProxy();
    await setFilters(proxyId, { ipDeny: ["192.0.2.0/24"] });
    await setOverrides(proxyId, { pathOverrides: [{ pathPrefix: "/", timeoutSeconds: 9 }] });
    expect(await storedItem(keys.proxyFilters(clientId, proxyId), US)).toBeDefined();
    expect((await owner.api.delete(`${api()}/proxies/${proxyId}`)).status).toBe(200);
    expect(await storedItem(keys.proxyFilters(clientId, proxyId), US)).toBeUndefined();
    expect(await storedItem(keys.proxyOverrides(clientId, proxyId), US)).toBeUndefined();
    expect((await owner.api.get(filtersPath(proxyId))).status).toBe(404);
    expect((await owner.api.put(overridesPath(proxyId), { pathOverrides: null })).status).toBe(404);
  });
});

describe("plan limit overrides (system administrators)", () => {
  const limitsPath = () => `${api()}/limit-overrides`;

  it("are refused to a non-administrator, even the client's owner", async () => {
    for (const response of [
      await owner.api.get(limitsPath()),
      await owner.api.put(limitsPath(), { requestsPerMinute: 5 }),
      await owner.api.delete(limitsPath()),
    ]) {
      expect(response.status).toBe(403);
      expect(response.body.message).toBe("Forbidden: requires a system administrator");
    }
  });

  it.each([
    [{ requestsPerMinute: 0 }, "requestsPerMinute", /at least 1/],
    [{ requestsPerMinute: 10_001 }, "requestsPerMinute", /platform maximum/],
    [{ requestsPerMinute: 2.5 }, "requestsPerMinute", /whole number/],
    [{ requestsPerDay: 5 }, "requestsPerDay", /not a field/],
  ])("refuses a body with 400 naming $1", async (body, field, problem) => {
    const refused = await admin.api.put(limitsPath(), body);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.fields).toEqual([field]);
    expect(refused.body.errors.join("\n")).toMatch(problem);
  });

  it("answer 404 for an unknown client", async () => {
    expect(
      (await admin.api.put("/api/clients/no-such-client/limit-overrides", { requestsPerMinute: 5 })).status,
    ).toBe(404);
  });

  it("replace the plan's requests per minute on the next request, and removing them restores it", async () => {
    // A proxy credential of its own: its rate counter starts at 0.
    const key = "limits-caller-key-1234567890";
    const proxyId = await newProxy({}, key);
    // Clear of a minute boundary: the rate window is the calendar minute of the stack's clock.
    clock.toNextWindow();
    expect((await call(proxyId, "/items", { key })).status).toBe(200);

    const set = await admin.api.put(limitsPath(), { requestsPerMinute: 2 });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.limitOverrides[0]).toMatchObject({
      clientId,
      requestsPerMinute: 2,
      planTier: "team",
      planRequestsPerMinute: 1_000,
      effectiveRequestsPerMinute: 2,
    });
    expect((await admin.api.get(limitsPath())).body.limitOverrides[0].requestsPerMinute).toBe(2);
    // One request counted already in this minute: one more passes, the next is refused.
    expect((await call(proxyId, "/items", { key })).status).toBe(200);
    const refused = await call(proxyId, "/items", { key });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-ratelimit-limit")).toBe("2");

    expect((await admin.api.delete(limitsPath())).status).toBe(200);
    expect((await admin.api.get(limitsPath())).body.limitOverrides[0]).toMatchObject({
      requestsPerMinute: null,
      effectiveRequestsPerMinute: 1_000,
    });
    expect((await call(proxyId, "/items", { key })).status).toBe(200);
  });
});
