/**
 * The meter entity (spec 2.9) and the count of a proxy's meters, as stored: their item schemas,
 * their keys and the access patterns that read them (docs/access-patterns.md). The domain
 * (lib/domain/meters.ts) and the data plane work on MeterItem, never on an untyped item.
 *
 * A meter lives beside its proxy in the proxy's region (`METER#<proxyId>#<meterId>` in the client
 * partition). The count (`METER#<proxyId>##COUNT`) sorts among the meters, so the proxy cascade,
 * which deletes everything under `METER#<proxyId>#`, deletes it with them.
 *
 * The item schemas read what was stored; they do not validate input again (patterns were compiled
 * when the meter was written, lib/domain/meter-schema.ts), so loading a proxy's meters is cheap.
 * They are zod/mini over zod-free constants; meter-schema.ts (classic zod, and re2js behind the
 * predicate schema) is imported only as a type: the data plane's cold start reads this module.
 */
import * as z from "zod/mini";
import { keys, REGIONAL_SK } from "#lib/db/keys.ts";
import { getInRegion } from "#lib/db/regional.ts";
import { parseStored, queryPartition, type TransactionStep, tableName } from "#lib/db/store.ts";
import type { MeterConfig } from "#lib/domain/meter-schema.ts";
import {
  EXTRACTION_LOCATIONS,
  MAX_METERS_PER_PROXY,
  METER_EFFECTS,
  METER_MODES,
  METER_TYPES,
  NOTIFY_TRIGGERS,
} from "#lib/shared/meter-constants.ts";
import { METER_WINDOWS } from "#lib/shared/meter-windows.ts";
import { PREDICATE_PRESENCES, VARIABLE_SOURCES } from "#lib/shared/predicate-constants.ts";

const Presence = z.enum(PREDICATE_PRESENCES);
const Pattern = z
  .optional(z.string())
  .check(z.describe("RE2 pattern the value must match; absent checks presence only"));
const Window = z.enum(METER_WINDOWS);

/** Values per window (minute, hour, day, month), each optional. */
export const StoredWindows = z.object({
  minute: z.optional(z.number()),
  hour: z.optional(z.number()),
  day: z.optional(z.number()),
  month: z.optional(z.number()),
});

export const StoredExtraction = z.object({
  location: z.enum(EXTRACTION_LOCATIONS),
  path: z.optional(z.string()).check(z.describe("Dot path into the JSON response body (location body)")),
  headerName: z.optional(z.string()).check(z.describe("Lower case (location header)")),
  defaultValue: z.optional(z.number()).check(z.describe("Used when the value is absent or not a number")),
});

export const StoredAlerts = z.object({
  enabled: z.boolean(),
  cadence: z.optional(Window),
  notifyTrigger: z.optional(z.enum(NOTIFY_TRIGGERS)),
  alertThreshold: z.optional(StoredWindows),
});

/** The stored predicates (lib/domain/predicates/schema.ts, StoredPredicates). */
export const StoredPredicateFields = {
  methods: z.array(z.string()).check(z.describe("Upper case; empty matches every method")),
  path: z.nullable(z.object({ pattern: z.string(), presence: Presence })),
  query: z.array(z.object({ name: z.string(), pattern: Pattern, presence: Presence })),
  headers: z
    .array(z.object({ name: z.string(), pattern: Pattern, presence: Presence }))
    .check(z.describe("Header names are lower case")),
  body: z.array(z.object({ path: z.string(), pattern: Pattern, presence: Presence })),
  token: z.array(z.object({ claim: z.string(), pattern: Pattern, presence: Presence })),
  variables: z.array(z.object({ name: z.string(), source: z.enum(VARIABLE_SOURCES), key: z.string() })),
};

export const MeterItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("meter"),
  meterId: z.string(),
  proxyId: z.string(),
  clientId: z.string(),
  userId: z.string(),
  parentId: z.string(),
  meterRegion: z.string(),
  // The canonical configuration (MeterConfig, lib/domain/meter-schema.ts).
  meterType: z.enum(METER_TYPES),
  meterActive: z.boolean(),
  meterMode: z.enum(METER_MODES),
  effect: z.nullable(z.enum(METER_EFFECTS)),
  limits: z.nullable(StoredWindows),
  extraction: z.nullable(StoredExtraction),
  ...StoredPredicateFields,
  limitBy: z.nullable(z.string()),
  alerts: z.nullable(StoredAlerts),
  notes: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** Bumped by every update: a PUT is conditioned on the version it merged into. */
  meterVersion: z.int(),
  /**
   * A response_value meter's mean value per request as the data plane last recorded it (internal,
   * never answered): the reservation of an instance that has not seen a value yet.
   */
  valueMean: z.optional(z.number()),
});
export type MeterItem = z.infer<typeof MeterItem>;

// The stored item holds exactly the canonical configuration: a drift between the two fails to compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const storedIsCanonical: Same<Pick<MeterItem, keyof MeterConfig>, MeterConfig> = true;
void storedIsCanonical;

/** The count of a proxy's meters, written in the same transaction as every create and delete. */
export const MeterCountItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("meter-count"),
  clientId: z.string(),
  proxyId: z.string(),
  meterCount: z.int().check(z.nonnegative()),
});
export type MeterCountItem = z.infer<typeof MeterCountItem>;

/** A stored item as a MeterItem; an item that is not one is a defect of the store, not of the caller. */
export const meterItemOf = (item: Record<string, unknown>): MeterItem =>
  parseStored(MeterItem, "meter", item);

export const meterCountItemOf = (item: Record<string, unknown>): MeterCountItem =>
  parseStored(MeterCountItem, "meter count", item);

/** The meter id under which a proxy's count is stored: `#` sorts it among the proxy's meters. */
const METER_COUNT_ID = "#COUNT";

export const meterKeys = {
  item: keys.meter,
  count: (clientId: string, proxyId: string) => keys.meter(clientId, proxyId, METER_COUNT_ID),
} as const;

/**
 * Access pattern "meters of a proxy": one Query on the client partition in the proxy's region,
 * `begins_with(sKey, METER#<proxyId>#)`, bounded (at most MAX_METERS_PER_PROXY meters and the
 * count); the count is left out. Oldest first (meter ids are random, so by `createdAt`, then id).
 */
export async function listMetersOfProxy(
  region: string,
  clientId: string,
  proxyId: string,
): Promise<MeterItem[]> {
  const items = await queryPartition(keys.clientPartition(clientId), {
    region,
    sKeyPrefix: `${REGIONAL_SK.meterPrefix}${proxyId}#`,
    max: MAX_METERS_PER_PROXY * 2,
  });
  return items
    .filter((item) => item.entity === "meter")
    .map(meterItemOf)
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.meterId.localeCompare(b.meterId));
}

/** A proxy's meter by id (GetItem in the proxy's region); undefined when there is none. */
export async function findMeter(
  region: string,
  clientId: string,
  proxyId: string,
  meterId: string,
): Promise<MeterItem | undefined> {
  const item = await getInRegion(region, meterKeys.item(clientId, proxyId, meterId));
  return item?.entity === "meter" ? meterItemOf(item) : undefined;
}

/** A proxy's meter count (GetItem in the proxy's region); undefined before its first meter. */
export async function findMeterCount(
  region: string,
  clientId: string,
  proxyId: string,
): Promise<MeterCountItem | undefined> {
  const item = await getInRegion(region, meterKeys.count(clientId, proxyId));
  return item?.entity === "meter-count" ? meterCountItemOf(item) : undefined;
}

// ---- the steps of the meter transactions (lib/domain/meters.ts composes them)

export const METER_STEPS = {
  checkProxy: "check proxy",
  count: "count meters",
  put: "write meter",
  replace: "replace meter",
  delete: "delete meter",
  uncount: "uncount meter",
} as const;

/** The proxy still exists and is not being deleted. */
export const checkProxyStep = (clientId: string, proxyId: string): TransactionStep => ({
  name: METER_STEPS.checkProxy,
  action: {
    ConditionCheck: {
      TableName: tableName(),
      Key: keys.proxy(clientId, proxyId),
      ConditionExpression: "attribute_exists(pKey) AND attribute_not_exists(deletingAt)",
    },
  },
});

/** One more meter on the proxy, unless it has MAX_METERS_PER_PROXY already (atomic: no read first). */
export const countMeterStep = (clientId: string, proxyId: string): TransactionStep => ({
  name: METER_STEPS.count,
  action: {
    Update: {
      TableName: tableName(),
      Key: meterKeys.count(clientId, proxyId),
      UpdateExpression: "SET entity = :entity, clientId = :clientId, proxyId = :proxyId ADD meterCount :one",
      ConditionExpression: "attribute_not_exists(meterCount) OR meterCount < :max",
      ExpressionAttributeValues: {
        ":entity": "meter-count",
        ":clientId": clientId,
        ":proxyId": proxyId,
        ":one": 1,
        ":max": MAX_METERS_PER_PROXY,
      },
    },
  },
});

/** One meter fewer on the proxy (never below 0). */
export const uncountMeterStep = (clientId: string, proxyId: string): TransactionStep => ({
  name: METER_STEPS.uncount,
  action: {
    Update: {
      TableName: tableName(),
      Key: meterKeys.count(clientId, proxyId),
      UpdateExpression: "ADD meterCount :minusOne",
      ConditionExpression: "meterCount > :zero",
      ExpressionAttributeValues: { ":minusOne": -1, ":zero": 0 },
    },
  },
});

/** Write a new meter (its id is new: never overwrites). */
export const putMeterStep = (meter: MeterItem): TransactionStep => ({
  name: METER_STEPS.put,
  action: { Put: { TableName: tableName(), Item: meter, ConditionExpression: "attribute_not_exists(pKey)" } },
});

/** Replace a meter with its updated version, if it is still the version `seenVersion` it was merged into. */
export const replaceMeterStep = (meter: MeterItem, seenVersion: number): TransactionStep => ({
  name: METER_STEPS.replace,
  action: {
    Put: {
      TableName: tableName(),
      Item: meter,
      ConditionExpression: "entity = :meter AND meterVersion = :seen",
      ExpressionAttributeValues: { ":meter": "meter", ":seen": seenVersion },
    },
  },
});

/** Delete a meter (only a meter: never the count that sorts beside it). */
export const deleteMeterStep = (clientId: string, proxyId: string, meterId: string): TransactionStep => ({
  name: METER_STEPS.delete,
  action: {
    Delete: {
      TableName: tableName(),
      Key: meterKeys.item(clientId, proxyId, meterId),
      ConditionExpression: "entity = :meter",
      ExpressionAttributeValues: { ":meter": "meter" },
    },
  },
});
