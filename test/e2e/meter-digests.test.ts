/**
 * Meter alert digests end to end (spec 6.3): source items written into the regional table as the
 * data plane writes them, the local stream poller delivering the real stream (moto's DynamoDB
 * Streams) to the stream consumer, the digest job run for the period, the notification read
 * through the Core API and the e-mail recorded by the emulator's SES.
 */
import { randomUUID } from "node:crypto";
import type { DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handler as digestHandler } from "#functions/meter-digest.ts";
import { handler as streamHandler } from "#functions/region-stream.ts";
import { dynamo } from "#lib/aws/clients.ts";
import { DeleteCommand, PutCommand, TransactWriteCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import type { MeterItem } from "#lib/db/entities/meter.ts";
import { occurrenceKeys } from "#lib/db/entities/meter-occurrence.ts";
import { keys } from "#lib/db/keys.ts";
import { queryPartition } from "#lib/db/store.ts";
import { ALERT_CADENCES, type AlertCadence, type NotifyTrigger } from "#lib/domain/meter-periods.ts";
import { windowAt } from "#lib/shared/meter-windows.ts";
import { sentEmails } from "#test/support/emulator.ts";
import {
  createClientFor,
  joinClient,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "#test/support/stack.ts";
import { seedingConfig } from "../support/config-atomicity.ts";

const REGION = "eu-west-1"; // not the home region: the digest reads every region's table
const PROXY = `proxy-${randomUUID()}`;
let stack: TestStack;
let owner: TestUser;
let reader: TestUser;
let clientId: string;

beforeAll(async () => {
  stack = await startTestStack({ streams: true });
  owner = await stack.newUser();
  reader = await stack.newUser();
  clientId = await createClientFor(owner, "Metered");
  await joinClient(owner, clientId, reader, "reader");
});

afterAll(async () => {
  await stack?.stop();
});

const table = () => getConfig().tableName;
const db = () => dynamo(REGION);

/** A stored meter as the meters API writes it (the stream consumer reads it with findMeter). */
async function putMeter(meterId: string, alerts: MeterItem["alerts"], limits: MeterItem["limits"] = null) {
  const now = new Date().toISOString();
  const item: MeterItem = {
    ...keys.meter(clientId, PROXY, meterId),
    entity: "meter",
    meterId,
    proxyId: PROXY,
    parentId: PROXY,
    clientId,
    userId: owner.userId,
    meterRegion: REGION,
    meterType: "request_count",
    meterActive: true,
    meterMode: "all",
    effect: null,
    limits,
    extraction: null,
    methods: [],
    path: null,
    query: [],
    headers: [],
    body: [],
    token: [],
    variables: [],
    limitBy: null,
    alerts,
    notes: "",
    createdAt: now,
    updatedAt: now,
    meterVersion: 1,
  };
  await seedingConfig(() => db().send(new PutCommand({ TableName: table(), Item: item })));
}

/** A request log record as the data plane writes it (only the fields the digests read matter). */
async function putRequestLog(processedAt: number, metering: { applied: string[]; refused: unknown[] }) {
  const requestId = randomUUID();
  await db().send(
    new PutCommand({
      TableName: table(),
      Item: {
        ...keys.requestLog(PROXY, requestId),
        entity: "requestLog",
        requestId,
        proxyId: PROXY,
        clientId,
        parentId: PROXY,
        processed: true,
        processedAt,
        proxyData: { receivedAt: processedAt, status: metering.refused.length ? 429 : 200 },
        metering,
        TTL: Math.floor(processedAt / 1000) + 86_400,
      },
    }),
  );
  return requestId;
}

/** A counter increment as the data plane's counting transaction makes it. */
async function addToCounter(meterId: string, window: "minute" | "hour", amount: number) {
  const period = windowAt(window, Date.now());
  await db().send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: table(),
            Key: { pKey: `METERUSE#${meterId}`, sKey: `${window}#${period.start}` },
            UpdateExpression:
              "ADD #value :n SET entity = :entity, meterId = :meterId, proxyId = :proxyId, clientId = :clientId, #window = :window, windowStart = :start, windowEnd = :end, #ttl = :ttl",
            ExpressionAttributeNames: { "#value": "value", "#window": "window", "#ttl": "TTL" },
            ExpressionAttributeValues: {
              ":n": amount,
              ":entity": "meterCounter",
              ":meterId": meterId,
              ":proxyId": PROXY,
              ":clientId": clientId,
              ":window": window,
              ":start": period.start,
              ":end": period.end,
              ":ttl": Math.floor(period.end / 1000) + 3600,
            },
          },
        },
      ],
    }),
  );
}

const runDigest = (cadence: AlertCadence, time: number) =>
  digestHandler({ cadence, time: new Date(time).toISOString() });

interface ApiNotification {
  notificationId: string;
  type: string;
  message: string;
  data?: Record<string, unknown>;
}

/** The usage notifications about a meter, as a member reads them through the Core API. */
async function usageNotificationsOf(meterId: string) {
  const response = await owner.api.get(`/api/clients/${clientId}/notifications?limit=100`);
  expect(response.status).toBe(200);
  return (response.body.notifications as ApiNotification[]).filter(
    (n) => n.type === "usage" && n.message.includes(meterId),
  );
}

const emailsAbout = async (to: string, meterId: string) =>
  (await sentEmails(to)).filter((email) => email.subject.includes(meterId));

const occurrenceCount = async (meterId: string, trigger: NotifyTrigger, cadence: AlertCadence, at: number) =>
  (
    await storedItem(
      occurrenceKeys.item({
        cadence,
        periodStart: windowAt(cadence, at).start,
        clientId,
        meterId,
        notifyTrigger: trigger,
      }),
      REGION,
    )
  )?.occurrences;

describe("predicate_match, minute cadence", () => {
  const meterId = `pm-${randomUUID()}`;
  const quiet = `off-${randomUUID()}`;
  const first = windowAt("minute", Date.now() - 4 * 60_000);
  const second = windowAt("minute", first.end);

  it("gives one notification per period in which the meter applied, and one e-mail each", async () => {
    await putMeter(meterId, { enabled: true, cadence: "minute", notifyTrigger: "predicate_match" });
    await putMeter(quiet, { enabled: false, cadence: "minute", notifyTrigger: "predicate_match" });
    for (const offset of [1_000, 20_000, 59_000]) {
      await putRequestLog(first.start + offset, { applied: [meterId, quiet], refused: [] });
    }
    await putRequestLog(second.start + 5_000, { applied: [meterId], refused: [] });
    await stack.streams?.drain();
    expect(await occurrenceCount(meterId, "predicate_match", "minute", first.start)).toBe(3);

    await runDigest("minute", Date.now());

    const notifications = await usageNotificationsOf(meterId);
    expect(notifications).toHaveLength(2);
    const data = notifications.map((n) => n.data ?? {});
    expect(data.sort((a, b) => String(a.periodStart).localeCompare(String(b.periodStart)))).toEqual([
      {
        meterId,
        proxyId: PROXY,
        notifyTrigger: "predicate_match",
        window: null,
        count: 3,
        periodStart: new Date(first.start).toISOString(),
        periodEnd: new Date(first.end).toISOString(),
        cadence: "minute",
        windows: {},
      },
      expect.objectContaining({ count: 1, periodStart: new Date(second.start).toISOString() }),
    ]);
    expect(await usageNotificationsOf(quiet)).toEqual([]);
    // One e-mail per notification, to the owner (admin), none to the reader.
    const mails = await emailsAbout(owner.email, meterId);
    expect(mails).toHaveLength(2);
    expect(await emailsAbout(reader.email, meterId)).toHaveLength(0);
    // The HTML part (what the emulator keeps), saying who sent it and why.
    expect(mails[0]?.body).toMatch(/^<!doctype html>/);
    expect(mails[0]?.body).toContain("because a meter of an organisation you belong to has alerts turned on");
  });

  it("reruns change nothing, even with the run records lost", async () => {
    await runDigest("minute", Date.now());
    expect(await usageNotificationsOf(meterId)).toHaveLength(2);
    const runs = await queryPartition(keys.meterDigestRunPartition("minute"));
    expect(runs.length).toBeGreaterThan(0);
    for (const run of runs) {
      await dynamo(getConfig().homeRegion).send(
        new DeleteCommand({ TableName: table(), Key: { pKey: run.pKey, sKey: run.sKey } }),
      );
    }
    await runDigest("minute", Date.now());
    expect(await usageNotificationsOf(meterId)).toHaveLength(2);
    expect(await emailsAbout(owner.email, meterId)).toHaveLength(2);
  });
});

describe("exceed, hour cadence", () => {
  const meterId = `ex-${randomUUID()}`;
  const hour = windowAt("hour", Date.now() - 2 * 3_600_000);

  it("counts the requests a limit refused, not those the meter only applied to", async () => {
    await putMeter(meterId, { enabled: true, cadence: "hour", notifyTrigger: "exceed" }, { minute: 2 });
    await putRequestLog(hour.start + 60_000, { applied: [meterId], refused: [] });
    await putRequestLog(hour.start + 61_000, { applied: [], refused: [{ meterId, window: "minute" }] });
    await putRequestLog(hour.start + 62_000, { applied: [], refused: [{ meterId, window: "minute" }] });
    await stack.streams?.drain();

    await runDigest("hour", Date.now());
    await runDigest("hour", Date.now());

    const notifications = await usageNotificationsOf(meterId);
    expect(notifications).toHaveLength(1);
    expect(notifications[0]?.data).toMatchObject({
      notifyTrigger: "exceed",
      window: "minute",
      count: 2,
      periodStart: new Date(hour.start).toISOString(),
      periodEnd: new Date(hour.end).toISOString(),
    });
    expect(await emailsAbout(owner.email, meterId)).toHaveLength(1);
  });
});

describe("threshold, day cadence", () => {
  const meterId = `th-${randomUUID()}`;

  it("counts each counter crossing its (clamped) threshold once", async () => {
    await putMeter(
      meterId,
      { enabled: true, cadence: "day", notifyTrigger: "threshold", alertThreshold: { minute: 3, hour: 10 } },
      { minute: 100, hour: 5 },
    );
    await addToCounter(meterId, "minute", 2); // 0 -> 2
    await addToCounter(meterId, "minute", 1); // 2 -> 3: crosses 3
    await addToCounter(meterId, "minute", 1); // 3 -> 4
    await addToCounter(meterId, "hour", 4); // 0 -> 4
    await addToCounter(meterId, "hour", 2); // 4 -> 6: crosses 10 clamped to the limit 5
    await stack.streams?.drain();
    const today = windowAt("day", Date.now());

    await runDigest("day", today.end + 5 * 60_000);
    await runDigest("day", today.end + 10 * 60_000);

    const notifications = await usageNotificationsOf(meterId);
    expect(notifications).toHaveLength(1);
    expect(notifications[0]?.data).toMatchObject({
      notifyTrigger: "threshold",
      window: "hour",
      windows: { minute: 1, hour: 1 },
      count: 2,
      periodStart: new Date(today.start).toISOString(),
    });
    expect(await emailsAbout(owner.email, meterId)).toHaveLength(1);
  });
});

describe("idempotence of the stream consumer", () => {
  /** The stream records of this file's table in REGION, read again from the start (as a redelivery). */
  async function streamRecordsFor(requestIds: string[]): Promise<DynamoDBRecord[]> {
    const { DescribeTableCommand, DynamoDBClient } = await import("@aws-sdk/client-dynamodb");
    const { dynamoDbStreamsClient } = await import("#local/dynamodb-streams.ts");
    const client = new DynamoDBClient({ region: REGION });
    try {
      const arn = (await client.send(new DescribeTableCommand({ TableName: table() }))).Table
        ?.LatestStreamArn;
      const streams = dynamoDbStreamsClient({ region: REGION, credentials: client.config.credentials });
      const shard = (await streams.describeStream(arn!)).StreamDescription.Shards![0]!.ShardId;
      let iterator = (
        await streams.getShardIterator({ StreamArn: arn!, ShardId: shard, ShardIteratorType: "TRIM_HORIZON" })
      ).ShardIterator;
      const found: DynamoDBRecord[] = [];
      while (iterator) {
        const page = await streams.getRecords(iterator, 1000);
        for (const record of page.Records ?? []) {
          const sKey = record.dynamodb?.Keys?.sKey?.S;
          if (record.eventName === "INSERT" && sKey && requestIds.includes(sKey))
            found.push({ ...(record as DynamoDBRecord), awsRegion: REGION, eventSourceARN: arn });
        }
        if (!page.Records?.length) break;
        iterator = page.NextShardIterator;
      }
      return found;
    } finally {
      client.destroy();
    }
  }

  it("counts a batch delivered twice once", async () => {
    const meterId = `dup-${randomUUID()}`;
    // A cadence no other test digests: the minute periods before now were delivered already.
    const month = windowAt("month", Date.now());
    await putMeter(meterId, { enabled: true, cadence: "month", notifyTrigger: "predicate_match" });
    const ids = [
      await putRequestLog(Date.now() - 1_000, { applied: [meterId], refused: [] }),
      await putRequestLog(Date.now(), { applied: [meterId], refused: [] }),
    ];
    await stack.streams?.drain(); // first delivery, by the poller
    const event: DynamoDBStreamEvent = { Records: await streamRecordsFor(ids) };
    expect(event.Records).toHaveLength(2);
    expect(await streamHandler(event)).toEqual({ batchItemFailures: [] });
    expect(await streamHandler(event)).toEqual({ batchItemFailures: [] });
    expect(await occurrenceCount(meterId, "predicate_match", "month", month.start)).toBe(2);

    await runDigest("month", month.end + 5 * 60_000);
    const notifications = await usageNotificationsOf(meterId);
    expect(notifications).toHaveLength(1);
    expect(notifications[0]?.data?.count).toBe(2);
  });

  it("writes what precedes a failing record, reports that record, and counts each record once on redelivery", async () => {
    const good = `half-${randomUUID()}`;
    const broken = `bad-${randomUUID()}`;
    const minute = windowAt("minute", Date.now() - 7 * 60_000);
    await putMeter(good, { enabled: true, cadence: "minute", notifyTrigger: "predicate_match" });
    // A stored meter that does not parse: its read fails.
    await putMeter(broken, "not an alerts object" as unknown as MeterItem["alerts"]);
    const record = (sequence: number, applied: string[]): DynamoDBRecord => ({
      eventID: randomUUID(),
      eventName: "INSERT",
      eventSource: "aws:dynamodb",
      eventVersion: "1.1",
      awsRegion: REGION,
      eventSourceARN: `arn:aws:dynamodb:${REGION}:123456789012:table/${table()}/stream/test`,
      dynamodb: {
        ApproximateCreationDateTime: Math.floor(minute.start / 1000) + 5,
        SequenceNumber: String(9_000_000 + sequence),
        StreamViewType: "NEW_AND_OLD_IMAGES",
        Keys: { pKey: { S: `REQLOG#${PROXY}` }, sKey: { S: `r${sequence}` } },
        NewImage: {
          entity: { S: "requestLog" },
          clientId: { S: clientId },
          proxyId: { S: PROXY },
          processedAt: { N: String(minute.start + sequence) },
          metering: { M: { applied: { L: applied.map((id) => ({ S: id })) }, refused: { L: [] } } },
        },
      },
    });
    const batch = [record(1, [good]), record(2, [broken]), record(3, [good])];

    expect(await streamHandler({ Records: batch })).toEqual({
      batchItemFailures: [{ itemIdentifier: batch[1]!.dynamodb!.SequenceNumber! }],
    });
    expect(await occurrenceCount(good, "predicate_match", "minute", minute.start)).toBe(1);

    await putMeter(broken, { enabled: true, cadence: "minute", notifyTrigger: "predicate_match" });
    // Lambda retries from the reported record; a bisected retry may deliver the first half again.
    expect(await streamHandler({ Records: batch.slice(1) })).toEqual({ batchItemFailures: [] });
    expect(await streamHandler({ Records: batch.slice(0, 2) })).toEqual({ batchItemFailures: [] });
    expect(await streamHandler({ Records: batch })).toEqual({ batchItemFailures: [] });
    expect(await occurrenceCount(good, "predicate_match", "minute", minute.start)).toBe(2);
    expect(await occurrenceCount(broken, "predicate_match", "minute", minute.start)).toBe(1);
  });
});

it("declares the cadences the digests run on", () => {
  expect(ALERT_CADENCES).toEqual(["minute", "hour", "day", "month"]);
});
