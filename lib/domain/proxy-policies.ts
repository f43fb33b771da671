/**
 * A proxy's filters and overrides (docs/filters.md): read, partial update, clear. One item of each
 * per proxy (lib/db/entities/proxy-policy.ts), written in a transaction that checks the proxy
 * exists and is not being deleted, conditioned on the version it merged into (a concurrent write
 * makes it read again). Both are proxy configuration: every change moves the client's
 * `configVersion` in the proxy's region in the same transaction, so the next request is served
 * with it.
 */

import { commitRegional, lostRace, RACE_ATTEMPTS, tryCommitRegional } from "#lib/db/commit.ts";
import { checkProxyStep, METER_STEPS } from "#lib/db/entities/meter.ts";
import {
  deletePolicyStep,
  findProxyFilters,
  findProxyOverrides,
  type PathOverride,
  POLICY_STEPS,
  type ProxyFiltersItem,
  type ProxyOverridesItem,
  proxyPolicyKeys,
  putPolicyStep,
} from "#lib/db/entities/proxy-policy.ts";
import { nowIso, type TransactionStep } from "#lib/db/store.ts";
import type { UpdateFiltersInput, UpdateOverridesInput } from "#lib/domain/filters/schema.ts";
import { conflict, notFound } from "#lib/shared/errors.ts";
import type { ClientAccess } from "./access.ts";
import { PROXY_NOT_FOUND, requireProxy } from "./proxies.ts";

const ATTEMPTS = RACE_ATTEMPTS;

export interface ApiFilters {
  proxyId: string;
  ipAllow: string[];
  ipDeny: string[];
  requiredHeaders: string[];
  stripHeaders: string[];
  removeResponseFields: string[];
  updatedAt: string | null;
}

export interface ApiOverrides {
  proxyId: string;
  pathOverrides: PathOverride[];
  updatedAt: string | null;
}

function toApiFilters(proxyId: string, item: ProxyFiltersItem | undefined): ApiFilters {
  return {
    proxyId,
    ipAllow: item?.ipAllow ?? [],
    ipDeny: item?.ipDeny ?? [],
    requiredHeaders: item?.requiredHeaders ?? [],
    stripHeaders: item?.stripHeaders ?? [],
    removeResponseFields: item?.removeResponseFields ?? [],
    updatedAt: item?.updatedAt ?? null,
  };
}

function toApiOverrides(proxyId: string, item: ProxyOverridesItem | undefined): ApiOverrides {
  return { proxyId, pathOverrides: item?.pathOverrides ?? [], updatedAt: item?.updatedAt ?? null };
}

const concurrently = () => conflict("The proxy's filters or overrides are being changed concurrently; retry");

/** Write `steps` (the proxy checked first); false when the item moved since it was read. */
function written(region: string, clientId: string, steps: TransactionStep[]): Promise<boolean> {
  return tryCommitRegional(region, clientId, steps, (failed) =>
    failed.includes(METER_STEPS.checkProxy)
      ? notFound(PROXY_NOT_FOUND)
      : failed.includes(POLICY_STEPS.put)
        ? "retry"
        : undefined,
  );
}

/**
 * Read-modify-write of one policy item: `build` makes the next item from the stored one, written
 * only if the stored version is still the one read (retried, then 409), with `configVersion`.
 */
async function writePolicy<T extends ProxyFiltersItem | ProxyOverridesItem>(
  region: string,
  clientId: string,
  proxyId: string,
  find: (region: string, clientId: string, proxyId: string) => Promise<T | undefined>,
  build: (current: T | undefined) => T,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const current = await find(region, clientId, proxyId);
    const next = build(current);
    const steps = [checkProxyStep(clientId, proxyId), putPolicyStep(next, current?.policyVersion ?? 0)];
    if (await written(region, clientId, steps)) return next;
    if (attempt >= ATTEMPTS) throw concurrently();
    await lostRace(attempt);
  }
}

export async function getFilters({ clientId }: ClientAccess, proxyId: string): Promise<ApiFilters> {
  const { region } = await requireProxy(clientId, proxyId);
  return toApiFilters(proxyId, await findProxyFilters(region, clientId, proxyId));
}

/** Partial update: each list given replaces the stored one (`null` clears it). */
export async function updateFilters(
  { clientId, userId }: ClientAccess,
  proxyId: string,
  input: UpdateFiltersInput,
): Promise<ApiFilters> {
  const { region } = await requireProxy(clientId, proxyId);
  const next = await writePolicy(region, clientId, proxyId, findProxyFilters, (current): ProxyFiltersItem => {
    const merged = toApiFilters(proxyId, current);
    return {
      ...proxyPolicyKeys.filters(clientId, proxyId),
      entity: "proxyFilters",
      clientId,
      proxyId,
      ipAllow: input.ipAllow === undefined ? merged.ipAllow : (input.ipAllow ?? []),
      ipDeny: input.ipDeny === undefined ? merged.ipDeny : (input.ipDeny ?? []),
      requiredHeaders:
        input.requiredHeaders === undefined ? merged.requiredHeaders : (input.requiredHeaders ?? []),
      stripHeaders: input.stripHeaders === undefined ? merged.stripHeaders : (input.stripHeaders ?? []),
      removeResponseFields:
        input.removeResponseFields === undefined
          ? merged.removeResponseFields
          : (input.removeResponseFields ?? []),
      updatedAt: nowIso(),
      updatedBy: userId,
      policyVersion: (current?.policyVersion ?? 0) + 1,
    };
  });
  return toApiFilters(proxyId, next);
}

/** Remove every filter of the proxy (idempotent). */
export async function clearFilters({ clientId }: ClientAccess, proxyId: string): Promise<void> {
  const { region } = await requireProxy(clientId, proxyId);
  await commitRegional(region, clientId, [deletePolicyStep(proxyPolicyKeys.filters(clientId, proxyId))]);
}

export async function getOverrides({ clientId }: ClientAccess, proxyId: string): Promise<ApiOverrides> {
  const { region } = await requireProxy(clientId, proxyId);
  return toApiOverrides(proxyId, await findProxyOverrides(region, clientId, proxyId));
}

/** Partial update: `pathOverrides` given replaces the stored list (`null` clears it). */
export async function updateOverrides(
  { clientId, userId }: ClientAccess,
  proxyId: string,
  input: UpdateOverridesInput,
): Promise<ApiOverrides> {
  const { region } = await requireProxy(clientId, proxyId);
  const next = await writePolicy(
    region,
    clientId,
    proxyId,
    findProxyOverrides,
    (current): ProxyOverridesItem => {
      const pathOverrides =
        input.pathOverrides === undefined ? (current?.pathOverrides ?? []) : (input.pathOverrides ?? []);
      return {
        ...proxyPolicyKeys.overrides(clientId, proxyId),
        entity: "proxyOverrides",
        clientId,
        proxyId,
        pathOverrides: pathOverrides.map(({ pathPrefix, timeoutSeconds, additionalHeaders }) => ({
          pathPrefix,
          ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
          ...(additionalHeaders === undefined ? {} : { additionalHeaders }),
        })),
        updatedAt: nowIso(),
        updatedBy: userId,
        policyVersion: (current?.policyVersion ?? 0) + 1,
      };
    },
  );
  return toApiOverrides(proxyId, next);
}

/** Remove every override of the proxy (idempotent). */
export async function clearOverrides({ clientId }: ClientAccess, proxyId: string): Promise<void> {
  const { region } = await requireProxy(clientId, proxyId);
  await commitRegional(region, clientId, [deletePolicyStep(proxyPolicyKeys.overrides(clientId, proxyId))]);
}
