/**
 * The request-log entity: records built by the data plane (buildRequestLogItem) read as typed
 * fields, wrong ones refused naming the field, and the two access patterns against the emulator.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { GetCommand, PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { buildRequestLogItem, newRequestId, type RequestLogInput } from "#lib/data-plane/request-log.ts";
import {
  findRequestLog,
  listRequestLogsOfProxy,
  requestLogItemOf,
  requestLogKeys,
  requestLogListItemOf,
} from "#lib/db/entities/request-log.ts";
import { provisionTable } from "#local/provision.ts";

const REGION = "eu-west-1";
const BASE = Date.UTC(2026, 0, 15, 12, 0, 0);

function record(
  proxyId: string,
  clientId: string,
  receivedAt: number,
  overrides: Partial<RequestLogInput> = {},
) {
  return buildRequestLogItem({
    requestId: newRequestId(receivedAt),
    proxy: { proxyId, clientId, userId: "u" },
    proxyIdFromPath: proxyId,
    stage: "prod",
    method: "POST",
    apiPath: "/v1/things",
    query: { page: "2" },
    requestHeaders: { "content-type": "application/json", authorization: "Bearer secret" },
    requestBody: Buffer.from('{"a":1}'),
    receivedAt,
    sentAt: receivedAt + 120,
    status: 201,
    message: "ok",
    arnBase: "arn:aws:execute-api:eu-west-1:1:api",
    target: {
      sentAt: receivedAt + 10,
      receivedAt: receivedAt + 110,
      status: 201,
      location: null,
      responseHeaders: { "content-type": "application/json" },
      responseBody: Buffer.from('{"id":"t"}'),
    },
    validation: { proxyExists: true, requestSent: true },
    processed: true,
    redactHeaders: [],
    redactQuery: [],
    // Far from expiry whatever the test's clock says.
    retentionDays: 3650,
    ...overrides,
  });
}

const put = (item: Record<string, unknown>) =>
  dynamo(REGION).send(new PutCommand({ TableName: getConfig().tableName, Item: item }));

describe("the request-log entity (readers)", () => {
  const stored = record("p", "c", BASE);

  it("reads a record as the data plane writes it, in both projections", () => {
    const item = requestLogItemOf(stored);
    expect(item).toMatchObject({
      pKey: "REQLOG#p",
      entity: "requestLog",
      proxyId: "p",
      clientId: "c",
      parentId: "p",
      processedAt: BASE,
      requestBody: '{"a":1}',
      requestBodyEncoding: "utf8",
      proxyData: { method: "POST", status: 201, apiPath: "/v1/things" },
      targetData: { status: 201, location: null },
    });
    expect(item.requestHeaders?.authorization).toBe("[redacted]");
    expect(item.metering).toBeUndefined();
    const listed = requestLogListItemOf(stored);
    expect(listed).not.toHaveProperty("requestBody");
    expect(listed).toMatchObject({ requestId: stored.requestId, sKey: stored.requestId });
  });

  it("reads the data plane's metering attribute, and drops attributes it does not know", () => {
    const metering = { applied: ["m1", "m2"], refused: [{ meterId: "m2", window: "minute" }] };
    const item = requestLogItemOf({ ...stored, metering, somethingNew: 1 });
    expect(item.metering).toEqual(metering);
    expect(item).not.toHaveProperty("somethingNew");
  });

  it("reads a record of an unknown proxy (nobody's) and a detail field a record lacks as null", () => {
    const orphan = record("p", "c", BASE, { proxy: null, target: null });
    expect(requestLogItemOf(orphan)).toMatchObject({ userId: null, clientId: null, targetData: null });
    const { responseBody: _body, ...older } = stored;
    expect(requestLogItemOf(older).responseBody).toBeNull();
  });

  it("refuses a record that is not one, naming the field", () => {
    expect(() => requestLogItemOf({ ...stored, processedAt: "yesterday" })).toThrow(/processedAt/);
    expect(() => requestLogItemOf({ ...stored, entity: "proxy" })).toThrow(/entity/);
    expect(() =>
      requestLogItemOf({ ...stored, metering: { applied: [], refused: [{ meterId: "m", window: "week" }] } }),
    ).toThrow(/metering\.refused\.0\.window/);
    expect(() => requestLogListItemOf({ ...stored, proxyData: { method: "GET" } })).toThrow(/proxyData/);
  });
});

describe("the request-log entity (access patterns)", () => {
  beforeAll(async () => {
    await provisionTable(REGION, getConfig().tableName);
  });

  it("lists a proxy's records of one client, newest first, within a time range, bounded", async () => {
    const proxyId = randomUUID();
    const clientId = randomUUID();
    const times = [0, 1000, 2000, 3000].map((offset) => BASE + offset);
    const mine = times.map((at) => record(proxyId, clientId, at));
    await Promise.all([...mine, record(proxyId, "someone-else", BASE + 1500)].map(put));
    // An expired record not yet removed by DynamoDB is never listed.
    await put({ ...record(proxyId, clientId, BASE + 2500), TTL: 1 });

    const all = await listRequestLogsOfProxy(REGION, { proxyId, clientId, max: 10 });
    expect(all.map((item) => item.requestId)).toEqual(mine.map((item) => item.requestId).reverse());
    expect(all[0]).not.toHaveProperty("requestBody");

    const range = await listRequestLogsOfProxy(REGION, {
      proxyId,
      clientId,
      after: BASE + 1000,
      before: BASE + 2000,
      max: 10,
    });
    expect(range.map((item) => item.processedAt)).toEqual([BASE + 2000, BASE + 1000]);

    const bounded = await listRequestLogsOfProxy(REGION, { proxyId, clientId, max: 2 });
    expect(bounded.map((item) => item.processedAt)).toEqual([BASE + 3000, BASE + 2000]);
  });

  it("finds one record by id, and none for an unknown or expired one", async () => {
    const proxyId = randomUUID();
    const stored = record(proxyId, "c", BASE);
    const expired: Record<string, unknown> = { ...record(proxyId, "c", BASE + 1), TTL: 1 };
    await Promise.all([put(stored), put(expired)]);
    const found = await findRequestLog(REGION, proxyId, String(stored.requestId));
    expect(found).toMatchObject({ requestId: stored.requestId, responseBody: '{"id":"t"}' });
    expect(await findRequestLog(REGION, proxyId, randomUUID())).toBeUndefined();
    expect(await findRequestLog(REGION, proxyId, String(expired.requestId))).toBeUndefined();
    expect(requestLogKeys.item(proxyId, "r")).toEqual({ pKey: `REQLOG#${proxyId}`, sKey: "r" });
  });

  it("round-trips a gzip body through DynamoDB as a Binary, and reads a corrupt one as omitted", async () => {
    const proxyId = randomUUID();
    const json = JSON.stringify(Array.from({ length: 400 }, (_, i) => ({ id: i, object: "customer" })));
    const stored = record(proxyId, "c", BASE, {
      target: {
        sentAt: BASE + 10,
        receivedAt: BASE + 110,
        status: 200,
        location: null,
        responseHeaders: {},
        responseBody: Buffer.from(json),
      },
    });
    expect(stored.responseBodyCompression).toBe("gzip");
    const corrupt: Record<string, unknown> = {
      ...record(proxyId, "c", BASE + 1),
      responseBody: Buffer.from("not gzip"),
      responseBodyCompression: "gzip",
    };
    await Promise.all([put(stored), put(corrupt)]);
    // The project's document client writes a Buffer as B and reads it back as bytes.
    const raw = await dynamo(REGION).send(
      new GetCommand({
        TableName: getConfig().tableName,
        Key: requestLogKeys.item(proxyId, String(stored.requestId)),
      }),
    );
    expect(raw.Item?.responseBody).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(raw.Item?.responseBody).equals(stored.responseBody as Buffer)).toBe(true);
    expect(raw.Item?.responseBodyCompression).toBe("gzip");
    const found = await findRequestLog(REGION, proxyId, String(stored.requestId));
    expect(found?.responseBody).toBe(json);
    expect(found?.responseBodyEncoding).toBe("utf8");
    const unreadable = await findRequestLog(REGION, proxyId, String(corrupt.requestId));
    expect(unreadable).toMatchObject({ responseBody: null, responseBodyTruncated: true });
  });
});
