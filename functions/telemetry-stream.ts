/**
 * The telemetry consumer of the regional table's stream (docs/telemetry.md): its own event source
 * mapping (filter: request-log INSERTs, ReportBatchItemFailures, bisect on error, bounded retries,
 * an SQS on-failure queue); locally the stream poller (local/stream-poller.ts) calls it with the
 * same event. Powertools' BatchProcessor decodes each record; the batch is then aggregated per
 * client and proxy bucket and written part by part, each part once (lib/db/entities/telemetry.ts).
 * After each part, the budgets of managed clients billed to their MSP are drawn down by the part's
 * request time, also once per part (lib/domain/msp-usage.ts); then the clients drawn down get their
 * automatic top-up check (lib/domain/msp-top-ups.ts).
 */
import { processPartialResponse } from "@aws-lambda-powertools/batch";
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { addTelemetryParts, splitIntoParts, type TelemetryRecordInput } from "#lib/db/entities/telemetry.ts";
import { runAutomaticTopUps } from "#lib/domain/msp-top-ups.ts";
import { drawDownPart } from "#lib/domain/msp-usage.ts";
import { TELEMETRY_STREAM_FUNCTION } from "#lib/infra/region-stream.ts";
import { describeError, log } from "#lib/log.ts";
import { observationOf } from "#lib/shared/telemetry/aggregate.ts";
import {
  type CountryLookup,
  type CountrySettings,
  countrySettingsOf,
} from "#lib/shared/telemetry/country.ts";
import { AggregatingBatchProcessor } from "#lib/streams/aggregating-batch-processor.ts";
import { geoipCountry } from "#lib/streams/geoip.ts";
import { decodeRecord } from "#lib/streams/stream-batch.ts";

/**
 * The GeoIP database (lib/streams/geoip.ts), else XX; CloudFront-Viewer-Country first only with
 * TRUST_CLOUDFRONT_VIEWER_COUNTRY=true (CloudFront in front of the data plane), read per batch.
 */
const countryLookup: CountryLookup = geoipCountry;
let countrySettings: CountrySettings = { trustViewerCountry: false };

interface Decoded extends TelemetryRecordInput {
  region: string;
}

/** Powertools' per-record step: a record that cannot be decoded fails (and what follows it waits). */
const decode = async (record: DynamoDBRecord): Promise<Decoded> => {
  const decoded = decodeRecord(record);
  return {
    eventId: decoded.eventId,
    sequenceNumber: decoded.sequenceNumber,
    region: decoded.region,
    observation:
      decoded.eventName === "INSERT"
        ? observationOf(decoded.newImage, countryLookup, countrySettings)
        : undefined,
  };
};

let deadline: () => boolean = () => true;

const processor = new AggregatingBatchProcessor<Decoded>(async (records) => {
  const region = (records[0] as Decoded).region;
  const parts = splitIntoParts(records);
  const drawnDown = new Set<string>();
  const result = await addTelemetryParts(region, parts, deadline, async (part) => {
    for (const clientId of await drawDownPart(part.digest, part.deltas)) drawnDown.add(clientId);
  });
  // Best effort: a top-up that fails here is tried again after the next draw-down.
  await runAutomaticTopUps([...drawnDown]);
  if (result.alreadyApplied > 0)
    log.info("Telemetry parts already applied by an earlier delivery", { parts: result.alreadyApplied });
  if (result.failedAt !== undefined)
    log.error("Telemetry part not written", {
      position: result.failedAt,
      eventId: records[result.failedAt]?.eventId,
      ...describeError(result.error),
    });
  return result;
});

export const handler = (event: DynamoDBStreamEvent, context?: Context): Promise<DynamoDBBatchResponse> => {
  countrySettings = countrySettingsOf(process.env);
  deadline = context
    ? () => context.getRemainingTimeInMillis() > TELEMETRY_STREAM_FUNCTION.deadlineMarginMs
    : () => true;
  return processPartialResponse(event, decode, processor, { context });
};
