/**
 * Access rules on credentials, proxies and targets (spec 2.8, 4.8): create, list, delete; no
 * update. A rule lives beside its parent in the parent's region (`RULE#<parentId>#<ruleId>` in the
 * client partition). Validation and the evaluation semantics are in lib/domain/rules/.
 */
import { randomUUID } from "node:crypto";
import { bumpConfigVersion } from "../data-plane/client-runtime.ts";
import { DeleteCommand, TransactWriteCommand } from "../db/document-client.ts";
import { keys, REGIONAL_SK } from "../db/keys.ts";
import {
  type Item,
  isConditionalCheckFailure,
  nowIso,
  queryPartition,
  tableName,
  transactionCancellationCodes,
} from "../db/store.ts";
import { badRequest, notFound } from "../http/errors.ts";
import { authorizeClient } from "./clients.ts";
import { requireCredential } from "./credentials.ts";
import { requireProxy } from "./proxies.ts";
import { MAX_RULES_PER_PARENT, regionalDb } from "./regional.ts";
import { parseCreateRule } from "./rules/rule-schema.ts";
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

const listRuleItems = (region: string, clientId: string, parentId: string) =>
  queryPartition(keys.clientPartition(clientId), {
    region,
    sKeyPrefix: `${REGIONAL_SK.rulePrefix}${parentId}#`,
    max: MAX_RULES_PER_PARENT * 2,
  });

export async function listRules(clientId: string, userId: string, kind: RuleParentKind, parentId: string) {
  await authorizeClient(clientId, userId, "view");
  const { region } = await locateParent(clientId, kind, parentId);
  const rules = await listRuleItems(region, clientId, parentId);
  return rules
    .sort(
      (a, b) => Number(b.priority) - Number(a.priority) || String(a.ruleId).localeCompare(String(b.ruleId)),
    )
    .map(toApiRule);
}

/**
 * Create a rule. Every pattern is compiled now (400 naming the field if invalid). The write is one
 * transaction with a check that the parent still exists and is not being deleted; the client's
 * configuration version then moves, so a warm data plane applies the rule on the next request.
 */
export async function createRule(
  clientId: string,
  userId: string,
  kind: RuleParentKind,
  parentId: string,
  body: unknown,
) {
  await authorizeClient(clientId, userId, "manage");
  const { region, key } = await locateParent(clientId, kind, parentId);
  const conditions = parseCreateRule(body);
  const existing = await listRuleItems(region, clientId, parentId);
  if (existing.length >= MAX_RULES_PER_PARENT)
    throw badRequest(`A ${kind} can have at most ${MAX_RULES_PER_PARENT} rules`);
  const ruleId = randomUUID();
  const now = nowIso();
  const item: Item = {
    ...keys.rule(clientId, parentId, ruleId),
    entity: "rule",
    ruleId,
    ...conditions,
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
  try {
    await regionalDb(region).send(
      new TransactWriteCommand({
        TransactItems: [
          parentCheck,
          { Put: { TableName: tableName(), Item: item, ConditionExpression: "attribute_not_exists(pKey)" } },
        ],
      }),
    );
  } catch (error) {
    if (transactionCancellationCodes(error)?.[0] === "ConditionalCheckFailed")
      throw notFound(
        `${kind === "credential" ? "Credential" : kind === "proxy" ? "Proxy" : "Target"} not found`,
      );
    throw error;
  }
  await bumpConfigVersion(region, clientId);
  return toApiRule(item);
}

export async function deleteRule(
  clientId: string,
  userId: string,
  kind: RuleParentKind,
  parentId: string,
  ruleId: string,
) {
  await authorizeClient(clientId, userId, "manage");
  const { region } = await locateParent(clientId, kind, parentId);
  try {
    await regionalDb(region).send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.rule(clientId, parentId, ruleId),
        ConditionExpression: "attribute_exists(pKey)",
      }),
    );
    await bumpConfigVersion(region, clientId);
  } catch (error) {
    if (isConditionalCheckFailure(error)) throw notFound(RULE_NOT_FOUND);
    throw error;
  }
}
