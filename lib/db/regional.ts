/**
 * Region-bound resources (spec 1.10): credentials, targets, proxies, rules, meters, transforms,
 * filters and overrides live in the table of the region chosen at creation and never leave it. A
 * client's resources in one region share the partition CLIENT#<clientId> of that region's table.
 *
 * Reads: the id of a resource does not say its region, so a by-id read asks every configured
 * region at once (one GetItem each, in parallel) and a list queries each region's client
 * partition. That keeps no cross-region index to drift out of step (DynamoDB transactions are
 * single-region).
 *
 * Writes: every change to a client's regional configuration goes through `commitRegional`, which
 * adds the increment of the client's `configVersion` (the client runtime item, read by the data
 * plane on every request) to the **same** TransactWriteItems as the change. A warm data plane
 * therefore sees the new version exactly when the change is visible, never later: a proxy set
 * inactive or a credential deleted stops traffic on the next request. The test stack checks that
 * no configuration item is written any other way (test/support/config-atomicity.ts).
 */

import { dynamo } from "../aws/clients.ts";
import { getConfig } from "../config.ts";
import { GetCommand } from "./document-client.ts";
import { keys } from "./keys.ts";
import {
  type Item,
  isExpired,
  nowIso,
  queryPartition,
  type Refusal,
  type TransactionStep,
  tableName,
  writeSteps,
} from "./store.ts";

/** Bound on each kind of regional resource per client and region (every list stays bounded). */
export const MAX_RESOURCES_PER_REGION = 500;
/** Bound on the rules of one credential, proxy or target. */
export const MAX_RULES_PER_PARENT = 100;
/** TransactWriteItems holds at most 100 actions; one of them is the version step. */
export const MAX_CHANGE_STEPS = 99;

export const regionalDb = (region: string) => dynamo(region);

export interface Located {
  region: string;
  item: Item;
}

/** GetItem in every region at once; the resource is in at most one of them. */
export async function findInRegions(
  key: { pKey: string; sKey: string },
  regions = getConfig().regions,
): Promise<Located | undefined> {
  const found = await Promise.all(
    regions.map(async (region) => {
      const item = await getInRegion(region, key);
      return item ? { region, item } : undefined;
    }),
  );
  return found.find((entry) => entry !== undefined);
}

/** Consistent GetItem in one region; an expired (TTL) item reads as absent. */
export async function getInRegion(region: string, key: { pKey: string; sKey: string }) {
  const result = await regionalDb(region).send(
    new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }),
  );
  return result.Item && !isExpired(result.Item) ? result.Item : undefined;
}

/** Items of one kind of a client across every region (each region one bounded Query). */
export async function listAcrossRegions(clientId: string, sKeyPrefix: string): Promise<Item[]> {
  const perRegion = await Promise.all(
    getConfig().regions.map((region) => listInRegion(region, clientId, sKeyPrefix)),
  );
  return perRegion.flat();
}

export function listInRegion(region: string, clientId: string, sKeyPrefix: string): Promise<Item[]> {
  return queryPartition(keys.clientPartition(clientId), {
    region,
    sKeyPrefix,
    max: MAX_RESOURCES_PER_REGION * 2,
  }).then((items) => items.filter((item) => !isExpired(item)));
}

/** Newest first by the creation timestamp attribute, then id: a stable order for pagination. */
export function byCreatedDesc(createdAttr: string, idAttr: string) {
  return (a: Item, b: Item) =>
    String(b[createdAttr] ?? "").localeCompare(String(a[createdAttr] ?? "")) ||
    String(a[idAttr]).localeCompare(String(b[idAttr]));
}

/** The step that moves the client's configuration version in a region (name `configVersion`). */
export function configVersionStep(clientId: string): TransactionStep {
  return {
    name: "configVersion",
    action: {
      Update: {
        TableName: tableName(),
        Key: keys.clientRuntime(clientId),
        UpdateExpression: "ADD configVersion :one SET clientId = :c, entity = :e, runtimeUpdated = :now",
        ExpressionAttributeValues: { ":one": 1, ":c": clientId, ":e": "clientRuntime", ":now": nowIso() },
      },
    },
  };
}

/** Refuse nothing: a failed condition is rethrown as the store's error. */
const noRefusal = () => undefined;

/**
 * Write a configuration change and the client's version increment in one TransactWriteItems.
 * True when written; false when it lost a race with another transaction (the caller re-reads and
 * retries: its steps were built from what it read). A failed condition is answered by `refusal`.
 */
export function tryCommitRegional(
  region: string,
  clientId: string,
  steps: readonly TransactionStep[],
  refusal: Refusal = noRefusal,
): Promise<boolean> {
  if (steps.length === 0 || steps.length > MAX_CHANGE_STEPS)
    throw new Error(`A configuration change takes 1 to ${MAX_CHANGE_STEPS} steps (got ${steps.length})`);
  return writeSteps(region, [...steps, configVersionStep(clientId)], refusal);
}

/**
 * Attempts of an optimistic writer (read, decide, write conditionally; re-read when another writer
 * committed first). Every commit moves the client's version, so concurrent changes of one client
 * meet there: 16 attempts serve about 15 parallel writers without a spurious 409.
 */
export const RACE_ATTEMPTS = 16;

/** A pause of 0 to 5 ms times the attempt, so that racing writers do not retry in step. */
export const lostRace = (attempt: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));

/** Attempts of `commitRegional` against concurrent transactions on the same client. */
const COMMIT_ATTEMPTS = 12;

/**
 * `tryCommitRegional`, repeated with a jittered pause while it loses races: the same steps are
 * safe to send again (a cancelled transaction wrote nothing, and every condition is checked
 * anew). Concurrent changes of one client meet on its runtime item, so they take turns here.
 */
export async function commitRegional(
  region: string,
  clientId: string,
  steps: readonly TransactionStep[],
  refusal: Refusal = noRefusal,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    if (await tryCommitRegional(region, clientId, steps, refusal)) return;
    if (attempt >= COMMIT_ATTEMPTS) {
      const busy = new Error("The configuration change kept conflicting with concurrent transactions");
      busy.name = "TransactionConflictException";
      throw busy;
    }
    await new Promise((resolve) => setTimeout(resolve, 10 * attempt + Math.random() * 20 * attempt));
  }
}

/**
 * Many unconditional steps (a cascade's deletes), each chunk committed with the version step.
 * Idempotent: a rerun finds what is left.
 */
export async function commitRegionalInChunks(
  region: string,
  clientId: string,
  steps: readonly TransactionStep[],
): Promise<void> {
  for (let start = 0; start < steps.length; start += MAX_CHANGE_STEPS)
    await commitRegional(region, clientId, steps.slice(start, start + MAX_CHANGE_STEPS));
}

/** A Delete step for an item (no condition). */
export function deleteStep(key: { pKey: string; sKey: string }, name = "delete"): TransactionStep {
  return { name, action: { Delete: { TableName: tableName(), Key: key } } };
}
