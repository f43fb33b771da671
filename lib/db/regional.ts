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
 * Writes of configuration go through lib/db/commit.ts `commitRegional`.
 */

import { dynamo } from "#lib/aws/clients.ts";
import { GetCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "./keys.ts";
import { type Item, isExpired, queryPartition, tableName } from "./store.ts";

/** Bound on each kind of regional resource per client and region (every list stays bounded). */
export const MAX_RESOURCES_PER_REGION = 500;
/** Bound on the rules of one credential, proxy or target. */
export const MAX_RULES_PER_PARENT = 100;

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
  const result = await dynamo(region).send(
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
