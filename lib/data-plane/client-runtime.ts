/**
 * The client's data-plane state in each regional table (`keys.clientRuntime`): a configuration
 * version and the billing status, plan tier and a managed client's limits and MSP suspension
 * copied from the home region, because a region's data plane reads only its own region's table.
 *
 * Every change to a client's regional resources increments `configVersion` after it commits; a
 * warm data plane compares it with the version its cached configuration was loaded at (one
 * GetItem per request), so a rule created or a proxy deactivated takes effect on the next request.
 */

import { dynamo } from "../aws/clients.ts";
import { getConfig } from "../config.ts";
import { UpdateCommand } from "../db/document-client.ts";
import { keys } from "../db/keys.ts";
import { nowIso, setExpression, tableName } from "../db/store.ts";

export async function bumpConfigVersion(region: string, clientId: string): Promise<void> {
  await dynamo(region).send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.clientRuntime(clientId),
      UpdateExpression: "ADD configVersion :one SET clientId = :c, entity = :e, runtimeUpdated = :now",
      ExpressionAttributeValues: { ":one": 1, ":c": clientId, ":e": "clientRuntime", ":now": nowIso() },
    }),
  );
}

export interface ClientRuntimeSettings {
  billingStatus?: string;
  planTier?: string;
  planStatus?: string;
  /** `pendingDeletion` while a client waits for its purge: its proxies serve no traffic. */
  clientStatus?: string;
  /** A system administrator's override of the plan's requests per minute; null removes it. */
  rateLimitOverride?: number | null;
  /** A managed client's limits (lib/domain/msp-enforcement.ts); null: no limit. */
  requestsPerMinute?: number | null;
  requestsPerDay?: number | null;
  /** True while the client is billed to its MSP and that MSP's billing is suspended. */
  mspSuspended?: boolean;
}

/** Copy billing and plan settings from the home region to every regional table (and bump versions). */
export async function syncClientRuntime(clientId: string, settings: ClientRuntimeSettings): Promise<void> {
  const update = setExpression(
    { ...settings, clientId, entity: "clientRuntime", runtimeUpdated: nowIso() },
    [],
    { ":one": 1 },
  );
  await Promise.all(
    getConfig().regions.map((region) =>
      dynamo(region).send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.clientRuntime(clientId),
          ...update,
          UpdateExpression: `${update.UpdateExpression} ADD configVersion :one`,
        }),
      ),
    ),
  );
}
