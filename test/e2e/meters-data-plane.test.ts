/**
 * Meters on the data plane (issue 9), over real HTTP against the local stack and the emulator:
 * request_count and response_value meters, every window, the modes, per-caller limits, exactness
 * under concurrency, the 429's headers, inactive meters, isolation between proxies, the request
 * log's `metering`, and the 500 path logged.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { valueMeans } from "#lib/data-plane/meter-plan.ts";
import { keys } from "#lib/db/keys.ts";
import { windowAt } from "#lib/shared/meter-windows.ts";
import { TestClock } from "../support/clock.ts";
import { loggedRecord } from "../support/request-logs.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyOf,
  createProxyParts,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const REGION = "us-east-1";
const KEY = "meter-caller-key-1234567890";

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let target: Server;
let targetBase: string;
let targetHits = 0;
let proxyCredentialId: string;
let targetCredentialId: string;
let targetId: string;

beforeAll(async () => {
  // The target answers {"usage":{"tokens":N}} and `x-tokens: N`, N from the query's `tokens`.
  target = createServer((req, res) => {
    targetHits++;
    req.resume();
    req.on("end", () => {
      // `?fail=1`: the connection is dropped without an answer (a failed target).
      if (req.url?.includes("fail=1")) return req.socket.destroy();
      const query = new URL(req.url ?? "/", "http://x").searchParams;
      const tokens = query.get("tokens") ?? "0";
      // `?delay=ms`: a slow target (the answer comes after every parallel request was counted).
      setTimeout(
        () => {
          res.writeHead(200, { "content-type": "application/json", "x-tokens": tokens });
          res.end(JSON.stringify({ usage: { tokens: Number(tokens) } }));
        },
        Number(query.get("delay") ?? 0),
      );
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  stack = await startTestStack({ clock: clock.now });
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Meter Co");
  ({ proxyCredentialId, targetCredentialId, targetId } = await createProxyParts(owner, clientId, {
    region: REGION,
    key: KEY,
    targetBaseURL: targetBase,
  }));
});
afterAll(async () => {
  await stack?.stop();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

async function newProxy(): Promise<string> {
  return createProxyOf(owner, clientId, REGION, {
    proxyCredentialId,
    targetId,
    targetCredentialId,
  });
}

async function newMeter(proxyId: string, body: Record<string, unknown>): Promise<string> {
  const meter = await created(
    owner.api.post(`/api/clients/${clientId}/proxies/${proxyId}/meters`, body),
    "meters",
  );
  return meter.meterId as string;
}

const call = (proxyId: string, path = "/x", init: RequestInit = {}) =>
  callDataPlane(`${stack.regions[REGION]}/api/${proxyId}${path}`, {
    ...init,
    headers: { "x-api-key": KEY, ...(init.headers as Record<string, string> | undefined) },
  });

async function statuses(proxyId: string, n: number, path = "/x", init: RequestInit = {}): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call(proxyId, path, init)).status);
  return out;
}

/** The stack's clock: each test starts 1 s into a fresh minute, so no burst straddles a window. */
const clock = new TestClock();
beforeEach(() => {
  clock.toNextWindow();
});

const counterValue = async (
  meterId: string,
  kind: "minute" | "hour" | "day" | "month",
  callerHash?: string,
) => {
  const window = windowAt(kind, clock.now());
  return (await storedItem(keys.meterWindow(meterId, kind, window.start, callerHash), REGION))?.value;
};

/** The listed request log record of a request, once written (it is written after the answer). */
const logged = (proxyId: string, requestId: string) => loggedRecord(owner.api, clientId, proxyId, requestId);

describe("request_count meters", () => {
  it("lets exactly the limit through, then answers 429 meter-limit-exceeded with Retry-After and RateLimit headers, without calling the target", async () => {
    const proxyId = await newProxy();
    const meterId = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      limits: { hour: 3 },
    });
    expect(await statuses(proxyId, 3)).toEqual([200, 200, 200]);
    const hitsBefore = targetHits;
    const refused = await call(proxyId);
    expect(refused.status).toBe(429);
    expect(targetHits).toBe(hitsBefore);
    expect(refused.headers.get("service-proxy-code")).toBe("meter-limit-exceeded");
    expect(refused.headers.get("service-proxy-message")).toContain(meterId);
    const retryAfter = Number(refused.headers.get("retry-after"));
    const hourEnd = windowAt("hour", clock.now()).end;
    expect(retryAfter).toBeGreaterThan(0);
    expect(Math.abs(retryAfter - Math.ceil((hourEnd - clock.now()) / 1000))).toBeLessThanOrEqual(2);
    expect(refused.headers.get("ratelimit-policy")).toBe(`"${meterId}-hour";q=3;w=3600`);
    expect(refused.headers.get("ratelimit")).toMatch(new RegExp(`^"${meterId}-hour";r=0;t=\\d+$`));
    expect(JSON.parse(refused.text)).toEqual({ code: "meter-limit-exceeded", message: expect.any(String) });
    // A refused request is not counted.
    // The admitted count is added with the request log, after the answer.
    await vi.waitFor(async () => expect(await counterValue(meterId, "hour")).toBe(3), { timeout: 5000 });
    const record = await logged(proxyId, refused.headers.get("x-request-id")!);
    expect(record.proxyData.status).toBe(429);
  });

  it("50 concurrent requests at limit 10: exactly 10 pass", async () => {
    const proxyId = await newProxy();
    const meterId = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      limits: { day: 10 },
    });
    const results = await Promise.all(Array.from({ length: 50 }, () => call(proxyId)));
    const counts = results.map((r) => r.status);
    expect(counts.filter((s) => s === 200)).toHaveLength(10);
    expect(counts.filter((s) => s === 429)).toHaveLength(40);
    await vi.waitFor(async () => expect(await counterValue(meterId, "day")).toBe(10), { timeout: 5000 });
  });

  it("counts every window it has a limit in; the tightest refuses; month windows say so in Retry-After", async () => {
    const proxyId = await newProxy();
    const meterId = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      limits: { minute: 100, hour: 50, day: 20, month: 2 },
    });
    expect(await statuses(proxyId, 3)).toEqual([200, 200, 429]);
    for (const kind of ["minute", "hour", "day", "month"] as const)
      await vi.waitFor(async () => expect(await counterValue(meterId, kind)).toBe(2), { timeout: 5000 });
    const refused = await call(proxyId);
    expect(refused.headers.get("ratelimit-policy")).toMatch(new RegExp(`^"${meterId}-month";q=2;w=\\d+$`));
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(3600 - 60);
  });

  it("a meter without limits never blocks and still counts; an inactive meter neither counts nor blocks", async () => {
    const proxyId = await newProxy();
    const aggregate = await newMeter(proxyId, { meterType: "request_count", meterActive: true });
    const inactive = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: false,
      limits: { hour: 1 },
    });
    expect(await statuses(proxyId, 3)).toEqual([200, 200, 200]);
    await vi.waitFor(async () => expect(await counterValue(aggregate, "month")).toBe(3), { timeout: 5000 });
    expect(await counterValue(aggregate, "minute")).toBeGreaterThanOrEqual(1);
    expect(await counterValue(inactive, "hour")).toBeUndefined();
  });

  it("one proxy's meters never affect another proxy", async () => {
    const [limited, free] = [await newProxy(), await newProxy()];
    await newMeter(limited, { meterType: "request_count", meterActive: true, limits: { hour: 1 } });
    expect(await statuses(limited, 2)).toEqual([200, 429]);
    expect(await statuses(free, 3)).toEqual([200, 200, 200]);
  });

  it("takes effect on the next request after a change, and stops at once when deleted", async () => {
    const proxyId = await newProxy();
    const meterId = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      limits: { hour: 1 },
    });
    expect(await statuses(proxyId, 2)).toEqual([200, 429]);
    const raised = await owner.api.put(`/api/clients/${clientId}/proxies/${proxyId}/meters/${meterId}`, {
      limits: { hour: 2 },
    });
    expect(raised.status, JSON.stringify(raised.body)).toBe(200);
    expect(await statuses(proxyId, 2)).toEqual([200, 429]);
    const removed = await owner.api.delete(`/api/clients/${clientId}/proxies/${proxyId}/meters/${meterId}`);
    expect(removed.status).toBe(200);
    expect(await statuses(proxyId, 2)).toEqual([200, 200]);
  });
});

describe("meter modes", () => {
  it("conditional include applies only to matching requests; exclude to all others", async () => {
    const proxyId = await newProxy();
    await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      meterMode: "conditional",
      effect: "include",
      methods: ["POST"],
      path: { pattern: "^/v1/chat", presence: "present" },
      limits: { hour: 1 },
    });
    const exclude = await newProxy();
    await newMeter(exclude, {
      meterType: "request_count",
      meterActive: true,
      meterMode: "conditional",
      effect: "exclude",
      headers: [{ name: "x-internal", pattern: "^yes$", presence: "present" }],
      limits: { hour: 1 },
    });
    const post = { method: "POST", body: "{}", headers: { "content-type": "application/json" } };
    expect(await statuses(proxyId, 2, "/v1/chat", post)).toEqual([200, 429]);
    expect(await statuses(proxyId, 2, "/v1/other", post)).toEqual([200, 200]);
    expect(await statuses(proxyId, 2, "/v1/chat")).toEqual([200, 200]); // GET does not match
    expect(await statuses(exclude, 3, "/x", { headers: { "x-internal": "yes" } })).toEqual([200, 200, 200]);
    expect(await statuses(exclude, 2, "/x")).toEqual([200, 429]);
  });

  it("predicates over the JSON body and variables bound from the body", async () => {
    const proxyId = await newProxy();
    await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      meterMode: "conditional",
      effect: "include",
      body: [{ path: "model", pattern: "^gpt-5$", presence: "present" }],
      variables: [{ name: "team", source: "body", key: "team.id" }],
      limitBy: "team",
      limits: { hour: 1 },
    });
    const post = (body: unknown) => ({
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
    expect(await statuses(proxyId, 2, "/x", post({ model: "gpt-5", team: { id: "a" } }))).toEqual([200, 429]);
    expect(await statuses(proxyId, 1, "/x", post({ model: "gpt-5", team: { id: "b" } }))).toEqual([200]);
    expect(await statuses(proxyId, 2, "/x", post({ model: "small", team: { id: "a" } }))).toEqual([200, 200]);
  });
});

describe("per-caller limits (limitBy)", () => {
  it("counts and limits separately for each value of the bound variable", async () => {
    const proxyId = await newProxy();
    const meterId = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      variables: [{ name: "customer", source: "header", key: "x-customer-id" }],
      limitBy: "customer",
      limits: { hour: 2 },
    });
    const as = (customer: string) => ({ headers: { "x-customer-id": customer } });
    expect(await statuses(proxyId, 3, "/x", as("alice"))).toEqual([200, 200, 429]);
    expect(await statuses(proxyId, 2, "/x", as("bob"))).toEqual([200, 200]);
    // Requests without the header share one bucket.
    expect(await statuses(proxyId, 3)).toEqual([200, 200, 429]);
    // The shared (meter-wide) counter is not used by a per-caller meter.
    expect(await counterValue(meterId, "hour")).toBeUndefined();
    const refused = await call(proxyId, "/x", as("bob"));
    expect(refused.status).toBe(429);
    expect(refused.headers.get("ratelimit")).toMatch(/;pk=:[A-Za-z0-9+/=]+:$/);
  });
});

describe("per-caller limits over a value the caller chooses (docs/meters.md warns)", () => {
  it("invented ids each get a fresh count (20 of 20 pass a limit of 2); a meter without limitBy bounds the total", async () => {
    const proxyId = await newProxy();
    await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      variables: [{ name: "customer", source: "header", key: "x-customer-id" }],
      limitBy: "customer",
      limits: { hour: 2 },
    });
    const invented = async (n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++)
        out.push(
          (await call(proxyId, "/x", { headers: { "x-customer-id": `invented-${i}-${Date.now()}` } })).status,
        );
      return out;
    };
    expect((await invented(20)).filter((status) => status === 200)).toHaveLength(20);
    // The remedy the docs give: a limit on a meter without limitBy holds whatever the header says.
    await newMeter(proxyId, { meterType: "request_count", meterActive: true, limits: { hour: 5 } });
    const after = await invented(8);
    expect(after.filter((status) => status === 200)).toHaveLength(5);
    expect(after.slice(5)).toEqual([429, 429, 429]);
  });
});

describe("response_value meters", () => {
  it("admits while the accumulated value is below the limit and adds the response's value afterwards", async () => {
    const proxyId = await newProxy();
    const meterId = await newMeter(proxyId, {
      meterType: "response_value",
      meterActive: true,
      extraction: { location: "body", path: "usage.tokens" },
      limits: { hour: 100 },
    });
    const first = await call(proxyId, "/x?tokens=60");
    expect(first.status).toBe(200);
    await vi.waitFor(async () => expect(await counterValue(meterId, "hour")).toBe(60), { timeout: 5000 });
    // 60 < 100: admitted; it takes the total to 120 (the request that crosses the limit passes).
    expect((await call(proxyId, "/x?tokens=60")).status).toBe(200);
    await vi.waitFor(async () => expect(await counterValue(meterId, "hour")).toBe(120), { timeout: 5000 });
    const refused = await call(proxyId, "/x?tokens=1");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("ratelimit-policy")).toContain('pg-unit="value"');
    expect(await counterValue(meterId, "hour")).toBe(120);
  });

  /** A response_value meter with an hour limit, over the body's `usage.tokens`. */
  const tokenMeter = (proxyId: string, hour: number) =>
    newMeter(proxyId, {
      meterType: "response_value",
      meterActive: true,
      extraction: { location: "body", path: "usage.tokens" },
      limits: { hour },
    });
  const hourItem = async (meterId: string) =>
    storedItem(keys.meterWindow(meterId, "hour", windowAt("hour", clock.now()).start), REGION);
  const parallel = async (proxyId: string, n: number, path: string) =>
    (await Promise.all(Array.from({ length: n }, () => call(proxyId, path)))).map((answer) => answer.status);

  it("a limit far above a lease block (1e9): the first request reserves it whole in one lease; its value is settled and the rest given back", async () => {
    const proxyId = await newProxy();
    const meterId = await tokenMeter(proxyId, 1e9);
    // A block at a time (1,000 units a store call), this reservation took a million calls. Each
    // request waits for the previous one's settlement (until then its reservation holds the window).
    const started = Date.now();
    let total = 0;
    for (const tokens of [7, 5, 9]) {
      expect((await call(proxyId, `/x?tokens=${tokens}`)).status).toBe(200);
      total += tokens;
      await vi.waitFor(async () => expect((await hourItem(meterId))?.value).toBe(total), { timeout: 5000 });
    }
    expect(Date.now() - started).toBeLessThan(5000);
    // The block keeps a few values' worth for the next requests, not the limit.
    const item = await hourItem(meterId);
    expect(item?.leased).toBeGreaterThanOrEqual(21);
    expect(item?.leased).toBeLessThan(1000);
  });

  it("20 parallel requests worth 40 at a limit of 100 admit at most 3 (each in-flight request reserves room), and every reservation is settled", async () => {
    const proxyId = await newProxy();
    const meterId = await tokenMeter(proxyId, 100);
    const hitsBefore = targetHits;
    const answered = await parallel(proxyId, 20, "/x?tokens=40");
    const admitted = answered.filter((status) => status === 200).length;
    expect(answered.filter((status) => status !== 200).every((status) => status === 429)).toBe(true);
    expect(admitted).toBeGreaterThanOrEqual(1);
    expect(admitted).toBeLessThanOrEqual(3);
    expect(targetHits - hitsBefore).toBe(admitted);
    // Settled: the real value. The lease accounting (`leased`) holds the values and the units this
    // instance still holds (reservations settled below them went back to its block): at least the
    // value, and within the limit while the value is.
    await vi.waitFor(async () => expect((await hourItem(meterId))?.value).toBe(40 * admitted), {
      timeout: 5000,
    });
    const item = await hourItem(meterId);
    expect(item?.leased).toBeGreaterThanOrEqual(40 * admitted);
    expect(item?.leased).toBeLessThanOrEqual(Math.max(100, 40 * admitted));
    expect(item).not.toHaveProperty("inflight");
  });

  it("with the mean value known, 20 parallel requests admit exactly the requests the sequential rule admits (3 of 40 at 100)", async () => {
    const proxyId = await newProxy();
    const meterId = await tokenMeter(proxyId, 100);
    expect((await call(proxyId, "/x?tokens=40")).status).toBe(200);
    await vi.waitFor(async () => expect((await hourItem(meterId))?.value).toBe(40), { timeout: 5000 });
    const answered = await parallel(proxyId, 20, "/x?tokens=40");
    expect(answered.filter((status) => status === 200)).toHaveLength(2);
    // The window ran dry: every unit leased is spent, and the value above the second request's
    // reservation was added to `leased` with the settlement.
    await vi.waitFor(async () => expect(await hourItem(meterId)).toMatchObject({ value: 120, leased: 120 }), {
      timeout: 5000,
    });
    expect((await call(proxyId, "/x?tokens=1")).status).toBe(429);
  });

  it("an instance that has seen no value of the meter reserves the mean recorded on it: exactly 2 of 20 slow parallel requests after one answer of 40", async () => {
    const proxyId = await newProxy();
    const meterId = await tokenMeter(proxyId, 100);
    const meterItem = () => storedItem(keys.meter(clientId, proxyId, meterId), REGION);
    expect((await call(proxyId, "/x?tokens=40")).status).toBe(200);
    await vi.waitFor(async () => expect((await meterItem())?.valueMean).toBe(40), { timeout: 5000 });
    // Never answered by the API.
    const read = await owner.api.get(`/api/clients/${clientId}/proxies/${proxyId}/meters/${meterId}`);
    expect(read.body.meters[0]).not.toHaveProperty("valueMean");
    // A cold instance: it has learned nothing, and loads the configuration again (a change bumps it).
    valueMeans.delete(meterId);
    const changed = await owner.api.put(`/api/clients/${clientId}/proxies/${proxyId}/meters/${meterId}`, {
      notes: "cold instance",
    });
    expect(changed.status).toBe(200);
    expect((await meterItem())?.valueMean).toBe(40); // a PUT keeps it
    // Every request is counted before the first answer: 40 + 40 + 40 reserved, the rest refused.
    const answered = await parallel(proxyId, 20, "/x?tokens=40&delay=2000");
    expect(answered.filter((status) => status === 200)).toHaveLength(2);
    await vi.waitFor(async () => expect(await hourItem(meterId)).toMatchObject({ value: 120, leased: 120 }), {
      timeout: 5000,
    });
  });

  it("a request whose target fails gives its reservation back (settled at 0)", async () => {
    const proxyId = await newProxy();
    const meterId = await tokenMeter(proxyId, 100);
    expect((await call(proxyId, "/x?tokens=40")).status).toBe(200);
    await vi.waitFor(async () => expect((await hourItem(meterId))?.value).toBe(40), { timeout: 5000 });
    expect((await call(proxyId, "/x?fail=1")).status).toBe(502);
    // Settled at 0: nothing added to the value; its reservation went back to the instance's block.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await hourItem(meterId))?.value).toBe(40);
    // The room is free again: 40 and 80 are below 100.
    expect(await statuses(proxyId, 2, "/x?tokens=40")).toEqual([200, 200]);
  });

  it("takes the value from a header, else defaultValue, else 0", async () => {
    const proxyId = await newProxy();
    const fromHeader = await newMeter(proxyId, {
      meterType: "response_value",
      meterActive: true,
      extraction: { location: "header", headerName: "x-tokens" },
    });
    const withDefault = await newMeter(proxyId, {
      meterType: "response_value",
      meterActive: true,
      extraction: { location: "body", path: "usage.missing", defaultValue: 5 },
    });
    const none = await newMeter(proxyId, {
      meterType: "response_value",
      meterActive: true,
      extraction: { location: "body", path: "usage.missing" },
    });
    expect((await call(proxyId, "/x?tokens=7")).status).toBe(200);
    expect((await call(proxyId, "/x?tokens=8")).status).toBe(200);
    await vi.waitFor(
      async () => {
        expect(await counterValue(fromHeader, "day")).toBe(15);
        expect(await counterValue(withDefault, "day")).toBe(10);
      },
      { timeout: 5000 },
    );
    expect(await counterValue(none, "day")).toBeUndefined();
  });
});

describe("the request log and the 500 path", () => {
  it("records which meters applied and which refused", async () => {
    const proxyId = await newProxy();
    const limited = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      limits: { hour: 1 },
    });
    const other = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      meterMode: "conditional",
      effect: "include",
      methods: ["DELETE"],
    });
    const ok = await call(proxyId);
    const refused = await call(proxyId);
    expect(refused.status).toBe(429);
    const okRecord = await logged(proxyId, ok.headers.get("x-request-id")!);
    expect(okRecord.metering).toEqual({ applied: [limited], refused: [] });
    const refusedRecord = await logged(proxyId, refused.headers.get("x-request-id")!);
    expect(refusedRecord.metering).toEqual({
      applied: [limited],
      refused: [{ meterId: limited, window: "hour" }],
    });
    expect(other).toBeTruthy();
  });

  it("an internal error answers 500 with the service headers and a request id, and is logged with systemError", async () => {
    const proxyId = await newProxy();
    const meterId = await newMeter(proxyId, {
      meterType: "request_count",
      meterActive: true,
      limits: { hour: 5 },
    });
    // A counter item at DynamoDB's 400 KB item limit: the count transaction's update, which adds
    // the counter's attributes, is refused by the store (ValidationException, a 400: not an outage).
    const window = windowAt("hour", clock.now());
    await dynamo(REGION).send(
      new PutCommand({
        TableName: getConfig().tableName,
        Item: { ...keys.meterWindow(meterId, "hour", window.start), padding: "x".repeat(404_700) },
      }),
    );
    const failed = await call(proxyId);
    expect(failed.status).toBe(500);
    expect(failed.headers.get("service-proxy-code")).toBe("proxy-error");
    const requestId = failed.headers.get("x-request-id");
    expect(requestId).toMatch(/\S/);
    const record = await logged(proxyId, requestId!);
    expect(record.proxyData.status).toBe(500);
    expect(record.validationData.systemError).toBe(true);
    expect(record.validationData.requestSent).toBe(false);
  });
});
