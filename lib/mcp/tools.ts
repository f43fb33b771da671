/**
 * The MCP tools (spec 4.15, issue 13), derived from the operation registry and never written a
 * second time: each operation that agents may use becomes a tool whose name is the snake_case of
 * its id, whose input schema merges its path parameters, query and body (the Core API's own field
 * names), whose output schema is its response schema, and whose call runs the operation exactly
 * as the Lambda dispatch does (`runOperation`, lib/api/dispatch.ts). The few tools that are not
 * operations (proxy execution, guides, discovery) are declared in lib/mcp/extra-tools.ts.
 *
 * Which operations are not tools is data, here: unsupported routes (405 only), public routes (the
 * OAuth2 redirect, the documents) and MCP_EXCLUDED_OPERATIONS (spec 4.15: billing, subscription,
 * member invites and password resets are handled in the web UI only; and a user's API tokens,
 * issue 21, so that no raw token is ever a tool result). docs/mcp.md lists them.
 */
import { z } from "zod";
import { pathParamNames, runOperation } from "#lib/api/dispatch.ts";
import type { Effect, Operation, Principal } from "#lib/api/operation.ts";
import { OPERATIONS } from "#lib/api/registry.ts";
import { decodePathParameter, jsonInputIssues } from "#lib/http/input-checks.ts";
import { DomainError, validationFailed } from "#lib/shared/errors.ts";

/** A JSON Schema whose root is an object (what MCP requires of input and output schemas). */
export type ObjectJsonSchema = {
  type: "object";
  properties?: Record<string, unknown>;
  [key: string]: unknown;
};

export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** What a tool call gets besides its arguments. */
export interface ToolContext {
  principal: Principal;
  requestId: string;
  baseUrl: string;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** The domain it belongs to (`X-MCP-Toolsets`). */
  toolset: string;
  effect: Effect;
  inputSchema: ObjectJsonSchema;
  /** Absent when the answer is not a JSON object. */
  outputSchema?: ObjectJsonSchema;
  annotations: ToolAnnotations;
  /** The answer's body (structuredContent); throws DomainError for what the caller must know. */
  run(args: Record<string, unknown>, context: ToolContext): Promise<Record<string, unknown>>;
}

/**
 * Operations that are not offered as tools although agents could call them, with the reason
 * (spec 4.15: "Billing, subscription, member invites and password resets are handled in the web
 * UI only"). The service has no password (tokens only), so no password-reset operation exists.
 */
export const MCP_EXCLUDED_OPERATIONS: Readonly<Record<string, string>> = {
  listInvites: "member invites: web UI only",
  createInvite: "member invites: web UI only",
  getInvite: "member invites: web UI only",
  updateInvite: "member invites: web UI only",
  cancelInvite: "member invites: web UI only",
  listUserInvites: "member invites: web UI only",
  getUserInvite: "member invites: web UI only",
  answerUserInvite: "member invites: web UI only",
  rejectUserInvite: "member invites: web UI only",
  listMspInvites: "member invites: web UI only",
  createMspInvite: "member invites: web UI only",
  updateMspInvite: "member invites: web UI only",
  cancelMspInvite: "member invites: web UI only",
  updateMspConfiguration: "billing and subscription (promotional codes, billing type): web UI only",
  updateMspClientConfiguration: "billing and subscription (billingTo, rates, budget, top-up): web UI only",
  getClientBilling: "billing and subscription (the plan's billing): web UI only",
  startClientCheckout: "billing and subscription (Checkout for an upgrade): web UI only",
  scheduleClientDowngrade: "billing and subscription (downgrade or cancellation): web UI only",
  openClientBillingPortal: "billing and subscription (the Billing Portal): web UI only",
  listClientInvoices: "billing and subscription (invoices): web UI only",
  startMspPaymentMethodSetup: "billing and subscription (the MSP's payment method): web UI only",
  getClientFeatureOverrides:
    "billing and subscription (a client's feature and promo overrides): operators only, API and admin CLI",
  updateClientFeatureOverrides:
    "billing and subscription (a client's feature and promo overrides): operators only, API and admin CLI",
  createUserToken:
    "API tokens: account credentials, managed by their owner over the Core API (the answer is a raw token, which must never be in a tool result)",
  listUserTokens: "API tokens: account credentials, managed by their owner over the Core API",
  deleteUserToken:
    "API tokens: account credentials, managed by their owner over the Core API (an agent must not revoke the credential it runs on)",
};

/** Why an operation is not a tool, or undefined when it is one. */
export function exclusionOf(operation: Operation): string | undefined {
  if (operation.unsupported) return "unsupported route (answers 405 only)";
  // Whatever their access becomes (public today, a session cookie later): passwords, codes and
  // sessions are the person's own, in the browser, and never an agent's argument or result.
  if (operation.path.startsWith("/auth/"))
    return "accounts (sign-up, sign-in, sessions, passwords): the person's own, never an agent's";
  if (operation.access.kind === "public")
    return "public route (OAuth2 redirect or document), not an API action";
  return MCP_EXCLUDED_OPERATIONS[operation.id];
}

/** `getCurrentUser` -> `get_current_user`. */
export const toolNameOf = (operationId: string): string =>
  operationId
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z])([A-Z][a-z])/g, "$1_$2")
    .toLowerCase();

/** The toolset (domain) of an operation: its Lambda group. */
export const toolsetOf = (operation: Operation): string => operation.group;

/** Each zod schema as JSON Schema, as a caller writes it (input) or as the service answers (output). */
function jsonSchemaOf(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return rest;
}

/** How a tool's arguments map back onto the operation's path, query and body. */
interface ArgumentLayout {
  params: string[];
  query: string[];
  /** `fields`: the body's properties are top-level arguments; `whole`: the body is the `body` argument. */
  body: "none" | "fields" | "whole";
}

function inputOf(operation: Operation): { schema: ObjectJsonSchema; layout: ArgumentLayout } {
  const properties: Record<string, unknown> = {};
  const required = new Set<string>();
  const owner = new Map<string, string>();
  const add = (part: string, schema: Record<string, unknown>) => {
    const props = (schema.properties ?? {}) as Record<string, unknown>;
    for (const [name, value] of Object.entries(props)) {
      const previous = owner.get(name);
      // A field both the query and the body accept (`immediatelyDelete`) is one argument, sent in
      // the body, where it is typed; any other clash is a defect of the declaration.
      if (previous && !(previous === "query" && part === "body"))
        throw new Error(`${operation.id}: argument ${name} is in both ${previous} and ${part}`);
      owner.set(name, part);
      properties[name] = value;
    }
    for (const name of (schema.required ?? []) as string[]) required.add(name);
  };
  const params = pathParamNames(operation);
  const paramSchema = jsonSchemaOf(operation.params, "input");
  for (const name of params) {
    const props = paramSchema.properties as Record<string, Record<string, unknown>>;
    props[name] = {
      ...props[name],
      minLength: 1,
      description: `The ${name} (an id the service gave; never invented)`,
    };
  }
  add("path", paramSchema);
  const querySchema = jsonSchemaOf(operation.query, "input");
  add("query", querySchema);
  let body: ArgumentLayout["body"] = "none";
  if (operation.body) {
    const bodySchema = jsonSchemaOf(operation.body, "input");
    if (bodySchema.type === "object") {
      add("body", bodySchema);
      body = "fields";
    } else {
      add("body", { properties: { body: bodySchema }, required: ["body"] });
      body = "whole";
    }
  }
  return {
    schema: {
      type: "object",
      properties,
      ...(required.size ? { required: [...required] } : {}),
    },
    layout: {
      params,
      query: Object.keys((querySchema.properties ?? {}) as object).filter(
        (name) => owner.get(name) === "query",
      ),
      body,
    },
  };
}

/** Query values go to the operation as the query string would carry them: as text. */
const asQueryValue = (value: unknown) =>
  typeof value === "number" || typeof value === "boolean" ? String(value) : value;

/** The operation's raw input from a tool's arguments; a malformed one is the Core API's 400. */
function splitArguments(layout: ArgumentLayout, args: Record<string, unknown>) {
  const issues = jsonInputIssues(args, "arguments");
  if (issues.length > 0) throw validationFailed(issues);
  const params: Record<string, string> = {};
  for (const name of layout.params) {
    const value = args[name];
    if (typeof value !== "string")
      throw validationFailed([{ field: name, problem: "is a required path parameter (a string id)" }]);
    // The same checks as a path segment's, after decoding (length, well-formed text).
    params[name] = decodePathParameter(name, encodeURIComponent(value));
  }
  const query: Record<string, unknown> = {};
  for (const name of layout.query) if (args[name] !== undefined) query[name] = asQueryValue(args[name]);
  let body: unknown;
  if (layout.body === "whole") body = args.body;
  else if (layout.body === "fields") {
    const taken = new Set([...layout.params, ...layout.query]);
    body = Object.fromEntries(Object.entries(args).filter(([name]) => !taken.has(name)));
  } else {
    const known = new Set([...layout.params, ...layout.query]);
    const unknown = Object.keys(args).filter((name) => !known.has(name));
    if (unknown.length)
      throw validationFailed(unknown.map((field) => ({ field, problem: "is not an argument of this tool" })));
  }
  return { params, query, body };
}

function annotationsOf(title: string, effect: Effect, method: string): ToolAnnotations {
  return {
    title,
    readOnlyHint: effect === "read",
    destructiveHint: effect === "delete",
    idempotentHint: effect === "read" || method === "PUT" || method === "DELETE",
    openWorldHint: false,
  };
}

/** The tool of one operation. */
export function operationTool(operation: Operation): ToolDefinition {
  const { schema, layout } = inputOf(operation);
  const output = jsonSchemaOf(operation.response.schema, "output");
  return {
    name: toolNameOf(operation.id),
    description: `${operation.summary}. ${operation.description}`,
    toolset: toolsetOf(operation),
    effect: operation.effect,
    inputSchema: schema,
    ...(output.type === "object" && !operation.response.contentType
      ? { outputSchema: output as ObjectJsonSchema }
      : {}),
    annotations: annotationsOf(operation.summary, operation.effect, operation.method),
    async run(args, context) {
      const { params, query, body } = splitArguments(layout, args);
      const answer = await runOperation(
        operation,
        context.principal,
        { params, read: () => ({ query, body }) },
        { requestId: context.requestId, baseUrl: context.baseUrl },
      );
      if (typeof answer.body === "string") throw new DomainError("validation", "Not a JSON operation");
      return answer.body;
    },
  };
}

/** Every operation that is a tool, as a tool (deletes included; selection is `selectTools`). */
export const OPERATION_TOOLS: readonly ToolDefinition[] = OPERATIONS.filter(
  (operation) => exclusionOf(operation) === undefined,
).map(operationTool);

export { annotationsOf, jsonSchemaOf };
