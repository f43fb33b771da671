/**
 * The telemetry stream consumer (functions/telemetry-stream.ts) against the emulator: Lambda's
 * stream event built from request-log items as the data plane writes them, the buckets read back
 * through the entity's access pattern. Exactly once: the same batch delivered twice counts once;
 * a batch whose second part fails (a real DynamoDB error: a counter of the wrong type) reports its
 * first unwritten record, and the redelivery (Lambda's: from that record; a crash's: the whole
 * batch) counts every record exactly once.
 */
import { randomUUID } from "node:crypto";
import type { DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { beforeAll, describe, expect, it } from "vitest";
import { handler } from "#functions/telemetry-stream.ts";
import { dynamo } from "#lib/aws/clients.ts";
import { DeleteCommand, PutCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { buildRequestLogItem, newRequestId } from "#lib/data-plane/request-log.ts";
import {
  listTelemetryBuckets,
  MAX_TRANSACTION_ACTIONS,
  splitIntoParts,
  TELEMETRY_RETENTION_SECONDS,
  type TelemetryRecordInput,
} from "#lib/db/entities/telemetry.ts";
import { keys } from "#lib/db/keys.ts";
import { mergeBuckets } from "#lib/domain/telemetry/read.ts";
import { observationOf } from "#lib/shared/telemetry/aggregate.ts";
import { bucketKey, type TelemetryInterval } from "#lib/shared/telemetry/buckets.ts";
import { provisionTable } from "#local/provision.ts";
import { insertRecord, sequenceFrom } from "../support/stream-records.ts";

const REGION = "eu-west-1";
// Half past this hour: buckets that have not expired (minute and hour buckets carry a TTL).
const AT = Math.floor(Date.now() / 3_600_000) * 3_600_000 + 30 * 60_000;
const nextSequence = sequenceFrom(10n ** 20n);

beforeAll(async () => {
  // The home table too: after each part the consumer reads client configurations (budget draw-down).
  await provisionTable(REGION, getConfig().tableName);
  await provisionTable(getConfig().homeRegion, getConfig().tableName);
});

function requestLog(clientId: string, proxyId: string, at: number, status: number, reached: boolean) {
  return buildRequestLogItem({
    requestId: newRequestId(at),
    proxy: { proxyId, clientId, userId: "u" },
    proxyIdFromPath: proxyId,
    stage: "prod",
    method: "GET",
    apiPath: "/",
    query: {},
    // A caller's own claim (no CloudFront in front of a function URL), and its real address (GB).
    requestHeaders: { "cloudfront-viewer-country": "SE" },
    sourceIp: "81.2.69.160",
    requestBody: undefined,
    receivedAt: at,
    sentAt: at + 40,
    status,
    message: "",
    arnBase: "arn",
    target: reached
      ? {
          sentAt: at + 5,
          receivedAt: at + 35,
          status,
          location: null,
          responseHeaders: {},
          responseBody: undefined,
        }
      : null,
    validation: {},
    processed: true,
    redactHeaders: [],
    redactQuery: [],
    retentionDays: 30,
  });
}

/** A stream record as Lambda delivers it (AttributeValue images, seconds, a sequence number). */
const streamRecord = (item: Record<string, unknown>): DynamoDBRecord =>
  insertRecord(item, { region: REGION, at: AT, sequenceNumber: nextSequence() });

async function bucketsOf(scope: "client" | "proxy", id: string, interval: TelemetryInterval) {
  const key = bucketKey(interval, AT);
  const stored = await listTelemetryBuckets(REGION, { scope, id, interval, from: key, to: key, limit: 10 });
  return mergeBuckets(stored);
}

describe("the telemetry stream consumer, exactly once", () => {
  it("counts a batch delivered twice once, in every interval, per client and per proxy", async () => {
    const clientId = `c-${randomUUID()}`;
    const proxyId = `p-${randomUUID()}`;
    const event: DynamoDBStreamEvent = {
      Records: [
        streamRecord(requestLog(clientId, proxyId, AT, 200, true)),
        streamRecord(requestLog(clientId, proxyId, AT + 1, 201, true)),
        streamRecord(requestLog(clientId, proxyId, AT + 2, 403, false)),
        streamRecord(requestLog(clientId, proxyId, AT + 3, 502, true)),
      ],
    };
    expect(await handler(event)).toEqual({ batchItemFailures: [] });
    expect(await handler(event)).toEqual({ batchItemFailures: [] });
    for (const interval of ["minute", "hour", "day", "month"] as const) {
      for (const [scope, id] of [
        ["client", clientId],
        ["proxy", proxyId],
      ] as const) {
        const [record] = await bucketsOf(scope, id, interval);
        expect(record?.countMap).toEqual({ proxy: 4, target: 3 });
        expect(record?.successCountMap).toEqual({ proxy: 2, target: 2 });
        expect(record?.errorCountMap).toEqual({ proxy: 2, target: 1 });
        expect(record?.codeCountMap).toEqual({
          "200:proxy": 1,
          "200:target": 1,
          "201:proxy": 1,
          "201:target": 1,
          "403:proxy": 1,
          "502:proxy": 1,
          "502:target": 1,
        });
        expect(record?.countryCountMap).toEqual({ "GB:proxy": 4, "GB:target": 3 });
        expect(record?.totalResponseTimeMap).toEqual({ proxy: 160, target: 90 });
        expect(record?.p99ResponseTimeMap.proxy).toBeCloseTo(40, -0.5);
        expect(record?.ewmaResponseTime).toBeCloseTo(40, 9);
      }
    }
  });

  it("takes the country from CloudFront-Viewer-Country only with TRUST_CLOUDFRONT_VIEWER_COUNTRY=true", async () => {
    const countries = async (trust: string | undefined) => {
      const clientId = `c-${randomUUID()}`;
      const saved = process.env.TRUST_CLOUDFRONT_VIEWER_COUNTRY;
      if (trust === undefined) delete process.env.TRUST_CLOUDFRONT_VIEWER_COUNTRY;
      else process.env.TRUST_CLOUDFRONT_VIEWER_COUNTRY = trust;
      try {
        const result = await handler({
          Records: [streamRecord(requestLog(clientId, `p-${randomUUID()}`, AT, 200, true))],
        });
        expect(result).toEqual({ batchItemFailures: [] });
      } finally {
        if (saved === undefined) delete process.env.TRUST_CLOUDFRONT_VIEWER_COUNTRY;
        else process.env.TRUST_CLOUDFRONT_VIEWER_COUNTRY = saved;
      }
      return (await bucketsOf("client", clientId, "minute"))[0]?.countryCountMap;
    };
    expect(await countries(undefined)).toEqual({ "GB:proxy": 1, "GB:target": 1 });
    expect(await countries("false")).toEqual({ "GB:proxy": 1, "GB:target": 1 });
    expect(await countries("true")).toEqual({ "SE:proxy": 1, "SE:target": 1 });
  });

  it("sets the documented TTL on minute and hour buckets and none on day and month buckets", async () => {
    const clientId = `c-${randomUUID()}`;
    await handler({ Records: [streamRecord(requestLog(clientId, `p-${randomUUID()}`, AT, 200, true))] });
    const ttlOf = async (interval: TelemetryInterval) =>
      (
        await listTelemetryBuckets(REGION, {
          scope: "client",
          id: clientId,
          interval,
          from: bucketKey(interval, AT),
          to: bucketKey(interval, AT),
          limit: 1,
        })
      )[0]?.item.TTL;
    expect(await ttlOf("minute")).toBe((AT + 60_000) / 1000 + (TELEMETRY_RETENTION_SECONDS.minute as number));
    expect(await ttlOf("hour")).toBe(
      (AT + 30 * 60_000) / 1000 + (TELEMETRY_RETENTION_SECONDS.hour as number),
    );
    expect(await ttlOf("day")).toBeUndefined();
    expect(await ttlOf("month")).toBeUndefined();
  });

  it("reports the first record of a part that fails, and counts each record once on redelivery", async () => {
    const clientId = `c-${randomUUID()}`;
    // One proxy per record: 4 new buckets a record, so 60 records make 3 parts of up to 100 actions.
    const proxies = Array.from({ length: 60 }, () => `p-${randomUUID()}`);
    const records = proxies.map((proxyId, i) =>
      streamRecord(requestLog(clientId, proxyId, AT + i, 200, true)),
    );
    const inputs: TelemetryRecordInput[] = records.map((record, i) => ({
      eventId: record.eventID as string,
      sequenceNumber: record.dynamodb?.SequenceNumber as string,
      observation: observationOf(requestLog(clientId, proxies[i] as string, AT + i, 200, true)),
    }));
    const parts = splitIntoParts(inputs);
    expect(parts.length).toBe(3);
    for (const part of parts) expect(part.deltas.length + 1).toBeLessThanOrEqual(MAX_TRANSACTION_ACTIONS);
    const second = parts[1] as (typeof parts)[number];

    // A counter of the wrong type in one bucket of the second part: DynamoDB refuses its ADD.
    const poisoned = keys.proxyTelemetry(proxies[second.from] as string, "day", bucketKey("day", AT));
    const table = getConfig().tableName;
    await dynamo(REGION).send(
      new PutCommand({ TableName: table, Item: { ...poisoned, "countMap#proxy": "x" } }),
    );
    const event: DynamoDBStreamEvent = { Records: records };
    const failed = await handler(event);
    const reported = failed.batchItemFailures.map((f) => f.itemIdentifier);
    expect(reported[0]).toBe(records[second.from]?.dynamodb?.SequenceNumber);
    expect(reported).toHaveLength(60 - second.from);
    expect((await bucketsOf("client", clientId, "hour"))[0]?.countMap).toEqual({
      proxy: second.from,
      target: second.from,
    });

    // Fixed; Lambda delivers again from the reported record, then (a crash, say) the whole batch.
    await dynamo(REGION).send(new DeleteCommand({ TableName: table, Key: poisoned }));
    expect(await handler({ Records: records.slice(second.from) })).toEqual({ batchItemFailures: [] });
    expect(await handler(event)).toEqual({ batchItemFailures: [] });
    for (const interval of ["minute", "hour", "day", "month"] as const)
      expect((await bucketsOf("client", clientId, interval))[0]?.countMap).toEqual({ proxy: 60, target: 60 });
    for (const proxyId of [proxies[0], proxies[second.from], proxies[59]] as string[])
      expect((await bucketsOf("proxy", proxyId, "day"))[0]?.countMap).toEqual({ proxy: 1, target: 1 });
  }, 180_000);

  it("fails the whole batch (Powertools' FullBatchFailureError, so Lambda bisects) when nothing is written", async () => {
    const clientId = `c-${randomUUID()}`;
    const proxyId = `p-${randomUUID()}`;
    const poisoned = keys.clientTelemetry(clientId, "month", bucketKey("month", AT));
    const table = getConfig().tableName;
    await dynamo(REGION).send(
      new PutCommand({ TableName: table, Item: { ...poisoned, "countMap#proxy": "x" } }),
    );
    const event = { Records: [streamRecord(requestLog(clientId, proxyId, AT, 200, true))] };
    await expect(handler(event)).rejects.toThrow(/All records failed/);
    await dynamo(REGION).send(new DeleteCommand({ TableName: table, Key: poisoned }));
    expect(await handler(event)).toEqual({ batchItemFailures: [] });
    expect((await bucketsOf("proxy", proxyId, "minute"))[0]?.countMap).toEqual({ proxy: 1, target: 1 });
  });

  it("skips records that count for nobody and reports an undecodable one with everything after it", async () => {
    const clientId = `c-${randomUUID()}`;
    const proxyId = `p-${randomUUID()}`;
    const unknownProxy = streamRecord({ ...requestLog(clientId, proxyId, AT, 404, false), clientId: null });
    const good = streamRecord(requestLog(clientId, proxyId, AT, 200, true));
    const broken = { ...streamRecord(requestLog(clientId, proxyId, AT, 200, true)), eventID: undefined };
    const after = streamRecord(requestLog(clientId, proxyId, AT, 200, true));
    const result = await handler({ Records: [unknownProxy, good, broken, after] });
    expect(result.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([
      broken.dynamodb?.SequenceNumber,
      after.dynamodb?.SequenceNumber,
    ]);
    expect((await bucketsOf("client", clientId, "day"))[0]?.countMap).toEqual({ proxy: 1, target: 1 });
  });
});
