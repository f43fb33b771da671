/**
 * Everything one proxy needs to serve a request, loaded from the region's table and cached in the
 * warm function.
 *
 * Cold (or after any change of the client's regional resources): GetItem of the proxy locator
 * (proxy id -> client id, cached for good: it never changes), then in parallel the client runtime
 * item (version, billing, plan) and the proxy; then one BatchGetItem of both credentials and the
 * target and one Query per rule parent; secrets are decrypted with cached data keys; the rules are
 * compiled (patterns and order) once here, not per request.
 * Warm: one GetItem of the client runtime item; an unchanged `configVersion` means the cached
 * configuration is current (lib/data-plane/client-runtime.ts bumps it on every change).
 */

import { dynamo } from "../aws/clients.ts";
import { UpdateCommand } from "../db/document-client.ts";
import { keys, REGIONAL_SK } from "../db/keys.ts";
import { batchGet, type Item, queryPartition, tableName } from "../db/store.ts";
import { getInRegion } from "../domain/regional.ts";
import { type CompiledRules, compileRules, type EvaluableRule } from "../domain/rules/rule-evaluator.ts";
import { decryptSecretCached, type SecretEnvelope } from "../vault/envelope.ts";
import { type JwksDocument, jwksCache } from "./jwks-cache.ts";

export interface LoadedCredential {
  item: Item;
  secret: Record<string, unknown>;
}

export interface ProxyRuntime {
  proxyId: string;
  clientId: string;
  region: string;
  /** The client's configVersion this was loaded at. */
  version: number;
  billingStatus: string;
  planTier: string;
  planStatus: string;
  clientStatus: string;
  proxy: Item;
  target?: Item;
  proxyCredential?: LoadedCredential;
  targetCredential?: LoadedCredential;
  rules: { credential: EvaluableRule[]; proxy: EvaluableRule[]; target: EvaluableRule[] };
  /** The same rules sorted and compiled once per load: the data plane evaluates these. */
  compiledRules: { credential: CompiledRules; proxy: CompiledRules; target: CompiledRules };
}

const locators = new Map<string, string>();
/** credentialId -> where its record is, for writing fetched JWKS back onto it. */
const credentialHomes = new Map<string, { region: string; clientId: string }>();

// Spec 5.4: the keys of a jwtVerify credential are cached on the credential record, so a cold
// function starts with them instead of fetching the JWKS again.
jwksCache.setPersist(async (credentialId: string, jwks: JwksDocument) => {
  const home = credentialHomes.get(credentialId);
  if (!home) return;
  await dynamo(home.region).send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.credential(home.clientId, credentialId),
      UpdateExpression: "SET jwksCache = :jwks",
      ConditionExpression: "attribute_exists(pKey)",
      ExpressionAttributeValues: { ":jwks": jwks },
    }),
  );
});
const runtimes = new Map<string, ProxyRuntime>();
const MAX_CACHED_PROXIES = 2000;

/** Forget cached configuration (tests). */
export function clearRuntimeCache(): void {
  locators.clear();
  runtimes.clear();
}

async function loadCredential(region: string, item: Item | undefined): Promise<LoadedCredential | undefined> {
  if (!item || item.deletingAt) return undefined;
  const credentialId = String(item.credentialId);
  if (credentialHomes.size >= MAX_CACHED_PROXIES * 2) credentialHomes.clear();
  credentialHomes.set(credentialId, { region, clientId: String(item.clientId) });
  const stored = item.jwksCache as JwksDocument | undefined;
  if (stored?.keys && !jwksCache.peek(credentialId)) jwksCache.seed(credentialId, stored);
  const secret = await decryptSecretCached<Record<string, unknown>>(item.secretEnvelope as SecretEnvelope, {
    region,
    clientId: String(item.clientId),
    credentialId: String(item.credentialId),
  });
  return { item, secret };
}

const rulesOf = (region: string, clientId: string, parentId: string | undefined) =>
  parentId
    ? queryPartition(keys.clientPartition(clientId), {
        region,
        sKeyPrefix: `${REGIONAL_SK.rulePrefix}${parentId}#`,
        max: 200,
      }).then((items) => items.filter((item) => item.entity === "rule") as unknown as EvaluableRule[])
    : Promise.resolve([] as EvaluableRule[]);

async function loadFull(region: string, proxyId: string, clientId: string, runtimeItem: Item | undefined) {
  const proxy = await getInRegion(region, keys.proxy(clientId, proxyId));
  if (!proxy) return undefined;
  const credentialId = String(proxy.proxyProxyCredentialId);
  const targetCredentialId = String(proxy.proxyTargetCredentialId);
  const targetId = String(proxy.proxyTargetId);
  const [linked, credentialRules, proxyRules, targetRules] = await Promise.all([
    batchGet(
      [
        keys.credential(clientId, credentialId),
        keys.credential(clientId, targetCredentialId),
        keys.target(clientId, targetId),
      ],
      { region },
    ),
    rulesOf(region, clientId, credentialId),
    rulesOf(region, clientId, proxyId),
    rulesOf(region, clientId, targetId),
  ]);
  const find = (entity: string, idField: string, id: string) =>
    linked.find((item) => item.entity === entity && item[idField] === id);
  const [proxyCredential, targetCredential] = await Promise.all([
    loadCredential(region, find("credential", "credentialId", credentialId)),
    loadCredential(region, find("credential", "credentialId", targetCredentialId)),
  ]);
  const target = find("target", "targetId", targetId);
  const runtime: ProxyRuntime = {
    proxyId,
    clientId,
    region,
    version: Number(runtimeItem?.configVersion ?? 0),
    billingStatus: String(runtimeItem?.billingStatus ?? "active"),
    planTier: String(runtimeItem?.planTier ?? "basic"),
    planStatus: String(runtimeItem?.planStatus ?? "active"),
    clientStatus: String(runtimeItem?.clientStatus ?? "active"),
    proxy,
    target: target && !target.deletingAt ? target : undefined,
    proxyCredential,
    targetCredential,
    rules: { credential: credentialRules, proxy: proxyRules, target: targetRules },
    compiledRules: {
      credential: compileRules(credentialRules),
      proxy: compileRules(proxyRules),
      target: compileRules(targetRules),
    },
  };
  return runtime;
}

export interface LoadedRuntime {
  runtime: ProxyRuntime;
  /** True when read from the table during this call (its version is current, not assumed). */
  fresh: boolean;
}

/**
 * The configuration of a proxy in this region, or undefined when no such proxy exists.
 * `revalidate: false` returns a cached copy without any call (the caller then checks the version
 * inside its rate-limit transaction); `revalidate: true` compares it with the current
 * `configVersion` first (one GetItem) and reloads it when it changed.
 */
export async function loadProxyRuntime(
  region: string,
  proxyId: string,
  options: { revalidate: boolean } = { revalidate: true },
): Promise<LoadedRuntime | undefined> {
  const cached = runtimes.get(proxyId);
  if (cached && !options.revalidate) return { runtime: cached, fresh: false };
  let clientId = locators.get(proxyId);
  if (!clientId) {
    const locator = await getInRegion(region, keys.proxyRuntime(proxyId));
    if (!locator) return undefined;
    clientId = String(locator.clientId);
    if (locators.size >= MAX_CACHED_PROXIES) locators.clear();
    locators.set(proxyId, clientId);
  }
  const runtimeItem = await getInRegion(region, keys.clientRuntime(clientId));
  const version = Number(runtimeItem?.configVersion ?? 0);
  if (cached && cached.version === version && runtimeItem) return { runtime: cached, fresh: true };
  const loaded = await loadFull(region, proxyId, clientId, runtimeItem);
  if (!loaded) {
    // Deleted since it was located: forget it, so a new proxy never inherits a stale locator.
    locators.delete(proxyId);
    runtimes.delete(proxyId);
    return undefined;
  }
  if (runtimes.size >= MAX_CACHED_PROXIES) runtimes.clear();
  runtimes.set(proxyId, loaded);
  return { runtime: loaded, fresh: true };
}
