/**
 * Telemetry buckets as stored (spec 2.12; docs/telemetry.md): one item per (client or proxy,
 * interval, bucket) in the regional table of the proxies' region, under
 * `TELEMETRY#CLIENT#<clientId>#<interval>` or `TELEMETRY#PROXY#<proxyId>#<interval>` with the
 * bucket key (YYYY-MM-DD-HH-MM, ...) as sort key. A date range of one interval is one Query on a
 * sort-key range; a client with proxies in several regions reads each region's partition and sums
 * (lib/domain/telemetry/read.ts).
 *
 * Counters are top-level number attributes named `<map>#<key>` (`countMap#proxy`,
 * `codeCountMap#200:target`, `histogramMap#proxy:312`, ...), because ADD cannot create a nested
 * map path that does not exist yet; the read side gathers them back into the maps of 2.12.
 *
 * Writes (access pattern "add a stream batch's telemetry"): the stream consumer cuts its batch
 * into parts deterministically, and writes each part as one TransactWriteItems of a marker
 * (`STREAMBATCH#<digest of the part's records>` / `telemetry`, put only if absent) and one
 * ADD per bucket: a part delivered again finds its marker and adds nothing.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { keys } from "#lib/db/keys.ts";
import {
  commitSteps,
  nowIso,
  nowSeconds,
  parseStored,
  queryAll,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import {
  aggregate,
  type BucketDelta,
  bucketRefId,
  COUNTER_MAPS,
  COUNTER_SCALARS,
  deltasOf,
  emptyCounts,
  type TelemetryCounts,
  type TelemetryObservation,
} from "#lib/shared/telemetry/aggregate.ts";
import { TELEMETRY_INTERVALS, type TelemetryInterval } from "#lib/shared/telemetry/buckets.ts";

/** The marker's processor name (sort key of `STREAMBATCH#<digest>`). */
export const TELEMETRY_PROCESSOR = "telemetry";
/**
 * Minute buckets expire 7 days after they end, hour buckets 93 days (three months) after; day and
 * month buckets have no TTL and are kept (deleted with their client or proxy).
 */
export const TELEMETRY_RETENTION_SECONDS: Partial<Record<TelemetryInterval, number>> = {
  minute: 7 * 86_400,
  hour: 93 * 86_400,
};
/** A part's marker outlives the stream's 24 h retention, so any redelivery still finds it. */
export const BATCH_MARK_RETENTION_SECONDS = 2 * 86_400;
/** DynamoDB's limit of actions in one TransactWriteItems (the marker is one of them). */
export const MAX_TRANSACTION_ACTIONS = 100;
/** ADD clauses in one bucket's update: keeps the update expression far below DynamoDB's 4 KB. */
export const MAX_ADDS_PER_UPDATE = 150;
/** Buckets one read returns at most (spec 8: client telemetry limit, maximum 1000). */
export const MAX_TELEMETRY_BUCKETS = 1000;

const SEPARATOR = "#";
/** The stored attribute of one counter: `<map>#<key>`, or the scalar's own name. */
export const counterAttribute = (map: string, key?: string) =>
  key === undefined ? map : `${map}${SEPARATOR}${key}`;

/** The non-zero counters of `counts` as [attribute, value] pairs. */
export function counterAttributes(counts: TelemetryCounts): [string, number][] {
  const pairs: [string, number][] = [];
  for (const map of COUNTER_MAPS)
    for (const [key, value] of Object.entries(counts[map]))
      if (value !== 0) pairs.push([counterAttribute(map, key), value]);
  for (const scalar of COUNTER_SCALARS) if (counts[scalar] !== 0) pairs.push([scalar, counts[scalar]]);
  return pairs;
}

const Interval = z.enum(TELEMETRY_INTERVALS);

export const TelemetryItem = z.looseObject({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("telemetry"),
  scope: z.enum(["client", "proxy"]),
  clientId: z.string(),
  proxyId: z.string().optional(),
  interval: Interval,
  /** The bucket key (= sKey), its start and end (epoch ms). */
  bucket: z.string(),
  bucketStart: z.number().int(),
  bucketEnd: z.number().int(),
  updatedAt: z.string(),
  /** Minute and hour buckets only (TELEMETRY_RETENTION_SECONDS). */
  TTL: z.number().int().optional(),
});
export type TelemetryItem = z.infer<typeof TelemetryItem>;

export interface TelemetryBucket {
  item: TelemetryItem;
  bucket: string;
  counts: TelemetryCounts;
}

const MAP_NAMES = new Set<string>(COUNTER_MAPS);

/** A stored bucket: its attributes checked, its counters gathered back into maps. */
export function telemetryBucketOf(stored: Record<string, unknown>): TelemetryBucket {
  const item = parseStored(TelemetryItem, "telemetry bucket", stored);
  const counts = emptyCounts();
  for (const [attribute, value] of Object.entries(stored)) {
    if (typeof value !== "number") continue;
    const at = attribute.indexOf(SEPARATOR);
    const map = at < 0 ? undefined : attribute.slice(0, at);
    if (map && MAP_NAMES.has(map))
      counts[map as (typeof COUNTER_MAPS)[number]][attribute.slice(at + 1)] = value;
    else if ((COUNTER_SCALARS as readonly string[]).includes(attribute))
      counts[attribute as (typeof COUNTER_SCALARS)[number]] = value;
  }
  return { item, bucket: item.sKey, counts };
}

export const telemetryKeys = {
  bucket: (delta: Pick<BucketDelta, "ref">) =>
    delta.ref.scope === "proxy"
      ? keys.proxyTelemetry(delta.ref.proxyId as string, delta.ref.interval, delta.ref.bucket)
      : keys.clientTelemetry(delta.ref.clientId, delta.ref.interval, delta.ref.bucket),
  partition: (scope: "client" | "proxy", id: string, interval: TelemetryInterval) =>
    scope === "proxy"
      ? keys.proxyTelemetryPartition(id, interval)
      : keys.clientTelemetryPartition(id, interval),
  mark: keys.streamBatchMark,
} as const;

// ---- writing ----

/** One stream record as the writer sees it: its identity and what it counts (nothing: undefined). */
export interface TelemetryRecordInput {
  eventId: string;
  sequenceNumber: string;
  observation: TelemetryObservation | undefined;
}

/** Consecutive records written in one transaction with one marker. */
export interface TelemetryPart {
  /** Position of the part's first record in the batch, and one past its last. */
  from: number;
  to: number;
  /** SHA-256 of the part's records: the marker's key. */
  digest: string;
  firstSequenceNumber: string;
  lastSequenceNumber: string;
  deltas: BucketDelta[];
}

const digestOf = (records: readonly TelemetryRecordInput[]) => {
  const hash = createHash("sha256").update(TELEMETRY_PROCESSOR);
  for (const record of records) hash.update(`\n${record.eventId}@${record.sequenceNumber}`);
  return hash.digest("hex");
};

function partOf(records: readonly TelemetryRecordInput[], from: number, to: number): TelemetryPart {
  const mine = records.slice(from, to);
  return {
    from,
    to,
    digest: digestOf(mine),
    firstSequenceNumber: (mine[0] as TelemetryRecordInput).sequenceNumber,
    lastSequenceNumber: (mine.at(-1) as TelemetryRecordInput).sequenceNumber,
    deltas: aggregate(mine.flatMap((record) => (record.observation ? [record.observation] : []))),
  };
}

/**
 * The batch cut into parts, deterministically: records in order, each part as long as its
 * transaction (1 marker + 1 update per bucket) stays within MAX_TRANSACTION_ACTIONS and each
 * bucket's update within MAX_ADDS_PER_UPDATE counters. The cut depends only on the records, so the
 * same batch delivered again is cut the same way and each part finds its marker.
 */
export function splitIntoParts(records: readonly TelemetryRecordInput[]): TelemetryPart[] {
  const parts: TelemetryPart[] = [];
  let from = 0;
  let attributes = new Map<string, Set<string>>();
  for (const [position, record] of records.entries()) {
    const adds = new Map<string, string[]>();
    for (const delta of record.observation ? deltasOf(record.observation) : [])
      adds.set(
        bucketRefId(delta.ref),
        counterAttributes(delta.counts).map(([name]) => name),
      );
    const newBuckets = [...adds.keys()].filter((id) => !attributes.has(id)).length;
    const tooManyAdds = [...adds].some(([id, names]) => {
      const known = attributes.get(id);
      const added = names.filter((name) => !known?.has(name)).length;
      return (known?.size ?? 0) + added > MAX_ADDS_PER_UPDATE;
    });
    if (position > from && (attributes.size + newBuckets + 1 > MAX_TRANSACTION_ACTIONS || tooManyAdds)) {
      parts.push(partOf(records, from, position));
      from = position;
      attributes = new Map();
    }
    for (const [id, names] of adds) {
      const known = attributes.get(id) ?? new Set<string>();
      for (const name of names) known.add(name);
      attributes.set(id, known);
    }
  }
  if (from < records.length) parts.push(partOf(records, from, records.length));
  return parts;
}

function markStep(part: TelemetryPart): TransactionStep {
  return {
    name: `mark ${part.digest}`,
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...telemetryKeys.mark(part.digest, TELEMETRY_PROCESSOR),
          entity: "streamBatchMark",
          firstSequenceNumber: part.firstSequenceNumber,
          lastSequenceNumber: part.lastSequenceNumber,
          records: part.to - part.from,
          TTL: nowSeconds() + BATCH_MARK_RETENTION_SECONDS,
        },
        ConditionExpression: "attribute_not_exists(pKey)",
      },
    },
  };
}

function bucketStep(delta: BucketDelta, now: string): TransactionStep {
  const { ref } = delta;
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const adds = counterAttributes(delta.counts).map(([attribute, by], index) => {
    names[`#a${index}`] = attribute;
    values[`:a${index}`] = by;
    return `#a${index} :a${index}`;
  });
  const fields: Record<string, unknown> = {
    entity: "telemetry",
    scope: ref.scope,
    clientId: ref.clientId,
    proxyId: ref.scope === "proxy" ? ref.proxyId : undefined,
    interval: ref.interval,
    bucket: ref.bucket,
    bucketStart: ref.window.start,
    bucketEnd: ref.window.end,
    updatedAt: now,
    TTL:
      TELEMETRY_RETENTION_SECONDS[ref.interval] === undefined
        ? undefined
        : Math.ceil(ref.window.end / 1000) + (TELEMETRY_RETENTION_SECONDS[ref.interval] as number),
  };
  const sets = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([field, value], index) => {
      names[`#s${index}`] = field;
      values[`:s${index}`] = value;
      return `#s${index} = :s${index}`;
    });
  return {
    name: `add ${bucketRefId(ref)}`,
    action: {
      Update: {
        TableName: tableName(),
        Key: telemetryKeys.bucket(delta),
        UpdateExpression: `${adds.length ? `ADD ${adds.join(", ")} ` : ""}SET ${sets.join(", ")}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    },
  };
}

/** The steps of one part's transaction: its marker, then one ADD per bucket. */
export const partSteps = (part: TelemetryPart, now = nowIso()): TransactionStep[] => [
  markStep(part),
  ...part.deltas.map((delta) => bucketStep(delta, now)),
];

const MAX_ATTEMPTS = 5;

export interface AddPartsResult {
  /** Parts written now, and parts whose marker showed them written by an earlier delivery. */
  applied: number;
  alreadyApplied: number;
  /** Position of the first record of the first part not written (all before it are). */
  failedAt?: number;
  error?: unknown;
}

/**
 * Access pattern "add a stream batch's telemetry": each part, in order, as one TransactWriteItems
 * (its marker, put only if absent, and its ADDs). A part whose marker exists was applied by an
 * earlier delivery and is skipped; a conflict with another transaction is retried; anything else
 * stops there. `proceed` is asked before each part (the handler's time budget): false stops there.
 * `afterPart` runs after each part is written or found written (the budget draw-down, itself
 * idempotent per part): when it fails, the result stops at that part, so the part is delivered
 * again, its telemetry skipped by the marker and `afterPart` run again.
 */
export async function addTelemetryParts(
  region: string,
  parts: readonly TelemetryPart[],
  proceed: () => boolean = () => true,
  afterPart?: (part: TelemetryPart) => Promise<void>,
): Promise<AddPartsResult> {
  const result: AddPartsResult = { applied: 0, alreadyApplied: 0 };
  for (const part of parts) {
    if (part.deltas.length === 0) {
      result.applied += 1;
      continue;
    }
    if (!proceed())
      return { ...result, failedAt: part.from, error: new Error("Out of time before this part") };
    const steps = partSteps(part);
    try {
      const seen = await commitSteps(steps, {
        region,
        attempts: MAX_ATTEMPTS,
        cancelled: ({ failed }) =>
          failed.includes(`mark ${part.digest}`) ? ("alreadyApplied" as const) : undefined,
      });
      result[seen ?? "applied"] += 1;
    } catch (error) {
      return { ...result, failedAt: part.from, error };
    }
    if (afterPart) {
      try {
        await afterPart(part);
      } catch (error) {
        return { ...result, failedAt: part.from, error };
      }
    }
  }
  return result;
}

// ---- reading ----

/**
 * Access pattern "telemetry buckets of a client or proxy in a date range": one Query on the
 * interval's partition with the bucket keys as sort-key bounds (both inclusive), oldest first or
 * newest first, at most `limit` (<= MAX_TELEMETRY_BUCKETS). Expired minute and hour buckets are
 * left out (TTL deletion is late).
 */
export async function listTelemetryBuckets(
  region: string,
  query: {
    scope: "client" | "proxy";
    id: string;
    interval: TelemetryInterval;
    from: string;
    to: string;
    limit: number;
    newestFirst?: boolean;
  },
): Promise<TelemetryBucket[]> {
  const now = nowSeconds();
  const items = await queryAll(
    {
      KeyConditionExpression: "pKey = :pk AND sKey BETWEEN :from AND :to",
      ExpressionAttributeValues: {
        ":pk": telemetryKeys.partition(query.scope, query.id, query.interval),
        ":from": query.from,
        ":to": query.to,
      },
      ScanIndexForward: !query.newestFirst,
      ConsistentRead: false,
    },
    { region, max: Math.min(query.limit, MAX_TELEMETRY_BUCKETS) },
  );
  return items.filter((item) => !(typeof item.TTL === "number" && item.TTL <= now)).map(telemetryBucketOf);
}
