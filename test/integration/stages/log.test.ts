/**
 * Stage log (lib/data-plane/stages/log.ts): the request log item built for a request (the real
 * builder and redaction, with every secret of the request's credentials replaced), and its write
 * with the settlement against the emulator: a PutItem when nothing is settled, else one
 * TransactWriteItems carrying the log and the settlement steps under a ClientRequestToken derived
 * from the request id; a write that fails is logged with the alarmed metric, never thrown.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { getConfig } from "#lib/config.ts";
import type { Answer, RequestContext } from "#lib/data-plane/context.ts";
import { type CounterStep, clientRequestToken, counterKeys } from "#lib/data-plane/counters.ts";
import { planMeters } from "#lib/data-plane/meter-plan.ts";
import { settlementSteps } from "#lib/data-plane/meter-settlement.ts";
import { newRequestId, REDACTED } from "#lib/data-plane/request-log.ts";
import { requestLogItem, writeLogAndSettlement } from "#lib/data-plane/stages/log.ts";
import { keys } from "#lib/db/keys.ts";
import { MAX_METERS_PER_PROXY } from "#lib/domain/meter-schema.ts";
import { ALARMED_METRICS, logReady, METRIC_NAMESPACE } from "#lib/log.ts";
import { METER_WINDOWS, windowAt } from "#lib/shared/meter-windows.ts";
import { provisionTable } from "#local/provision.ts";
import { storedItem } from "../../support/stack.ts";
import {
  CALLER_KEY,
  CLIENT_ID,
  context,
  credential,
  located,
  meter,
  NOW,
  PROXY_ID,
  runtime,
  TARGET_TOKEN,
} from "../../unit/stages/fixtures.ts";

const REGION = "eu-west-1";
/** A region where this file's table does not exist: every write there fails. */
const NO_TABLE_REGION = "ap-southeast-2";

beforeAll(async () => {
  await provisionTable(REGION, getConfig().tableName);
  await logReady();
});

const answer = (status = 200, message = "OK"): Answer => ({
  response: { status, headers: {}, body: Buffer.from("") },
  outcome: { code: "OK", message },
});

/** A located context with a request id (and times) of its own, so the writes of tests never meet. */
function fresh(rt = runtime(), overrides: Parameters<typeof located>[1] = {}): RequestContext {
  const receivedAt = Date.now();
  return { ...located(rt, overrides), requestId: newRequestId(receivedAt), receivedAt };
}

describe("requestLogItem", () => {
  it("is undefined when the request found no proxy configuration (nothing to file it under)", async () => {
    expect(await requestLogItem(context(), answer(404, "Proxy not found"), NOW + 5)).toBeUndefined();
  });

  it("files the request under its proxy with the answer, the target's trace and the validation", async () => {
    const ctx = located(runtime(), { method: "POST", path: `/api/${PROXY_ID}/items/42`, rawQuery: "page=2" });
    ctx.processed = true;
    ctx.target = {
      sentAt: NOW + 10,
      receivedAt: NOW + 110,
      status: 201,
      location: null,
      headers: { "content-type": "application/json" },
      body: Buffer.from('{"id":"42"}'),
    };
    const item = await requestLogItem(ctx, answer(201, "Created"), NOW + 120);
    expect(item).toMatchObject({
      ...keys.requestLog(PROXY_ID, ctx.requestId),
      entity: "requestLog",
      requestId: ctx.requestId,
      proxyId: PROXY_ID,
      clientId: CLIENT_ID,
      userId: "user-1",
      processed: true,
      processedAt: NOW,
      sourceIp: "203.0.113.7",
      proxyData: {
        method: "POST",
        apiPath: "/items/42",
        receivedAt: NOW,
        sentAt: NOW + 120,
        status: 201,
        message: "Created",
        apiParams: { page: "2" },
      },
      targetData: { sentAt: NOW + 10, receivedAt: NOW + 110, status: 201, location: null },
      validationData: { proxyExists: true, requestSent: false },
      responseBody: '{"id":"42"}',
    });
    expect(item).not.toHaveProperty("metering");
    expect(item).not.toHaveProperty("transformSuspension");
  });

  it("redacts the credentials' secrets in the request's headers, query and body, and the target's echo", async () => {
    // The caller's key travels in a query parameter whose name nothing marks as sensitive; the
    // target's bearer token comes back in the target's body; a fetched token is echoed too.
    const caller = credential("cred-caller", "proxy", "apiKey", {
      keyName: "access",
      keyValue: CALLER_KEY,
      placement: "query",
    });
    const ctx = located(runtime({ proxyCredential: caller }), {
      method: "POST",
      rawQuery: `access=${CALLER_KEY}&page=2`,
      headers: { "content-type": "application/json", "x-forwarded-key": CALLER_KEY },
      body: Buffer.from(JSON.stringify({ note: `key ${CALLER_KEY}`, token: TARGET_TOKEN })),
    });
    ctx.dynamicToken = "fetched-access-token-0123456789";
    ctx.target = {
      sentAt: NOW + 1,
      receivedAt: NOW + 2,
      status: 200,
      location: null,
      headers: { "x-echo": TARGET_TOKEN, "content-type": "text/plain" },
      body: Buffer.from(`you sent Bearer ${TARGET_TOKEN} and ${ctx.dynamicToken}`),
    };
    const item = await requestLogItem(ctx, answer(), NOW + 3);
    const stored = JSON.stringify(item);
    for (const secret of [CALLER_KEY, TARGET_TOKEN, ctx.dynamicToken]) expect(stored).not.toContain(secret);
    expect(item?.requestHeaders).toMatchObject({ "x-forwarded-key": REDACTED });
    expect(item?.requestBody).toBe(JSON.stringify({ note: `key ${REDACTED}`, token: REDACTED }));
    expect((item?.proxyData as Record<string, unknown> | undefined)?.apiParams).toEqual({
      access: REDACTED,
      page: "2",
    });
    expect(item?.responseHeaders).toMatchObject({ "x-echo": REDACTED, "content-type": "text/plain" });
    expect(item?.responseBody).toBe(`you sent Bearer ${REDACTED} and ${REDACTED}`);
  });

  it("redacts the credential's key header by name even when its value is not the secret", async () => {
    // A wrong key in the credential's header (a header name nothing else marks as sensitive).
    const caller = credential("cred-caller", "proxy", "apiKey", {
      keyName: "X-Caller",
      keyValue: CALLER_KEY,
    });
    const ctx = located(runtime({ proxyCredential: caller }), {
      headers: { "x-caller": "a-guess-that-is-not-the-key", accept: "*/*" },
    });
    const item = await requestLogItem(ctx, answer(401, "Unauthorized"), NOW + 1);
    expect(item?.requestHeaders).toEqual({ "x-caller": REDACTED, accept: "*/*" });
    expect(JSON.stringify(item)).not.toContain("a-guess-that-is-not-the-key");
  });

  it("logs the response as answered when a response transform ran, and the metering when meters applied", async () => {
    const ctx = located(runtime());
    ctx.target = {
      sentAt: NOW + 1,
      receivedAt: NOW + 2,
      status: 200,
      location: null,
      headers: { "x-from": "target" },
      body: Buffer.from("from the target"),
    };
    ctx.transforms = { response: { headers: { "x-from": "transform" }, body: Buffer.from("transformed") } };
    ctx.metering = { applied: ["m-1"], refused: [{ meterId: "m-2", window: "day" }] };
    const item = await requestLogItem(ctx, answer(), NOW + 3);
    expect(item?.responseHeaders).toEqual({ "x-from": "transform" });
    expect(item?.responseBody).toBe("transformed");
    expect(item?.metering).toEqual({ applied: ["m-1"], refused: [{ meterId: "m-2", window: "day" }] });
  });

  it("carries the transform suspension the request started (for the stream consumer's notification)", async () => {
    const ctx = located(runtime());
    const suspension = {
      transformId: "t-1",
      kind: "response",
      until: "2026-11-26T12:01:00.000Z",
      cooldownMs: 60_000,
    };
    ctx.transforms = { suspension };
    const item = await requestLogItem(
      ctx,
      answer(500, "Response transform t-1 failed (timeout): ..."),
      NOW + 3,
    );
    expect(item?.transformSuspension).toEqual(suspension);
  });
});

/** The DynamoDB commands this process sends in a region, with the inputs that matter here. */
function recordCommands(region: string) {
  const sent: { command: string; token?: string; actions?: string[] }[] = [];
  const name = `record-${Math.random().toString(36).slice(2)}`;
  dynamo(region).middlewareStack.add(
    (next, ctx) => async (args) => {
      const input = args.input as {
        ClientRequestToken?: string;
        TransactItems?: Record<string, unknown>[];
      };
      sent.push({
        command: String(ctx.commandName),
        ...(input.ClientRequestToken ? { token: input.ClientRequestToken } : {}),
        ...(input.TransactItems
          ? { actions: input.TransactItems.map((action) => Object.keys(action)[0] ?? "") }
          : {}),
      });
      return next(args);
    },
    { step: "initialize", name },
  );
  return { sent, stop: () => dynamo(region).middlewareStack.remove(name) };
}

/** The stderr lines written while a test runs, parsed. */
let stderr: string[];
const savedLevel = process.env.LOG_LEVEL;
let recorder: ReturnType<typeof recordCommands> | undefined;

beforeEach(() => {
  stderr = [];
  process.env.LOG_LEVEL = "error";
  vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    stderr.push(String(chunk));
    return true;
  });
});

afterEach(() => {
  vi.restoreAllMocks();
  recorder?.stop();
  recorder = undefined;
  if (savedLevel === undefined) delete process.env.LOG_LEVEL;
  else process.env.LOG_LEVEL = savedLevel;
});

const errorLines = () =>
  stderr.map((line) => JSON.parse(line) as Record<string, any>).filter((line) => line.level === "error");

/** A context that has counted in an aggregate-only meter (4 windows, all settled after the answer). */
function metered(meterId: string) {
  const ctx = fresh(runtime({ meters: [meter(meterId, { meterType: "request_count", meterActive: true })] }));
  ctx.meterUses = planMeters(ctx, ctx.receivedAt);
  ctx.counted = true;
  return ctx;
}

const counterValue = async (meterId: string, kind: "minute" | "day", at: number) =>
  (await storedItem(counterKeys.meter(meterId, undefined, windowAt(kind, at)), REGION))?.value;

describe("writeLogAndSettlement", () => {
  it("a settlement (one step per meter and window, plus the log) fits in one transaction", () => {
    expect(MAX_METERS_PER_PROXY * METER_WINDOWS.length + 1).toBeLessThanOrEqual(100);
  });

  it("puts the log item alone (one PutItem) when there is nothing to settle", async () => {
    const ctx = fresh();
    const item = await requestLogItem(ctx, answer(), ctx.receivedAt + 5);
    recorder = recordCommands(REGION);
    await writeLogAndSettlement(REGION, ctx, item, []);
    expect(recorder.sent).toEqual([{ command: "PutItemCommand" }]);
    expect(await storedItem(keys.requestLog(PROXY_ID, ctx.requestId), REGION)).toEqual(item);
    expect(errorLines()).toEqual([]);
  });

  it("writes nothing when there is neither a log item nor a settlement", async () => {
    recorder = recordCommands(REGION);
    await writeLogAndSettlement(REGION, fresh(), undefined, []);
    expect(recorder.sent).toEqual([]);
  });

  it("writes the log and the settlement in one TransactWriteItems whose token comes from the request id", async () => {
    const meterId = `m-${crypto.randomUUID()}`;
    const ctx = metered(meterId);
    const settlement = settlementSteps(ctx);
    expect(settlement.map((step) => step.name)).toEqual([
      `settle:${meterId}:minute`,
      `settle:${meterId}:hour`,
      `settle:${meterId}:day`,
      `settle:${meterId}:month`,
    ]);
    const item = await requestLogItem(ctx, answer(), ctx.receivedAt + 5);
    recorder = recordCommands(REGION);
    await writeLogAndSettlement(REGION, ctx, item, settlement);
    expect(recorder.sent).toEqual([
      {
        command: "TransactWriteItemsCommand",
        token: clientRequestToken(ctx.requestId, "settle:0"),
        actions: ["Put", "Update", "Update", "Update", "Update"],
      },
    ]);
    expect(await storedItem(keys.requestLog(PROXY_ID, ctx.requestId), REGION)).toEqual(item);
    expect(await counterValue(meterId, "minute", ctx.receivedAt)).toBe(1);
    expect(await counterValue(meterId, "day", ctx.receivedAt)).toBe(1);

    // The SDK retrying the same request's write (same token, same items) counts nothing twice.
    await writeLogAndSettlement(REGION, ctx, item, settlement);
    expect(await counterValue(meterId, "day", ctx.receivedAt)).toBe(1);
    // Another request settling in the same meter counts again (its own token).
    const next = { ...ctx, requestId: newRequestId(ctx.receivedAt + 1) };
    await writeLogAndSettlement(
      REGION,
      next,
      await requestLogItem(next, answer(), next.receivedAt + 5),
      settlement,
    );
    expect(await counterValue(meterId, "day", ctx.receivedAt)).toBe(2);
    expect(errorLines()).toEqual([]);
  });

  it("settles without a log item in a transaction of the settlement steps alone", async () => {
    const meterId = `m-${crypto.randomUUID()}`;
    const ctx = metered(meterId);
    recorder = recordCommands(REGION);
    await writeLogAndSettlement(REGION, ctx, undefined, settlementSteps(ctx));
    expect(recorder.sent).toEqual([
      {
        command: "TransactWriteItemsCommand",
        token: clientRequestToken(ctx.requestId, "settle:0"),
        actions: ["Update", "Update", "Update", "Update"],
      },
    ]);
    expect(await counterValue(meterId, "minute", ctx.receivedAt)).toBe(1);
  });

  it("cuts more than 100 actions into transactions of at most 100, each with its own token", async () => {
    // Not reachable with MAX_METERS_PER_PROXY = 20 (at most 80 settlement steps and the log): the
    // parts would not be atomic with each other. Pinned here as the module behaves.
    const ctx = fresh();
    const item = await requestLogItem(ctx, answer(), ctx.receivedAt + 5);
    const window = windowAt("minute", ctx.receivedAt);
    const base = crypto.randomUUID();
    const settlement: CounterStep[] = Array.from({ length: 120 }, (_, i) => ({
      name: `settle:${base}-${i}:minute`,
      key: counterKeys.meter(`${base}-${i}`, undefined, window),
      window,
      owner: { entity: "meterCounter", clientId: CLIENT_ID, proxyId: PROXY_ID, counterOf: `${base}-${i}` },
      mode: "add",
      amount: 1,
    }));
    recorder = recordCommands(REGION);
    await writeLogAndSettlement(REGION, ctx, item, settlement);
    expect(
      recorder.sent.map(({ command, token, actions }) => ({ command, token, n: actions?.length })),
    ).toEqual([
      { command: "TransactWriteItemsCommand", token: clientRequestToken(ctx.requestId, "settle:0"), n: 100 },
      { command: "TransactWriteItemsCommand", token: clientRequestToken(ctx.requestId, "settle:1"), n: 21 },
    ]);
    expect(recorder.sent[0]?.actions?.[0]).toBe("Put");
    expect(await storedItem(keys.requestLog(PROXY_ID, ctx.requestId), REGION)).toEqual(item);
    expect(await counterValue(`${base}-119`, "minute", ctx.receivedAt)).toBe(1);
    expect(errorLines()).toEqual([]);
  });

  /** The one error line of a failed write: the request id, the error, and the alarmed metric. */
  function expectAlarmedFailure(ctx: RequestContext, errorName: string) {
    const lines = errorLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      message: "Request log could not be written",
      requestId: ctx.requestId,
      errorName,
      Service: "data-plane",
      [ALARMED_METRICS.requestLogWriteFailures]: 1,
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: METRIC_NAMESPACE,
            Dimensions: [["Service"]],
            Metrics: [{ Name: ALARMED_METRICS.requestLogWriteFailures, Unit: "Count" }],
          },
        ],
      },
    });
  }

  it("a PutItem that fails is logged with the alarmed metric and not thrown", async () => {
    const ctx = fresh();
    const item = await requestLogItem(ctx, answer(), ctx.receivedAt + 5);
    await expect(writeLogAndSettlement(NO_TABLE_REGION, ctx, item, [])).resolves.toBeUndefined();
    expectAlarmedFailure(ctx, "ResourceNotFoundException");
  });

  it("a transaction that fails writes neither the log nor any settlement, is logged and not thrown", async () => {
    const meterId = `m-${crypto.randomUUID()}`;
    const ctx = metered(meterId);
    const settlement = settlementSteps(ctx);
    // Another counter already at its limit: the last step's condition cancels the whole transaction.
    const fullId = `m-${crypto.randomUUID()}`;
    const window = windowAt("minute", ctx.receivedAt);
    const full: CounterStep = {
      name: "full",
      key: counterKeys.meter(fullId, undefined, window),
      window,
      owner: { entity: "meterCounter", clientId: CLIENT_ID, proxyId: PROXY_ID, counterOf: fullId },
      mode: "add",
      amount: 1,
    };
    await writeLogAndSettlement(REGION, fresh(), undefined, [full]);
    const settlementThatCannot = [...settlement, { ...full, limit: 1 }];
    const item = await requestLogItem(ctx, answer(), ctx.receivedAt + 5);
    await expect(writeLogAndSettlement(REGION, ctx, item, settlementThatCannot)).resolves.toBeUndefined();
    expectAlarmedFailure(ctx, "TransactionCanceledException");
    expect(await storedItem(keys.requestLog(PROXY_ID, ctx.requestId), REGION)).toBeUndefined();
    expect(await counterValue(meterId, "day", ctx.receivedAt)).toBeUndefined();
    expect(await counterValue(meterId, "minute", ctx.receivedAt)).toBeUndefined();
    expect(await counterValue(fullId, "minute", ctx.receivedAt)).toBe(1); // the seeded value only
  });

  it("a transaction in a region without the table is logged and not thrown", async () => {
    const ctx = metered(`m-${crypto.randomUUID()}`);
    const item = await requestLogItem(ctx, answer(), ctx.receivedAt + 5);
    await expect(
      writeLogAndSettlement(NO_TABLE_REGION, ctx, item, settlementSteps(ctx)),
    ).resolves.toBeUndefined();
    expect(errorLines()).toHaveLength(1);
    expect(errorLines()[0]).toMatchObject({
      requestId: ctx.requestId,
      [ALARMED_METRICS.requestLogWriteFailures]: 1,
    });
  });
});
