/**
 * Region-bound resources (spec 1.10): credentials, targets, proxies and rules live in the table of
 * the region chosen at creation and never leave it. A client's resources in one region share the
 * partition CLIENT#<clientId> of that region's table.
 *
 * The id of a resource does not say its region, so a by-id read asks every configured region at
 * once (one GetItem each, in parallel) and a list queries each region's client partition. That
 * keeps no cross-region index to drift out of step (DynamoDB transactions are single-region).
 */

import { dynamo } from "../aws/clients.ts";
import { getConfig } from "../config.ts";
import { bumpConfigVersion } from "../data-plane/client-runtime.ts";
import { GetCommand, UpdateCommand } from "../db/document-client.ts";
import { keys } from "../db/keys.ts";
import {
  type Item,
  isConditionalCheckFailure,
  isExpired,
  nowIso,
  queryPartition,
  setExpression,
  tableName,
} from "../db/store.ts";
import { notFound, validationFailed } from "./errors.ts";

/** Bound on each kind of regional resource per client and region (every list stays bounded). */
export const MAX_RESOURCES_PER_REGION = 500;
/** Bound on the rules of one credential, proxy or target. */
export const MAX_RULES_PER_PARENT = 100;

export const regionalDb = (region: string) => dynamo(region);

/** 400 naming `field` unless `region` is one of the configured regions. */
export function requireConfiguredRegion(region: string, field: string): string {
  const { regions } = getConfig();
  if (!regions.includes(region)) {
    throw validationFailed([
      { field, problem: `must be one of the configured regions: ${regions.join(", ")}` },
    ]);
  }
  return region;
}

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
      const result = await regionalDb(region).send(
        new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }),
      );
      return result.Item && !isExpired(result.Item) ? { region, item: result.Item } : undefined;
    }),
  );
  return found.find((entry) => entry !== undefined);
}

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

/**
 * Change metadata fields of a credential or target (not being deleted), stamp `updatedAttr`, and
 * bump the client's configuration version for the data plane. 404 `notFoundMessage` if absent.
 */
export async function updateRegionalItem(
  region: string,
  clientId: string,
  key: { pKey: string; sKey: string },
  fields: Record<string, unknown>,
  updatedAttr: string,
  notFoundMessage: string,
): Promise<Item> {
  try {
    const result = await regionalDb(region).send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        ...setExpression(fields, [`${updatedAttr} = :now`], { ":now": nowIso() }),
        ConditionExpression: "attribute_exists(pKey) AND attribute_not_exists(deletingAt)",
        ReturnValues: "ALL_NEW",
      }),
    );
    await bumpConfigVersion(region, clientId);
    return result.Attributes as Item;
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound(notFoundMessage);
    throw error;
  }
}
