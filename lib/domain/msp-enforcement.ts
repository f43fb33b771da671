/**
 * Enforcement of the managed-client configuration (spec 2.14, issue 12; docs/msp-api.md,
 * "Enforcement"):
 * - `regionAccess`: the regions a managed client may create regional resources in (credentials,
 *   targets, proxies: the resources created with a region; rules, meters and transforms live in
 *   their parent's region). A client with no MSP, or with an empty list, is unrestricted. Regions
 *   never change after creation (a PUT naming one is a 400), so only creation is checked.
 * - what the data plane needs of it, copied onto the client's runtime item in every region (the
 *   item its configuration load already reads): the client's `limits`, and whether the MSP that
 *   pays for it has its billing suspended. Copied whenever the configuration, the MSP's billing
 *   status or the link changes; each copy bumps `configVersion`, so it applies on the next request.
 */

import {
  type ClientConfigItem,
  clientConfigItemOf,
  findClientConfig,
} from "#lib/db/entities/client-config.ts";
import { type ClientRuntimeSettings, syncClientRuntime } from "#lib/db/entities/client-runtime.ts";
import { findMspWithConfig, listClientLinksOfMsp } from "#lib/db/entities/msp.ts";
import { keys } from "#lib/db/keys.ts";
import { batchGet } from "#lib/db/store.ts";
import { validationFailed } from "#lib/shared/errors.ts";
import { requireConfiguredRegion } from "./regional.ts";

// ---------------------------------------------------------------- regionAccess

/** The part of the client configuration that decides. */
export interface RegionAccessSettings {
  mspId: string | null;
  regionAccess: readonly string[];
}

/** The problem of `region` for this client, or undefined when it may be used. Pure. */
export function regionAccessProblem(
  region: string,
  settings: RegionAccessSettings | undefined,
): string | undefined {
  if (!settings?.mspId || settings.regionAccess.length === 0) return undefined;
  if (settings.regionAccess.includes(region)) return undefined;
  return `must be one of the client's allowed regions: ${settings.regionAccess.join(", ")}`;
}

/**
 * The region of a new regional resource, checked: one of the deployment's regions, then one the
 * client may use; else a 400 naming `field`. One GetItem of the client configuration.
 */
export async function requireAllowedRegion(clientId: string, region: string, field: string): Promise<string> {
  requireConfiguredRegion(region, field);
  const problem = regionAccessProblem(region, await findClientConfig(clientId));
  if (problem) throw validationFailed([{ field, problem }]);
  return region;
}

// ---------------------------------------------------------------- the data plane's copy

/** What the data plane enforces of a managed client, as stored on its runtime item. */
export interface ManagedRuntimeSettings {
  requestsPerMinute: number | null;
  requestsPerDay: number | null;
  /** True while the client is billed to its MSP and that MSP's billing is suspended: 402. */
  mspSuspended: boolean;
}

export const UNMANAGED_RUNTIME: ManagedRuntimeSettings = {
  requestsPerMinute: null,
  requestsPerDay: null,
  mspSuspended: false,
};

/**
 * The settings of a client (pure): only a managed client (with an MSP) has them; the limits as
 * configured; suspended when billed to the MSP (`billingTo` `msp`) and its `billingStatus` is
 * `suspended`. A client billed to itself keeps working whatever its MSP's status.
 */
export function managedRuntimeSettings(
  config: Pick<ClientConfigItem, "mspId" | "billingTo" | "limits"> | undefined,
  mspBillingStatus: string | undefined,
): ManagedRuntimeSettings {
  if (!config?.mspId) return UNMANAGED_RUNTIME;
  return {
    requestsPerMinute: config.limits.requestsPerMinute,
    requestsPerDay: config.limits.requestsPerDay,
    mspSuspended: config.billingTo === "msp" && mspBillingStatus === "suspended",
  };
}

/**
 * Copy a client's settings to its runtime item in every region, from the stored configuration and
 * the MSP's stored status, both read (consistently) after the change that calls this committed:
 * a concurrent `msps set-billing` then either sees the change or is seen by it.
 */
export async function syncManagedRuntime(
  clientId: string,
  alongside: ClientRuntimeSettings = {},
): Promise<ManagedRuntimeSettings> {
  const config = await findClientConfig(clientId);
  const found = config?.mspId ? await findMspWithConfig(config.mspId) : undefined;
  const settings = managedRuntimeSettings(config, found?.config?.billingStatus);
  if (config) await syncClientRuntime(clientId, { ...alongside, ...settings });
  return settings;
}

/** Runtime items written at once by `msps set-billing` (each client writes one per region). */
const SYNC_CONCURRENCY = 8;

/**
 * After `msps set-billing`: every client the MSP pays for (linked, `billingTo` `msp`) gets the
 * MSP's status on its runtime items. At most 1,000 clients (an MSP's bound): one Query of the
 * links, BatchGetItems of their configurations, then one UpdateItem per client and region.
 */
export async function syncClientsPaidByMsp(mspId: string, mspBillingStatus: string): Promise<number> {
  const links = await listClientLinksOfMsp(mspId);
  const configs = (await batchGet(links.map((link) => keys.clientConfig(link.clientId))))
    .map(clientConfigItemOf)
    .filter((config) => config.mspId === mspId && config.billingTo === "msp");
  for (let start = 0; start < configs.length; start += SYNC_CONCURRENCY) {
    await Promise.all(
      configs
        .slice(start, start + SYNC_CONCURRENCY)
        .map((config) =>
          syncClientRuntime(config.clientId, { ...managedRuntimeSettings(config, mspBillingStatus) }),
        ),
    );
  }
  return configs.length;
}
