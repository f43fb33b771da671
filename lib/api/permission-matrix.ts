/**
 * The permission matrix (docs/roles.md), rendered from the operation registry and the role model
 * (lib/shared/roles.ts): which operations each client role may call, and who may call the ones not
 * checked by a client role. `npm run docs:roles` writes the file; test/unit/registry.test.ts fails
 * when the file and the registry disagree, so the doc cannot drift.
 */
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { FunctionGroupName, RouteDefinition } from "#lib/infra/api-manifest.ts";
import {
  ACTION_MINIMUM_ROLE,
  CLIENT_ROLES,
  type ClientAction,
  MSP_ACTS_AS,
  MSP_ROLE_RANK,
  MSP_ROLES,
  ROLE_RANK,
} from "#lib/shared/roles.ts";
import type { Access, Operation } from "./operation.ts";
import { OPERATIONS } from "./registry.ts";
import { CORE_API_ROUTES } from "./routes.ts";

export const ROLES_DOC = "docs/roles.md";

/** What each action covers, in the words of the rule that picks an operation's least role. */
const ACTION_COVERS: Readonly<Record<ClientAction, string>> = {
  view: "read the organisation, its resources, request logs and notifications",
  use: "use resources without changing them (credential and token tests)",
  manage: "create, change and delete resources: credentials, targets, proxies, rules, meters",
  invite: "manage the organisation's people: members and invites",
  billing: "the organisation's plan and billing",
  delete: "delete the organisation",
};

/** Section titles; a group without one is titled by its name. */
const GROUP_TITLES: Readonly<Partial<Record<FunctionGroupName, string>>> = {
  clients: "Clients",
  members: "Members and memberships",
  invites: "Invites",
  users: "Users",
  notifications: "Notifications",
  credentials: "Credentials",
  targets: "Targets",
  proxies: "Proxies",
  rules: "Access rules",
  meters: "Meters",
  requests: "Request logs",
  webhooks: "Webhooks",
  msps: "MSP API",
  auth: "Accounts (sign-up, sign-in, password reset)",
};

/** MSP roles, highest first (the MSP API's columns). */
const MSP_COLUMNS = [...MSP_ROLES].reverse();

/** The cell text of an access that is not a client role, in every role column. */
const NON_CLIENT_ACCESS: Readonly<Record<Exclude<Access["kind"], "client">, { cell: string; who: string }>> =
  {
    public: {
      cell: "public",
      who: "anyone, without a token (what authenticates the call is in the request itself, such as a single-use OAuth2 `state`)",
    },
    user: { cell: "any user", who: "any signed-in user, member of an organisation or not" },
    self: { cell: "self", who: "only the user named by `{userId}` in the path: a user's own records" },
    systemAdmin: { cell: "system admin", who: "an operator of the deployment (a system administrator)" },
    msp: {
      cell: "MSP role",
      who: "a member of the MSP in the path with the MSP role named in the MSP matrix below (docs/msp-api.md)",
    },
  };

/** Routes of the Core API that no operation declares yet (LEGACY_ROUTES, until every group moves). */
function routesNotDeclared(operations: readonly Operation[]): RouteDefinition[] {
  const declared = new Set(operations.map((op) => `${op.method} ${op.path}`));
  return CORE_API_ROUTES.filter((route) => !declared.has(`${route.method} ${route.path}`));
}

const row = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;

function roleCells(access: Access): string[] {
  if (access.kind !== "client") return CLIENT_ROLES.map(() => NON_CLIENT_ACCESS[access.kind].cell);
  const least = ROLE_RANK[access.role];
  return CLIENT_ROLES.map((role) => (ROLE_RANK[role] >= least ? "✓" : "—"));
}

/** docs/roles.md for these operations. Pure: the same registry always renders the same text. */
export function renderPermissionMatrix(
  operations: readonly Operation[] = OPERATIONS,
  pendingRoutes: readonly RouteDefinition[] = routesNotDeclared(operations),
): string {
  const lines: string[] = [];
  const push = (...more: string[]) => lines.push(...more);
  const roleList = CLIENT_ROLES.map((role) => `\`${role}\``).join(" > ");

  push(
    "# Roles and permissions",
    "",
    "<!-- Generated from the operation registry (lib/api/operations/) and lib/shared/roles.ts by",
    "     `npm run docs:roles`. Do not edit: test/unit/registry.test.ts fails when this file differs. -->",
    "",
    "A member of an organisation (client) holds one or more roles. Roles are ranked,",
    `${roleList}, and each holds every permission of the roles below it.`,
    "Every operation of the Core API declares the access it needs, and the API checks it once, before",
    "anything else runs. Someone who is not a member of the organisation gets 404, as if it did not",
    "exist; a member without the role gets 403.",
    "",
    "## The rule",
    "",
    "An operation's least role follows from what it does:",
    "",
    row(["Action", "Least role", "Roles allowed", "Covers"]),
    row(["---", "---", "---", "---"]),
  );
  for (const [action, least] of Object.entries(ACTION_MINIMUM_ROLE) as [
    ClientAction,
    keyof typeof ROLE_RANK,
  ][]) {
    const allowed = CLIENT_ROLES.filter((role) => ROLE_RANK[role] >= ROLE_RANK[least]);
    push(row([action, `\`${least}\``, allowed.join(", "), ACTION_COVERS[action]]));
  }
  push(
    "",
    "Operations that do not act on an organisation are not checked by a client role:",
    "",
    row(["Access", "Who may call"]),
    row(["---", "---"]),
    ...Object.values(NON_CLIENT_ACCESS).map(({ cell, who }) => row([cell, who])),
    "",
    "## The matrix",
    "",
    "✓ the role may call the operation; — it may not. For an operation not checked by a client role,",
    "every cell names its access instead (see above).",
    "",
  );

  const roleCounts = CLIENT_ROLES.map(
    (role) =>
      `${role} ${operations.filter((op) => op.access.kind === "client" && ROLE_RANK[role] >= ROLE_RANK[op.access.role]).length}`,
  );
  const clientOperations = operations.filter((op) => op.access.kind === "client").length;
  push(
    `${operations.length} operations, ${clientOperations} of them checked by a client role. Operations each role may call among those: ${roleCounts.join(", ")}.`,
  );

  const groups = [...new Set(operations.map((op) => op.group))];
  for (const group of groups) {
    const mine = operations.filter((o) => o.group === group);
    if (mine.every((op) => op.access.kind === "msp")) {
      push(
        "",
        `### ${GROUP_TITLES[group] ?? group}`,
        "",
        "MSP roles are ranked `msp_owner` > `msp_admin` > `msp_user` > `msp_reader`; a system administrator",
        "acts as `msp_owner` on any MSP. A non-member of the MSP gets 404, a member without the role 403.",
        "Through the Core API, MSP staff act on the clients their MSP manages as",
        `${MSP_COLUMNS.map((role) => `\`${role}\` → \`${MSP_ACTS_AS[role]}\``).join(", ")}`,
        "on the resource kinds the client's `sharing` flags open (docs/msp-api.md).",
        "",
        row(["Operation", "Method and path", ...MSP_COLUMNS]),
        row(["---", "---", ...MSP_COLUMNS.map(() => ":-:")]),
      );
      for (const op of mine) {
        const least = op.access.kind === "msp" ? MSP_ROLE_RANK[op.access.role] : Number.POSITIVE_INFINITY;
        push(
          row([
            `\`${op.id}\` ${op.summary}`,
            `\`${op.method} ${op.path}\``,
            ...MSP_COLUMNS.map((role) => (MSP_ROLE_RANK[role] >= least ? "✓" : "—")),
          ]),
        );
      }
      continue;
    }
    push(
      "",
      `### ${GROUP_TITLES[group] ?? group}`,
      "",
      row(["Operation", "Method and path", ...CLIENT_ROLES]),
      row(["---", "---", ...CLIENT_ROLES.map(() => ":-:")]),
    );
    for (const op of operations.filter((o) => o.group === group))
      push(row([`\`${op.id}\` ${op.summary}`, `\`${op.method} ${op.path}\``, ...roleCells(op.access)]));
  }
  if (pendingRoutes.length > 0) {
    push(
      "",
      "### Not yet in the registry",
      "",
      "These routes are still served by their groups' own route tables, which check access themselves;",
      "they join the matrix when their group is declared in lib/api/operations/.",
      "",
      ...pendingRoutes.map((route) => `- \`${route.method} ${route.path}\``),
    );
  }
  push("");
  return lines.join("\n");
}

// `npm run docs:roles`: write the file (run from the repository's root).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(ROLES_DOC, renderPermissionMatrix());
  console.log(`Wrote ${ROLES_DOC}`);
}
