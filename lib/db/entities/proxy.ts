/**
 * The proxy entity (spec 2.7) as stored: its item schema, its keys and the access patterns that
 * read it (docs/access-patterns.md). The domain (lib/domain/proxies.ts) works on ProxyItem, never
 * on an untyped item, so no `String(item.x)` coercion is needed.
 */
import * as z from "zod/mini";
import { keys, REGIONAL_SK } from "#lib/db/keys.ts";
import { findInRegions, listAcrossRegions, listInRegion } from "#lib/db/regional.ts";
import { parseStored } from "#lib/db/store.ts";

/** A proxy's target timeout (spec 8): whole seconds from 1 to 60, 30 when not set. Overrides per path keep to it. */
export const PROXY_TIMEOUT_SECONDS = { min: 1, max: 60, default: 30 } as const;

export const ProxyItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("proxy"),
  proxyId: z.string(),
  userId: z.string(),
  clientId: z.string(),
  parentId: z.string(),
  proxyName: z.string(),
  proxyRegion: z.string(),
  proxyProxyCredentialId: z.string(),
  proxyTargetId: z.string(),
  proxyTargetCredentialId: z.string(),
  proxyActive: z.boolean(),
  proxyDefaultRuleEffect: z.enum(["allow", "deny"]),
  proxyAlias: z.optional(z.string()),
  proxyAdditionalHeaders: z.record(z.string(), z.string()),
  proxyAdditionalQueryParams: z.record(z.string(), z.string()),
  proxyAdditionalData: z.record(z.string(), z.unknown()),
  proxyTimeoutSeconds: z.int(),
  notes: z.optional(z.string()),
  proxyCreatedAt: z.string(),
  proxyUpdatedAt: z.string(),
  /** Bumped by every change: updates are conditioned on the version they were decided from. */
  proxyVersion: z.int(),
  /** Set when a cascade has started deleting the proxy: it is then gone for every reader. */
  deletingAt: z.optional(z.string()),
});
export type ProxyItem = z.infer<typeof ProxyItem>;

/** A stored item as a ProxyItem; an item that is not one is a defect of the store, not of the caller. */
export const proxyItemOf = (item: Record<string, unknown>): ProxyItem =>
  parseStored(ProxyItem, "proxy", { entity: "proxy", proxyVersion: 1, ...item });

export const proxyKeys = {
  item: keys.proxy,
  aliasLock: keys.proxyAlias,
  /** The data plane's locator: proxy id -> client id, in the proxy's region. */
  runtimeLocator: keys.proxyRuntime,
} as const;

/** Access pattern "a proxy by client and id": one GetItem per region, in parallel. */
export async function findProxyInAnyRegion(
  clientId: string,
  proxyId: string,
): Promise<{ region: string; proxy: ProxyItem } | undefined> {
  const found = await findInRegions(proxyKeys.item(clientId, proxyId));
  return found ? { region: found.region, proxy: proxyItemOf(found.item) } : undefined;
}

/** Access pattern "a client's proxies": one Query per region on the client partition. */
export async function listProxiesOfClient(clientId: string): Promise<ProxyItem[]> {
  return (await listAcrossRegions(clientId, REGIONAL_SK.proxyPrefix)).map(proxyItemOf);
}

/** Access pattern "a client's proxies in one region" (the per-region cap). */
export async function listProxiesOfClientInRegion(region: string, clientId: string): Promise<ProxyItem[]> {
  return (await listInRegion(region, clientId, REGIONAL_SK.proxyPrefix)).map(proxyItemOf);
}
