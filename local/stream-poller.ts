/**
 * Locally, what Lambda's event source mapping does in AWS: reads each region's table stream
 * (DescribeTable -> LatestStreamArn, DescribeStream -> shards, GetShardIterator, GetRecords), keeps
 * the records the mapping's filter patterns match (lib/infra/region-stream.ts, the same data the
 * CDK stack gives the mapping), and calls the same handler (functions/region-stream.ts) with the
 * same event shape: batches of at most `batchSize` records of one shard, in order, each record
 * with `eventSourceARN` and the table's region. A batch item failure is retried from that record,
 * a thrown error bisects the batch, and after `maximumRetryAttempts` the records are dropped with
 * an error line (AWS sends them to the failure queue). One shard is read by one loop at a time.
 */
import { DescribeTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import {
  type FilterPattern,
  REGION_STREAM_SETTINGS,
  regionStreamFilterPatterns,
} from "#lib/infra/region-stream.ts";
import { matchesAnyPattern } from "#lib/streams/event-filter.ts";
import {
  type DynamoDbStreamsClient,
  dynamoDbStreamsClient,
  type StreamRecordWire,
} from "./dynamodb-streams.ts";

export type StreamConsumerSettings = Omit<typeof REGION_STREAM_SETTINGS, "startingPosition"> & {
  startingPosition: "LATEST" | "TRIM_HORIZON";
};

/** Several pollers (one per event source mapping) as one: drain waits for all. */
export function allPollers(pollers: readonly StreamPoller[]): StreamPoller {
  return {
    drain: async () => {
      await Promise.all(pollers.map((poller) => poller.drain()));
    },
    stop: async () => {
      await Promise.all(pollers.map((poller) => poller.stop()));
    },
  };
}

export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | undefined>;

export interface StreamPollerOptions {
  regions: readonly string[];
  tableName: string;
  handler: StreamHandler;
  /** Pause between polls of a shard that returned nothing. */
  idleMs?: number;
  startingPosition?: "LATEST" | "TRIM_HORIZON";
  /** The mapping's filter patterns and settings; default: the region stream consumer's. */
  patterns?: readonly FilterPattern[];
  settings?: StreamConsumerSettings;
  /** Where dropped batches are reported (AWS: the on-failure queue). */
  onDropped?: (records: DynamoDBRecord[], reason: string) => void;
  /**
   * The local stack's clock (LocalStackOptions.clock): each record's ApproximateCreationDateTime,
   * stamped by the emulator on the real clock, is moved by the difference when it is delivered.
   */
  clock?: () => number;
}

export interface StreamPoller {
  /** Resolves once every record written before the call has been delivered (and retried as needed). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

interface ShardCursor {
  region: string;
  streamArn: string;
  shardId: string;
  iterator: string | undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const patterns = options.patterns ?? regionStreamFilterPatterns();
  const settings = options.settings ?? REGION_STREAM_SETTINGS;
  const idleMs = options.idleMs ?? 250;
  const onDropped =
    options.onDropped ??
    ((records, reason) =>
      process.stderr.write(`stream poller: dropped ${records.length} record(s) after retries: ${reason}\n`));
  const dynamoClients = options.regions.map((region) => new DynamoDBClient({ region }));
  const streams = new Map<string, DynamoDbStreamsClient>();
  const cursors: ShardCursor[] = [];
  const known = new Set<string>();

  async function discover(region: string, client: DynamoDBClient, position: "LATEST" | "TRIM_HORIZON") {
    const table = await client.send(new DescribeTableCommand({ TableName: options.tableName }));
    const streamArn = table.Table?.LatestStreamArn;
    if (!streamArn) throw new Error(`Table ${options.tableName} in ${region} has no stream`);
    let api = streams.get(region);
    if (!api) {
      api = dynamoDbStreamsClient({ region, credentials: client.config.credentials });
      streams.set(region, api);
    }
    let startShard: string | undefined;
    do {
      const described = await api.describeStream(streamArn, startShard);
      for (const shard of described.StreamDescription.Shards ?? []) {
        const id = `${streamArn}|${shard.ShardId}`;
        if (known.has(id)) continue;
        known.add(id);
        const { ShardIterator } = await api.getShardIterator({
          StreamArn: streamArn,
          ShardId: shard.ShardId,
          ShardIteratorType: position,
        });
        cursors.push({ region, streamArn, shardId: shard.ShardId, iterator: ShardIterator });
      }
      startShard = described.StreamDescription.LastEvaluatedShardId;
    } while (startShard);
  }

  async function invoke(records: DynamoDBRecord[], attempt = 0): Promise<void> {
    let pending = records;
    let attempts = attempt;
    while (pending.length > 0) {
      let failedFrom: number | undefined;
      let reason = "";
      try {
        const result = await options.handler({ Records: pending });
        const failures = result?.batchItemFailures ?? [];
        if (failures.length === 0) return;
        const positions = failures.map((failure) =>
          pending.findIndex((record) => record.dynamodb?.SequenceNumber === failure.itemIdentifier),
        );
        // An identifier that names no record of the batch fails the whole batch (as Lambda does).
        failedFrom = positions.some((position) => position < 0) ? 0 : Math.min(...positions);
        reason = "batch item failure";
      } catch (error) {
        reason = error instanceof Error ? error.message : String(error);
        if (settings.bisectBatchOnFunctionError && pending.length > 1) {
          const half = Math.ceil(pending.length / 2);
          await invoke(pending.slice(0, half), attempts + 1);
          await invoke(pending.slice(half), attempts + 1);
          return;
        }
        failedFrom = 0;
      }
      attempts += 1;
      pending = pending.slice(failedFrom);
      if (attempts > settings.maximumRetryAttempts) {
        onDropped(pending, reason);
        return;
      }
      await sleep(Math.min(1000, 50 * 2 ** attempts));
    }
  }

  const asLambdaRecord = (cursor: ShardCursor, record: StreamRecordWire): DynamoDBRecord => ({
    ...(record as DynamoDBRecord),
    ...onStackClock(record as DynamoDBRecord),
    // The table's region (some emulators write a fixed one) and the stream, as Lambda adds them.
    awsRegion: cursor.region,
    eventSourceARN: cursor.streamArn,
  });
  /** The record's creation time on the stack's clock, when it has one (epoch seconds, as Lambda's). */
  const onStackClock = (record: DynamoDBRecord): Partial<DynamoDBRecord> => {
    const created = record.dynamodb?.ApproximateCreationDateTime;
    if (!options.clock || typeof created !== "number") return {};
    const shiftMs = options.clock() - Date.now();
    const shifted = created > 1e11 ? created + shiftMs : created + shiftMs / 1000;
    return { dynamodb: { ...record.dynamodb, ApproximateCreationDateTime: shifted } };
  };

  /** One GetRecords per open shard; delivers what it read. Answers how many records were read. */
  async function pollOnce(): Promise<number> {
    let read = 0;
    for (const cursor of cursors) {
      if (!cursor.iterator) continue;
      const api = streams.get(cursor.region) as DynamoDbStreamsClient;
      const page = await api.getRecords(cursor.iterator, 1000);
      cursor.iterator = page.NextShardIterator;
      const records = (page.Records ?? []).map((record) => asLambdaRecord(cursor, record));
      read += records.length;
      const wanted = records.filter((record) => matchesAnyPattern(patterns, record));
      for (let offset = 0; offset < wanted.length; offset += settings.batchSize) {
        await invoke(wanted.slice(offset, offset + settings.batchSize));
      }
    }
    return read;
  }

  // One poll at a time: the background loop and drain() queue on the same chain.
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const next = chain.then(work, work);
    chain = next.catch(() => undefined);
    return next;
  };

  await Promise.all(
    options.regions.map((region, index) =>
      discover(
        region,
        dynamoClients[index] as DynamoDBClient,
        options.startingPosition ?? settings.startingPosition,
      ),
    ),
  );

  let stopped = false;
  let lastDiscovery = Date.now();
  const loop = (async () => {
    while (!stopped) {
      try {
        const read = await serial(async () => {
          if (Date.now() - lastDiscovery > 60_000) {
            // New shards (AWS and LocalStack roll them over): read them from their beginning.
            lastDiscovery = Date.now();
            await Promise.all(
              options.regions.map((region, index) =>
                discover(region, dynamoClients[index] as DynamoDBClient, "TRIM_HORIZON"),
              ),
            );
          }
          return pollOnce();
        });
        if (read === 0) await sleep(idleMs);
      } catch (error) {
        if (!stopped)
          process.stderr.write(`stream poller: ${error instanceof Error ? error.message : String(error)}\n`);
        await sleep(idleMs * 4);
      }
    }
  })();

  return {
    async drain() {
      // Until a full pass over every shard reads nothing: all written before now is delivered.
      for (let pass = 0; pass < 1000; pass++) {
        if ((await serial(pollOnce)) === 0) return;
      }
      throw new Error("stream poller: drain did not settle");
    },
    async stop() {
      stopped = true;
      await loop;
      for (const client of dynamoClients) client.destroy();
    },
  };
}
