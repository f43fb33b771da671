/**
 * Meter alert digests as stored (docs/meters.md, "Alert digests"; docs/access-patterns.md):
 * - the occurrence item of one (client, meter, trigger) in one cadence period, in the meter's
 *   regional table, under `METERALERT#<cadence>#<periodStart>#<shard>`: a count ADDed by the
 *   stream consumer, read by the digest job with one Query per shard of a period that ended;
 * - the stream-record marker (`STREAMREC#<eventId>` / processor) written in the same transaction
 *   as the ADDs, so a record delivered twice is counted once;
 * - the digest run item of a (cadence, period) in the home table: the period is delivered.
 * The meters themselves (their alert policies) are read through lib/db/entities/meter.ts.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { PutCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import {
  commitSteps,
  homeDb,
  nowIso,
  nowSeconds,
  parseStored,
  queryAll,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import {
  ALERT_CADENCES,
  type AlertCadence,
  NOTIFY_TRIGGERS,
  type NotifyTrigger,
} from "#lib/shared/meter-constants.ts";
import type { MeterWindow } from "#lib/shared/meter-windows.ts";

/** Partitions per cadence period: the digest Queries each; the stream consumer spreads its ADDs over them. */
export const OCCURRENCE_SHARDS = 4;
/** Occurrence items read from one shard of one period (every read is bounded; see docs/meters.md). */
export const MAX_OCCURRENCES_PER_SHARD = 10_000;
/** Occurrence items expire this long after their period ends (the digest reads them well before). */
export const OCCURRENCE_RETENTION_SECONDS = 7 * 86_400;
/** A stream record's marker outlives the stream's 24 h retention, so any redelivery still finds it. */
export const STREAM_MARK_RETENTION_SECONDS = 2 * 86_400;
/** Digest run items are kept long enough to cover every cadence's catch-up window. */
export const DIGEST_RUN_RETENTION_SECONDS = 120 * 86_400;
/** DynamoDB's limit of actions in one TransactWriteItems. */
export const MAX_TRANSACTION_ACTIONS = 100;

export const MeterOccurrenceItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("meterOccurrence"),
  clientId: z.string(),
  proxyId: z.string(),
  meterId: z.string(),
  notifyTrigger: z.enum(NOTIFY_TRIGGERS),
  cadence: z.enum(ALERT_CADENCES),
  periodStart: z.number().int(),
  periodEnd: z.number().int(),
  /** Occurrences in the period (requests matched or refused, or threshold crossings). */
  occurrences: z.number().int().nonnegative(),
  /** Per limit window, for exceed and threshold (`minuteCount`, ...); absent when none. */
  minuteCount: z.number().int().optional(),
  hourCount: z.number().int().optional(),
  dayCount: z.number().int().optional(),
  monthCount: z.number().int().optional(),
  updatedAt: z.string(),
  TTL: z.number().int(),
});
export type MeterOccurrenceItem = z.infer<typeof MeterOccurrenceItem>;

export const MeterDigestRunItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("meterDigestRun"),
  cadence: z.enum(ALERT_CADENCES),
  periodStart: z.number().int(),
  periodEnd: z.number().int(),
  notifications: z.number().int().nonnegative(),
  completedAt: z.string(),
  TTL: z.number().int(),
});
export type MeterDigestRunItem = z.infer<typeof MeterDigestRunItem>;

export const meterOccurrenceItemOf = (item: Record<string, unknown>) =>
  parseStored(MeterOccurrenceItem, "meter occurrence", item);
export const meterDigestRunItemOf = (item: Record<string, unknown>) =>
  parseStored(MeterDigestRunItem, "meter digest run", item);

/** Which of the OCCURRENCE_SHARDS partitions holds a meter's occurrences (stable per meter). */
export const occurrenceShard = (meterId: string): number =>
  (createHash("sha256").update(meterId).digest()[0] as number) % OCCURRENCE_SHARDS;

export const occurrenceKeys = {
  item: (o: {
    cadence: AlertCadence;
    periodStart: number;
    clientId: string;
    meterId: string;
    notifyTrigger: NotifyTrigger;
  }) =>
    keys.meterOccurrence(
      o.cadence,
      o.periodStart,
      occurrenceShard(o.meterId),
      o.clientId,
      o.meterId,
      o.notifyTrigger,
    ),
  partition: keys.meterOccurrencePartition,
  mark: keys.streamRecordMark,
  digestRun: keys.meterDigestRun,
} as const;

/** One occurrence to add: the item it counts in and by how much, per limit window when known. */
export interface OccurrenceAdd {
  clientId: string;
  proxyId: string;
  meterId: string;
  notifyTrigger: NotifyTrigger;
  cadence: AlertCadence;
  periodStart: number;
  periodEnd: number;
  /** The limit window concerned (exceed, threshold); null for predicate_match. */
  window: MeterWindow | null;
}

/** What one stream record adds: written together with the record's marker, or not at all. */
export interface RecordContribution {
  eventId: string;
  occurrences: readonly OccurrenceAdd[];
}

const occurrenceItemId = (o: OccurrenceAdd) => JSON.stringify(occurrenceKeys.item(o));

function occurrenceStep(adds: readonly OccurrenceAdd[]): TransactionStep {
  const first = adds[0] as OccurrenceAdd;
  const perWindow = new Map<MeterWindow, number>();
  for (const add of adds) if (add.window) perWindow.set(add.window, (perWindow.get(add.window) ?? 0) + 1);
  const addClauses = [
    "occurrences :n",
    ...[...perWindow.keys()].map((window) => `${window}Count :${window}`),
  ];
  return {
    name: `add ${occurrenceItemId(first)}`,
    action: {
      Update: {
        TableName: tableName(),
        Key: occurrenceKeys.item(first),
        UpdateExpression: `ADD ${addClauses.join(", ")} SET entity = :entity, clientId = :clientId, proxyId = :proxyId, meterId = :meterId, notifyTrigger = :trigger, cadence = :cadence, periodStart = :start, periodEnd = :end, updatedAt = :now, #ttl = :ttl`,
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: {
          ":n": adds.length,
          ...Object.fromEntries([...perWindow].map(([window, count]) => [`:${window}`, count])),
          ":entity": "meterOccurrence",
          ":clientId": first.clientId,
          ":proxyId": first.proxyId,
          ":meterId": first.meterId,
          ":trigger": first.notifyTrigger,
          ":cadence": first.cadence,
          ":start": first.periodStart,
          ":end": first.periodEnd,
          ":now": nowIso(),
          ":ttl": Math.ceil(first.periodEnd / 1000) + OCCURRENCE_RETENTION_SECONDS,
        },
      },
    },
  };
}

function markStep(processor: string, eventId: string): TransactionStep {
  return {
    name: `mark ${eventId}`,
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...occurrenceKeys.mark(eventId, processor),
          entity: "streamRecordMark",
          TTL: nowSeconds() + STREAM_MARK_RETENTION_SECONDS,
        },
        ConditionExpression: "attribute_not_exists(pKey)",
      },
    },
  };
}

/** The steps of one transaction: every record's marker, then one ADD per occurrence item. */
function contributionSteps(
  processor: string,
  contributions: readonly RecordContribution[],
): TransactionStep[] {
  const byItem = new Map<string, OccurrenceAdd[]>();
  for (const contribution of contributions) {
    for (const add of contribution.occurrences) {
      const id = occurrenceItemId(add);
      byItem.set(id, [...(byItem.get(id) ?? []), add]);
    }
  }
  return [
    ...contributions.map((contribution) => markStep(processor, contribution.eventId)),
    ...[...byItem.values()].map(occurrenceStep),
  ];
}

/** Records in order, cut so that each chunk's transaction stays within MAX_TRANSACTION_ACTIONS. */
function chunksOf(contributions: readonly RecordContribution[]): RecordContribution[][] {
  const chunks: RecordContribution[][] = [];
  let current: RecordContribution[] = [];
  let items = new Set<string>();
  for (const contribution of contributions) {
    const added = new Set(items);
    for (const add of contribution.occurrences) added.add(occurrenceItemId(add));
    if (current.length > 0 && current.length + 1 + added.size > MAX_TRANSACTION_ACTIONS) {
      chunks.push(current);
      current = [];
      items = new Set(contribution.occurrences.map(occurrenceItemId));
    } else {
      items = added;
    }
    current.push(contribution);
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MAX_ATTEMPTS = 5;

/**
 * Access pattern "add a stream batch's occurrences": per chunk of records, one TransactWriteItems
 * of each record's marker (conditional: not written before) and one ADD per occurrence item. A
 * record whose marker exists was applied by an earlier delivery: it is dropped and the rest
 * retried, so a redelivered record never counts twice. Answers the position of the first
 * contribution not written (all before it are), or undefined when all are written.
 */
export async function addOccurrences(
  region: string,
  processor: string,
  contributions: readonly RecordContribution[],
): Promise<{ failedAt?: number; applied: number; alreadyApplied: number }> {
  let position = 0;
  let applied = 0;
  let alreadyApplied = 0;
  for (const chunk of chunksOf(contributions)) {
    let pending = chunk;
    for (let attempt = 1; pending.length > 0; attempt++) {
      // Any cancellation comes back here: the marks already applied leave, the rest is tried again.
      const cancelled = await commitSteps(contributionSteps(processor, pending), {
        region,
        cancelled: (cancellation) => cancellation,
      }).catch(() => "failed" as const);
      if (cancelled === undefined) {
        applied += pending.length;
        pending = [];
        continue;
      }
      const seen = new Set(
        (cancelled === "failed" ? [] : cancelled.failed)
          .filter((name) => name.startsWith("mark "))
          .map((name) => name.slice(5)),
      );
      if (attempt >= MAX_ATTEMPTS || cancelled === "failed" || (seen.size === 0 && !cancelled.conflict)) {
        return { failedAt: position, applied, alreadyApplied };
      }
      alreadyApplied += seen.size;
      pending = pending.filter((contribution) => !seen.has(contribution.eventId));
      if (seen.size === 0) await sleep(25 * 2 ** attempt);
    }
    position += chunk.length;
  }
  return { applied, alreadyApplied };
}

/** Access pattern "occurrences of a cadence period": one Query per shard partition of the period. */
export async function listOccurrencesOfPeriod(
  region: string,
  cadence: AlertCadence,
  periodStart: number,
): Promise<{ items: MeterOccurrenceItem[]; truncated: boolean }> {
  let truncated = false;
  const shards = await Promise.all(
    Array.from({ length: OCCURRENCE_SHARDS }, async (_, shard) => {
      const items = await queryAll(
        {
          KeyConditionExpression: "pKey = :pk",
          ExpressionAttributeValues: { ":pk": occurrenceKeys.partition(cadence, periodStart, shard) },
          ConsistentRead: true,
        },
        { region, max: MAX_OCCURRENCES_PER_SHARD },
      );
      if (items.length >= MAX_OCCURRENCES_PER_SHARD) truncated = true;
      return items.map(meterOccurrenceItemOf);
    }),
  );
  return { items: shards.flat(), truncated };
}

/** Access pattern "digest periods already delivered" (home table): one Query over a range of starts. */
export async function listDigestRuns(
  cadence: AlertCadence,
  fromStart: number,
  toStart: number,
): Promise<MeterDigestRunItem[]> {
  const items = await queryAll({
    KeyConditionExpression: "pKey = :pk AND sKey BETWEEN :from AND :to",
    ExpressionAttributeValues: {
      ":pk": keys.meterDigestRunPartition(cadence),
      ":from": occurrenceKeys.digestRun(cadence, fromStart).sKey,
      ":to": occurrenceKeys.digestRun(cadence, toStart).sKey,
    },
    ConsistentRead: true,
  });
  return items.map(meterDigestRunItemOf);
}

/** Records that a (cadence, period) is delivered (home table). */
export async function putDigestRun(
  run: Pick<MeterDigestRunItem, "cadence" | "periodStart" | "periodEnd" | "notifications">,
): Promise<void> {
  const item: MeterDigestRunItem = {
    ...occurrenceKeys.digestRun(run.cadence, run.periodStart),
    entity: "meterDigestRun",
    ...run,
    completedAt: nowIso(),
    TTL: nowSeconds() + DIGEST_RUN_RETENTION_SECONDS,
  };
  await homeDb().send(new PutCommand({ TableName: tableName(), Item: item }));
}
