/**
 * Store stalls (issue 7): the whole stack talks to the emulator through a front on loopback that
 * can stop answering, per AWS operation, while keeping the connections open (a stalled store).
 * Every request must then answer within its time budget, with the SDK's default bounds
 * (lib/aws/clients.ts): the data plane a 503 with the service headers and an x-request-id (logged
 * when the log can still be written), the Core API a 503 with a generic message.
 */
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { resetClients, SDK_TIMEOUT_DEFAULTS } from "#lib/aws/clients.ts";
import { SERVICE_UNAVAILABLE_MESSAGE } from "#lib/infra/api-manifest.ts";
import { loggedDetail } from "../support/request-logs.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyParts,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const REGION = "us-east-1";
const KEY = "stall-caller-key-1234567890";
/** The longest a failing store call may take: every attempt times out, plus back-off. */
const WORST_CALL_MS = SDK_TIMEOUT_DEFAULTS.maxAttempts * SDK_TIMEOUT_DEFAULTS.requestTimeoutMs + 1000;

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let front: Server;
let target: Server;
let targetBase: string;
const emulator = process.env.AWS_ENDPOINT_URL!;
const timeoutsBefore = {
  SDK_REQUEST_TIMEOUT_MS: process.env.SDK_REQUEST_TIMEOUT_MS ?? "",
  SDK_CONNECT_TIMEOUT_MS: process.env.SDK_CONNECT_TIMEOUT_MS ?? "",
};
/** Operations (X-Amz-Target, e.g. DynamoDB_20120810.PutItem) that get no answer; all when true. */
let stalled: ((operation: string) => boolean) | true | undefined;
const stalledCalls: string[] = [];

beforeAll(async () => {
  // The stalled store: accepts the connection and the request, never answers it.
  front = createServer((req, res) => {
    const operation = String(req.headers["x-amz-target"] ?? `${req.method} ${req.url}`);
    if (stalled === true || stalled?.(operation)) {
      stalledCalls.push(operation);
      req.resume();
      return;
    }
    const upstream = httpRequest(
      new URL(req.url ?? "/", emulator),
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  process.env.AWS_ENDPOINT_URL = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  // The deployed bounds, not the relaxed ones the other tests use against the queueing emulator.
  process.env.SDK_REQUEST_TIMEOUT_MS = String(SDK_TIMEOUT_DEFAULTS.requestTimeoutMs);
  process.env.SDK_CONNECT_TIMEOUT_MS = String(SDK_TIMEOUT_DEFAULTS.connectTimeoutMs);
  resetClients();

  target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;

  stack = await startTestStack();
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Stall Co");
});
afterEach(() => {
  stalled = undefined;
  stalledCalls.length = 0;
});
afterAll(async () => {
  stalled = undefined;
  await stack?.stop();
  front?.closeAllConnections();
  target?.closeAllConnections();
  await Promise.all([front, target].map((server) => new Promise((resolve) => server?.close(resolve))));
  process.env.AWS_ENDPOINT_URL = emulator;
  Object.assign(process.env, timeoutsBefore);
  resetClients();
});

async function makeProxy(): Promise<string> {
  const api = `/api/clients/${clientId}`;
  const parts = await createProxyParts(owner, clientId, {
    region: REGION,
    key: KEY,
    targetBaseURL: targetBase,
  });
  const proxy = await created(
    owner.api.post(`${api}/proxies`, {
      proxyName: "p",
      proxyRegion: REGION,
      proxyProxyCredentialId: parts.proxyCredentialId,
      proxyTargetId: parts.targetId,
      proxyTargetCredentialId: parts.targetCredentialId,
    }),
    "proxies",
  );
  // Warm: the data plane caches the proxy's configuration (and the data keys) on a first request.
  const warm = await callDataPlane(`${stack.regions[REGION]}/api/${proxy.proxyId}/warm`, {
    headers: { "x-api-key": KEY },
  });
  expect(warm.status, warm.text).toBe(200);
  // The request log is written after the answer: wait for it, so no write of the warm request is
  // still under way when a test stalls the store.
  await vi.waitFor(
    async () => {
      const logged = await owner.api.get(`${api}/proxies/${proxy.proxyId}/requests`);
      expect(logged.body.requests).toHaveLength(1);
    },
    { timeout: 10_000, interval: 100 },
  );
  return proxy.proxyId as string;
}

async function timed<T>(call: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = Date.now();
  const result = await call();
  return { result, ms: Date.now() - started };
}

describe("data plane with a stalled store", () => {
  it("answers 503 with the service headers and an x-request-id, within the budget", async () => {
    const proxyId = await makeProxy();
    stalled = true;
    const { result, ms } = await timed(() =>
      callDataPlane(`${stack.regions[REGION]}/api/${proxyId}/x`, { headers: { "x-api-key": KEY } }),
    );
    expect(result.status, result.text).toBe(503);
    expect(result.headers.get("service-proxy-code")).toBe("proxy-error");
    expect(result.headers.get("service-proxy-message")).toMatch(/store is unavailable/);
    expect(result.headers.get("x-request-id")).toMatch(/\S/);
    expect(JSON.parse(result.text)).toEqual({
      code: "proxy-error",
      message: result.headers.get("service-proxy-message"),
    });
    // One store call is on the caller's wait (the configuration's version, strict freshness; the
    // rate window's lease is held since the warm request), after its bounded attempts:
    // nowhere near the 75 s Lambda timeout, and no retry storm. The request log's write comes
    // after the answer and fails the same bounded way.
    expect(ms).toBeLessThan(WORST_CALL_MS);
    const attempts = SDK_TIMEOUT_DEFAULTS.maxAttempts;
    const of = (operation: string) =>
      stalledCalls.filter((call) => call === `DynamoDB_20120810.${operation}`);
    await vi.waitFor(() => expect(of("PutItem")).toHaveLength(attempts), {
      timeout: 2 * WORST_CALL_MS,
      interval: 100,
    });
    // Before the answer: the version read alone. After it: the log's write and, beside it, the
    // top-up of the rate window's lease (an UpdateItem, when its block ran low), each bounded.
    expect(stalledCalls.slice(0, attempts)).toEqual(Array(attempts).fill("DynamoDB_20120810.GetItem"));
    expect(of("GetItem")).toHaveLength(attempts);
    expect(of("UpdateItem").length).toBeLessThanOrEqual(attempts);
    expect(stalledCalls).toHaveLength(attempts * 2 + of("UpdateItem").length);
  });

  it("logs the failed request when only the failing call stalls", async () => {
    const proxyId = await makeProxy();
    stalled = (operation) => operation.endsWith(".GetItem");
    const { result, ms } = await timed(() =>
      callDataPlane(`${stack.regions[REGION]}/api/${proxyId}/y`, { headers: { "x-api-key": KEY } }),
    );
    stalled = undefined;
    expect(result.status, result.text).toBe(503);
    expect(ms).toBeLessThan(WORST_CALL_MS);
    const requestId = result.headers.get("x-request-id");
    await loggedDetail(owner.api, clientId, proxyId, requestId!);
    const logged = await owner.api.get(`/api/clients/${clientId}/proxies/${proxyId}/requests/${requestId}`);
    expect(logged.status, JSON.stringify(logged.body)).toBe(200);
    expect(logged.body.requests).toEqual([
      expect.objectContaining({ requestId, method: "GET", path: "/y", statusCode: 503 }),
    ]);
  });
});

describe("Core API with a stalled store", () => {
  it("answers 503 with a generic message, from a handler and from the authorizer, within the budget", async () => {
    const stranger = await stack.newUser();
    const warm = await owner.api.get(`/api/clients/${clientId}`);
    expect(warm.status).toBe(200);
    // The authorizer (run for every request) reads; the handler's first store call writes the
    // rate window: stalling writes only lets the request reach the handler, which answers 503.
    // (The warm request just stamped the token's last use, so the authorizer writes nothing.)
    stalled = (operation) => operation.endsWith(".UpdateItem");

    const handled = await timed(() => owner.api.get(`/api/clients/${clientId}`));
    expect(handled.result.status, JSON.stringify(handled.result.body)).toBe(503);
    expect(handled.result.body).toEqual({
      message: SERVICE_UNAVAILABLE_MESSAGE,
      requestId: expect.any(String),
    });
    expect(handled.ms).toBeLessThan(WORST_CALL_MS); // API Gateway gives up at 29 s

    stalled = true;
    const authorized = await timed(() => stranger.api.get(`/api/users/${stranger.userId}`));
    expect(authorized.result.status, JSON.stringify(authorized.result.body)).toBe(503);
    expect(authorized.result.body).toEqual({ message: SERVICE_UNAVAILABLE_MESSAGE });
    expect(authorized.ms).toBeLessThan(WORST_CALL_MS);
  });
});
