/**
 * The meter usage read (GET .../meters/{meterId}/usage; docs/meters.md "Usage now") over real HTTP
 * against the local stack and its data plane: the current window of each kind the meter counts with
 * its limit, per caller with limitByValue, a new window starting at 0, roles and a missing meter.
 */
import type { Server } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { TestClock } from "../support/clock.ts";
import { listenWithBody } from "../support/loopback.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyOf,
  createProxyParts,
  joinClient,
  type ProxyParts,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const REGION = "us-east-1";
const KEY = "usage-caller-key-1234567890";

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let parts: ProxyParts;
const servers: Server[] = [];
const clock = new TestClock();

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Usage Co");
  const targetBaseURL = await listenWithBody((_req, _body, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{}");
  }, servers);
  parts = await createProxyParts(owner, clientId, { region: REGION, key: KEY, targetBaseURL });
});
afterAll(async () => {
  await stack?.stop();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
beforeEach(() => {
  clock.toNextWindow();
});

const meters = (proxyId: string) => `/api/clients/${clientId}/proxies/${proxyId}/meters`;
const newMeter = async (proxyId: string, body: Record<string, unknown>) =>
  (await created(owner.api.post(meters(proxyId), body), "meters")).meterId as string;
const calls = async (proxyId: string, n: number, headers: Record<string, string> = {}) => {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++)
    statuses.push(
      (
        await callDataPlane(`${stack.regions[REGION]}/api/${proxyId}/x`, {
          headers: { "x-api-key": KEY, ...headers },
        })
      ).status,
    );
  return statuses;
};
const usageOf = async (proxyId: string, meterId: string, query = "", user = owner) => {
  const answer = await user.api.get(`${meters(proxyId)}/${meterId}/usage${query}`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as {
    message: string;
    meterId: string;
    limitBy: string | null;
    limitByValue: string | null;
    usage: { window: string; windowStart: string; windowEnd: string; value: number; limit: number | null }[];
  };
};

describe("meter usage", () => {
  it("answers the limited windows' values against their limits, and all four windows of a meter without limits", async () => {
    const proxyId = await createProxyOf(owner, clientId, REGION, parts);
    const limited = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      limits: { minute: 3, day: 10 },
    });
    const counting = await newMeter(proxyId, { meterType: "request_count", meterActive: true });
    const before = await usageOf(proxyId, limited);
    expect(before.usage.map(({ window, value, limit }) => ({ window, value, limit }))).toEqual([
      { window: "minute", value: 0, limit: 3 },
      { window: "day", value: 0, limit: 10 },
    ]);
    expect(await calls(proxyId, 4)).toEqual([200, 200, 200, 429]);
    const after = await usageOf(proxyId, limited);
    expect(after).toMatchObject({ message: "Meter usage retrieved", meterId: limited, limitBy: null });
    expect(after.usage.map(({ window, value }) => [window, value])).toEqual([
      ["minute", 3],
      ["day", 3],
    ]);
    const minute = after.usage[0];
    expect(Date.parse(minute?.windowEnd ?? "") - Date.parse(minute?.windowStart ?? "")).toBe(60_000);
    expect(Date.parse(minute?.windowStart ?? "")).toBeLessThanOrEqual(clock.now());
    // The refused 4th call was counted by no meter (the whole count transaction was cancelled).
    const all = await usageOf(proxyId, counting);
    expect(all.usage.map(({ window, value, limit }) => [window, value, limit])).toEqual([
      ["minute", 3, null],
      ["hour", 3, null],
      ["day", 3, null],
      ["month", 3, null],
    ]);
    // A new minute starts at 0; the day keeps its count.
    clock.toNextWindow();
    expect((await usageOf(proxyId, limited)).usage.map(({ value }) => value)).toEqual([0, 3]);
  });

  it("reads a per-caller meter's counts for the value asked for", async () => {
    const proxyId = await createProxyOf(owner, clientId, REGION, parts);
    const meterId = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      limits: { minute: 5 },
      variables: [{ name: "customer", source: "header", key: "x-customer" }],
      limitBy: "customer",
    });
    await calls(proxyId, 2, { "x-customer": "alpha" });
    await calls(proxyId, 1, { "x-customer": "beta" });
    await calls(proxyId, 1);
    const alpha = await usageOf(proxyId, meterId, "?limitByValue=alpha");
    expect(alpha).toMatchObject({ limitBy: "customer", limitByValue: "alpha" });
    expect(alpha.usage.map(({ value }) => value)).toEqual([2]);
    expect((await usageOf(proxyId, meterId, "?limitByValue=beta")).usage[0]?.value).toBe(1);
    const shared = await usageOf(proxyId, meterId);
    expect(shared.limitByValue).toBe("");
    expect(shared.usage[0]?.value).toBe(1);
  });

  it("is readable by a reader, 404 for an unknown meter, 403 or 404 for an outsider", async () => {
    const proxyId = await createProxyOf(owner, clientId, REGION, parts);
    const meterId = await newMeter(proxyId, { meterType: "request_count", meterActive: true });
    const reader = await stack.newUser();
    await joinClient(owner, clientId, reader, "reader");
    expect((await usageOf(proxyId, meterId, "", reader)).usage).toHaveLength(4);
    const missing = await owner.api.get(`${meters(proxyId)}/00000000-0000-4000-8000-000000000000/usage`);
    expect(missing.status).toBe(404);
    const outsider = await stack.newUser();
    expect([403, 404]).toContain((await outsider.api.get(`${meters(proxyId)}/${meterId}/usage`)).status);
  });
});
