/**
 * The data plane's two entry items in a regional table (docs/access-patterns.md):
 * - the proxy locator (`keys.proxyRuntime`): proxy id -> client id, written and deleted with the
 *   proxy (lib/domain/proxies.ts), because the data-plane URL carries only the proxy id;
 * - the client runtime item (`keys.clientRuntime`): the client's `configVersion` in that region
 *   and the billing status, plan, plan-limit override, and a managed client's limits and MSP
 *   suspension copied from the home region (`syncClientRuntime` below). A change of the client's
 *   regional configuration moves `configVersion` in its own transaction (lib/db/regional.ts).
 */
import * as z from "zod/mini";
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { getInRegion } from "#lib/db/regional.ts";
import { nowIso, parseStored, setExpression, tableName } from "#lib/db/store.ts";

export const ProxyLocatorItem = z.object({ clientId: z.string() });
export type ProxyLocatorItem = z.infer<typeof ProxyLocatorItem>;

export const ClientRuntimeItem = z.object({
  clientId: z.optional(z.string()),
  /** Absent until the first change of the client's regional resources: version 0. */
  configVersion: z._default(z.int(), 0),
  billingStatus: z._default(z.string(), "active"),
  planTier: z._default(z.string(), "basic"),
  planStatus: z._default(z.string(), "active"),
  /** `pendingDeletion` while the client waits for its purge: its proxies serve no traffic. */
  clientStatus: z._default(z.string(), "active"),
  /** A system administrator's override of the plan's requests per minute (null: the plan's figure). */
  rateLimitOverride: z._default(z.nullable(z.int()), null),
  /** A managed client's limits per client in this region (null: none; lib/domain/msp-enforcement.ts). */
  requestsPerMinute: z._default(z.nullable(z.int()), null),
  requestsPerDay: z._default(z.nullable(z.int()), null),
  /** Billed to its MSP, whose billing is suspended: the data plane answers 402. */
  mspSuspended: z._default(z.boolean(), false),
  /**
   * While its payments fail: when the grace period ends (epoch ms; null: no failure). From then the
   * data plane answers 402 (docs/billing.md, dunning).
   */
  suspendAt: z._default(z.nullable(z.number()), null),
});
export type ClientRuntimeItem = z.infer<typeof ClientRuntimeItem>;

export const clientRuntimeKeys = { locator: keys.proxyRuntime, runtime: keys.clientRuntime } as const;

/** Access pattern "locate a proxy for the data plane": GetItem of the locator in the proxy's region. */
export async function findProxyLocator(
  region: string,
  proxyId: string,
): Promise<ProxyLocatorItem | undefined> {
  const item = await getInRegion(region, clientRuntimeKeys.locator(proxyId));
  return item ? parseStored(ProxyLocatorItem, "proxy locator", item) : undefined;
}

/** What a client without a runtime item (no regional change yet) reads as. */
export const DEFAULT_CLIENT_RUNTIME: ClientRuntimeItem = ClientRuntimeItem.parse({});

/** Access pattern "a client's data-plane state in a region": GetItem; undefined when there is none. */
export async function findClientRuntime(
  region: string,
  clientId: string,
): Promise<ClientRuntimeItem | undefined> {
  const item = await getInRegion(region, clientRuntimeKeys.runtime(clientId));
  return item ? parseStored(ClientRuntimeItem, "client runtime", item) : undefined;
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
  /** While its payments fail: when the grace period ends (epoch ms); null: no failure. */
  suspendAt?: number | null;
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
