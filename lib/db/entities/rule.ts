/**
 * The access rule entity (spec 2.8) and the counter of a parent's rules, as stored: their item
 * schemas, their keys and the access patterns that read them (docs/access-patterns.md). The domain
 * (lib/domain/access-rules.ts) works on RuleItem and RuleCounterItem, never on an untyped item.
 *
 * A rule lives beside its parent in the parent's region (`RULE#<parentId>#<ruleId>` in the client
 * partition). The counter (`RULE#<parentId>##COUNTER`) sorts among the rules, so the cascades that
 * delete a parent's rules delete it with them.
 */
import * as z from "zod/mini";
import { keys, REGIONAL_SK } from "#lib/db/keys.ts";
import { getInRegion, MAX_RULES_PER_PARENT } from "#lib/db/regional.ts";
import { parseStored, queryPartition } from "#lib/db/store.ts";
import { RULE_EFFECTS, RULE_PRESENCES } from "#lib/shared/rule-constants.ts";

const Presence = z.enum(RULE_PRESENCES);
const RuleCheck = z.object({ name: z.string(), pattern: z.nullable(z.string()), presence: Presence });

export const RuleItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("rule"),
  ruleId: z.string(),
  // The canonical conditions (StoredRuleConditions, lib/domain/rules/rule-schema.ts).
  effect: z.enum(RULE_EFFECTS),
  priority: z.int(),
  methods: z.array(z.string()),
  path: z.nullable(z.object({ pattern: z.string(), presence: Presence })),
  pathPattern: z.nullable(z.string()),
  pathPresence: z.nullable(Presence),
  headerChecks: z.array(RuleCheck),
  queryChecks: z.array(RuleCheck),
  regexFlags: z.string(),
  notes: z.string(),
  /** Stored since the pattern-cost cap; older rules lack it (their cost is computed when needed). */
  patternCost: z.optional(z.int().check(z.nonnegative())),
  userId: z.string(),
  clientId: z.string(),
  parentId: z.string(),
  parentType: z.enum(["credential", "proxy", "target"]),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type RuleItem = z.infer<typeof RuleItem>;

/** The counter of a parent's rules: their number and total pattern cost, written with every create/delete. */
export const RuleCounterItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("rule-counter"),
  clientId: z.string(),
  parentId: z.string(),
  ruleCount: z.int().check(z.nonnegative()),
  patternCost: z.int().check(z.nonnegative()),
});
export type RuleCounterItem = z.infer<typeof RuleCounterItem>;

/** A stored item as a RuleItem; an item that is not one is a defect of the store, not of the caller. */
export const ruleItemOf = (item: Record<string, unknown>): RuleItem => parseStored(RuleItem, "rule", item);

/** A stored item as a RuleCounterItem (a count or cost never written reads as 0). */
export const ruleCounterItemOf = (item: Record<string, unknown>): RuleCounterItem =>
  parseStored(RuleCounterItem, "rule counter", { ruleCount: 0, patternCost: 0, ...item });

/** The rule id under which a parent's counter is stored: `#` sorts it among the parent's rules. */
const RULE_COUNTER_ID = "#COUNTER";

export const ruleKeys = {
  item: keys.rule,
  counter: (clientId: string, parentId: string) => keys.rule(clientId, parentId, RULE_COUNTER_ID),
} as const;

/**
 * Access pattern "rules of a credential, proxy or target": one Query on the client partition in
 * the parent's region, `begins_with(sKey, RULE#<parentId>#)`; the counter is left out.
 */
export async function listRulesOfParent(
  region: string,
  clientId: string,
  parentId: string,
): Promise<RuleItem[]> {
  const items = await queryPartition(keys.clientPartition(clientId), {
    region,
    sKeyPrefix: `${REGIONAL_SK.rulePrefix}${parentId}#`,
    max: MAX_RULES_PER_PARENT * 2,
  });
  return items.filter((item) => item.entity === "rule").map(ruleItemOf);
}

/** A parent's rule by id (GetItem in the parent's region); undefined when there is none. */
export async function findRule(
  region: string,
  clientId: string,
  parentId: string,
  ruleId: string,
): Promise<RuleItem | undefined> {
  const item = await getInRegion(region, ruleKeys.item(clientId, parentId, ruleId));
  return item?.entity === "rule" ? ruleItemOf(item) : undefined;
}

/** A parent's rule counter (GetItem in the parent's region); undefined for a parent that has none yet. */
export async function findRuleCounter(
  region: string,
  clientId: string,
  parentId: string,
): Promise<RuleCounterItem | undefined> {
  const item = await getInRegion(region, ruleKeys.counter(clientId, parentId));
  return item ? ruleCounterItemOf(item) : undefined;
}
