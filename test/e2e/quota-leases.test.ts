/**
 * The data plane's hot path end to end (issue 25): the limited windows are taken from quota leases
 * held by the warm instance (lib/data-plane/counter-leases.ts), the configuration's freshness is
 * checked without a transaction (lib/data-plane/freshness.ts). Over real HTTP against the local
 * stack (strict freshness, the deployed default), and one in-process data plane in relaxed mode:
 * - 50 concurrent requests at a per-credential limit of 10 (a system administrator's override):
 *   exactly 10 pass, the rest 429 as before; the same at a meter's limit is in
 *   meters-data-plane.test.ts;
 * - a proxy deactivated while traffic flows is refused from the next request on (strict), or within
 *   the freshness bound (relaxed).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createCounting } from "#lib/data-plane/counter-leases.ts";
import { createDataPlane, type DataPlaneRequest } from "#lib/data-plane/pipeline.ts";
import { setSystemAdmin } from "#lib/domain/users.ts";
import { setClientPlan } from "../../cli/client-plan.ts";
import { TestClock } from "../support/clock.ts";
import { listenWithBody } from "../support/loopback.ts";
import {
  callDataPlane,
  createClientFor,
  createProxyOf,
  createProxyParts,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const clock = new TestClock();
let stack: TestStack;
let owner: TestUser;
let admin: TestUser;
let clientId: string;
let targetBase: string;
const servers: import("node:http").Server[] = [];

beforeAll(async () => {
  targetBase = await listenWithBody((_req, _body, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"ok":true}');
  }, servers);
  stack = await startTestStack({ clock: clock.now });
  [owner, admin] = await Promise.all([stack.newUser(), stack.newUser()]);
  await setSystemAdmin(admin.userId, true);
  clientId = await createClientFor(owner, "Leases Co");
  await setClientPlan(clientId, "team");
});
afterAll(async () => {
  await stack?.stop();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function newProxy(key: string): Promise<string> {
  const parts = await createProxyParts(owner, clientId, { region: US, key, targetBaseURL: targetBase });
  return createProxyOf(owner, clientId, US, parts);
}

const call = (proxyId: string, key: string) =>
  callDataPlane(`${stack.regions[US]}/api/${proxyId}/x`, { headers: { "x-api-key": key } });

describe("leases: exact under demand", () => {
  it("50 concurrent requests at a per-credential limit of 10: exactly 10 pass, the rest 429 with the same answer as before", async () => {
    const key = "leases-rate-caller-key-123456789";
    const proxyId = await newProxy(key);
    const set = await admin.api.put(`/api/clients/${clientId}/limit-overrides`, { requestsPerMinute: 10 });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    clock.toNextWindow(); // a fresh minute: the burst ends in the window it starts in
    const answers = await Promise.all(Array.from({ length: 50 }, () => call(proxyId, key)));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(40);
    const refused = answers.find((answer) => answer.status === 429)!;
    expect(refused.headers.get("service-proxy-code")).toBe("proxy-access-granted");
    expect(refused.headers.get("service-proxy-message")).toBe(
      "Too many requests: the proxy credential's rate limit is exceeded",
    );
    expect(refused.headers.get("x-ratelimit-limit")).toBe("10");
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await admin.api.delete(`/api/clients/${clientId}/limit-overrides`)).status).toBe(200);
  });
});

/** Sequential traffic until `stop()`: each request's start time and status. */
function traffic(send: () => Promise<number>) {
  const seen: { at: number; status: number }[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const at = Date.now();
      seen.push({ at, status: await send() });
    }
  })();
  return {
    seen,
    async stop() {
      running = false;
      await done;
    },
  };
}

describe("freshness without a transaction", () => {
  it("strict (the default): a proxy deactivated while traffic flows is refused from the very next request", async () => {
    const key = "leases-strict-caller-key-1234567";
    const proxyId = await newProxy(key);
    const flow = traffic(async () => (await call(proxyId, key)).status);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const changed = await owner.api.put(`/api/clients/${clientId}/proxies/${proxyId}`, {
      proxyActive: false,
    });
    expect(changed.status).toBe(200);
    const answeredAt = Date.now();
    await vi.waitFor(
      () => expect(flow.seen.filter((request) => request.at > answeredAt).length).toBeGreaterThan(2),
      { timeout: 15_000, interval: 50 },
    );
    await flow.stop();
    const before = flow.seen.filter((request) => request.at < answeredAt - 50);
    const after = flow.seen.filter((request) => request.at > answeredAt);
    expect(before.length).toBeGreaterThan(0);
    expect(before.every((request) => request.status === 200)).toBe(true);
    expect(after.length).toBeGreaterThan(0);
    expect(after.map((request) => request.status)).toEqual(after.map(() => 403));
  });

  it("relaxed: a deactivated proxy is refused within the bound (its round trips: round-trips.test.ts)", async () => {
    const key = "leases-relaxed-caller-key-123456";
    const proxyId = await newProxy(key);
    const boundMs = 1000;
    // One warm instance in this process, relaxed (what DATA_PLANE_FRESHNESS=relaxed gives).
    const plane = createDataPlane(US, {
      counting: createCounting(US, { freshness: { mode: "relaxed", boundMs } }),
    });
    const request = (): DataPlaneRequest => ({
      method: "GET",
      path: `/api/${proxyId}/x`,
      rawQuery: "",
      headers: { "x-api-key": key },
      sourceIp: "127.0.0.1",
      stage: "$default",
      arnBase: "arn:aws:lambda:us-east-1:000000000000:function-url/test",
    });
    const flow = traffic(async () => (await plane.handle(request())).status);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const changed = await owner.api.put(`/api/clients/${clientId}/proxies/${proxyId}`, {
      proxyActive: false,
    });
    expect(changed.status).toBe(200);
    const answeredAt = Date.now();
    // Traffic until a few requests started past the bound (a loaded machine slows each one).
    await vi.waitFor(
      () =>
        expect(flow.seen.filter((request) => request.at > answeredAt + boundMs).length).toBeGreaterThan(2),
      { timeout: 15_000, interval: 50 },
    );
    await flow.stop();
    expect(flow.seen.filter((request) => request.at < answeredAt - 50).every((r) => r.status === 200)).toBe(
      true,
    );
    // Past the bound every request is refused (the version read after an answer saw the change).
    const late = flow.seen.filter((request) => request.at > answeredAt + boundMs);
    expect(late.length).toBeGreaterThan(0);
    expect(late.map((request) => request.status)).toEqual(late.map(() => 403));
    const firstRefused = flow.seen.find((request) => request.status === 403)!;
    expect(firstRefused.at - answeredAt).toBeLessThanOrEqual(boundMs);
  });
});
