/**
 * Enforcement of the managed-client configuration (issue 12 part 2) over real HTTP against the
 * local stack: `regionAccess` on creating regional resources through the Core API, `limits` on the
 * data plane (exact under concurrency, 429 with the meters' headers, logged), and an MSP's
 * suspension answering 402 for the clients it pays for. The MSP's staff build each client's proxy
 * through the Core API; the target is a real HTTP server on loopback.
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { createMsp, setMspBillingStatus } from "#lib/domain/msps.ts";
import { setClientBillingStatus } from "../../cli/client-plan.ts";
import { MINUTE_MS, TestClock } from "../support/clock.ts";
import { loggedRecord } from "../support/request-logs.ts";
import {
  callDataPlane,
  createClientFor,
  createProxyOf,
  createProxyParts,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const EU = "eu-west-1";
const KEY = "msp-enforcement-caller-key-0123";
const VALIDATION = "Input failed data validation";

let stack: TestStack;
/** The stack's clock (lib/clock.ts): the minute-limit burst starts in a fresh minute of it. */
const clock = new TestClock();
let target: Server;
let targetBase: string;
let targetHits = 0;

beforeAll(async () => {
  target = createServer((req, res) => {
    targetHits++;
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  stack = await startTestStack({ clock: clock.now });
});
afterAll(async () => {
  await stack?.stop();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

interface Msp {
  mspId: string;
  /** The msp_owner: acts as devops on its clients through the Core API. */
  owner: TestUser;
}

async function newMsp(): Promise<Msp> {
  const owner = await stack.newUser();
  const { msp } = await createMsp({ name: `MSP ${randomUUID().slice(0, 8)}`, ownerUserId: owner.userId });
  return { mspId: msp.mspId, owner };
}

async function newManagedClient(msp: Msp): Promise<string> {
  const made = await msp.owner.api.post(`/api/msps/${msp.mspId}/clients`, { clientName: "Contoso" });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return made.body.client.clientId as string;
}

const configPath = (msp: Msp, clientId: string) =>
  `/api/msps/${msp.mspId}/clients/${clientId}/configurations`;

async function configure(msp: Msp, clientId: string, body: Record<string, unknown>) {
  const put = await msp.owner.api.put(configPath(msp, clientId), body);
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  return put.body.configuration;
}

/** A proxy of the client in `region`, built through the Core API by `user`. */
async function newProxy(user: TestUser, clientId: string, region = US): Promise<string> {
  const parts = await createProxyParts(user, clientId, { region, key: KEY, targetBaseURL: targetBase });
  return createProxyOf(user, clientId, region, parts, "p");
}

const call = (proxyId: string, region = US) =>
  callDataPlane(`${stack.regions[region]}/api/${proxyId}/x`, { headers: { "x-api-key": KEY } });

/** The listed request log record of a request, once written (it is written after the answer). */
const logged = (user: TestUser, clientId: string, proxyId: string, requestId: string) =>
  loggedRecord(user.api, clientId, proxyId, requestId);

describe("regionAccess", () => {
  it("a managed client creates credentials, targets and proxies only in its listed regions: 400 naming the region field", async () => {
    const msp = await newMsp();
    const clientId = await newManagedClient(msp);
    // Built in the US before the restriction: it keeps working, and its parts stay usable.
    const usProxy = await newProxy(msp.owner, clientId, US);
    expect(await configure(msp, clientId, { regionAccess: [EU] })).toMatchObject({ regionAccess: [EU] });

    const api = `/api/clients/${clientId}`;
    const refused = await Promise.all([
      msp.owner.api.post(`${api}/credentials`, {
        credentialName: "c",
        credentialType: "proxy",
        authType: "apiKey",
        region: US,
        secret: { keyName: "x-api-key", keyValue: KEY },
      }),
      msp.owner.api.post(`${api}/targets`, {
        targetName: "t",
        targetRegion: US,
        targetBaseURL: targetBase,
        targetTestPath: "/",
      }),
      msp.owner.api.post(`${api}/proxies`, {
        proxyName: "p",
        proxyRegion: US,
        proxyProxyCredentialId: "any",
        proxyTargetId: "any",
        proxyTargetCredentialId: "any",
      }),
    ]);
    for (const [answer, field] of [
      [refused[0], "region"],
      [refused[1], "targetRegion"],
      [refused[2], "proxyRegion"],
    ] as const) {
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({
        message: VALIDATION,
        fields: [field],
        errors: [`${field}: must be one of the client's allowed regions: ${EU}`],
      });
    }
    // A region the deployment does not have is still that 400, before the client's list.
    const unknown = await msp.owner.api.post(`${api}/targets`, {
      targetName: "t",
      targetRegion: "mars-1",
      targetBaseURL: targetBase,
      targetTestPath: "/",
    });
    expect(unknown.body.errors).toEqual([
      `targetRegion: must be one of the configured regions: ${US}, ${EU}`,
    ]);

    // In a listed region everything is created, and the proxy serves.
    const euProxy = await newProxy(msp.owner, clientId, EU);
    expect((await call(euProxy, EU)).status).toBe(200);
    expect((await call(usProxy, US)).status).toBe(200);

    // Both regions listed again: the US is open again.
    await configure(msp, clientId, { regionAccess: [US, EU] });
    await newProxy(msp.owner, clientId, US);
  });

  it("a client without an MSP is unrestricted, whatever list its configuration holds", async () => {
    const owner = await stack.newUser();
    const clientId = await createClientFor(owner, "Independent");
    await dynamo(getConfig().homeRegion).send(
      new UpdateCommand({
        TableName: getConfig().tableName,
        Key: keys.clientConfig(clientId),
        UpdateExpression: "SET regionAccess = :regions",
        ExpressionAttributeValues: { ":regions": [EU] },
      }),
    );
    const proxyId = await newProxy(owner, clientId, US);
    expect((await call(proxyId)).status).toBe(200);
  });
});

describe("limits", () => {
  it("above the platform maximum: 400 naming the field", async () => {
    const msp = await newMsp();
    const clientId = await newManagedClient(msp);
    const put = await msp.owner.api.put(configPath(msp, clientId), {
      limits: { requestsPerMinute: 10_001, requestsPerDay: 10_000_001 },
    });
    expect(put.status).toBe(400);
    expect(put.body).toEqual({
      message: VALIDATION,
      fields: ["limits.requestsPerMinute", "limits.requestsPerDay"],
      errors: [
        "limits.requestsPerMinute: must be at most 10000 (the platform maximum)",
        "limits.requestsPerDay: must be at most 10000000 (the platform maximum)",
      ],
    });
    expect((await storedItem(keys.clientConfig(clientId)))?.limits).toEqual({
      requestsPerMinute: null,
      requestsPerDay: null,
    });
  });

  it("5 a minute, 20 parallel requests over two proxies: exactly 5 pass; the rest 429 client-limit-exceeded, logged", async () => {
    const msp = await newMsp();
    const clientId = await newManagedClient(msp);
    const [first, second] = [await newProxy(msp.owner, clientId), await newProxy(msp.owner, clientId)];
    // Warm: both proxies' configurations cached before the limit is set.
    expect((await call(first)).status).toBe(200);
    expect((await call(second)).status).toBe(200);
    await configure(msp, clientId, { limits: { requestsPerMinute: 5 } });
    expect((await storedItem(keys.clientRuntime(clientId), US))?.requestsPerMinute).toBe(5);

    // The start of the minute it moved into (read from the clock, which keeps running meanwhile).
    const window = Math.floor(clock.toNextWindow() / MINUTE_MS) * MINUTE_MS;
    const hitsBefore = targetHits;
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, index) => call(index % 2 === 0 ? first : second)),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(15);
    expect(targetHits - hitsBefore).toBe(5);

    const refused = answers.find((answer) => answer.status === 429)!;
    expect(refused.headers.get("service-proxy-code")).toBe("client-limit-exceeded");
    expect(refused.headers.get("service-proxy-message")).toBe(
      "Too many requests: the client's limit of 5 requests per minute is reached",
    );
    expect(JSON.parse(refused.text)).toEqual({
      code: "client-limit-exceeded",
      message: "Too many requests: the client's limit of 5 requests per minute is reached",
    });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(59); // the window began 1 s before the burst
    expect(refused.headers.get("ratelimit-policy")).toBe('"client-minute";q=5;w=60');
    expect(refused.headers.get("ratelimit")).toMatch(/^"client-minute";r=0;t=\d+$/);
    expect(refused.headers.get("x-ratelimit-limit")).toBeNull();

    const refusedProxy = answers.indexOf(refused) % 2 === 0 ? first : second;
    const record = await logged(msp.owner, clientId, refusedProxy, refused.headers.get("x-request-id")!);
    expect(record.proxyData).toMatchObject({
      status: 429,
      message: "Too many requests: the client's limit of 5 requests per minute is reached",
    });
    expect(record.targetData).toBeNull();

    // One counter for the client: its leases (counter-leases.ts). The window ran dry, so every unit
    // leased was spent: exactly what passed.
    expect(Math.floor(clock.now() / MINUTE_MS) * MINUTE_MS, "the burst ended in its window").toBe(window);
    expect(await storedItem(keys.rateWindow(`CLIENT#${clientId}#minute`, window), US)).toMatchObject({
      entity: "clientCounter",
      clientId,
      leased: 5,
    });

    // Cleared: the next request passes (the change reaches the warm data plane at once).
    await configure(msp, clientId, { limits: { requestsPerMinute: null } });
    expect((await call(first)).status).toBe(200);
  });

  it("a day limit: the third request of the day is refused with Retry-After until midnight UTC", async () => {
    const msp = await newMsp();
    const clientId = await newManagedClient(msp);
    const proxyId = await newProxy(msp.owner, clientId);
    await configure(msp, clientId, { limits: { requestsPerDay: 2 } });
    expect([(await call(proxyId)).status, (await call(proxyId)).status]).toEqual([200, 200]);
    const refused = await call(proxyId);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("service-proxy-message")).toBe(
      "Too many requests: the client's limit of 2 requests per day is reached",
    );
    const untilMidnight = Math.ceil((86_400_000 - (clock.now() % 86_400_000)) / 1000);
    expect(Math.abs(Number(refused.headers.get("retry-after")) - untilMidnight)).toBeLessThanOrEqual(2);
    expect(refused.headers.get("ratelimit-policy")).toBe('"client-day";q=2;w=86400');
  });
});

describe("an MSP's suspension", () => {
  it("answers 402 for every client the MSP pays for; a client billed to itself keeps working; reactivation lifts it", async () => {
    const msp = await newMsp();
    const [paid, selfBilled] = [await newManagedClient(msp), await newManagedClient(msp)];
    await configure(msp, selfBilled, { billingTo: "client" });
    const [paidProxy, selfProxy, paidEuProxy] = [
      await newProxy(msp.owner, paid, US),
      await newProxy(msp.owner, selfBilled, US),
      await newProxy(msp.owner, paid, EU),
    ];
    // Warm: the configurations are cached before the suspension.
    expect((await call(paidProxy)).status).toBe(200);
    expect((await call(selfProxy)).status).toBe(200);
    expect((await call(paidEuProxy, EU)).status).toBe(200);

    const suspended = await setMspBillingStatus(msp.mspId, "suspended");
    expect(suspended).toMatchObject({ billingStatus: "suspended", clientsUpdated: 1 });

    const hitsBefore = targetHits;
    for (const [proxyId, region] of [
      [paidProxy, US],
      [paidEuProxy, EU],
    ] as const) {
      const answer = await call(proxyId, region);
      expect(answer.status).toBe(402);
      expect(answer.headers.get("service-proxy-code")).toBe("billing-suspended");
      expect(JSON.parse(answer.text)).toEqual({
        code: "billing-suspended",
        message: "Payment required: the account's billing is suspended",
      });
      const record = await logged(msp.owner, paid, proxyId, answer.headers.get("x-request-id")!);
      expect(record.proxyData.status).toBe(402);
    }
    expect(targetHits).toBe(hitsBefore);
    expect((await call(selfProxy)).status).toBe(200);

    // A client created while the MSP is suspended is suspended from the start.
    const late = await newManagedClient(msp);
    const lateProxy = await newProxy(msp.owner, late);
    expect((await call(lateProxy)).status).toBe(402);

    // Billed to itself from now on: it serves again at once.
    await configure(msp, paid, { billingTo: "client" });
    expect((await call(paidProxy)).status).toBe(200);

    // Reactivated: the late client (billed to the MSP) serves.
    expect(await setMspBillingStatus(msp.mspId, "active")).toMatchObject({
      billingStatus: "active",
      clientsUpdated: 1,
    });
    expect((await call(lateProxy)).status).toBe(200);
  });

  it("the same 402 as a client's own suspension", async () => {
    const owner = await stack.newUser();
    const clientId = await createClientFor(owner, "Own billing");
    const proxyId = await newProxy(owner, clientId);
    await setClientBillingStatus(clientId, "suspended");
    const own = await call(proxyId);
    expect(own.status).toBe(402);
    expect(JSON.parse(own.text)).toEqual({
      code: "billing-suspended",
      message: "Payment required: the account's billing is suspended",
    });
  });
});
