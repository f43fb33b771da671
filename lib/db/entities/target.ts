/**
 * The target entity (spec 2.6) as stored: its item schema, its keys and the access patterns that
 * read it (docs/access-patterns.md). The domain (lib/domain/targets.ts) works on TargetItem, never
 * on an untyped item, so no `String(item.x)` coercion is needed.
 */
import * as z from "zod/mini";
import { keys, REGIONAL_SK } from "#lib/db/keys.ts";
import { findInRegions, listAcrossRegions, listInRegion } from "#lib/db/regional.ts";
import { parseStored } from "#lib/db/store.ts";

export const TargetItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("target"),
  targetId: z.string(),
  userId: z.string(),
  clientId: z.string(),
  parentId: z.string(),
  targetName: z.string(),
  targetBaseURL: z.string(),
  targetTestPath: z.string(),
  targetRegion: z.string(),
  targetDefaultRuleEffect: z.enum(["allow", "deny"]),
  notes: z.optional(z.string()),
  targetCreatedAt: z.string(),
  targetUpdatedAt: z.string(),
  /** Set when a cascade has started deleting the target: no proxy can attach to it from then on. */
  deletingAt: z.optional(z.string()),
});
export type TargetItem = z.infer<typeof TargetItem>;

/** A stored item as a TargetItem; an item that is not one is a defect of the store, not of the caller. */
export const targetItemOf = (item: Record<string, unknown>): TargetItem =>
  // The spec's default effect stands in for an item that lacks one.
  parseStored(TargetItem, "target", { entity: "target", targetDefaultRuleEffect: "allow", ...item });

export const targetKeys = {
  item: keys.target,
} as const;

/** Access pattern "a target by client and id": one GetItem per region, in parallel. */
export async function findTargetInAnyRegion(
  clientId: string,
  targetId: string,
): Promise<{ region: string; target: TargetItem } | undefined> {
  const found = await findInRegions(targetKeys.item(clientId, targetId));
  return found ? { region: found.region, target: targetItemOf(found.item) } : undefined;
}

/** Access pattern "a client's targets": one Query per region on the client partition. */
export async function listTargetsOfClient(clientId: string): Promise<TargetItem[]> {
  return (await listAcrossRegions(clientId, REGIONAL_SK.targetPrefix)).map(targetItemOf);
}

/** Access pattern "a client's targets in one region" (the per-region cap). */
export async function listTargetsOfClientInRegion(region: string, clientId: string): Promise<TargetItem[]> {
  return (await listInRegion(region, clientId, REGIONAL_SK.targetPrefix)).map(targetItemOf);
}
