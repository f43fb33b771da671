/**
 * DynamoDB Streams records as Lambda delivers them to a stream consumer (AttributeValue images,
 * creation time in seconds, a sequence number), for tests that hand a consumer its batch directly.
 */
import type { DynamoDBRecord } from "aws-lambda";
import { marshallItem } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";

/**
 * Numbers the records of one test file: each file starts its own range, so consumers' idempotency
 * markers (which name the sequence numbers) never meet another file's in the shared emulator.
 */
export function sequenceFrom(first: bigint): () => string {
  let sequence = first;
  return () => {
    sequence += 1n;
    return sequence.toString();
  };
}

/** The INSERT record of `item` in `region`'s table stream, created at `at` (ms). */
export function insertRecord(
  item: Record<string, unknown>,
  options: { region: string; at: number; sequenceNumber: string },
): DynamoDBRecord {
  return {
    eventID: crypto.randomUUID(),
    eventName: "INSERT",
    eventVersion: "1.1",
    eventSource: "aws:dynamodb",
    awsRegion: options.region,
    eventSourceARN: `arn:aws:dynamodb:${options.region}:000000000000:table/${getConfig().tableName}/stream/x`,
    dynamodb: {
      ApproximateCreationDateTime: Math.floor(options.at / 1000),
      Keys: marshallItem({ pKey: item.pKey, sKey: item.sKey }) as never,
      NewImage: marshallItem(item) as never,
      SequenceNumber: options.sequenceNumber,
      SizeBytes: 100,
      StreamViewType: "NEW_AND_OLD_IMAGES",
    },
  };
}
