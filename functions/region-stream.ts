/**
 * The regional table's stream consumer (DynamoDB Streams event source mapping, ReportBatchItemFailures;
 * locally the stream poller of local/stream-poller.ts). Each processor gets the records its filter
 * patterns match (lib/infra/region-stream.ts); the answer names the first record to deliver again.
 */
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from "aws-lambda";
import { meterAlertProcessor } from "#lib/domain/meter-alerts.ts";
import { transformSuspensionProcessor } from "#lib/domain/transform-suspension-alerts.ts";
import { processStreamBatch, type StreamProcessor } from "#lib/streams/stream-batch.ts";

export const processors: readonly StreamProcessor[] = [meterAlertProcessor, transformSuspensionProcessor];

export const handler = (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> =>
  processStreamBatch(event, processors);
