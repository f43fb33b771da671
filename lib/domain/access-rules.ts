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
import { lostRace, RACE_ATTEMPTS, tryCommitRegional } from "#lib/db/commit.ts";
import {
  findRule,
  findRuleCounter,
  listRulesOfParent,
  type RuleItem,
  ruleKeys,
} from "#lib/db/entities/rule.ts";
import { keys } from "#lib/db/keys.ts";
import { MAX_RULES_PER_PARENT } from "#lib/db/regional.ts";
import { nowIso, type TransactionStep, tableName } from "#lib/db/store.ts";
import { compileRules } from "#lib/domain/rules/rule-evaluator.ts";
import { type CreateRuleInput, MAX_RULE_PATTERN_COST, normaliseRule } from "#lib/domain/rules/rule-schema.ts";
import { badRequest, conflict, type DomainError, notFound } from "#lib/shared/errors.ts";
import type { ClientAccess } from "./access.ts";
import { requireCredential } from "./credentials.ts";
import { requireProxy } from "./proxies.ts";
import { requireTarget } from "./targets.ts";

export type RuleParentKind = "credential" | "proxy" | "target";
export const RULE_NOT_FOUND = "Rule not found";

/** The list shape of spec 2.8: pKey `RULE`, sKey the rule id; the response schema (lib/api/operations/rules.ts) picks the fields. */
export function toApiRule(rule: RuleItem) {
  return { ...rule, pKey: "RULE" as const, sKey: rule.ruleId };
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

const parentNotFound = (kind: RuleParentKind) =>
  notFound(`${kind === "credential" ? "Credential" : kind === "proxy" ? "Proxy" : "Target"} not found`);

/**
 * Attempts of an optimistic counter write before answering 409. An attempt is lost only when
 * another write of the same parent committed in between, so a request loses at most once per
 * concurrent writer that commits: 16 attempts serve up to 15 parallel writers of one parent without
 * a spurious 409 (8 did not: in a full test run under load, 14 parallel creates of which 10 fit the
 * cost cap created 9, the last losing 8 times). The pause between attempts (`lostRace`) keeps
 * racing writers out of step.
 */
const COUNTER_ATTEMPTS = RACE_ATTEMPTS;

/** The pattern cost of a stored rule (stored since the cost cap; computed for older rules). */
const costOf = (rule: RuleItem) => rule.patternCost ?? compileRules([rule]).cost;

/** The parent's rule count and pattern cost as read, with the condition that they are unchanged. */
interface SeenCounter {
  count: number;
  cost: number;
  condition: { expression: string; values: Record<string, number> };
}

/**
 * The parent's current rule count and pattern cost, with the condition that they are unchanged.
 * Without a counter yet (rules stored before it existed), counted from the rules themselves.
 */
async function readCounter(region: string, clientId: string, parentId: string): Promise<SeenCounter> {
  const counter = await findRuleCounter(region, clientId, parentId);
  if (counter) {
    const { ruleCount: count, patternCost: cost } = counter;
    return {
      count,
      cost,
      condition: {
        expression: "ruleCount = :seenCount AND patternCost = :seenCost",
        values: { ":seenCount": count, ":seenCost": cost },
      },
    };
  }
  const rules = await listRulesOfParent(region, clientId, parentId);
  return {
    count: rules.length,
    cost: rules.reduce((sum, rule) => sum + costOf(rule), 0),
    condition: { expression: "attribute_not_exists(pKey)", values: {} },
  };
}

// The named steps of the rule transactions.
const CHECK_PARENT = "check parent";
const UPDATE_COUNTER = "update counter";
const WRITE_RULE = "write rule";
const DELETE_RULE = "delete rule";

/** The counter step of a transaction: set count and cost if they are still what was read. */
function counterStep(
  clientId: string,
  parentId: string,
  seen: SeenCounter,
  count: number,
  cost: number,
): TransactionStep {
  return {
    name: UPDATE_COUNTER,
    action: {
      Update: {
        TableName: tableName(),
        Key: ruleKeys.counter(clientId, parentId),
        UpdateExpression:
          "SET entity = :entity, clientId = :clientId, parentId = :parentId, ruleCount = :count, patternCost = :cost",
        ConditionExpression: seen.condition.expression,
        ExpressionAttributeValues: {
          ...seen.condition.values,
          ":entity": "rule-counter",
          ":clientId": clientId,
          ":parentId": parentId,
          ":count": count,
          ":cost": cost,
        },
      },
    },
  };
}

/**
 * Write the steps (one of them the counter's) with the client's configuration version in one
 * transaction. True when written; false when it lost the race on the counter (its condition, or a
 * conflicting transaction: retry with fresh values). A failed step that `refusal` answers for
 * throws that answer; other errors are rethrown.
 */
function writeCounted(
  region: string,
  clientId: string,
  steps: TransactionStep[],
  refusal: (failed: readonly string[]) => DomainError | undefined,
): Promise<boolean> {
  return tryCommitRegional(
    region,
    clientId,
    steps,
    (failed) => refusal(failed) ?? (failed.includes(UPDATE_COUNTER) ? "retry" : undefined),
  );
}

export async function listRules({ clientId }: ClientAccess, kind: RuleParentKind, parentId: string) {
  const { region } = await locateParent(clientId, kind, parentId);
  const rules = await listRulesOfParent(region, clientId, parentId);
  return rules.sort((a, b) => b.priority - a.priority || a.ruleId.localeCompare(b.ruleId)).map(toApiRule);
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
  const rule: RuleItem = {
    ...ruleKeys.item(clientId, parentId, ruleId),
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
  const checkParent: TransactionStep = {
    name: CHECK_PARENT,
    action: {
      ConditionCheck: {
        TableName: tableName(),
        Key: key,
        ConditionExpression: "attribute_exists(pKey) AND attribute_not_exists(deletingAt)",
      },
    },
  };
  const writeRule: TransactionStep = {
    name: WRITE_RULE,
    action: {
      Put: { TableName: tableName(), Item: rule, ConditionExpression: "attribute_not_exists(pKey)" },
    },
  };
  for (let attempt = 1; ; attempt++) {
    const seen = await readCounter(region, clientId, parentId);
    if (seen.count >= MAX_RULES_PER_PARENT)
      throw badRequest(`A ${kind} can have at most ${MAX_RULES_PER_PARENT} rules`);
    if (seen.cost + patternCost > MAX_RULE_PATTERN_COST)
      throw badRequest(
        `The patterns of a ${kind}'s rules can cost at most ${MAX_RULE_PATTERN_COST} in total; this rule's cost ${patternCost} and the existing rules' ${seen.cost} exceed it (see docs/access-rules.md)`,
      );
    const steps = [
      checkParent,
      counterStep(clientId, parentId, seen, seen.count + 1, seen.cost + patternCost),
      writeRule,
    ];
    const written = await writeCounted(region, clientId, steps, (failed) =>
      failed.includes(CHECK_PARENT) ? parentNotFound(kind) : undefined,
    );
    if (written) break;
    if (attempt >= COUNTER_ATTEMPTS)
      throw conflict(`The rules of this ${kind} are being changed concurrently; retry`);
    await lostRace(attempt);
  }
  return toApiRule(rule);
}

export async function deleteRule(
  { clientId }: ClientAccess,
  kind: RuleParentKind,
  parentId: string,
  ruleId: string,
) {
  const { region } = await locateParent(clientId, kind, parentId);
  for (let attempt = 1; ; attempt++) {
    const rule = await findRule(region, clientId, parentId, ruleId);
    if (!rule) throw notFound(RULE_NOT_FOUND);
    const seen = await readCounter(region, clientId, parentId);
    const steps: TransactionStep[] = [
      {
        name: DELETE_RULE,
        action: {
          Delete: {
            TableName: tableName(),
            Key: ruleKeys.item(clientId, parentId, ruleId),
            ConditionExpression: "attribute_exists(pKey) AND entity = :rule",
            ExpressionAttributeValues: { ":rule": "rule" },
          },
        },
      },
      counterStep(
        clientId,
        parentId,
        seen,
        Math.max(0, seen.count - 1),
        Math.max(0, seen.cost - costOf(rule)),
      ),
    ];
    const written = await writeCounted(region, clientId, steps, (failed) =>
      failed.includes(DELETE_RULE) ? notFound(RULE_NOT_FOUND) : undefined,
    );
    if (written) break;
    if (attempt >= COUNTER_ATTEMPTS)
      throw conflict(`The rules of this ${kind} are being changed concurrently; retry`);
    await lostRace(attempt);
  }
}
