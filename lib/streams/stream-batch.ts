/**
 * The generic consumer of a regional table's stream: takes the DynamoDB stream event Lambda sends
 * (images in AttributeValue form), decodes each record once, hands every processor the records its
 * filter patterns match (lib/infra/region-stream.ts), and answers `{batchItemFailures}`
 * (ReportBatchItemFailures) naming the first record not processed: Lambda (and the local poller)
 * retries from there. Records before it are done, so every processor must be idempotent per record
 * (a record can be delivered again after a crash or a bisected retry); see docs/streams.md.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { type NativeAttributeValue, unmarshallItem } from "#lib/aws/document-client.ts";
import type { FilterPattern } from "#lib/infra/region-stream.ts";
import { describeError, log, logReady } from "#lib/log.ts";
import { matchesAnyPattern } from "./event-filter.ts";

export type Image = Record<string, NativeAttributeValue>;

/** One stream record, decoded: plain images, the region and the time of the change. */
export interface DecodedStreamRecord {
  /** Globally unique id of the record (the idempotency key of what a processor writes for it). */
  eventId: string;
  eventName: "INSERT" | "MODIFY" | "REMOVE";
  sequenceNumber: string;
  /** The region of the table the record came from. */
  region: string;
  /** When the change was made (ApproximateCreationDateTime), epoch ms. */
  changedAt: number;
  keys: Image;
  newImage?: Image;
  oldImage?: Image;
}

export interface StreamProcessor {
  name: string;
  /** The records this processor reads (the same patterns filter the event source mapping). */
  filters: readonly FilterPattern[];
  /**
   * Process records in stream order. Answer the position (in `records`) of the first one not
   * processed, when there is one: it and everything after it will be delivered again.
   */
  process(records: readonly DecodedStreamRecord[]): Promise<{ failedAt?: number }>;
}

// The Lambda event's AttributeValue has B as base64 text, so a binary attribute decodes as that
// text. The only binary attributes are request-log bodies (gzip), which no stream processor reads.
const decodeImage = (image: NonNullable<DynamoDBRecord["dynamodb"]>["NewImage"]) =>
  image ? unmarshallItem(image as unknown as Record<string, AttributeValue>) : undefined;

export function decodeRecord(record: DynamoDBRecord): DecodedStreamRecord {
  const stream = record.dynamodb;
  if (!record.eventID || !record.eventName || !stream?.SequenceNumber)
    throw new Error("Stream record without eventID, eventName or SequenceNumber");
  const created = stream.ApproximateCreationDateTime;
  // Lambda sends epoch seconds; a value that is already milliseconds is taken as it is.
  const changedAt =
    typeof created === "number" && Number.isFinite(created)
      ? Math.round(created > 1e11 ? created : created * 1000)
      : Date.now();
  return {
    eventId: record.eventID,
    eventName: record.eventName,
    sequenceNumber: stream.SequenceNumber,
    region: record.awsRegion ?? regionOfArn(record.eventSourceARN) ?? "",
    changedAt,
    keys: decodeImage(stream.Keys) ?? {},
    newImage: decodeImage(stream.NewImage),
    oldImage: decodeImage(stream.OldImage),
  };
}

const regionOfArn = (arn: string | undefined) => arn?.split(":")[3] || undefined;

/** Process one batch with every processor; the answer names the first record to deliver again. */
export async function processStreamBatch(
  event: DynamoDBStreamEvent,
  processors: readonly StreamProcessor[],
): Promise<DynamoDBBatchResponse> {
  await logReady();
  const records = event.Records ?? [];
  let firstFailed = records.length;
  const decoded: DecodedStreamRecord[] = [];
  for (const [index, record] of records.entries()) {
    try {
      decoded.push(decodeRecord(record));
    } catch (error) {
      log.error("Undecodable stream record", { index, ...describeError(error) });
      firstFailed = index;
      break;
    }
  }
  const matched = decoded.map((record, index) => ({ record, index, raw: records[index] }));
  for (const processor of processors) {
    const mine = matched.filter((entry) => matchesAnyPattern(processor.filters, entry.raw));
    if (mine.length === 0) continue;
    try {
      const { failedAt } = await processor.process(mine.map((entry) => entry.record));
      if (failedAt !== undefined) firstFailed = Math.min(firstFailed, mine[failedAt]?.index ?? 0);
    } catch (error) {
      log.error("Stream processor failed", { processor: processor.name, ...describeError(error) });
      firstFailed = Math.min(firstFailed, mine[0]?.index ?? 0);
    }
  }
  const failed = records[firstFailed];
  const identifier = failed?.dynamodb?.SequenceNumber;
  if (failed && !identifier) throw new Error("A failed stream record has no SequenceNumber to report");
  return { batchItemFailures: identifier ? [{ itemIdentifier: identifier }] : [] };
}
