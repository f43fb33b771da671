/**
 * Access rules on credentials, proxies and targets (spec 2.8, 4.8): create, list, delete; no
 * update. A rule lives beside its parent in the parent's region (`RULE#<parentId>#<ruleId>` in the
 * client partition). Validation and the evaluation semantics are in lib/domain/rules/.
 *
 * The caps per parent (MAX_RULES_PER_PARENT rules, MAX_RULE_PATTERN_COST pattern cost) are exact
 * under concurrency: a counter item beside the rules (`RULE#<parentId>##COUNTER`, deleted with
 * them by the cascades) holds the count and the cost, and every create or delete writes it in the
 * same transaction as the rule, conditioned on the values it read (optimistic; retried).
 */
import { randomUUID } from "node:crypto";
import { bumpConfigVersion } from "../data-plane/client-runtime.ts";
import { TransactWriteCommand } from "../db/document-client.ts";
import { keys, REGIONAL_SK } from "../db/keys.ts";
import { type Item, nowIso, queryPartition, tableName, transactionCancellationCodes } from "../db/store.ts";
import type { ClientAccess } from "./access.ts";
import { requireCredential } from "./credentials.ts";
import { badRequest, conflict, notFound } from "./errors.ts";
import { requireProxy } from "./proxies.ts";
import { getInRegion, MAX_RULES_PER_PARENT, regionalDb } from "./regional.ts";
import { compileRules, type EvaluableRule } from "./rules/rule-evaluator.ts";
import { type CreateRuleInput, MAX_RULE_PATTERN_COST, normaliseRule } from "./rules/rule-schema.ts";
import { requireTarget } from "./targets.ts";

export type RuleParentKind = "credential" | "proxy" | "target";
export const RULE_NOT_FOUND = "Rule not found";

const RULE_ATTRIBUTES = [
  "ruleId",
  "effect",
  "priority",
  "methods",
  "path",
  "pathPattern",
  "pathPresence",
  "headerChecks",
  "queryChecks",
  "regexFlags",
  "notes",
  "userId",
  "clientId",
  "parentId",
  "parentType",
  "createdAt",
  "updatedAt",
] as const;

/** The list shape of spec 2.8: pKey `RULE`, sKey the rule id. */
export function toApiRule(item: Item) {
  return {
    pKey: "RULE",
    sKey: String(item.ruleId),
    ...Object.fromEntries(RULE_ATTRIBUTES.filter((name) => name in item).map((name) => [name, item[name]])),
  };
}

async function locateParent(clientId: string, kind: RuleParentKind, parentId: string) {
  const found =
    kind === "credential"
      ? await requireCredential(clientId, parentId)
      : kind === "proxy"
        ? await requireProxy(clientId, parentId)
        : await requireTarget(clientId, parentId);
  return { region: found.region, key: parentKey(clientId, kind, parentId) };
}

const parentKey = (clientId: string, kind: RuleParentKind, parentId: string) =>
  kind === "credential"
    ? keys.credential(clientId, parentId)
    : kind === "proxy"
      ? keys.proxy(clientId, parentId)
      : keys.target(clientId, parentId);

/** The counter of a parent's rules: its sort key sorts among the rules, so cascades delete it with them. */
const RULE_COUNTER_ID = "#COUNTER";
const counterKey = (clientId: string, parentId: string) => keys.rule(clientId, parentId, RULE_COUNTER_ID);
/** Attempts of an optimistic counter write before answering 409. */
const COUNTER_ATTEMPTS = 8;

const listRuleItems = (region: string, clientId: string, parentId: string) =>
  queryPartition(keys.clientPartition(clientId), {
    region,
    sKeyPrefix: `${REGIONAL_SK.rulePrefix}${parentId}#`,
    max: MAX_RULES_PER_PARENT * 2,
  }).then((items) => items.filter((item) => item.entity === "rule"));

/** The pattern cost of a stored rule (stored since the cost cap; computed for older rules). */
const costOf = (item: Item) =>
  typeof item.patternCost === "number"
    ? item.patternCost
    : compileRules([item as unknown as EvaluableRule]).cost;

/**
 * The parent's current rule count and pattern cost, with the condition that they are unchanged.
 * Without a counter yet (rules stored before it existed), counted from the rules themselves.
 */
async function readCounter(region: string, clientId: string, parentId: string) {
  const counter = await getInRegion(region, counterKey(clientId, parentId));
  if (counter) {
    const count = Number(counter.ruleCount ?? 0);
    const cost = Number(counter.patternCost ?? 0);
    return {
      count,
      cost,
      condition: {
        ConditionExpression: "ruleCount = :seenCount AND patternCost = :seenCost",
        values: { ":seenCount": count, ":seenCost": cost },
      },
    };
  }
  const rules = await listRuleItems(region, clientId, parentId);
  return {
    count: rules.length,
    cost: rules.reduce((sum, item) => sum + costOf(item), 0),
    condition: { ConditionExpression: "attribute_not_exists(pKey)", values: {} },
  };
}

/** The counter write of a transaction: set count and cost if they are still what was read. */
function counterUpdate(
  clientId: string,
  parentId: string,
  seen: Awaited<ReturnType<typeof readCounter>>,
  count: number,
  cost: number,
) {
  return {
    Update: {
      TableName: tableName(),
      Key: counterKey(clientId, parentId),
      UpdateExpression:
        "SET entity = :entity, clientId = :clientId, parentId = :parentId, ruleCount = :count, patternCost = :cost",
      ConditionExpression: seen.condition.ConditionExpression,
      ExpressionAttributeValues: {
        ...seen.condition.values,
        ":entity": "rule-counter",
        ":clientId": clientId,
        ":parentId": parentId,
        ":count": count,
        ":cost": cost,
      },
    },
  };
}

/** True when the transaction lost a race on the counter (retry with fresh values). */
const lostCounterRace = (codes: string[] | undefined) =>
  codes !== undefined &&
  (codes[1] === "ConditionalCheckFailed" || codes.some((code) => code === "TransactionConflict"));

export async function listRules({ clientId }: ClientAccess, kind: RuleParentKind, parentId: string) {
  const { region } = await locateParent(clientId, kind, parentId);
  const rules = await listRuleItems(region, clientId, parentId);
  return rules
    .sort(
      (a, b) => Number(b.priority) - Number(a.priority) || String(a.ruleId).localeCompare(String(b.ruleId)),
    )
    .map(toApiRule);
}

/**
 * Create a rule from a validated body (CreateRuleBody: every pattern already compiled, 400 naming
 * the field if invalid), stored in its canonical shape. The write is one
 * transaction with a check that the parent still exists and is not being deleted; the client's
 * configuration version then moves, so a warm data plane applies the rule on the next request.
 */
export async function createRule(
  { clientId, userId }: ClientAccess,
  kind: RuleParentKind,
  parentId: string,
  input: CreateRuleInput,
) {
  const { region, key } = await locateParent(clientId, kind, parentId);
  const conditions = normaliseRule(input);
  const ruleId = randomUUID();
  const patternCost = compileRules([{ ruleId, ...conditions }]).cost;
  const now = nowIso();
  const item: Item = {
    ...keys.rule(clientId, parentId, ruleId),
    entity: "rule",
    ruleId,
    ...conditions,
    patternCost,
    userId,
    clientId,
    parentId,
    parentType: kind,
    createdAt: now,
    updatedAt: now,
  };
  const parentCheck = {
    ConditionCheck: {
      TableName: tableName(),
      Key: key,
      ConditionExpression: "attribute_exists(pKey) AND attribute_not_exists(deletingAt)",
    },
  };
  for (let attempt = 0; ; attempt++) {
    const seen = await readCounter(region, clientId, parentId);
    if (seen.count >= MAX_RULES_PER_PARENT)
      throw badRequest(`A ${kind} can have at most ${MAX_RULES_PER_PARENT} rules`);
    if (seen.cost + patternCost > MAX_RULE_PATTERN_COST)
      throw badRequest(
        `The patterns of a ${kind}'s rules can cost at most ${MAX_RULE_PATTERN_COST} in total; this rule's cost ${patternCost} and the existing rules' ${seen.cost} exceed it (see docs/access-rules.md)`,
      );
    try {
      await regionalDb(region).send(
        new TransactWriteCommand({
          TransactItems: [
            parentCheck,
            counterUpdate(clientId, parentId, seen, seen.count + 1, seen.cost + patternCost),
            {
              Put: { TableName: tableName(), Item: item, ConditionExpression: "attribute_not_exists(pKey)" },
            },
          ],
        }),
      );
      break;
    } catch (error) {
      const codes = transactionCancellationCodes(error);
      if (codes?.[0] === "ConditionalCheckFailed")
        throw notFound(
          `${kind === "credential" ? "Credential" : kind === "proxy" ? "Proxy" : "Target"} not found`,
        );
      if (!lostCounterRace(codes)) throw error;
      if (attempt + 1 >= COUNTER_ATTEMPTS)
        throw conflict(`The rules of this ${kind} are being changed concurrently; retry`);
    }
  }
  await bumpConfigVersion(region, clientId);
  return toApiRule(item);
}

export async function deleteRule(
  { clientId }: ClientAccess,
  kind: RuleParentKind,
  parentId: string,
  ruleId: string,
) {
  const { region } = await locateParent(clientId, kind, parentId);
  const ruleKey = keys.rule(clientId, parentId, ruleId);
  for (let attempt = 0; ; attempt++) {
    const rule = await getInRegion(region, ruleKey);
    if (rule?.entity !== "rule") throw notFound(RULE_NOT_FOUND);
    const seen = await readCounter(region, clientId, parentId);
    try {
      await regionalDb(region).send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Delete: {
                TableName: tableName(),
                Key: ruleKey,
                ConditionExpression: "attribute_exists(pKey) AND entity = :rule",
                ExpressionAttributeValues: { ":rule": "rule" },
              },
            },
            counterUpdate(
              clientId,
              parentId,
              seen,
              Math.max(0, seen.count - 1),
              Math.max(0, seen.cost - costOf(rule)),
            ),
          ],
        }),
      );
      break;
    } catch (error) {
      const codes = transactionCancellationCodes(error);
      if (codes?.[0] === "ConditionalCheckFailed") throw notFound(RULE_NOT_FOUND);
      if (!lostCounterRace(codes)) throw error;
      if (attempt + 1 >= COUNTER_ATTEMPTS)
        throw conflict(`The rules of this ${kind} are being changed concurrently; retry`);
    }
  }
  await bumpConfigVersion(region, clientId);
}
