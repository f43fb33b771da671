/**
 * Proxies (spec 2.7, 4.7). A proxy ties a proxy credential, a target and a target credential of
 * the same client in the same region (spec 1.10). Creation and every change of a link is one
 * transaction that re-checks the linked items (present, not being deleted) and claims the alias,
 * so a concurrent delete of a credential or target cannot leave a proxy pointing at nothing, and
 * two proxies cannot claim one alias.
 */
import { randomUUID } from "node:crypto";
import { getConfig } from "#lib/config.ts";
import { commitRegional } from "#lib/db/commit.ts";
import {
  findProxyInAnyRegion,
  listProxiesOfClient,
  listProxiesOfClientInRegion,
  PROXY_TIMEOUT_SECONDS,
  type ProxyItem,
  proxyKeys,
} from "#lib/db/entities/proxy.ts";
import {
  claimAlias,
  keyOfLink,
  LINK_FIELDS,
  type LinkField,
  linkChecks,
  PROXY_STEPS,
  putProxy,
  releaseAlias,
  updateProxy as updateProxyStep,
} from "#lib/db/entities/proxy-steps.ts";
import { byCreatedDesc, findInRegions, MAX_RESOURCES_PER_REGION } from "#lib/db/regional.ts";
import { nowIso, type TransactionStep } from "#lib/db/store.ts";
import type { CreateProxyInput, UpdateProxyInput } from "#lib/http/resource-schemas.ts";
import { badRequest, conflict, notFound, validationFailed } from "#lib/shared/errors.ts";
import { AUTH_TYPE_USAGE } from "#lib/vault/secret-schemas.ts";
import type { ClientAccess } from "./access.ts";
import { deleteProxyCascade } from "./cascade.ts";
import { requireAllowedRegion } from "./msp-enforcement.ts";

export const PROXY_NOT_FOUND = "Proxy not found";
export const ALIAS_TAKEN = "Proxy alias already in use in this client";

/** `{region_base_url}/api/{proxyId}/` when the region's data-plane address is known. */
export function proxyUrl(region: string, proxyId: string): string | null {
  const base = getConfig().dataPlaneUrls[region];
  return base ? `${base.replace(/\/$/, "")}/api/${proxyId}/` : null;
}

/** The proxy as the API shows it: the response schema (lib/api/operations/proxies.ts) picks its fields. */
export function toApiProxy(proxy: ProxyItem) {
  return {
    ...proxy,
    pKey: proxy.clientId,
    sKey: proxy.proxyId,
    proxyUrl: proxyUrl(proxy.proxyRegion, proxy.proxyId),
  };
}

export async function requireProxy(
  clientId: string,
  proxyId: string,
): Promise<{ region: string; proxy: ProxyItem }> {
  const found = await findProxyInAnyRegion(clientId, proxyId);
  if (!found || found.proxy.deletingAt) throw notFound(PROXY_NOT_FOUND);
  return found;
}

/**
 * Check one link against the rules of spec 1.10 and 2.5: it exists in this client, in the proxy's
 * region, is not being deleted, and (for credentials) has the right type and an auth type allowed
 * for that use. 400 naming the field otherwise.
 */
async function checkLink(clientId: string, region: string, field: LinkField, id: string): Promise<void> {
  const found = await findInRegions(keyOfLink(clientId, field, id));
  const kind = field === "proxyTargetId" ? "target" : "credential";
  const fail = (problem: string) => {
    throw validationFailed([{ field, problem }]);
  };
  if (!found || found.item.deletingAt) return fail(`${kind} ${id} does not exist in this client`);
  if (found.region !== region)
    return fail(`${kind} ${id} is in region ${found.region}, not in the proxy's region ${region}`);
  if (field === "proxyTargetId") return;
  const wanted = field === "proxyProxyCredentialId" ? "proxy" : "target";
  const { credentialType, credentialAuthType, credentialTemporary } = found.item;
  if (credentialType !== wanted) return fail(`must be a credential of credentialType ${wanted}`);
  const usage = AUTH_TYPE_USAGE[credentialAuthType as keyof typeof AUTH_TYPE_USAGE] as
    | readonly string[]
    | undefined;
  if (!usage?.includes(wanted))
    return fail(`auth type ${String(credentialAuthType)} cannot be used as a ${wanted} credential`);
  if (credentialTemporary === true)
    return fail("the credential is still waiting for its OAuth2 authorization");
}

/**
 * Write the steps with the client's configuration version in one transaction; a failed condition
 * becomes the caller's answer, read by step name.
 */
function writeProxySteps(region: string, clientId: string, steps: TransactionStep[]): Promise<void> {
  return commitRegional(region, clientId, steps, (failed) => {
    const link = LINK_FIELDS.find((field) => failed.includes(field));
    if (link) return validationFailed([{ field: link, problem: "was deleted or is being deleted" }]);
    if (failed.includes(PROXY_STEPS.claimAlias)) return conflict(ALIAS_TAKEN);
    return failed.length > 0 ? conflict("The proxy changed concurrently; retry") : undefined;
  });
}

export async function createProxy(access: ClientAccess, input: CreateProxyInput) {
  const { clientId, userId } = access;
  const region = await requireAllowedRegion(clientId, input.proxyRegion, "proxyRegion");
  const links = LINK_FIELDS.map((field) => [field, input[field]] as [LinkField, string]);
  await Promise.all(links.map(([field, id]) => checkLink(clientId, region, field, id)));
  const existing = await listProxiesOfClientInRegion(region, clientId);
  if (existing.length >= MAX_RESOURCES_PER_REGION)
    throw badRequest(`A client can have at most ${MAX_RESOURCES_PER_REGION} proxies per region`);

  const proxyId = randomUUID();
  const now = nowIso();
  const alias = input.proxyAlias ?? undefined;
  const item: ProxyItem = {
    ...proxyKeys.item(clientId, proxyId),
    entity: "proxy",
    proxyId,
    proxyName: input.proxyName,
    proxyRegion: region,
    proxyProxyCredentialId: input.proxyProxyCredentialId,
    proxyTargetId: input.proxyTargetId,
    proxyTargetCredentialId: input.proxyTargetCredentialId,
    proxyActive: input.proxyActive ?? true,
    proxyDefaultRuleEffect: input.proxyDefaultRuleEffect ?? "allow",
    ...(alias ? { proxyAlias: alias } : {}),
    proxyAdditionalHeaders: input.proxyAdditionalHeaders ?? {},
    proxyAdditionalQueryParams: input.proxyAdditionalQueryParams ?? {},
    proxyAdditionalData: input.proxyAdditionalData ?? {},
    proxyTimeoutSeconds: input.proxyTimeoutSeconds ?? PROXY_TIMEOUT_SECONDS.default,
    ...(input.notes !== undefined ? { notes: input.notes } : {}),
    userId,
    clientId,
    parentId: clientId,
    proxyCreatedAt: now,
    proxyUpdatedAt: now,
    proxyVersion: 1,
  };
  await writeProxySteps(region, clientId, [
    ...linkChecks(clientId, links),
    ...putProxy(item),
    ...(alias ? [claimAlias(clientId, alias, proxyId)] : []),
  ]);
  return toApiProxy(item);
}

export async function listProxies({ clientId }: ClientAccess) {
  const proxies = await listProxiesOfClient(clientId);
  return proxies
    .filter((proxy) => !proxy.deletingAt)
    .sort(byCreatedDesc("proxyCreatedAt", "proxyId"))
    .map(toApiProxy);
}

export async function getProxy({ clientId }: ClientAccess, proxyId: string) {
  return toApiProxy((await requireProxy(clientId, proxyId)).proxy);
}

/**
 * Partial update. Changed links are re-checked (as at creation) inside the transaction; an alias
 * change releases the old lock and claims the new one atomically. The answer is the subset of
 * spec 4.7: pKey, sKey, the changed fields and proxyUpdatedAt.
 */
export async function updateProxy({ clientId }: ClientAccess, proxyId: string, input: UpdateProxyInput) {
  const { region, proxy: current } = await requireProxy(clientId, proxyId);
  const changes = Object.fromEntries(
    Object.entries(input).filter(([, value]) => value !== undefined),
  ) as Record<string, unknown>;
  const links = LINK_FIELDS.filter((field) => typeof changes[field] === "string").map(
    (field) => [field, changes[field] as string] as [LinkField, string],
  );
  await Promise.all(links.map(([field, id]) => checkLink(clientId, region, field, id)));

  const oldAlias = current.proxyAlias;
  const aliasChanged = "proxyAlias" in changes && (changes.proxyAlias ?? undefined) !== oldAlias;
  const newAlias = aliasChanged ? ((changes.proxyAlias as string | null) ?? undefined) : undefined;

  const now = nowIso();
  const steps: TransactionStep[] = [
    ...linkChecks(clientId, links),
    // Optimistic: decided from `current`, so it must still be that version.
    updateProxyStep(clientId, proxyId, changes, current.proxyVersion ?? 1, now),
  ];
  if (aliasChanged) {
    if (newAlias) steps.push(claimAlias(clientId, newAlias, proxyId));
    if (oldAlias) steps.push(releaseAlias(clientId, oldAlias, proxyId));
  }
  await writeProxySteps(region, clientId, steps);
  return {
    pKey: clientId,
    sKey: proxyId,
    ...Object.fromEntries(Object.entries(changes)),
    proxyUpdatedAt: now,
  };
}

export async function deleteProxy({ clientId }: ClientAccess, proxyId: string) {
  const found = await findProxyInAnyRegion(clientId, proxyId);
  if (!found) throw notFound(PROXY_NOT_FOUND);
  await deleteProxyCascade(found.region, clientId, found.proxy);
}
