/**
 * Store round trips of common Core API calls, warm (the authorizer runs for every request, without
 * a cache: issue 21; the local runner runs it in-process, so its calls are counted), with a token
 * and with a session cookie, and of a warm proxied request on the data plane, counted by SDK middleware on every
 * region's client: the figures of docs/architecture.md ("Request flow") and docs/data-plane.md
 * ("Store round trips per warm request"), held by this test so the docs cannot go stale silently.
 * A proxied request's calls are counted before the answer (on the caller's wait) and after it.
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { dynamo, kms } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { createCounting } from "#lib/data-plane/counter-leases.ts";
import { createDataPlane, type DataPlaneRequest } from "#lib/data-plane/pipeline.ts";
import { keys } from "#lib/db/keys.ts";
import { createMsp } from "#lib/domain/msps.ts";
import { hashToken, LAST_USED_PRECISION_MS } from "#lib/domain/tokens.ts";
import { send, signedInUser } from "../support/sessions.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyOf,
  createProxyParts,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

let stack: TestStack;
let owner: TestUser;
let browser: TestUser & { cookie: string };
let clientId: string;
let proxyId: string;
let targetServer: Server;
let targetBase: string;
/** The calls counted when the target received its request (what a proxied request sent before). */
let atTarget: Record<string, number> | undefined;

type Stack = { add: (m: unknown, o: { step: string; name: string }) => void; remove: (n: string) => boolean };
const counts = new Map<string, number>();
/** The actions of each TransactWriteItems, in order (what a transaction's write units follow). */
const transactionSizes: number[] = [];
const name = `round-trips-${randomUUID()}`;

async function countCalls() {
  const middleware =
    (next: (args: unknown) => Promise<unknown>, context: { clientName?: string; commandName?: string }) =>
    async (args: unknown) => {
      const key = `${context.clientName?.replace("Client", "") ?? "?"}:${context.commandName?.replace(/Command$/, "") ?? "?"}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      const actions = (args as { input?: { TransactItems?: unknown[] } }).input?.TransactItems;
      if (actions) transactionSizes.push(actions.length);
      return next(args);
    };
  for (const region of getConfig().regions) {
    (dynamo(region).middlewareStack as unknown as Stack).add(middleware, { step: "initialize", name });
    ((await kms(region)).middlewareStack as unknown as Stack).add(middleware, { step: "initialize", name });
  }
}

/**
 * The store and KMS calls one request makes, by command. A request by the same token just before
 * it stamps the token's last use if that stamp was due (at most once a minute), so the counted
 * request never carries that once-a-minute write.
 */
async function callsOf(request: () => Promise<{ status: number }>, status = 200) {
  expect((await owner.api.get("/api/users")).status).toBe(200);
  counts.clear();
  const answer = await request();
  expect(answer.status).toBe(status);
  return Object.fromEntries([...counts].sort());
}

beforeAll(async () => {
  targetServer = createServer((req, res) => {
    atTarget = Object.fromEntries([...counts].sort());
    req.resume();
    req.on("end", () => res.end("ok"));
  });
  await new Promise<void>((resolve) => targetServer.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(targetServer.address() as AddressInfo).port}`;
  stack = await startTestStack();
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Round trips");
  browser = await signedInUser(stack);
  await createClientFor(browser, "Round trips by cookie");
  const api = `/api/clients/${clientId}`;
  const region = getConfig().homeRegion;
  const credential = (credentialType: "proxy" | "target") =>
    created(
      owner.api.post(`${api}/credentials`, {
        credentialName: credentialType,
        credentialType,
        authType: credentialType === "proxy" ? "apiKey" : "bearer",
        region,
        secret:
          credentialType === "proxy"
            ? { keyName: "x-api-key", keyValue: randomUUID() }
            : { token: randomUUID() },
      }),
      "credentials",
    );
  const [caller, upstream, target] = await Promise.all([
    credential("proxy"),
    credential("target"),
    created(
      owner.api.post(`${api}/targets`, {
        targetName: "t",
        targetRegion: region,
        targetBaseURL: "https://api.example.test",
        targetTestPath: "/health",
      }),
      "targets",
    ),
  ]);
  proxyId = (
    await created(
      owner.api.post(`${api}/proxies`, {
        proxyName: "p",
        proxyRegion: region,
        proxyProxyCredentialId: caller.credentialId,
        proxyTargetId: target.targetId,
        proxyTargetCredentialId: upstream.credentialId,
      }),
      "proxies",
    )
  ).proxyId;
  await countCalls();
});
afterAll(async () => {
  for (const region of getConfig().regions) {
    (dynamo(region).middlewareStack as unknown as Stack).remove(name);
    ((await kms(region)).middlewareStack as unknown as Stack).remove(name);
  }
  await stack?.stop();
  targetServer?.closeAllConnections();
  await new Promise((resolve) => targetServer?.close(resolve));
});

describe("store round trips per warm Core API call", () => {
  // Every authenticated call: the authorizer reads the token, then the user, then the user's
  // clients' configurations (the rate limit; none when the user has no client); the dispatcher
  // updates the rate window; then the handler's own calls.
  it("GET /api/users: token, user, clients' configurations, the rate window, the user", async () => {
    const calls = await callsOf(() => owner.api.get("/api/users"));
    process.stdout.write(`round trips GET /api/users: ${JSON.stringify(calls)}\n`);
    expect(calls).toEqual({ "DynamoDB:BatchGetItem": 1, "DynamoDB:GetItem": 3, "DynamoDB:UpdateItem": 1 });
  });

  // By cookie: the session and the user in parallel (the cookie names its user), then the same.
  it("GET /api/users by session cookie: session and user, clients' configurations, the rate window, the user", async () => {
    const get = () => send(stack.baseUrl, "GET", "/api/users", { headers: { Cookie: browser.cookie } });
    expect((await get()).status).toBe(200); // touches the session if due: not counted
    counts.clear();
    expect((await get()).status).toBe(200);
    const calls = Object.fromEntries([...counts].sort());
    process.stdout.write(`round trips GET /api/users by cookie: ${JSON.stringify(calls)}\n`);
    expect(calls).toEqual({ "DynamoDB:BatchGetItem": 1, "DynamoDB:GetItem": 3, "DynamoDB:UpdateItem": 1 });
  });

  it("GET /api/users: over a minute after the token's last stamp, one more write stamps it", async () => {
    const tokenHash = hashToken(owner.token);
    const stale = new Date(Date.now() - LAST_USED_PRECISION_MS - 1_000).toISOString();
    await dynamo(getConfig().homeRegion).send(
      new UpdateCommand({
        TableName: getConfig().tableName,
        Key: keys.userToken(tokenHash),
        UpdateExpression: "SET tokenLastUsed = :stale",
        ExpressionAttributeValues: { ":stale": stale },
      }),
    );
    counts.clear();
    expect((await owner.api.get("/api/users")).status).toBe(200);
    const calls = Object.fromEntries([...counts].sort());
    expect(calls).toEqual({ "DynamoDB:BatchGetItem": 1, "DynamoDB:GetItem": 3, "DynamoDB:UpdateItem": 2 });
  });

  it("GET /api/clients/{clientId}: the authorizer's three, rate window, membership, then the client and its members", async () => {
    const calls = await callsOf(() => owner.api.get(`/api/clients/${clientId}`));
    process.stdout.write(`round trips GET client: ${JSON.stringify(calls)}\n`);
    expect(calls).toEqual({
      "DynamoDB:BatchGetItem": 1,
      "DynamoDB:GetItem": 4,
      "DynamoDB:Query": 1,
      "DynamoDB:UpdateItem": 1,
    });
  });

  it("POST /api/clients: the authorizer's three, rate window, the user, one transaction, the runtime item in every region", async () => {
    const calls = await callsOf(() => owner.api.post("/api/clients", { clientName: "Another" }), 201);
    process.stdout.write(`round trips POST client: ${JSON.stringify(calls)}\n`);
    // The plan and billing status the data plane reads are copied to each region's runtime item.
    expect(calls).toEqual({
      "DynamoDB:BatchGetItem": 1,
      "DynamoDB:GetItem": 3,
      "DynamoDB:TransactWriteItems": 1,
      "DynamoDB:UpdateItem": 1 + getConfig().regions.length,
    });
  });

  it("GET /api/clients/{clientId}/proxies/{proxyId}: the authorizer's three, rate window, membership, the proxy in every region", async () => {
    const calls = await callsOf(() => owner.api.get(`/api/clients/${clientId}/proxies/${proxyId}`));
    process.stdout.write(`round trips GET proxy: ${JSON.stringify(calls)}\n`);
    // The token and the user (authorizer), the membership (checked once, by the dispatcher), one
    // per region for the proxy.
    expect(calls).toEqual({
      "DynamoDB:BatchGetItem": 1,
      "DynamoDB:GetItem": 3 + getConfig().regions.length,
      "DynamoDB:UpdateItem": 1,
    });
  });
});

describe("store round trips per warm proxied request", () => {
  const KEY = "round-trips-caller-key-0123456789";
  const region = "us-east-1";

  /** A proxy of the client in `region`, built through the Core API by `user`. */
  async function proxyOf(user: TestUser, client: string): Promise<string> {
    const parts = await createProxyParts(user, client, { region, key: KEY, targetBaseURL: targetBase });
    return createProxyOf(user, client, region, parts, "dp");
  }

  const sorted = (calls: Map<string, number> | Record<string, number>) =>
    Object.fromEntries((calls instanceof Map ? [...calls] : Object.entries(calls)).sort());
  const minus = (all: Record<string, number>, before: Record<string, number>) =>
    sorted(
      Object.fromEntries(
        Object.entries(all)
          .map(([command, n]) => [command, n - (before[command] ?? 0)] as const)
          .filter(([, n]) => n > 0),
      ),
    );

  /**
   * One request over HTTP, and its calls before the answer (everything the data plane sent before
   * it called the target: nothing is sent between the target's answer and the answer) and after it
   * (until the request log is written).
   */
  async function served(proxy: string, written: string) {
    counts.clear();
    transactionSizes.length = 0;
    atTarget = undefined;
    const answer = await callDataPlane(`${stack.regions[region]}/api/${proxy}/x`, {
      headers: { "x-api-key": KEY },
    });
    expect(answer.status).toBe(200);
    await vi.waitFor(() => expect(counts.get(written)).toBe(1), { timeout: 5000, interval: 20 });
    // The lease top-ups run with the log write; give them a moment to be counted.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const before = atTarget ?? {};
    return { before, after: minus(sorted(counts), before), sizes: [...transactionSizes] };
  }

  /** The calls of a warm request: a first one loads and caches the configuration, a second leases. */
  async function warmCallsOf(proxy: string, written = "DynamoDB:PutItem") {
    await served(proxy, written);
    await served(proxy, written);
    return served(proxy, written);
  }

  it("a client without limits (strict freshness): one GetItem before the answer, the log after", async () => {
    const calls = await warmCallsOf(await proxyOf(owner, clientId));
    process.stdout.write(`round trips proxied request: ${JSON.stringify(calls)}\n`);
    // The configVersion read; the rate window is taken from the lease this instance holds.
    expect(calls.before).toEqual({ "DynamoDB:GetItem": 1 });
    // The request log; at most one lease top-up of the rate window.
    expect(calls.after["DynamoDB:PutItem"]).toBe(1);
    expect(calls.after["DynamoDB:UpdateItem"] ?? 0).toBeLessThanOrEqual(1);
    expect(Object.keys(calls.after).sort()).toEqual(
      calls.after["DynamoDB:UpdateItem"] ? ["DynamoDB:PutItem", "DynamoDB:UpdateItem"] : ["DynamoDB:PutItem"],
    );
  });

  it("a limited response_value meter: its reservation is taken from the lease; the value settles with the log", async () => {
    const proxy = await proxyOf(owner, clientId);
    const meter = await owner.api.post(`/api/clients/${clientId}/proxies/${proxy}/meters`, {
      meterType: "response_value",
      meterActive: true,
      // The target answers "ok": the default value is what each answer adds.
      extraction: { location: "body", path: "usage.tokens", defaultValue: 5 },
      limits: { hour: 1000 },
    });
    expect(meter.status).toBe(201);
    const calls = await warmCallsOf(proxy, "DynamoDB:TransactWriteItems");
    process.stdout.write(`round trips proxied request, response_value meter: ${JSON.stringify(calls)}\n`);
    expect(calls.before).toEqual({ "DynamoDB:GetItem": 1 });
    expect(calls.after["DynamoDB:TransactWriteItems"]).toBe(1);
    expect(calls.sizes).toEqual([2]); // the log and the meter window's value
    expect(calls.after["DynamoDB:UpdateItem"] ?? 0).toBeLessThanOrEqual(2); // top-ups
  });

  it("a managed client with limits: its windows' leases add no call before the answer", async () => {
    const { msp } = await createMsp({ name: "Round trips MSP", ownerUserId: owner.userId });
    const made = await owner.api.post(`/api/msps/${msp.mspId}/clients`, { clientName: "Limited" });
    expect(made.status).toBe(201);
    const managed = made.body.client.clientId as string;
    const put = await owner.api.put(`/api/msps/${msp.mspId}/clients/${managed}/configurations`, {
      limits: { requestsPerMinute: 100, requestsPerDay: 1000 },
    });
    expect(put.status).toBe(200);
    const calls = await warmCallsOf(await proxyOf(owner, managed));
    process.stdout.write(`round trips proxied request, client limits: ${JSON.stringify(calls)}\n`);
    expect(calls.before).toEqual({ "DynamoDB:GetItem": 1 });
    expect(calls.after["DynamoDB:PutItem"]).toBe(1);
    expect(calls.after["DynamoDB:UpdateItem"] ?? 0).toBeLessThanOrEqual(3); // top-ups
    expect(calls.after["DynamoDB:TransactWriteItems"]).toBeUndefined();
  });

  it("relaxed freshness: no store call at all before the answer", async () => {
    const proxy = await proxyOf(owner, clientId);
    const plane = createDataPlane(region, {
      counting: createCounting(region, { freshness: { mode: "relaxed", boundMs: 60_000 } }),
    });
    const request = (): DataPlaneRequest => ({
      method: "GET",
      path: `/api/${proxy}/x`,
      rawQuery: "",
      headers: { "x-api-key": KEY },
      sourceIp: "127.0.0.1",
      stage: "$default",
      arnBase: "arn:aws:lambda:us-east-1:000000000000:function-url/test",
    });
    const phases = async () => {
      counts.clear();
      const answer = await plane.serve(request());
      expect(answer.response.status).toBe(200);
      const before = sorted(counts);
      await answer.finish();
      return { before, after: minus(sorted(counts), before) };
    };
    await phases();
    await phases();
    const calls = await phases();
    process.stdout.write(`round trips proxied request, relaxed freshness: ${JSON.stringify(calls)}\n`);
    expect(calls.before).toEqual({});
    expect(calls.after["DynamoDB:PutItem"]).toBe(1);
  });
});
