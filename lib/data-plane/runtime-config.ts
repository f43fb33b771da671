/**
 * Everything one proxy needs to serve a request, loaded from the region's table and cached in the
 * warm function.
 *
 * Cold (or after any change of the client's regional resources): GetItem of the proxy locator
 * (proxy id -> client id, cached for good: it never changes), then in parallel the client runtime
 * item (version, billing, plan, a managed client's limits and MSP suspension) and the proxy; then one BatchGetItem of both credentials, the
 * target and the proxy's filters and overrides items (docs/filters.md) and one Query per rule parent; secrets are decrypted with cached data keys; the rules and
 * meters are compiled (patterns and order) once here, not per request (`compileRuntime`, which
 * loads re2js first when a pattern needs it: a cold start for a proxy without patterns never reads it).
 * The same BatchGetItem reads the proxy's two transform counts: only a proxy with transforms loads
 * them (transform-plan.ts, on demand: one Query per kind with their code, compiled in the sandbox
 * once per load; the contexts of a replaced configuration are disposed).
 * Warm: nothing is read here. The count stage's freshness check (freshness.ts: strict, one
 * GetItem of the client's `configVersion` per request; relaxed, within a bound) compares it with
 * the version the cached configuration was loaded at; when it moved, `revalidate` reads the client
 * runtime item (one GetItem) and reloads what changed.
 */

import { type CompiledPolicies, NO_POLICIES } from "#lib/data-plane/stages/filter.ts";
import {
  type ClientRuntimeItem,
  DEFAULT_CLIENT_RUNTIME,
  findClientRuntime,
  findProxyLocator,
} from "#lib/db/entities/client-runtime.ts";
import { type CredentialItem, credentialItemOf, credentialKeys } from "#lib/db/entities/credential.ts";
import { listMetersOfProxy, type MeterItem } from "#lib/db/entities/meter.ts";
import { type ProxyItem, proxyItemOf, proxyKeys } from "#lib/db/entities/proxy.ts";
import { listRulesOfParent } from "#lib/db/entities/rule.ts";
import { type TargetItem, targetItemOf, targetKeys } from "#lib/db/entities/target.ts";
import { keys } from "#lib/db/keys.ts";
import { getInRegion } from "#lib/db/regional.ts";
import { batchGet } from "#lib/db/store.ts";
import { type CompiledRules, loadRuleEvaluator, NO_RULES } from "#lib/domain/rules/access-layers.ts";
import { loadRuleEngine } from "#lib/domain/rules/regex.ts";
import type { EvaluableRule } from "#lib/domain/rules/rule-evaluator.ts";
import { loadOnce } from "#lib/lazy.ts";
import type { JwksDocument } from "./jwks-cache.ts";
import { rememberCredentialHome } from "./jwks-homes.ts";
import { type CompiledMeter, compileMeters } from "./meter-plan.ts";
import type { RuntimeTransforms } from "./transform-plan.ts";

export interface LoadedCredential {
  item: CredentialItem;
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
  /** A system administrator's override of the plan's requests per minute (null: the plan's). */
  rateLimitOverride: number | null;
  /** A managed client's limits, counted per client in this region (null: none). */
  requestsPerMinute: number | null;
  requestsPerDay: number | null;
  /** Billed to its MSP, whose billing is suspended (402 like the client's own suspension). */
  mspSuspended: boolean;
  /** While its payments fail: when the grace period ends (epoch ms, null: no failure); 402 from then. */
  suspendAt: number | null;
  proxy: ProxyItem;
  target?: TargetItem;
  proxyCredential?: LoadedCredential;
  targetCredential?: LoadedCredential;
  rules: { credential: EvaluableRule[]; proxy: EvaluableRule[]; target: EvaluableRule[] };
  /** The same rules sorted and compiled once per load: the data plane evaluates these. */
  compiledRules: { credential: CompiledRules; proxy: CompiledRules; target: CompiledRules };
  /** The proxy's active meters, compiled once per load. */
  meters: CompiledMeter[];
  /** The proxy's active transforms, compiled once per load (absent when it has none). */
  transforms?: RuntimeTransforms;
  /** The proxy's filters and path overrides, compiled once per load (docs/filters.md). */
  policies: CompiledPolicies;
}

const locators = new Map<string, string>();
const runtimes = new Map<string, ProxyRuntime>();
const MAX_CACHED_PROXIES = 2000;

/** A configuration leaves the cache: its transforms' sandbox contexts are disposed. */
function retire(runtime: ProxyRuntime | undefined): void {
  const transforms = runtime?.transforms;
  if (!transforms) return;
  import("./transform-plan.ts")
    .then(({ retireTransforms }) => retireTransforms(transforms))
    .catch(() => undefined);
}

function clearRuntimes(): void {
  for (const runtime of runtimes.values()) retire(runtime);
  runtimes.clear();
}

/** Forget cached configuration (tests). */
export function clearRuntimeCache(): void {
  locators.clear();
  clearRuntimes();
}

/** The kinds of transforms a proxy has, from its count items (read in the configuration's BatchGetItem). */
function transformKinds(
  items: readonly Record<string, unknown>[],
  clientId: string,
  proxyId: string,
): ("request" | "response")[] {
  return (["request", "response"] as const).filter((kind) => {
    const { sKey } = keys.transformCount(clientId, kind, proxyId);
    const count = items.find((item) => item.entity === "transform-count" && item.sKey === sKey);
    return typeof count?.transformCount === "number" && count.transformCount > 0;
  });
}

/**
 * The secret envelope (AES-GCM, the data-key cache, KMS) runs when a credential is loaded, never
 * on a warm request: loaded on demand, not at a cold start (docs/performance.md).
 */
const envelope = loadOnce(() => import("#lib/vault/envelope.ts"));

const isJwks = (value: unknown): value is JwksDocument =>
  typeof value === "object" && value !== null && Array.isArray((value as { keys?: unknown }).keys);

async function loadCredential(region: string, item: CredentialItem | undefined) {
  if (!item || item.deletingAt) return undefined;
  const { credentialId, clientId } = item;
  rememberCredentialHome(credentialId, region, clientId);
  if (isJwks(item.jwksCache)) {
    // The JWKS cache (and jose) are loaded for jwtVerify credentials only, not at a cold start.
    const { jwksCache } = await import("./jwks-cache.ts");
    if (!jwksCache.peek(credentialId)) jwksCache.seed(credentialId, item.jwksCache);
  }
  const { decryptSecretCached } = await envelope();
  const secret = await decryptSecretCached<Record<string, unknown>>(item.secretEnvelope, {
    region,
    clientId,
    credentialId,
  });
  return { item, secret } satisfies LoadedCredential;
}

type RuleLayers = { readonly [Layer in keyof ProxyRuntime["rules"]]: readonly EvaluableRule[] };

/** A rule compiles a pattern: a path check, or a header or query check with a pattern. */
const ruleHasPattern = (rule: EvaluableRule): boolean =>
  Boolean(rule.path ?? rule.pathPattern) ||
  [...(rule.headerChecks ?? []), ...(rule.queryChecks ?? [])].some(
    (check) => typeof check.pattern === "string",
  );

/** An active meter compiles a pattern: a path predicate, or a query, header, body or token one with a pattern. */
const meterHasPattern = (meter: MeterItem): boolean =>
  meter.meterActive &&
  (meter.path !== null ||
    [...meter.query, ...meter.headers, ...meter.body, ...meter.token].some(
      (check) => typeof check.pattern === "string",
    ));

/**
 * The rules and meters of a load, compiled. re2js is loaded on demand (lib/domain/rules/regex.ts):
 * it is awaited here, before compiling, when a rule or an active meter has a pattern; the rule
 * evaluator when there is a rule (lib/domain/rules/access-layers.ts).
 */
export async function compileRuntime(
  rules: RuleLayers,
  meters: readonly MeterItem[],
): Promise<Pick<ProxyRuntime, "compiledRules" | "meters">> {
  const layers = [rules.credential, rules.proxy, rules.target];
  if (layers.some((layer) => layer.some(ruleHasPattern)) || meters.some(meterHasPattern))
    await loadRuleEngine();
  const compileRules = layers.some((layer) => layer.length > 0)
    ? (await loadRuleEvaluator()).compileRules
    : () => NO_RULES;
  return {
    compiledRules: {
      credential: compileRules(rules.credential),
      proxy: compileRules(rules.proxy),
      target: compileRules(rules.target),
    },
    meters: compileMeters(meters),
  };
}

/**
 * The proxy's filters and overrides, compiled; their code (item schemas, BlockList, payload
 * filter) is loaded on demand, only for a proxy that has such an item.
 */
async function loadPolicies(
  filters: Record<string, unknown> | undefined,
  overrides: Record<string, unknown> | undefined,
): Promise<CompiledPolicies> {
  if (!filters && !overrides) return NO_POLICIES;
  const { compilePolicies } = await import("./policies.ts");
  return compilePolicies(filters, overrides);
}

const rulesOf = (region: string, clientId: string, parentId: string): Promise<EvaluableRule[]> =>
  listRulesOfParent(region, clientId, parentId);

async function loadFull(
  region: string,
  proxyId: string,
  clientId: string,
  settings: ClientRuntimeItem,
): Promise<ProxyRuntime | undefined> {
  const stored = await getInRegion(region, proxyKeys.item(clientId, proxyId));
  if (!stored) return undefined;
  const proxy = proxyItemOf(stored);
  const credentialId = proxy.proxyProxyCredentialId;
  const targetCredentialId = proxy.proxyTargetCredentialId;
  const targetId = proxy.proxyTargetId;
  const [linked, credentialRules, proxyRules, targetRules, meters] = await Promise.all([
    batchGet(
      [
        credentialKeys.item(clientId, credentialId),
        credentialKeys.item(clientId, targetCredentialId),
        targetKeys.item(clientId, targetId),
        keys.transformCount(clientId, "request", proxyId),
        keys.transformCount(clientId, "response", proxyId),
        keys.proxyFilters(clientId, proxyId),
        keys.proxyOverrides(clientId, proxyId),
      ],
      { region },
    ),
    rulesOf(region, clientId, credentialId),
    rulesOf(region, clientId, proxyId),
    rulesOf(region, clientId, targetId),
    listMetersOfProxy(region, clientId, proxyId),
  ]);
  const credentials = linked.filter((item) => item.entity === "credential").map(credentialItemOf);
  const targets = linked.filter((item) => item.entity === "target").map(targetItemOf);
  const kinds = transformKinds(linked, clientId, proxyId);
  const [proxyCredential, targetCredential, transforms] = await Promise.all([
    loadCredential(
      region,
      credentials.find((item) => item.credentialId === credentialId),
    ),
    loadCredential(
      region,
      credentials.find((item) => item.credentialId === targetCredentialId),
    ),
    kinds.length > 0
      ? import("./transform-plan.ts").then(({ loadTransforms }) =>
          loadTransforms(region, clientId, proxyId, kinds),
        )
      : undefined,
  ]);
  const target = targets.find((item) => item.targetId === targetId);
  const filters = linked.find((item) => item.entity === "proxyFilters");
  const overrides = linked.find((item) => item.entity === "proxyOverrides");
  const rules = { credential: credentialRules, proxy: proxyRules, target: targetRules };
  return {
    proxyId,
    clientId,
    region,
    version: settings.configVersion,
    billingStatus: settings.billingStatus,
    planTier: settings.planTier,
    planStatus: settings.planStatus,
    clientStatus: settings.clientStatus,
    rateLimitOverride: settings.rateLimitOverride,
    requestsPerMinute: settings.requestsPerMinute,
    requestsPerDay: settings.requestsPerDay,
    mspSuspended: settings.mspSuspended,
    suspendAt: settings.suspendAt,
    proxy,
    target: target && !target.deletingAt ? target : undefined,
    proxyCredential,
    targetCredential,
    rules,
    ...(await compileRuntime(rules, meters)),
    ...(transforms ? { transforms } : {}),
    policies: await loadPolicies(filters, overrides),
  };
}

export interface LoadedRuntime {
  runtime: ProxyRuntime;
  /** True when read from the table during this call (its version is current, not assumed). */
  fresh: boolean;
}

/**
 * The configuration of a proxy in this region, or undefined when no such proxy exists.
 * `revalidate: false` returns a cached copy without any call (the count stage then checks its
 * version, freshness.ts); `revalidate: true` compares it with the current
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
    const locator = await findProxyLocator(region, proxyId);
    if (!locator) return undefined;
    clientId = locator.clientId;
    if (locators.size >= MAX_CACHED_PROXIES) locators.clear();
    locators.set(proxyId, clientId);
  }
  const settings = await findClientRuntime(region, clientId);
  if (cached && settings && cached.version === settings.configVersion)
    return { runtime: cached, fresh: true };
  const loaded = await loadFull(region, proxyId, clientId, settings ?? DEFAULT_CLIENT_RUNTIME);
  if (!loaded) {
    // Deleted since it was located: forget it, so a new proxy never inherits a stale locator.
    locators.delete(proxyId);
    retire(runtimes.get(proxyId));
    runtimes.delete(proxyId);
    return undefined;
  }
  if (runtimes.size >= MAX_CACHED_PROXIES) clearRuntimes();
  const replaced = runtimes.get(proxyId);
  if (replaced !== loaded) retire(replaced);
  runtimes.set(proxyId, loaded);
  return { runtime: loaded, fresh: true };
}
