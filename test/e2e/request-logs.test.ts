/**
 * Request logs (spec 2.11, 4.11) over real HTTP against the local stack: records are built with the
 * data plane's builder and written straight into the proxy's regional table, then read through the
 * Core API: order, limit, time range, expiry, the detail projection, roles and tenant isolation.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { buildRequestLogItem, newRequestId, type RequestLogInput } from "#lib/data-plane/request-log.ts";
import {
  createClientFor,
  joinClient,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const EU = "eu-west-1";

let stack: TestStack;
let owner: TestUser;
let clientId: string;

beforeAll(async () => {
  stack = await startTestStack();
});
// A fresh owner (token) and client per test: each test stays within the basic plan's 100 calls a minute.
beforeEach(async () => {
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Logs Co");
});
afterAll(async () => {
  await stack?.stop();
});

const base = (id = clientId) => `/api/clients/${id}`;

async function makeProxy(region = US, user = owner, id = clientId) {
  const credential = async (credentialType: "proxy" | "target") => {
    const response = await user.api.post(`${base(id)}/credentials`, {
      credentialName: `${credentialType} key`,
      credentialType,
      authType: credentialType === "proxy" ? "apiKey" : "bearer",
      region,
      secret:
        credentialType === "proxy"
          ? { keyName: "x-gateway-key", keyValue: `proxy-${randomUUID()}` }
          : { token: `target-${randomUUID()}` },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.credentials[0].credentialId as string;
  };
  const target = async () => {
    const response = await user.api.post(`${base(id)}/targets`, {
      targetName: "Echo",
      targetRegion: region,
      targetBaseURL: "https://api.example.test/v1",
      targetTestPath: "/health",
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.targets[0].targetId as string;
  };
  const [proxyCredentialId, targetCredentialId, targetId] = await Promise.all([
    credential("proxy"),
    credential("target"),
    target(),
  ]);
  const response = await user.api.post(`${base(id)}/proxies`, {
    proxyName: "Main",
    proxyRegion: region,
    proxyProxyCredentialId: proxyCredentialId,
    proxyTargetId: targetId,
    proxyTargetCredentialId: targetCredentialId,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  const proxy = response.body.proxies[0];
  return { proxyId: proxy.proxyId as string, clientId: id, userId: user.userId, region };
}

type TestProxy = Awaited<ReturnType<typeof makeProxy>>;

/** Build a record as the data plane does and write it to the proxy's regional table. */
async function writeLog(proxy: TestProxy, receivedAt: number, overrides: Partial<RequestLogInput> = {}) {
  const requestId = newRequestId(receivedAt);
  const item = buildRequestLogItem({
    requestId,
    proxy: { proxyId: proxy.proxyId, clientId: proxy.clientId, userId: proxy.userId },
    proxyIdFromPath: proxy.proxyId,
    stage: "prod",
    method: "GET",
    apiPath: `/items/${receivedAt}`,
    query: { page: "1" },
    requestHeaders: { Accept: "application/json", "X-Gateway-Key": "caller-key-SECRET" },
    requestBody: undefined,
    receivedAt,
    sentAt: receivedAt + 120,
    status: 200,
    message: "proxy-access-granted",
    arnBase: "arn:aws:execute-api:us-east-1:123456789012:api/prod",
    target: {
      sentAt: receivedAt + 10,
      receivedAt: receivedAt + 110,
      status: 200,
      location: null,
      responseHeaders: { "content-type": "application/json" },
      responseBody: Buffer.from(`{"at":${receivedAt}}`),
    },
    validation: { proxyExists: true, proxyActive: true, requestSent: true, responseReceived: true },
    processed: true,
    redactHeaders: ["x-gateway-key"],
    redactQuery: [],
    ...overrides,
  });
  await dynamo(proxy.region).send(new PutCommand({ TableName: getConfig().tableName, Item: item }));
  return { requestId, item };
}

const listPath = (proxy: TestProxy, query = "") =>
  `${base(proxy.clientId)}/proxies/${proxy.proxyId}/requests${query}`;

const expectValidation = (response: { status: number; body: any }, fields: string[]) => {
  expect(response.status, JSON.stringify(response.body)).toBe(400);
  expect(response.body.message).toBe("Input failed data validation");
  expect(response.body.fields).toEqual(fields);
};

describe("listing request logs", () => {
  it("lists a proxy's records newest first with the fields of spec 2.11 and no detail fields", async () => {
    const proxy = await makeProxy();
    const start = Date.now() - 60_000;
    const written = [];
    for (let i = 0; i < 3; i++) written.push(await writeLog(proxy, start + i * 1000));
    // Expired by TTL (retention 1 day, received 2 days ago) but not yet removed: never listed.
    const expired = await writeLog(proxy, Date.now() - 2 * 86_400_000, { retentionDays: 1 });

    const response = await owner.api.get(listPath(proxy));
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body).toMatchObject({
      message: expect.any(String),
      totalRequests: 3,
      limitReached: false,
    });
    const ids = response.body.requests.map((r: any) => r.sKey);
    expect(ids).toEqual(written.map((w) => w.requestId).reverse());
    expect(ids).not.toContain(expired.requestId);

    const newest = response.body.requests[0];
    expect(newest).toEqual({
      pKey: proxy.proxyId,
      sKey: written[2]!.requestId,
      requestId: written[2]!.requestId,
      userId: owner.userId,
      clientId,
      parentId: proxy.proxyId,
      processed: true,
      processedAt: start + 2000,
      TTL: Math.floor((start + 2000) / 1000) + 30 * 86_400,
      proxyData: {
        stage: "prod",
        method: "GET",
        apiPath: `/items/${start + 2000}`,
        receivedAt: start + 2000,
        sentAt: start + 2120,
        duration: 0.12,
        status: 200,
        message: "proxy-access-granted",
        arnBase: "arn:aws:execute-api:us-east-1:123456789012:api/prod",
        apiHeaders: { Accept: "application/json", "X-Gateway-Key": "[redacted]" },
        apiParams: { page: "1" },
      },
      targetData: {
        sentAt: start + 2010,
        receivedAt: start + 2110,
        duration: 0.1,
        status: 200,
        location: null,
      },
      validationData: expect.objectContaining({ proxyExists: true, systemError: false }),
    });
    expect(Object.keys(newest.validationData)).toHaveLength(20);
    for (const field of ["requestHeaders", "requestBody", "responseHeaders", "responseBody"])
      expect(newest).not.toHaveProperty(field);
    expect(JSON.stringify(response.body)).not.toContain("caller-key-SECRET");
  });

  it("answers an empty list for a proxy without traffic", async () => {
    const proxy = await makeProxy();
    const response = await owner.api.get(listPath(proxy));
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ totalRequests: 0, limitReached: false, requests: [] });
  });

  it("returns at most `limit` records, newest first, and says when the limit cut the answer", async () => {
    const proxy = await makeProxy();
    const start = Date.now() - 60_000;
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await writeLog(proxy, start + i * 10)).requestId);
    // Expired records do not use up the limit.
    await writeLog(proxy, Date.now() - 40 * 86_400_000);

    const two = await owner.api.get(listPath(proxy, "?limit=2"));
    expect(two.status).toBe(200);
    expect(two.body).toMatchObject({ totalRequests: 2, limitReached: true });
    expect(two.body.requests.map((r: any) => r.requestId)).toEqual([ids[4], ids[3]]);

    const exact = await owner.api.get(listPath(proxy, "?limit=5"));
    expect(exact.body).toMatchObject({ totalRequests: 5, limitReached: false });

    const all = await owner.api.get(listPath(proxy));
    expect(all.body).toMatchObject({ totalRequests: 5, limitReached: false });
  });

  it("filters by processedAfter and processedBefore, both inclusive, with time zones", async () => {
    const proxy = await makeProxy();
    const start = Math.floor((Date.now() - 10 * 60_000) / 1000) * 1000;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await writeLog(proxy, start + i * 60_000)).requestId);
    const iso = (ms: number) => new Date(ms).toISOString();
    const listed = async (query: string) => {
      const response = await owner.api.get(listPath(proxy, query));
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response.body.requests.map((r: any) => r.requestId);
    };
    expect(await listed(`?processedAfter=${iso(start + 60_000)}`)).toEqual([ids[4], ids[3], ids[2], ids[1]]);
    expect(await listed(`?processedAfter=${iso(start + 60_001)}`)).toEqual([ids[4], ids[3], ids[2]]);
    expect(await listed(`?processedBefore=${iso(start + 60_000)}`)).toEqual([ids[1], ids[0]]);
    expect(
      await listed(`?processedAfter=${iso(start + 60_000)}&processedBefore=${iso(start + 180_000)}`),
    ).toEqual([ids[3], ids[2], ids[1]]);
    // The same instant written with an offset.
    const shifted = new Date(start + 120_000 + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
    expect(await listed(`?processedAfter=${encodeURIComponent(shifted)}&limit=1`)).toEqual([ids[4]]);
    expect(await listed(`?processedBefore=${encodeURIComponent(shifted)}`)).toEqual([ids[2], ids[1], ids[0]]);
    // An empty range is a plain empty answer.
    expect(await listed(`?processedAfter=${iso(start + 10 * 60_000)}`)).toEqual([]);
  });

  it.each([
    ["?limit=0", ["limit"]],
    ["?limit=1001", ["limit"]],
    ["?limit=ten", ["limit"]],
    ["?limit=2.5", ["limit"]],
    ["?processedAfter=yesterday", ["processedAfter"]],
    ["?processedBefore=2025-02-30T00:00:00Z", ["processedBefore"]],
    ["?processedAfter=2025-02-01T00:00:00Z&processedBefore=2025-01-01T00:00:00Z", ["processedAfter"]],
    ["?limit=-1&processedBefore=nope", ["limit", "processedBefore"]],
  ])("rejects %s with 400 naming %j", async (query, fields) => {
    const proxy = await makeProxy();
    expectValidation(await owner.api.get(listPath(proxy, query)), fields);
  });

  it("reads the records from the proxy's own region", async () => {
    const proxy = await makeProxy(EU);
    const { requestId } = await writeLog(proxy, Date.now() - 5000);
    // A record for the same proxy id in another region's table is not this proxy's log.
    await writeLog({ ...proxy, region: US }, Date.now() - 4000);
    const response = await owner.api.get(listPath(proxy));
    expect(response.body.requests.map((r: any) => r.requestId)).toEqual([requestId]);
  });

  it("answers 404 Proxy not found for an unknown proxy", async () => {
    const response = await owner.api.get(`${base()}/proxies/${randomUUID()}/requests`);
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Proxy not found" });
  });
});

describe("one request log record", () => {
  it("answers the detail projection: method, path, status, duration in ms, headers and bodies", async () => {
    const proxy = await makeProxy();
    const receivedAt = Date.now() - 30_000;
    const { requestId } = await writeLog(proxy, receivedAt, {
      method: "POST",
      apiPath: "/orders",
      requestHeaders: {
        Authorization: "Bearer caller-token-SECRET",
        "Content-Type": "application/json",
      },
      requestBody: Buffer.from('{"qty":2}'),
      sentAt: receivedAt + 250,
      status: 201,
      target: {
        sentAt: receivedAt + 20,
        receivedAt: receivedAt + 240,
        status: 201,
        location: "https://api.example.test/v1/orders/7",
        responseHeaders: { "content-type": "image/png", "set-cookie": "sid=cookie-SECRET" },
        responseBody: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]),
      },
    });
    const response = await owner.api.get(`${listPath(proxy)}/${requestId}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.message).toEqual(expect.any(String));
    expect(response.body.requests).toHaveLength(1);
    expect(response.body.requests[0]).toEqual({
      requestId,
      method: "POST",
      path: "/orders",
      statusCode: 201,
      duration: 250,
      processedAt: receivedAt,
      requestHeaders: { Authorization: "[redacted]", "Content-Type": "application/json" },
      requestHeadersTruncated: false,
      requestBody: '{"qty":2}',
      requestBodyEncoding: "utf8",
      requestBodyTruncated: false,
      requestBodyBytes: 9,
      responseHeaders: { "content-type": "image/png", "set-cookie": "[redacted]" },
      responseHeadersTruncated: false,
      responseBody: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]).toString("base64"),
      responseBodyEncoding: "base64",
      responseBodyTruncated: false,
      responseBodyBytes: 6,
      apiParamsTruncated: false,
    });
    expect(JSON.stringify(response.body)).not.toContain("SECRET");
  });

  it("answers 404 Request not found for an unknown, malformed, expired or other proxy's request id", async () => {
    const [proxy, other] = await Promise.all([makeProxy(), makeProxy()]);
    const expired = await writeLog(proxy, Date.now() - 31 * 86_400_000);
    const othersRecord = await writeLog(other, Date.now() - 1000);
    for (const id of [newRequestId(), "not-a-uuid", expired.requestId, othersRecord.requestId]) {
      const response = await owner.api.get(`${listPath(proxy)}/${id}`);
      expect(response.status, id).toBe(404);
      expect(response.body).toEqual({ message: "Request not found" });
    }
    const unknownProxy = await owner.api.get(`${base()}/proxies/${randomUUID()}/requests/${newRequestId()}`);
    expect(unknownProxy.status).toBe(404);
    expect(unknownProxy.body).toEqual({ message: "Proxy not found" });
  });
});

describe("roles and tenant isolation", () => {
  it("lets a plain user member read the list and the detail", async () => {
    const plain = await stack.newUser();
    await joinClient(owner, clientId, plain, "user");
    const proxy = await makeProxy();
    const { requestId } = await writeLog(proxy, Date.now() - 1000);
    const list = await plain.api.get(listPath(proxy));
    expect(list.status).toBe(200);
    expect(list.body.requests.map((r: any) => r.requestId)).toEqual([requestId]);
    const detail = await plain.api.get(`${listPath(proxy)}/${requestId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.requests[0].requestId).toBe(requestId);
  });

  it("lets a reader member read the list and the detail", async () => {
    const reader = await stack.newUser();
    await joinClient(owner, clientId, reader, "reader");
    const proxy = await makeProxy();
    const { requestId } = await writeLog(proxy, Date.now() - 1000);
    const list = await reader.api.get(listPath(proxy));
    expect(list.status).toBe(200);
    expect(list.body.requests.map((r: any) => r.requestId)).toEqual([requestId]);
    const detail = await reader.api.get(`${listPath(proxy)}/${requestId}`);
    expect(detail.status).toBe(200);
    expect(detail.body.requests[0].requestId).toBe(requestId);
  });

  it("answers 404 Client not found to a non-member, whatever the query", async () => {
    const proxy = await makeProxy();
    const { requestId } = await writeLog(proxy, Date.now() - 1000);
    const stranger = await stack.newUser();
    for (const path of [listPath(proxy), listPath(proxy, "?limit=0"), `${listPath(proxy)}/${requestId}`]) {
      const response = await stranger.api.get(path);
      expect(response.status, path).toBe(404);
      expect(response.body).toEqual({ message: "Client not found" });
    }
  });

  it("does not let a member of another client read a proxy's logs through their own client", async () => {
    const proxy = await makeProxy();
    const { requestId } = await writeLog(proxy, Date.now() - 1000);
    const intruder = await stack.newUser();
    const ownClient = await createClientFor(intruder, "Intruder Inc");
    for (const path of [
      `/api/clients/${ownClient}/proxies/${proxy.proxyId}/requests`,
      `/api/clients/${ownClient}/proxies/${proxy.proxyId}/requests/${requestId}`,
    ]) {
      const response = await intruder.api.get(path);
      expect(response.status, path).toBe(404);
      expect(response.body).toEqual({ message: "Proxy not found" });
      expect(JSON.stringify(response.body)).not.toContain(requestId);
    }
    // The intruder's own proxy with the same request id in its path is simply empty.
    const own = await makeProxy(US, intruder, ownClient);
    const response = await intruder.api.get(
      `/api/clients/${ownClient}/proxies/${own.proxyId}/requests/${requestId}`,
    );
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Request not found" });
  });
});
