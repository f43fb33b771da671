/**
 * Budget draw-down and top-ups of managed clients (docs/msp-api.md, "Usage, budget and top-ups")
 * against the emulator and the payment processor on loopback (the real `stripe` package): the
 * telemetry consumer (functions/telemetry-stream.ts) draws a client billed to its MSP down by its
 * request time exactly once per stream part, and automatic top-ups charge once however many
 * triggers race (the charges counted at the processor).
 */
import { randomUUID } from "node:crypto";
import type { DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handler } from "#functions/telemetry-stream.ts";
import { PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { buildRequestLogItem, newRequestId } from "#lib/data-plane/request-log.ts";
import { drawDownBudgets, findTopUp } from "#lib/db/entities/budget.ts";
import { findClientConfig } from "#lib/db/entities/client-config.ts";
import { findMspWithConfig } from "#lib/db/entities/msp.ts";
import { keys } from "#lib/db/keys.ts";
import { homeDb, nowIso, tableName } from "#lib/db/store.ts";
import { defaultClientConfiguration } from "#lib/domain/client-config.ts";
import { apiSecondsAmountNanos, nanosToAmount } from "#lib/domain/msp-pricing.ts";
import { runAutomaticTopUp, STALE_CLAIM_MS, topUpIdempotencyKey } from "#lib/domain/msp-top-ups.ts";
import { createMsp } from "#lib/domain/msps.ts";
import { chargeCustomer } from "#lib/domain/payments.ts";
import { provisionTable } from "#local/provision.ts";
import {
  type PaymentProcessor,
  type PaymentsEnvironment,
  startPaymentsEnvironment,
} from "../support/payment-processor.ts";
import { insertRecord, sequenceFrom } from "../support/stream-records.ts";

const REGION = "eu-west-1";
const AT = Math.floor(Date.now() / 3_600_000) * 3_600_000 + 30 * 60_000;
const nextSequence = sequenceFrom(10n ** 21n);
let processor: PaymentProcessor;
let payments: PaymentsEnvironment | undefined;

beforeAll(async () => {
  await provisionTable(REGION, getConfig().tableName);
  await provisionTable(getConfig().homeRegion, getConfig().tableName);
  payments = await startPaymentsEnvironment({ secretKey: "sk_test_budget" });
  processor = payments.processor;
});
afterAll(async () => {
  await payments?.stop();
});

/** An MSP with its processor customer; `paymentMethod` null: nothing on file. */
async function newMsp(paymentMethod: string | null = "pm_card_visa") {
  const ownerUserId = randomUUID();
  await homeDb().send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...keys.user(ownerUserId), entity: "user", userId: ownerUserId },
    }),
  );
  const { msp } = await createMsp({ name: "Budget MSP", ownerUserId });
  const found = await findMspWithConfig(msp.mspId);
  const customerId = found?.config?.paymentCustomerId as string;
  if (paymentMethod) processor.setDefaultPaymentMethod(customerId, paymentMethod);
  return { mspId: msp.mspId, customerId };
}

/** A managed client's configuration as the MSP API stores it, with the given billing and budget. */
async function newClient(
  mspId: string,
  settings: {
    billingTo?: "client" | "msp";
    topUpMethod?: "automatic" | "manual";
    current: number;
    rate?: number;
  },
) {
  const clientId = randomUUID();
  const now = nowIso();
  await homeDb().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.clientConfig(clientId),
        entity: "clientConfig",
        ...defaultClientConfiguration({
          clientId,
          regions: getConfig().regions,
          createdAt: now,
          payment: {
            paymentProvider: null,
            paymentProvisioning: "skipped",
            paymentCustomerId: null,
            paymentProvisioningReason: "test",
          },
          billingTo: settings.billingTo ?? "msp",
          mspId,
        }),
        topUpMethod: settings.topUpMethod ?? "manual",
        budget: { current: settings.current, minimumTopUpThreshold: 5, maximumTopUpThreshold: 20 },
        rates: { apiSeconds: settings.rate ?? 0.9, storageGB: 1, aiTokens: 1, plan: 1 },
      },
    }),
  );
  return clientId;
}

/** A request log of `clientId` lasting `ms` (received to answered), as a stream record. */
function logRecord(clientId: string, ms: number, offset = 0): DynamoDBRecord {
  const at = AT + offset;
  const item = buildRequestLogItem({
    requestId: newRequestId(at),
    proxy: { proxyId: `p-${clientId}`, clientId, userId: "u" },
    proxyIdFromPath: `p-${clientId}`,
    stage: "prod",
    method: "GET",
    apiPath: "/",
    query: {},
    requestHeaders: {},
    requestBody: undefined,
    receivedAt: at,
    sentAt: at + ms,
    status: 200,
    message: "",
    arnBase: "arn",
    target: {
      sentAt: at + 1,
      receivedAt: at + ms - 1,
      status: 200,
      location: null,
      responseHeaders: {},
      responseBody: undefined,
    },
    validation: {},
    processed: true,
    redactHeaders: [],
    redactQuery: [],
    retentionDays: 30,
  });
  return insertRecord(item, { region: REGION, at, sequenceNumber: nextSequence() });
}

const currentOf = async (clientId: string) => (await findClientConfig(clientId))?.budget.current;
const chargesOf = (customerId: string) =>
  processor.paymentIntents.filter((intent) => intent.customer === customerId);

describe("budget draw-down in the telemetry consumer", () => {
  it("draws a client billed to its MSP down by its priced request time, once per part however often delivered", async () => {
    const { mspId } = await newMsp();
    const billed = await newClient(mspId, { current: 50, rate: 0.9 });
    const own = await newClient(mspId, { billingTo: "client", current: 50 });
    const event: DynamoDBStreamEvent = {
      Records: [
        logRecord(billed, 1234),
        logRecord(billed, 17, 1),
        logRecord(own, 999, 2),
        logRecord(billed, 3, 3),
      ],
    };
    expect(await handler(event)).toEqual({ batchItemFailures: [] });
    expect(await handler(event)).toEqual({ batchItemFailures: [] }); // redelivered whole
    expect(await handler({ Records: event.Records.slice(2) })).toEqual({ batchItemFailures: [] }); // cut differently: a new part
    const firstPart = apiSecondsAmountNanos(1234 + 17 + 3, 0.9);
    const tailPart = apiSecondsAmountNanos(3, 0.9);
    // 50 − 0.00011286 − 0.00000027: exact decimals, as DynamoDB adds them
    expect(await currentOf(billed)).toBe(Number((50 - nanosToAmount(firstPart + tailPart)).toFixed(9)));
    expect(await currentOf(own)).toBe(50);
  });

  it("prices at the rate stored when the part is drawn", async () => {
    const { mspId } = await newMsp();
    const clientId = await newClient(mspId, { current: 30, rate: 0.7 });
    expect(await handler({ Records: [logRecord(clientId, 10_000)] })).toEqual({ batchItemFailures: [] });
    expect(await currentOf(clientId)).toBe(30 - nanosToAmount(apiSecondsAmountNanos(10_000, 0.7))); // 30 − 0.0007
  });
});

describe("the draw-down transaction", () => {
  it("draws nothing and writes no marker when the rate changed since it was priced (stale), then applies once", async () => {
    const { mspId } = await newMsp();
    const clientId = await newClient(mspId, { current: 10, rate: 0.9 });
    const digest = randomUUID();
    expect(await drawDownBudgets(digest, [{ clientId, amount: 0.5, rate: 0.8 }])).toEqual({
      outcome: "stale",
      clientIds: [clientId],
    });
    expect(await currentOf(clientId)).toBe(10);
    expect(await drawDownBudgets(digest, [{ clientId, amount: 0.5, rate: 0.9 }])).toEqual({
      outcome: "applied",
    });
    expect(await drawDownBudgets(digest, [{ clientId, amount: 0.5, rate: 0.9 }])).toEqual({
      outcome: "alreadyApplied",
    });
    expect(await currentOf(clientId)).toBe(9.5);
  });
});

describe("automatic top-ups", () => {
  it("charges once, up to the maximum, however many triggers race", async () => {
    const { mspId, customerId } = await newMsp();
    const clientId = await newClient(mspId, { topUpMethod: "automatic", current: 1.25 });
    const outcomes = await Promise.all(Array.from({ length: 25 }, () => runAutomaticTopUp(clientId)));
    expect(outcomes.filter((outcome) => outcome === "succeeded")).toHaveLength(1);
    expect(
      outcomes.filter(
        (outcome) => outcome === "succeeded" || outcome === "claimedElsewhere" || outcome === "notDue",
      ),
    ).toHaveLength(25);
    const charges = chargesOf(customerId);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({
      amount: 1875,
      currency: "usd",
      status: "succeeded",
      payment_method: "pm_card_visa",
    });
    const config = await findClientConfig(clientId);
    expect(config?.budget.current).toBe(20);
    expect(config?.topUpSequence).toBe(1);
    const topUp = await findTopUp(clientId, 0);
    expect(topUp).toMatchObject({
      status: "succeeded",
      method: "automatic",
      amountCents: 1875,
      idempotencyKey: topUpIdempotencyKey(clientId, 0),
      paymentIntentId: charges[0]?.id,
    });
    expect(await runAutomaticTopUp(clientId)).toBe("notDue");
  });

  it("charges once when many parallel consumer batches draw the same client below its minimum", async () => {
    const { mspId, customerId } = await newMsp();
    const clientId = await newClient(mspId, { topUpMethod: "automatic", current: 5.00002, rate: 1 });
    // 12 batches, each 100 ms of request time = $0.00001: the first one below 5 triggers
    const batches = Array.from({ length: 12 }, (_, index) => ({
      Records: [logRecord(clientId, 100, index)],
    }));
    const results = await Promise.all(batches.map((event) => handler(event)));
    expect(results.every((result) => result.batchItemFailures.length === 0)).toBe(true);
    const charges = chargesOf(customerId);
    expect(charges).toHaveLength(1);
    const charged = (charges[0]?.amount as number) / 100;
    // every draw and the one top-up, each exactly once
    expect(await currentOf(clientId)).toBe(Number((5.00002 - 12 * 0.00001 + charged).toFixed(9)));
    expect((await findClientConfig(clientId))?.topUpSequence).toBe(1);
  });

  it("records a refused charge, pauses automatic top-ups, and never charges twice for it", async () => {
    const { mspId, customerId } = await newMsp("pm_card_chargeDeclined");
    const clientId = await newClient(mspId, { topUpMethod: "automatic", current: 0 });
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => runAutomaticTopUp(clientId)));
    expect(outcomes.filter((outcome) => outcome === "declined")).toHaveLength(1);
    expect(chargesOf(customerId)).toHaveLength(1);
    const config = await findClientConfig(clientId);
    expect(config?.budget.current).toBe(0);
    expect(config?.topUpSequence).toBe(1);
    expect(config?.automaticTopUpFailedAt).not.toBeNull();
    expect(await findTopUp(clientId, 0)).toMatchObject({
      status: "failed",
      failureReason: "Your card was declined.",
    });
    expect(await runAutomaticTopUp(clientId)).toBe("notDue"); // paused for an hour
    expect(chargesOf(customerId)).toHaveLength(1);
  });

  it("resumes a claim abandoned after its charge with the same idempotency key: one charge, credited once", async () => {
    const { mspId, customerId } = await newMsp();
    const clientId = await newClient(mspId, { topUpMethod: "automatic", current: 2 });
    // A charger claimed top-up 0, charged, and crashed before settling it.
    const createdAt = new Date(Date.now() - STALE_CLAIM_MS - 1000).toISOString();
    await homeDb().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.clientTopUp(clientId, 0),
          entity: "topUp",
          clientId,
          mspId,
          sequence: 0,
          method: "automatic",
          amountCents: 1800,
          currency: "usd",
          status: "pending",
          idempotencyKey: topUpIdempotencyKey(clientId, 0),
          paymentIntentId: null,
          failureReason: null,
          createdBy: null,
          createdAt,
          updatedAt: createdAt,
        },
      }),
    );
    const first = await chargeCustomer({
      customerId,
      amountCents: 1800,
      currency: "usd",
      idempotencyKey: topUpIdempotencyKey(clientId, 0),
      description: "crashed charger",
      metadata: {},
    });
    expect(first.outcome).toBe("succeeded");
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => runAutomaticTopUp(clientId)));
    expect(outcomes.filter((outcome) => outcome === "succeeded").length).toBeGreaterThanOrEqual(1);
    expect(chargesOf(customerId)).toHaveLength(1);
    expect(await currentOf(clientId)).toBe(20);
    expect((await findClientConfig(clientId))?.topUpSequence).toBe(1);
  });
});
