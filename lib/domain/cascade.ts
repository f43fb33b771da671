/**
 * Cascading deletes of region-bound resources (spec 1.10): a credential or target takes the
 * proxies that use it, a proxy takes its rules, its meters (with their shared window counters,
 * `METERUSE#<meterId>`), its transforms, and its filters and overrides.
 *
 * A cascade can touch more items than one transaction holds, so it is ordered and idempotent
 * instead: the parent is marked `deletingAt` first (from then on no proxy can attach to it: proxy
 * writes check that attribute inside their transaction), then its dependants are deleted, and the
 * parent goes last. An interruption therefore never leaves a proxy pointing at something deleted,
 * and repeating the DELETE finishes the job.
 */

import { commitRegional, commitRegionalInChunks, deleteStep } from "#lib/db/commit.ts";
import { listProxiesOfClientInRegion, type ProxyItem } from "#lib/db/entities/proxy.ts";
import { deleteProxy as deleteProxySteps, PROXY_STEPS, releaseAlias } from "#lib/db/entities/proxy-steps.ts";
import { keys, meterOwnedRegionalPartitions, REGIONAL_SK } from "#lib/db/keys.ts";
import { MAX_RULES_PER_PARENT } from "#lib/db/regional.ts";
import { deletePartition, keyOf, nowIso, queryPartition, tableName } from "#lib/db/store.ts";

/**
 * Mark a resource as being deleted, with the client's configuration version: a marked proxy (or a
 * proxy whose credential or target is marked) serves no traffic from the next request on. A
 * missing one is fine (an earlier attempt got further).
 */
export async function markDeleting(region: string, key: { pKey: string; sKey: string }): Promise<void> {
  const clientId = key.pKey.replace(/^CLIENT#/, "");
  await commitRegional(
    region,
    clientId,
    [
      {
        name: "mark",
        action: {
          Update: {
            TableName: tableName(),
            Key: key,
            UpdateExpression: "SET deletingAt = if_not_exists(deletingAt, :now)",
            ConditionExpression: "attribute_exists(pKey)",
            ExpressionAttributeValues: { ":now": nowIso() },
          },
        },
      },
    ],
    // Already gone: nothing to mark.
    () => undefined,
  ).catch((error: unknown) => {
    if (!(error instanceof Error && error.name === "TransactionCanceledException")) throw error;
  });
}

/** The keys of every item that belongs to a proxy inside the client partition (rules, meters, transforms, filters, overrides). */
async function proxyChildKeys(region: string, clientId: string, proxyId: string) {
  const prefixes = [
    `${REGIONAL_SK.rulePrefix}${proxyId}#`,
    `${REGIONAL_SK.meterPrefix}${proxyId}#`,
    `${REGIONAL_SK.requestTransformPrefix}${proxyId}#`,
    `${REGIONAL_SK.responseTransformPrefix}${proxyId}#`,
    `${REGIONAL_SK.policyPrefix}${proxyId}#`,
  ];
  const children = await Promise.all(
    prefixes.map((sKeyPrefix) =>
      queryPartition(keys.clientPartition(clientId), { region, sKeyPrefix, max: MAX_RULES_PER_PARENT * 10 }),
    ),
  );
  const items = children.flat();
  return {
    keys: items.map(keyOf),
    meterIds: items.flatMap((item) =>
      item.entity === "meter" && typeof item.meterId === "string" ? [item.meterId] : [],
    ),
  };
}

/**
 * Delete one proxy: mark it, delete its meters' counter partitions, then its children, then the
 * proxy and its alias lock in one transaction (each step repeatable: a rerun finds what is left).
 */
export async function deleteProxyCascade(region: string, clientId: string, proxy: ProxyItem): Promise<void> {
  const proxyId = proxy.proxyId;
  const key = keys.proxy(clientId, proxyId);
  await markDeleting(region, key);
  const children = await proxyChildKeys(region, clientId, proxyId);
  for (const meterId of children.meterIds)
    for (const pKey of meterOwnedRegionalPartitions(meterId)) await deletePartition(pKey, { region });
  await commitRegionalInChunks(
    region,
    clientId,
    children.keys.map((child) => deleteStep(child)),
  );
  const proxyAndLocator = deleteProxySteps(clientId, proxyId);
  const alias = proxy.proxyAlias || undefined;
  if (!alias) return commitRegional(region, clientId, proxyAndLocator);
  // The alias lock moved to another proxy: delete the proxy and its locator alone.
  let aliasMoved = false;
  await commitRegional(
    region,
    clientId,
    [...proxyAndLocator, releaseAlias(clientId, alias, proxyId)],
    (failed) => {
      aliasMoved = failed.includes(PROXY_STEPS.releaseAlias);
      return undefined;
    },
  ).catch((error: unknown) => {
    if (!aliasMoved) throw error;
  });
  if (aliasMoved) await commitRegional(region, clientId, proxyAndLocator);
}

/** Delete every proxy of the client in `region` matching `predicate`; returns how many. */
export async function deleteProxiesWhere(
  region: string,
  clientId: string,
  predicate: (proxy: ProxyItem) => boolean,
): Promise<number> {
  const proxies = (await listProxiesOfClientInRegion(region, clientId)).filter(predicate);
  for (const proxy of proxies) await deleteProxyCascade(region, clientId, proxy);
  return proxies.length;
}

/** Delete a credential's or target's own rules, then the resource itself. Idempotent. */
export async function deleteResourceWithRules(
  region: string,
  clientId: string,
  parentId: string,
  key: { pKey: string; sKey: string },
): Promise<void> {
  const rules = await queryPartition(keys.clientPartition(clientId), {
    region,
    sKeyPrefix: `${REGIONAL_SK.rulePrefix}${parentId}#`,
    max: MAX_RULES_PER_PARENT * 10,
  });
  await commitRegionalInChunks(region, clientId, [
    ...rules.map((rule) => deleteStep(keyOf(rule))),
    deleteStep(key),
  ]);
}

/** Which proxies depend on a credential (as either credential) or on a target. */
export const usesCredential = (credentialId: string) => (proxy: ProxyItem) =>
  proxy.proxyProxyCredentialId === credentialId || proxy.proxyTargetCredentialId === credentialId;
export const usesTarget = (targetId: string) => (proxy: ProxyItem) => proxy.proxyTargetId === targetId;

/**
 * Delete a credential or target with the proxies that use it and its rules, in the resumable
 * order (mark, dependants, the item last). Returns the proxies deleted.
 */
export async function deleteWithDependants(
  region: string,
  clientId: string,
  parentId: string,
  key: { pKey: string; sKey: string },
  uses: (proxy: ProxyItem) => boolean,
): Promise<number> {
  await markDeleting(region, key);
  const deleted = await deleteProxiesWhere(region, clientId, uses);
  await deleteResourceWithRules(region, clientId, parentId, key);
  return deleted;
}
