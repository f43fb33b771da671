/**
 * Meters under a real AWS SDK retry, over real HTTP against the local stack: every AWS call of the
 * stack goes through a lossy front (test/support/lossy-front.ts) that loses the answer of one
 * applied write, so the SDK sends it again.
 * - The settlement transaction (request log + meter values, after the answer) carries a
 *   ClientRequestToken derived from the request id, so the retry is a no-op in the store: the value
 *   counted once, one request log written. Without the token (the front strips it) the same retry
 *   counts twice: the tests can fail.
 * - Before the target, a limited window is taken from a quota lease (one conditional UpdateItem
 *   carrying a token of its own, `leaseToken`): the SDK's retry finds the token and is not applied
 *   twice; the window stays exact.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { clientRequestToken } from "#lib/data-plane/counters.ts";
import { keys } from "#lib/db/keys.ts";
import { windowAt } from "#lib/shared/meter-windows.ts";
import {
  keysOf,
  type LossyFront,
  putsAnItem,
  routeThrough,
  startLossyFront,
  type TransactWriteRequest,
} from "../support/lossy-front.ts";
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
const KEY = "sdk-retry-caller-key-1234567890";

let front: LossyFront;
let restoreEndpoint: () => void;
let stack: TestStack;
let owner: TestUser;
let clientId: string;
let target: Server;
let targetHits = 0;
let parts: Awaited<ReturnType<typeof createProxyParts>>;

beforeAll(async () => {
  // The target answers {"usage":{"tokens":N}}, N from the query's `tokens`.
  target = createServer((req, res) => {
    targetHits++;
    req.resume();
    req.on("end", () => {
      const tokens = new URL(req.url ?? "/", "http://x").searchParams.get("tokens") ?? "0";
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ usage: { tokens: Number(tokens) } }));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  front = await startLossyFront(process.env.AWS_ENDPOINT_URL!);
  restoreEndpoint = routeThrough(front);
  stack = await startTestStack();
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Retry Co");
  parts = await createProxyParts(owner, clientId, {
    region: REGION,
    key: KEY,
    targetBaseURL: `http://127.0.0.1:${(target.address() as AddressInfo).port}`,
  });
});
afterAll(async () => {
  await stack?.stop();
  restoreEndpoint?.();
  await front?.close();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

async function proxyWithMeter(body: Record<string, unknown>): Promise<{ proxyId: string; meterId: string }> {
  const proxyId = await createProxyOf(owner, clientId, REGION, parts);
  const meter = await created(
    owner.api.post(`/api/clients/${clientId}/proxies/${proxyId}/meters`, body),
    "meters",
  );
  return { proxyId, meterId: meter.meterId };
}

const call = (proxyId: string, path = "/x") =>
  callDataPlane(`${stack.regions[REGION]}/api/${proxyId}${path}`, { headers: { "x-api-key": KEY } });

const hourValue = async (meterId: string) =>
  (await storedItem(keys.meterWindow(meterId, "hour", windowAt("hour", Date.now()).start), REGION))?.value;

/** The transaction of a meter: its count (before the target) or its settlement (after the answer). */
const transactionOf =
  (meterId: string, which: "count" | "settle") =>
  (request: TransactWriteRequest): boolean =>
    keysOf(request).includes(`METERUSE#${meterId}`) && putsAnItem(request) === (which === "settle");

/** The listed request log records of one request (once it has been written). */
async function logRecords(proxyId: string, requestId: string) {
  const result = await owner.api.get(`/api/clients/${clientId}/proxies/${proxyId}/requests`);
  expect(result.status).toBe(200);
  return (result.body.requests as { requestId: string }[]).filter((r) => r.requestId === requestId);
}

afterEach(() => front.disarm());

describe("a quota lease's answer is lost and the SDK retries it", () => {
  // The limited windows are taken from quota leases: a lease is one conditional UpdateItem of the
  // window's `leased`, which also sets the item's `leaseToken` to a token of that lease and is
  // conditioned on the token not being there yet. The SDK's retry after a lost answer finds its own
  // token: refused, recognised as applied, not leased twice. (Had another lease of the item landed
  // between the two attempts, the block would be leased twice: under-admission, never over.)
  it("the request is counted once and the target called once; the lease is not applied twice: the window stays exact", async () => {
    const { proxyId, meterId } = await proxyWithMeter({
      meterType: "request_count",
      meterActive: true,
      limits: { hour: 5 },
    });
    // The meter window's first lease (the only UpdateItem of that item before the answer).
    const attempts = front.loseFirstAnswer({
      update: (request) => request.Key.pKey?.S === `METERUSE#${meterId}`,
    });
    const hitsBefore = targetHits;
    const answered = await call(proxyId);
    expect(answered.status, answered.text).toBe(200);
    expect(targetHits - hitsBefore).toBe(1);
    // The lease reached the store twice (the first applied, its answer lost).
    expect(attempts).toEqual([
      { token: undefined, answered: false },
      { token: undefined, answered: true },
    ]);
    front.disarm();
    await vi.waitFor(async () => expect(await hourValue(meterId)).toBe(1), { timeout: 5000 });
    // Sequential requests until the window refuses: 4 more pass (the limit of 5, none lost).
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await call(proxyId)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    await vi.waitFor(async () => expect(await hourValue(meterId)).toBe(5), { timeout: 5000 });
    const item = await storedItem(
      keys.meterWindow(meterId, "hour", windowAt("hour", Date.now()).start),
      REGION,
    );
    expect(item?.leased).toBe(5); // the limit, never above it
  });
});

describe("the settlement transaction's answer is lost and the SDK retries it", () => {
  const responseValueMeter = {
    meterType: "response_value",
    meterActive: true,
    extraction: { location: "body", path: "usage.tokens" },
    limits: { hour: 1000 },
  };

  it("with the ClientRequestToken: the response's value is counted once and one request log is written", async () => {
    const { proxyId, meterId } = await proxyWithMeter(responseValueMeter);
    const attempts = front.loseFirstAnswer({ matches: transactionOf(meterId, "settle") });
    const hitsBefore = targetHits;
    const answered = await call(proxyId, "/x?tokens=7");
    expect(answered.status, answered.text).toBe(200);
    const requestId = answered.headers.get("x-request-id")!;
    // The settlement runs after the answer: wait for the SDK's retry to have been answered.
    await vi.waitFor(() => expect(attempts).toHaveLength(2), { timeout: 10_000, interval: 50 });
    expect(targetHits - hitsBefore).toBe(1);
    expect(await hourValue(meterId)).toBe(7);
    const records = await logRecords(proxyId, requestId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ metering: { applied: [meterId], refused: [] } });
    const token = clientRequestToken(requestId, "settle:0");
    expect(attempts).toEqual([
      { token, answered: false },
      { token, answered: true },
    ]);
    // The next request settles again.
    front.disarm();
    expect((await call(proxyId, "/x?tokens=5")).status).toBe(200);
    await vi.waitFor(async () => expect(await hourValue(meterId)).toBe(12), { timeout: 10_000 });
  });

  it("without it (stripped on the wire): the same retry adds the response's value twice", async () => {
    const { proxyId, meterId } = await proxyWithMeter(responseValueMeter);
    const attempts = front.loseFirstAnswer({ matches: transactionOf(meterId, "settle"), stripToken: true });
    expect((await call(proxyId, "/x?tokens=7")).status).toBe(200);
    await vi.waitFor(() => expect(attempts).toHaveLength(2), { timeout: 10_000, interval: 50 });
    await vi.waitFor(async () => expect(await hourValue(meterId)).toBe(14), { timeout: 10_000 });
  });
});
