/**
 * Access rules (spec 4.8) on each of their three parents: a credential, a proxy or a target. The
 * same three operations (list, create, delete; no update) exist on each parent, declared once per
 * operation kind and instantiated per parent, each with its own id (listProxyRules,
 * createTargetRule, deleteCredentialRule, ...).
 */
import { z } from "zod";
import {
  access,
  MessageResponse,
  type Operation,
  operation,
  paged,
  pathParams,
  wrapped,
} from "#lib/api/operation.ts";
import { PaginationQuery, paginate } from "#lib/db/pagination.ts";
import { createRule, deleteRule, listRules, type RuleParentKind } from "#lib/domain/access-rules.ts";
import { CreateRuleBody, RULE_EFFECTS, RULE_PRESENCES } from "#lib/domain/rules/rule-schema.ts";

const Presence = z.enum(RULE_PRESENCES);
const RuleCheckSchema = z.object({
  name: z.string(),
  pattern: z
    .string()
    .nullable()
    .describe("Regular expression the value must match; null checks presence only"),
  presence: Presence,
});

/** A rule as the API shows it (spec 2.8): the canonical conditions, both path forms filled in. */
/** A realistic rule (the generated one would give the path check both ways, which is refused). */
const RULE_EXAMPLE = {
  effect: "allow",
  priority: 10,
  methods: ["GET", "POST"],
  path: { pattern: "^/v1/(orders|invoices)/", presence: "present" },
  headerChecks: [{ name: "X-Tenant", pattern: "^acme-", presence: "present" }],
  regexFlags: "i",
  notes: "Reads and writes of orders and invoices",
};

export const RuleSchema = z.object({
  pKey: z.literal("RULE"),
  sKey: z.string().describe("Equals ruleId"),
  ruleId: z.string(),
  effect: z.enum(RULE_EFFECTS),
  priority: z.number().int().describe("0-1000; higher is evaluated first"),
  methods: z.array(z.string()).describe("Upper case; empty matches every method"),
  path: z
    .object({ pattern: z.string(), presence: Presence })
    .nullable()
    .describe("The path check (null when the rule has none)"),
  pathPattern: z.string().nullable().describe("Mirror of path.pattern"),
  pathPresence: Presence.nullable().describe("Mirror of path.presence"),
  headerChecks: z.array(RuleCheckSchema).describe("Header names are lower case"),
  queryChecks: z.array(RuleCheckSchema),
  regexFlags: z.string(),
  notes: z.string(),
  userId: z.string().describe("The user who created the rule"),
  clientId: z.string(),
  parentId: z.string().describe("The credential, proxy or target id"),
  parentType: z.enum(["credential", "proxy", "target"]),
  createdAt: z.string(),
  updatedAt: z.string(),
});

interface Parent {
  kind: RuleParentKind;
  /** Capitalised, for operation ids and summaries. */
  name: "Credential" | "Proxy" | "Target";
  collection: "credentials" | "proxies" | "targets";
  idParam: "credentialId" | "proxyId" | "targetId";
  /** What rules on this parent apply to. */
  scope: string;
}

const PARENTS: readonly Parent[] = [
  {
    kind: "credential",
    name: "Credential",
    collection: "credentials",
    idParam: "credentialId",
    scope: "every proxy that uses it as its proxy credential",
  },
  { kind: "proxy", name: "Proxy", collection: "proxies", idParam: "proxyId", scope: "the proxy's requests" },
  {
    kind: "target",
    name: "Target",
    collection: "targets",
    idParam: "targetId",
    scope: "every proxy that forwards to the target",
  },
];

const rulesPath = (parent: Parent) =>
  `/api/clients/{clientId}/${parent.collection}/{${parent.idParam}}/rules`;
const parentIdOf = (parent: Parent, params: Record<string, string>) => params[parent.idParam] as string;

const listRulesOf = (parent: Parent) =>
  operation({
    id: `list${parent.name}Rules`,
    method: "GET",
    path: rulesPath(parent),
    group: "rules",
    summary: `List a ${parent.kind}'s rules`,
    description: `Lists the access rules of a ${parent.kind} (they apply to ${parent.scope}) highest priority first, then by rule id. Paged with query \`page\` (default 1) and \`limit\` (default 20, at most 100).`,
    access: access.client("reader"),
    effect: "read",
    params: pathParams("clientId", parent.idParam),
    query: PaginationQuery,
    response: { status: 200, schema: paged("rules", RuleSchema) },
    errors: [403, 404],
    handler: async ({ member, params, query }) => {
      const rules = await listRules(member, parent.kind, parentIdOf(parent, params));
      const { items, pagination } = paginate(rules, query);
      return { body: { message: "Rules retrieved", rules: items, pagination } };
    },
  });

const createRuleOf = (parent: Parent) =>
  operation({
    id: `create${parent.name}Rule`,
    method: "POST",
    path: rulesPath(parent),
    group: "rules",
    summary: `Create a rule on a ${parent.kind}`,
    description: `Adds an access rule to a ${parent.kind} (it applies to ${parent.scope}): \`effect\` allow or deny for requests matching its methods, path, header and query checks, evaluated by \`priority\` (0-1000, higher first). The path check is given either flat (\`pathPattern\`, \`pathPresence\`) or nested (\`path\`); patterns are RE2 regular expressions with \`regexFlags\`, compiled now (400 naming the field). The number of rules and their total pattern cost per ${parent.kind} are capped. Takes effect on the next request; rules cannot be updated (delete and create).`,
    access: access.client("devops"),
    effect: "write",
    params: pathParams("clientId", parent.idParam),
    body: CreateRuleBody,
    documentation: { examples: { body: RULE_EXAMPLE } },
    response: { status: 201, schema: wrapped("rules", RuleSchema) },
    errors: [403, 404, 409],
    handler: async ({ member, params, body }) => ({
      status: 201,
      body: {
        message: "Rule created",
        rules: [await createRule(member, parent.kind, parentIdOf(parent, params), body)],
      },
    }),
  });

const deleteRuleOf = (parent: Parent) =>
  operation({
    id: `delete${parent.name}Rule`,
    method: "DELETE",
    path: `${rulesPath(parent)}/{ruleId}`,
    group: "rules",
    summary: `Delete a rule of a ${parent.kind}`,
    description: `Deletes one access rule of a ${parent.kind}; requests are no longer checked against it from the next one on.`,
    access: access.client("devops"),
    effect: "delete",
    params: pathParams("clientId", parent.idParam, "ruleId"),
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404, 409],
    handler: async ({ member, params }) => {
      await deleteRule(member, parent.kind, parentIdOf(parent, params), params.ruleId);
      return { body: { message: "Rule deleted" } };
    },
  });

export const ruleOperations: Operation[] = PARENTS.flatMap((parent) => [
  listRulesOf(parent),
  createRuleOf(parent),
  deleteRuleOf(parent),
]);
