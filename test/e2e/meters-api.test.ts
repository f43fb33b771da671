/**
 * The meters API (spec 2.9, 4.9; docs/meters.md "API") over real HTTP against the local stack:
 * CRUD and the partial PUT, every 400 of issue 9 naming its field, the bound per proxy (exact
 * under parallel creates), roles and tenant isolation, the configVersion bump that makes the data
 * plane reload, and the cascades (a meter's delete and its proxy's delete take the counters too).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { meterKeys } from "#lib/db/entities/meter.ts";
import { keys } from "#lib/db/keys.ts";
import { MAX_METERS_PER_PROXY } from "#lib/domain/meter-schema.ts";
import {
  createClientFor,
  joinClient,
  startTestStack,
  storedItem,
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
  clientId = await createClientFor(owner, "Meters Co");
});
afterAll(async () => {
  await stack?.stop();
});

const clientPath = (id = clientId) => `/api/clients/${id}`;

async function proxyIn(region = US, user = owner, id = clientId): Promise<string> {
  const post = async (path: string, body: Record<string, unknown>, wrapper: string, idField: string) => {
    const response = await user.api.post(`${clientPath(id)}/${path}`, body);
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body[wrapper][0][idField] as string;
  };
  const [proxyCredentialId, targetCredentialId, targetId] = await Promise.all([
    post(
      "credentials",
      {
        credentialName: "caller",
        credentialType: "proxy",
        authType: "apiKey",
        region,
        secret: { keyName: "x-api-key", keyValue: "caller-key-value-1234" },
      },
      "credentials",
      "credentialId",
    ),
    post(
      "credentials",
      {
        credentialName: "upstream",
        credentialType: "target",
        authType: "bearer",
        region,
        secret: { token: "upstream-token-1234" },
      },
      "credentials",
      "credentialId",
    ),
    post(
      "targets",
      {
        targetName: "Upstream",
        targetRegion: region,
        targetBaseURL: "https://api.example.test/v1",
        targetTestPath: "/health",
      },
      "targets",
      "targetId",
    ),
  ]);
  return post(
    "proxies",
    {
      proxyName: "Metered",
      proxyRegion: region,
      proxyProxyCredentialId: proxyCredentialId,
      proxyTargetId: targetId,
      proxyTargetCredentialId: targetCredentialId,
    },
    "proxies",
    "proxyId",
  );
}

const metersPath = (proxyId: string, id = clientId) => `${clientPath(id)}/proxies/${proxyId}/meters`;

const REQUEST_COUNT = { meterType: "request_count", meterActive: true, limits: { minute: 10 } };

async function createMeter(proxyId: string, body: Record<string, unknown> = REQUEST_COUNT, user = owner) {
  const response = await user.api.post(metersPath(proxyId), body);
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.meters[0] as Record<string, any>;
}

const configVersion = async (region = US) =>
  Number((await storedItem(keys.clientRuntime(clientId), region))?.configVersion ?? 0);

describe("CRUD", () => {
  it("creates a meter with the spec's keys and defaults, gets, lists, updates partially and deletes it", async () => {
    const proxyId = await proxyIn(EU);
    const meter = await createMeter(proxyId, {
      meterType: "response_value",
      meterActive: true,
      extraction: { location: "body", path: "usage.total_tokens", defaultValue: 0 },
      limits: { day: 100000 },
      variables: [{ name: "sub", source: "token", key: "sub" }],
      limitBy: "sub",
      notes: "LLM tokens",
    });
    expect(meter).toMatchObject({
      pKey: proxyId,
      sKey: meter.meterId,
      parentId: proxyId,
      proxyId,
      clientId,
      userId: owner.userId,
      meterRegion: EU,
      meterType: "response_value",
      meterActive: true,
      meterMode: "all",
      effect: null,
      limits: { day: 100000 },
      extraction: { location: "body", path: "usage.total_tokens", defaultValue: 0 },
      methods: [],
      path: null,
      query: [],
      headers: [],
      body: [],
      token: [],
      variables: [{ name: "sub", source: "token", key: "sub" }],
      limitBy: "sub",
      alerts: null,
      notes: "LLM tokens",
    });
    expect(meter).not.toHaveProperty("entity");
    expect(meter).not.toHaveProperty("meterVersion");
    // Stored in the proxy's region, beside the proxy.
    expect(await storedItem(meterKeys.item(clientId, proxyId, meter.meterId), EU)).toMatchObject({
      entity: "meter",
      meterId: meter.meterId,
    });
    expect(await storedItem(meterKeys.item(clientId, proxyId, meter.meterId), US)).toBeUndefined();

    const one = `${metersPath(proxyId)}/${meter.meterId}`;
    const got = await owner.api.get(one);
    expect(got.status).toBe(200);
    expect(got.body.meters).toEqual([meter]);

    const second = await createMeter(proxyId, { meterType: "request_count", meterActive: false });
    const listed = await owner.api.get(metersPath(proxyId));
    expect(listed.status).toBe(200);
    expect(listed.body.meters.map((m: { meterId: string }) => m.meterId)).toEqual([
      meter.meterId,
      second.meterId,
    ]);

    // Partial PUT: omitted fields keep their values; objects are replaced as a whole; null clears.
    const updated = await owner.api.put(one, {
      meterActive: false,
      limits: { hour: 5000 },
      notes: null,
      meterMode: "conditional",
      effect: "include",
      methods: ["post"],
    });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.meters[0]).toMatchObject({
      meterId: meter.meterId,
      meterActive: false,
      limits: { hour: 5000 },
      notes: "",
      meterMode: "conditional",
      effect: "include",
      methods: ["POST"],
      extraction: meter.extraction,
      limitBy: "sub",
      createdAt: meter.createdAt,
    });
    expect(updated.body.meters[0].updatedAt >= meter.updatedAt).toBe(true);
    expect((await owner.api.get(one)).body.meters[0]).toEqual(updated.body.meters[0]);
    expect((await storedItem(meterKeys.item(clientId, proxyId, meter.meterId), EU))?.meterVersion).toBe(2);

    const deleted = await owner.api.delete(one);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ message: "Meter deleted" });
    expect((await owner.api.get(one)).status).toBe(404);
    expect((await owner.api.delete(one)).status).toBe(404);
    expect((await owner.api.put(one, { meterActive: true })).status).toBe(404);
    expect((await owner.api.get(metersPath(proxyId))).body.meters).toHaveLength(1);
    expect(await storedItem(meterKeys.count(clientId, proxyId), EU)).toMatchObject({ meterCount: 1 });
  });

  it("answers 404 for a meter id of another proxy and for the count item", async () => {
    const [a, b] = await Promise.all([proxyIn(), proxyIn()]);
    const meter = await createMeter(a);
    expect((await owner.api.get(`${metersPath(b)}/${meter.meterId}`)).status).toBe(404);
    expect((await owner.api.get(`${metersPath(a)}/${encodeURIComponent("#COUNT")}`)).status).toBe(404);
    expect((await owner.api.delete(`${metersPath(a)}/${encodeURIComponent("#COUNT")}`)).status).toBe(404);
    expect((await owner.api.get(`${clientPath()}/proxies/no-such-proxy/meters`)).status).toBe(404);
  });
});

describe("validation: every 400 of issue 9 names its field", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["missing meterType", { meterActive: true }, "meterType"],
    ["missing meterActive", { meterType: "request_count" }, "meterActive"],
    ["unknown meterType", { meterType: "bytes", meterActive: true }, "meterType"],
    ["response_value without extraction", { meterType: "response_value", meterActive: true }, "extraction"],
    [
      "extraction body without path",
      { meterType: "response_value", meterActive: true, extraction: { location: "body" } },
      "extraction.path",
    ],
    [
      "extraction header without headerName",
      { meterType: "response_value", meterActive: true, extraction: { location: "header" } },
      "extraction.headerName",
    ],
    ["a limit that is not a positive number", { ...REQUEST_COUNT, limits: { minute: 0 } }, "limits.minute"],
    ["a limit that is not a number", { ...REQUEST_COUNT, limits: { month: "many" } }, "limits.month"],
    [
      "alerts enabled without cadence",
      { ...REQUEST_COUNT, alerts: { enabled: true, notifyTrigger: "exceed" } },
      "alerts.cadence",
    ],
    [
      "alerts enabled without notifyTrigger",
      { ...REQUEST_COUNT, alerts: { enabled: true, cadence: "day" } },
      "alerts.notifyTrigger",
    ],
    [
      "threshold without alertThreshold",
      { ...REQUEST_COUNT, alerts: { enabled: true, cadence: "day", notifyTrigger: "threshold" } },
      "alerts.alertThreshold",
    ],
    [
      "threshold with no positive window",
      {
        ...REQUEST_COUNT,
        alerts: { enabled: true, cadence: "day", notifyTrigger: "threshold", alertThreshold: {} },
      },
      "alerts.alertThreshold",
    ],
    ["conditional without effect", { ...REQUEST_COUNT, meterMode: "conditional" }, "effect"],
    [
      "conditional with another effect",
      { ...REQUEST_COUNT, meterMode: "conditional", effect: "deny" },
      "effect",
    ],
    ["limitBy naming no variable", { ...REQUEST_COUNT, limitBy: "sub" }, "limitBy"],
  ];

  it("on create", async () => {
    const proxyId = await proxyIn();
    for (const [what, body, field] of cases) {
      const response = await owner.api.post(metersPath(proxyId), body);
      expect(response.status, what).toBe(400);
      expect(response.body.fields, `${what}: ${JSON.stringify(response.body)}`).toContain(field);
      expect(JSON.stringify(response.body.errors), what).toContain(`${field}:`);
    }
    // Nothing was stored, and nothing counted.
    expect((await owner.api.get(metersPath(proxyId))).body.meters).toEqual([]);
    expect(await storedItem(meterKeys.count(clientId, proxyId), US)).toBeUndefined();
  });

  it("on PUT, the merged meter is validated and a refused PUT changes nothing", async () => {
    const proxyId = await proxyIn();
    const meter = await createMeter(proxyId, {
      ...REQUEST_COUNT,
      variables: [{ name: "customer", source: "header", key: "x-customer-id" }],
      limitBy: "customer",
    });
    const one = `${metersPath(proxyId)}/${meter.meterId}`;
    const puts: [Record<string, unknown>, string][] = [
      [{ meterType: "response_value" }, "extraction"],
      [{ meterMode: "conditional" }, "effect"],
      [{ variables: null }, "limitBy"],
      [{ extraction: { location: "header" } }, "extraction.headerName"],
      [{ limits: { day: -1 } }, "limits.day"],
      [{ alerts: { enabled: true } }, "alerts.cadence"],
      [{ meterType: null }, "meterType"],
      [{ meterId: "other" }, "meterId"],
    ];
    for (const [body, field] of puts) {
      const response = await owner.api.put(one, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.fields, JSON.stringify(response.body)).toContain(field);
    }
    expect((await owner.api.get(one)).body.meters[0]).toEqual(meter);
    // The same change with what it needs is accepted.
    const fixed = await owner.api.put(one, {
      meterType: "response_value",
      extraction: { location: "header", headerName: "X-Usage" },
    });
    expect(fixed.status, JSON.stringify(fixed.body)).toBe(200);
    expect(fixed.body.meters[0].extraction).toEqual({ location: "header", headerName: "x-usage" });
  });
});

describe("the bound per proxy", () => {
  it(`holds exactly ${MAX_METERS_PER_PROXY} meters under parallel creates, and a delete frees a place`, async () => {
    const proxyId = await proxyIn();
    const attempts = MAX_METERS_PER_PROXY + 5;
    const answers = await Promise.all(
      Array.from({ length: attempts }, () => owner.api.post(metersPath(proxyId), REQUEST_COUNT)),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(MAX_METERS_PER_PROXY);
    const refusals = answers.filter((answer) => answer.status !== 201);
    for (const refusal of refusals) {
      expect(refusal.status).toBe(400);
      expect(refusal.body.message).toContain(`at most ${MAX_METERS_PER_PROXY} meters`);
    }
    const listed = await owner.api.get(metersPath(proxyId));
    expect(listed.body.meters).toHaveLength(MAX_METERS_PER_PROXY);
    expect(await storedItem(meterKeys.count(clientId, proxyId), US)).toMatchObject({
      meterCount: MAX_METERS_PER_PROXY,
    });

    // Another proxy of the client has its own bound.
    const other = await proxyIn();
    await createMeter(other);

    const first = listed.body.meters[0].meterId;
    expect((await owner.api.delete(`${metersPath(proxyId)}/${first}`)).status).toBe(200);
    await createMeter(proxyId);
    expect((await owner.api.post(metersPath(proxyId), REQUEST_COUNT)).status).toBe(400);
    expect(await storedItem(meterKeys.count(clientId, proxyId), US)).toMatchObject({
      meterCount: MAX_METERS_PER_PROXY,
    });
  });
});

describe("access", () => {
  it("a reader reads meters and cannot write them; devops can", async () => {
    const proxyId = await proxyIn();
    const meter = await createMeter(proxyId);
    const one = `${metersPath(proxyId)}/${meter.meterId}`;
    const [reader, devops] = await Promise.all([stack.newUser(), stack.newUser()]);
    await joinClient(owner, clientId, reader, "reader");
    await joinClient(owner, clientId, devops, "devops");

    expect((await reader.api.get(metersPath(proxyId))).status).toBe(200);
    expect((await reader.api.get(one)).status).toBe(200);
    expect((await reader.api.post(metersPath(proxyId), REQUEST_COUNT)).status).toBe(403);
    expect((await reader.api.put(one, { meterActive: false })).status).toBe(403);
    expect((await reader.api.delete(one)).status).toBe(403);
    // A reader without access learns nothing from validation either.
    expect((await reader.api.post(metersPath(proxyId), {})).status).toBe(403);
    expect((await owner.api.get(one)).body.meters[0]).toEqual(meter);

    const made = await createMeter(proxyId, REQUEST_COUNT, devops);
    expect(made.userId).toBe(devops.userId);
    expect((await devops.api.put(one, { meterActive: false })).status).toBe(200);
    expect((await devops.api.delete(one)).status).toBe(200);
  });

  it("another organisation's ids answer 404, and its meters are untouched", async () => {
    const proxyId = await proxyIn();
    const meter = await createMeter(proxyId);
    const intruder = await stack.newUser();
    const intruderClient = await createClientFor(intruder, "Intruder Co");
    const intruderProxy = await proxyIn(US, intruder, intruderClient);

    // The victim's client path: the intruder is not a member.
    for (const answer of await Promise.all([
      intruder.api.get(metersPath(proxyId)),
      intruder.api.get(`${metersPath(proxyId)}/${meter.meterId}`),
      intruder.api.post(metersPath(proxyId), REQUEST_COUNT),
      intruder.api.put(`${metersPath(proxyId)}/${meter.meterId}`, { meterActive: false }),
      intruder.api.delete(`${metersPath(proxyId)}/${meter.meterId}`),
    ]))
      expect([403, 404]).toContain(answer.status);
    // The intruder's own client with the victim's proxy and meter ids.
    const own = (path: string) => `${clientPath(intruderClient)}/proxies/${path}`;
    expect((await intruder.api.get(own(`${proxyId}/meters`))).status).toBe(404);
    expect((await intruder.api.post(own(`${proxyId}/meters`), REQUEST_COUNT)).status).toBe(404);
    expect((await intruder.api.get(own(`${intruderProxy}/meters/${meter.meterId}`))).status).toBe(404);
    expect(
      (await intruder.api.put(own(`${intruderProxy}/meters/${meter.meterId}`), { meterActive: false }))
        .status,
    ).toBe(404);
    expect((await intruder.api.delete(own(`${intruderProxy}/meters/${meter.meterId}`))).status).toBe(404);

    expect((await owner.api.get(`${metersPath(proxyId)}/${meter.meterId}`)).body.meters[0]).toEqual(meter);
  });
});

describe("configuration version and cascades", () => {
  it("every change bumps the client's configVersion in the proxy's region", async () => {
    const proxyId = await proxyIn(EU);
    const before = await configVersion(EU);
    const meter = await createMeter(proxyId);
    const afterCreate = await configVersion(EU);
    expect(afterCreate).toBeGreaterThan(before);
    await owner.api.put(`${metersPath(proxyId)}/${meter.meterId}`, { limits: { minute: 20 } });
    const afterUpdate = await configVersion(EU);
    expect(afterUpdate).toBeGreaterThan(afterCreate);
    // A refused change moves nothing.
    await owner.api.put(`${metersPath(proxyId)}/${meter.meterId}`, { limits: { minute: 0 } });
    expect(await configVersion(EU)).toBe(afterUpdate);
    await owner.api.delete(`${metersPath(proxyId)}/${meter.meterId}`);
    expect(await configVersion(EU)).toBeGreaterThan(afterUpdate);
  });

  it("deleting a meter deletes its counters; deleting the proxy deletes its meters, count and counters", async () => {
    const proxyId = await proxyIn();
    const [kept, dropped] = [await createMeter(proxyId), await createMeter(proxyId)];
    // Window counters as the data plane writes them (pKey METERUSE#<meterId>).
    const counter = (meterId: string) => ({
      ...keys.meterWindow(meterId, "minute", Date.UTC(2030, 0, 1)),
      entity: "meterCounter",
      meterId,
      proxyId,
      clientId,
      value: 3,
    });
    for (const meterId of [kept.meterId, dropped.meterId])
      await dynamo(US).send(new PutCommand({ TableName: getConfig().tableName, Item: counter(meterId) }));

    expect((await owner.api.delete(`${metersPath(proxyId)}/${dropped.meterId}`)).status).toBe(200);
    const stored = (meterId: string) => {
      const { pKey, sKey } = counter(meterId);
      return storedItem({ pKey, sKey }, US);
    };
    expect(await stored(dropped.meterId)).toBeUndefined();
    expect(await stored(kept.meterId)).toMatchObject({ value: 3 });

    expect((await owner.api.delete(`${clientPath()}/proxies/${proxyId}`)).status).toBe(200);
    expect(await storedItem(meterKeys.item(clientId, proxyId, kept.meterId), US)).toBeUndefined();
    expect(await storedItem(meterKeys.count(clientId, proxyId), US)).toBeUndefined();
    expect(await stored(kept.meterId)).toBeUndefined();
    expect((await owner.api.get(metersPath(proxyId))).status).toBe(404);
  });

  it("purging the client deletes its meters, their count and counters", async () => {
    const proxyId = await proxyIn();
    const meter = await createMeter(proxyId);
    const counterKey = keys.meterWindow(meter.meterId, "hour", Date.UTC(2030, 0, 1));
    await dynamo(US).send(
      new PutCommand({
        TableName: getConfig().tableName,
        Item: { ...counterKey, entity: "meterCounter", meterId: meter.meterId, value: 1 },
      }),
    );
    const purged = await owner.api.delete(clientPath(), { immediatelyDelete: true });
    expect(purged.status, JSON.stringify(purged.body)).toBe(200);
    expect(await storedItem(meterKeys.item(clientId, proxyId, meter.meterId), US)).toBeUndefined();
    expect(await storedItem(meterKeys.count(clientId, proxyId), US)).toBeUndefined();
    expect(await storedItem(counterKey, US)).toBeUndefined();
  });
});
