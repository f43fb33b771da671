/**
 * The domain rules of region-bound resources (spec 1.10). Their reads are in lib/db/regional.ts,
 * the one commit path of a configuration change in lib/db/commit.ts.
 */

import { getConfig } from "#lib/config.ts";
import { commitRegional } from "#lib/db/commit.ts";
import { getInRegion } from "#lib/db/regional.ts";
import { type Item, nowIso, setExpression, tableName } from "#lib/db/store.ts";
import { notFound, validationFailed } from "#lib/shared/errors.ts";

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

/**
 * Change metadata fields of a credential or target (not being deleted) and stamp `updatedAttr`,
 * with the client's configuration version in the same transaction. 404 `notFoundMessage` if
 * absent. Returns the item as stored after the change.
 */
export async function updateRegionalItem(
  region: string,
  clientId: string,
  key: { pKey: string; sKey: string },
  fields: Record<string, unknown>,
  updatedAttr: string,
  notFoundMessage: string,
): Promise<Item> {
  await commitRegional(
    region,
    clientId,
    [
      {
        name: "update",
        action: {
          Update: {
            TableName: tableName(),
            Key: key,
            ...setExpression(fields, [`${updatedAttr} = :now`], { ":now": nowIso() }),
            ConditionExpression: "attribute_exists(pKey) AND attribute_not_exists(deletingAt)",
          },
        },
      },
    ],
    (failed) => (failed.includes("update") ? notFound(notFoundMessage) : undefined),
  );
  const updated = await getInRegion(region, key);
  if (!updated) throw notFound(notFoundMessage);
  return updated;
}
