/** Targets (spec 2.6, 4.6): the APIs proxies forward to. Region-bound (lib/domain/regional.ts). */
import { randomUUID } from "node:crypto";
import { commitRegional } from "#lib/db/commit.ts";
import {
  findTargetInAnyRegion,
  listTargetsOfClient,
  listTargetsOfClientInRegion,
  type TargetItem,
  targetItemOf,
  targetKeys,
} from "#lib/db/entities/target.ts";
import { byCreatedDesc, MAX_RESOURCES_PER_REGION } from "#lib/db/regional.ts";
import { nowIso, tableName } from "#lib/db/store.ts";
import type { CreateTargetInput, UpdateTargetInput } from "#lib/http/resource-schemas.ts";
import { badRequest, notFound } from "#lib/shared/errors.ts";
import type { ClientAccess } from "./access.ts";
import { deleteWithDependants, usesTarget } from "./cascade.ts";
import { requireAllowedRegion } from "./msp-enforcement.ts";
import { updateRegionalItem } from "./regional.ts";

export const TARGET_NOT_FOUND = "Target not found";

/** The target as the API shows it: the response schema (lib/api/operations/targets.ts) picks its fields. */
export function toApiTarget(target: TargetItem) {
  return {
    ...target,
    pKey: target.clientId,
    sKey: target.targetId,
  };
}

/** The target of a client, wherever its region is; 404 when absent. */
export async function requireTarget(
  clientId: string,
  targetId: string,
): Promise<{ region: string; target: TargetItem }> {
  const found = await findTargetInAnyRegion(clientId, targetId);
  if (!found) throw notFound(TARGET_NOT_FOUND);
  return found;
}

export async function createTarget({ clientId, userId }: ClientAccess, input: CreateTargetInput) {
  const region = await requireAllowedRegion(clientId, input.targetRegion, "targetRegion");
  const existing = await listTargetsOfClientInRegion(region, clientId);
  if (existing.length >= MAX_RESOURCES_PER_REGION)
    throw badRequest(`A client can have at most ${MAX_RESOURCES_PER_REGION} targets per region`);
  const targetId = randomUUID();
  const now = nowIso();
  const item: TargetItem = {
    ...targetKeys.item(clientId, targetId),
    entity: "target",
    targetId,
    targetName: input.targetName,
    targetBaseURL: input.targetBaseURL,
    targetTestPath: input.targetTestPath,
    targetRegion: region,
    targetDefaultRuleEffect: input.targetDefaultRuleEffect ?? "allow",
    ...(input.notes !== undefined ? { notes: input.notes } : {}),
    userId,
    clientId,
    parentId: clientId,
    targetCreatedAt: now,
    targetUpdatedAt: now,
  };
  await commitRegional(region, clientId, [
    {
      name: "put",
      action: {
        Put: { TableName: tableName(), Item: item, ConditionExpression: "attribute_not_exists(pKey)" },
      },
    },
  ]);
  return toApiTarget(item);
}

export async function listTargets({ clientId }: ClientAccess) {
  const targets = await listTargetsOfClient(clientId);
  return targets.sort(byCreatedDesc("targetCreatedAt", "targetId")).map(toApiTarget);
}

export async function getTarget({ clientId }: ClientAccess, targetId: string) {
  return toApiTarget((await requireTarget(clientId, targetId)).target);
}

/** PUT keeps omitted fields; the region never changes. */
export async function updateTarget({ clientId }: ClientAccess, targetId: string, input: UpdateTargetInput) {
  const { region } = await requireTarget(clientId, targetId);
  const updated = await updateRegionalItem(
    region,
    clientId,
    targetKeys.item(clientId, targetId),
    input,
    "targetUpdatedAt",
    TARGET_NOT_FOUND,
  );
  return toApiTarget(targetItemOf(updated));
}

/**
 * Delete a target and every proxy that uses it. Resumable: the target is marked first (no new
 * proxy can attach to it from then on), its proxies are deleted, and the target itself goes last,
 * so an interruption never leaves a proxy pointing at a deleted target; repeating the call finishes.
 */
export async function deleteTarget({ clientId }: ClientAccess, targetId: string) {
  const { region } = await requireTarget(clientId, targetId);
  const deletedProxies = await deleteWithDependants(
    region,
    clientId,
    targetId,
    targetKeys.item(clientId, targetId),
    usesTarget(targetId),
  );
  return { deletedProxies };
}
