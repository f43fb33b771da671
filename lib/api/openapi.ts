/**
 * The OpenAPI 3.1 document of the Core API, derived from the operation registry: every operation
 * with its id, summary, description, tag (its Lambda group), path and query parameters, body,
 * success answer and error answers, and the security schemes: the raw user token in
 * `Authorization` (spec 5.1) or the session cookie of a signed-in browser (issue 21), either one. Schemas come from zod 4's JSON Schema output (draft 2020-12, OpenAPI 3.1's
 * dialect): request parts as the caller sends them (`io: "input"`), answers as they leave
 * (`io: "output"`). A part zod cannot express (a transform's output, a date) becomes `{}` (any
 * value) with a note rather than failing the whole document; refinements are not expressible and
 * are described in prose by the operations that have them.
 */
import { z } from "zod";
import { RULE_METHODS } from "#lib/shared/rule-constants.ts";
import packageJson from "../../package.json" with { type: "json" };
import { ERROR_EXAMPLES, exampleOf } from "./openapi-examples.ts";
import type { Access, Operation } from "./operation.ts";

type Json = Record<string, unknown>;

/** An OpenAPI 3.1 document (what `GET /openapi.json` answers). */
export interface OpenApiDocument extends Json {
  openapi: string;
  info: Json;
}

export const API_TITLE = "Proxy Gateway Core API";
export const SECURITY_SCHEME = "userToken";
/** The session cookie's scheme (issue 21): every authenticated operation accepts it as well as the token. */
export const COOKIE_SECURITY_SCHEME = "sessionCookie";
/** The statuses any authenticated operation may answer besides its declared ones. */
export const AUTHENTICATED_ERRORS = [400, 401, 429, 503] as const;

/** The body of every error answer (lib/http/errors.ts, lib/http/api-handler.ts). */
export const ErrorSchema = z
  .object({
    message: z.string().describe("What went wrong, for a person"),
    code: z
      .string()
      .optional()
      .describe("402 answers of a suspended organisation: `billing-suspended`, as the data plane answers"),
    fields: z.array(z.string()).optional().describe("Validation errors: the fields that failed"),
    errors: z
      .array(z.string())
      .optional()
      .describe("Validation errors: `<field>: <problem>`, one per problem"),
    requestId: z.string().optional().describe("5xx answers: the request id to quote when reporting it"),
    retryAfter: z.number().int().optional().describe("429 answers: seconds before trying again"),
  })
  .describe("An error answer");

const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: "Bad request: the body, query or a path parameter failed validation (the fields are named)",
  401: "Missing or invalid token",
  403: "Forbidden: the caller's role is not enough for this operation",
  404: "Not found (also answered to a non-member for an organisation's resources)",
  402: "Payment required: a charge was declined, or the organisation's billing is suspended (`code` `billing-suspended`)",
  405: "Method not supported on this path (the `Allow` header lists the supported ones)",
  409: "Conflict with the current state (an existing resource, a link in use)",
  429: "Rate limit exceeded: retry after `Retry-After` seconds",
  500: "Internal error: the body carries the request id only",
  502: "The upstream answered with an error (shown)",
  503: "The service is temporarily unavailable; retry shortly",
  504: "The upstream timed out",
};

/** A zod schema as a JSON Schema, without `$schema`; internal `$defs` are hoisted into `defs`. */
function toSchema(schema: z.ZodType, io: "input" | "output", defs: Map<string, Json>, where: string): Json {
  let generated: Json;
  try {
    generated = z.toJSONSchema(schema, {
      io,
      unrepresentable: () => ({ description: "Any value (its type cannot be expressed in JSON Schema)" }),
    }) as Json;
  } catch (error) {
    // Not expected with `unrepresentable` handled; a document with one vague part beats none.
    return { description: `Schema not expressible in JSON Schema (${(error as Error).message})` };
  }
  const { $schema: _dialect, $defs, ...rest } = generated;
  if (!$defs || typeof $defs !== "object") return rest;
  // `#/$defs/X` inside an inline schema would resolve against the document root: move each
  // definition into components.schemas (renamed if another, different one holds the name).
  const renamed = new Map<string, string>();
  for (const [name, def] of Object.entries($defs as Record<string, Json>)) {
    const base = name.startsWith("__") ? `${where}${name}` : name;
    let target = base;
    for (let n = 2; defs.has(target) && JSON.stringify(defs.get(target)) !== JSON.stringify(def); n += 1) {
      target = `${base}_${n}`;
    }
    renamed.set(name, target);
  }
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (!value || typeof value !== "object") return value;
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => {
        if (key === "$ref" && typeof inner === "string" && inner.startsWith("#/$defs/")) {
          const name = inner.slice("#/$defs/".length);
          return [key, `#/components/schemas/${renamed.get(name) ?? name}`];
        }
        return [key, rewrite(inner)];
      }),
    );
  };
  for (const [name, def] of Object.entries($defs as Record<string, Json>)) {
    defs.set(renamed.get(name) as string, rewrite(def) as Json);
  }
  return rewrite(rest) as Json;
}

/** Who may call it, in words (appended to the description; `x-access` carries it for tools). */
export function accessText(access: Access): string {
  switch (access.kind) {
    case "public":
      return "No authentication.";
    case "user":
      return "Any authenticated user.";
    case "self":
      return "The user named in the path only (a caller's own `userId`).";
    case "client":
      return `A member of the organisation with role \`${access.role}\` or above (a non-member gets 404; staff of the MSP managing it act as docs/msp-api.md says).`;
    case "msp":
      return `A member of the MSP with role \`${access.role}\` or above, or a system administrator (a non-member gets 404, a member without the role 403 \`Forbidden\`).`;
    case "systemAdmin":
      return "A system administrator of the deployment.";
  }
}

function parametersOf(operation: Operation, defs: Map<string, Json>): Json[] {
  const path = toSchema(operation.params, "input", defs, operation.id);
  const pathProps = (path.properties ?? {}) as Record<string, Json>;
  const names = [...operation.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
  const parameters: Json[] = names.map((name) => {
    const { description, ...schema } = pathProps[name] ?? { type: "string" };
    return {
      name,
      in: "path",
      required: true,
      ...(description ? { description } : {}),
      schema: Object.keys(schema).length ? schema : { type: "string" },
    };
  });
  const query = toSchema(operation.query, "input", defs, operation.id);
  const required = new Set((query.required ?? []) as string[]);
  for (const [name, property] of Object.entries((query.properties ?? {}) as Record<string, Json>)) {
    const { description, ...schema } = property;
    parameters.push({
      name,
      in: "query",
      required: required.has(name),
      ...(description ? { description } : {}),
      schema,
    });
  }
  return parameters;
}

const errorResponse = (status: number): Json => ({
  description: ERROR_DESCRIPTIONS[status] ?? `Error ${status}`,
  ...(status === 429
    ? { headers: { "Retry-After": { description: "Seconds to wait", schema: { type: "integer" } } } }
    : {}),
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

const RATE_HEADERS = {
  "X-RateLimit-Limit": {
    description: "Requests allowed per minute for this token",
    schema: { type: "integer" },
  },
  "X-RateLimit-Remaining": {
    description: "Requests left in the current minute",
    schema: { type: "integer" },
  },
};

/**
 * The fields that name a region of the deployment (spec 1.10): the regions are its configuration,
 * not a list in code, so the document lists them when it is built for a deployment (`regions`).
 */
export const REGION_FIELDS = [
  "region",
  "credentialRegion",
  "targetRegion",
  "proxyRegion",
  "meterRegion",
  "transformRegion",
  "regionAccess",
] as const;

/**
 * Closed sets the stored items' schemas (read on the data plane, kept lean there) type as plain
 * strings: the document lists them by field name. The lists are the ones validation uses.
 */
const STORED_ENUMS: Readonly<Record<string, readonly string[]>> = { methods: RULE_METHODS };

/** Gives each named field (a string, or an array of strings) without an enum its list as enum. */
function listEnums(value: unknown, lists: Readonly<Record<string, readonly string[]>>): void {
  if (Array.isArray(value)) {
    for (const inner of value) listEnums(inner, lists);
    return;
  }
  if (!value || typeof value !== "object") return;
  const node = value as Json;
  const properties = node.properties as Record<string, Json> | undefined;
  if (properties && typeof properties === "object") {
    for (const [name, list] of Object.entries(lists)) {
      const property = properties[name];
      if (!property) continue;
      const target = property.type === "array" ? (property.items as Json | undefined) : property;
      if (target && target.type === "string" && !target.enum && !("const" in target)) target.enum = [...list];
    }
  }
  for (const inner of Object.values(node)) listEnums(inner, lists);
}

function operationObject(operation: Operation, defs: Map<string, Json>): Json {
  const isPublic = operation.access.kind === "public";
  const errors = new Set<number>([...operation.errors, ...(isPublic ? [] : AUTHENTICATED_ERRORS), 500]);
  const responses: Record<string, Json> = {
    [String(operation.response.status)]: {
      description: operation.summary,
      ...(isPublic ? {} : { headers: RATE_HEADERS }),
      content: {
        [operation.response.contentType ?? "application/json"]: {
          schema: toSchema(operation.response.schema, "output", defs, operation.id),
        },
        // Alternatives (chosen by Accept) are text renderings of the same answer.
        ...Object.fromEntries(
          (operation.response.alternatives ?? []).map((alternative) => [
            alternative.contentType,
            { schema: { type: "string" } },
          ]),
        ),
      },
    },
  };
  for (const status of [...errors].sort((a, b) => a - b)) responses[String(status)] = errorResponse(status);
  const parameters = parametersOf(operation, defs);
  return {
    operationId: operation.id,
    summary: operation.summary,
    description: `${operation.description}\n\n**Access:** ${accessText(operation.access)}`,
    tags: [operation.group],
    ...(parameters.length ? { parameters } : {}),
    ...(operation.body
      ? {
          requestBody: {
            // The dispatcher reads a missing body as `{}`: required only if `{}` is refused.
            required: !operation.body.safeParse({}).success,
            content: {
              "application/json": {
                schema: toSchema(
                  operation.documentation?.body ?? operation.body,
                  "input",
                  defs,
                  operation.id,
                ),
              },
            },
          },
        }
      : {}),
    responses,
    security: isPublic ? [] : [{ [SECURITY_SCHEME]: [] }, { [COOKIE_SECURITY_SCHEME]: [] }],
    "x-access": operation.access,
    "x-effect": operation.effect,
  };
}

/**
 * Adds an example to every request body and every JSON answer of the document's operations: the
 * operation's own (`documentation.examples`) or one generated from the schema; the error answers
 * get their status's example.
 */
function addExamples(
  operations: readonly Operation[],
  paths: Record<string, Record<string, Json>>,
  components: Record<string, Json>,
) {
  for (const operation of operations) {
    const declared = paths[operation.path]?.[operation.method.toLowerCase()] as Json;
    const own = operation.documentation?.examples;
    const body = (declared.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
    const bodyMedia = body?.["application/json"];
    if (bodyMedia) bodyMedia.example = own?.body ?? exampleOf(bodyMedia.schema, components);
    for (const [status, response] of Object.entries(declared.responses as Record<string, Json>)) {
      const media = (response.content as Record<string, Json> | undefined)?.["application/json"];
      if (!media) continue;
      media.example =
        status === String(operation.response.status)
          ? (own?.response ?? withMessage(exampleOf(media.schema, components), operation.summary))
          : status === "404"
            ? { message: notFoundMessageOf(operation.path) }
            : (ERROR_EXAMPLES[Number(status)] ?? { message: String(response.description) });
    }
  }
}

const PAST: Readonly<Record<string, string>> = {
  Get: "retrieved",
  List: "retrieved",
  Create: "created",
  Update: "updated",
  Delete: "deleted",
  Remove: "removed",
  Revoke: "revoked",
  Cancel: "cancelled",
};
/** "List credentials" -> "Credentials retrieved": the answer's message in the API's manner ("Done" when unsure). */
function messageOf(summary: string): string {
  const match = /^(\w+) (?:an? |the |the caller's )?([\w' -]+)$/.exec(summary);
  const past = match && PAST[match[1] as string];
  const object = match?.[2] as string | undefined;
  if (!past || !object || /^(of|or) |\bor\b|\(/.test(object)) return "Done";
  return `${object.replace(/^./, (first) => first.toUpperCase())} ${past}`;
}

const withMessage = (example: unknown, summary: string) =>
  example && typeof example === "object" && "message" in example
    ? { ...example, message: messageOf(summary) }
    : example;

/** The 404 a caller most often meets on a path: a non-member gets the organisation's (or MSP's) own. */
const notFoundMessageOf = (path: string) =>
  path.startsWith("/api/msps/")
    ? "MSP not found"
    : path.startsWith("/api/users/")
      ? "User not found"
      : "Client not found";

/** How the document is built: for a deployment, its configured regions (listed as the region fields' enum). */
export interface DocumentOptions {
  regions?: readonly string[];
}

/** The OpenAPI 3.1 document of the given operations (the registry's, when served). */
export function openApiDocument(
  operations: readonly Operation[],
  options: DocumentOptions = {},
): OpenApiDocument {
  const defs = new Map<string, Json>();
  const paths: Record<string, Record<string, Json>> = {};
  for (const operation of operations) {
    paths[operation.path] = {
      ...paths[operation.path],
      [operation.method.toLowerCase()]: operationObject(operation, defs),
    };
  }
  const errorSchema = toSchema(ErrorSchema, "output", defs, "Error");
  const tags = [...new Set(operations.map((operation) => operation.group))].map((name) => ({ name }));
  const schemas: Record<string, Json> = { Error: errorSchema, ...Object.fromEntries(defs) };
  const regions = options.regions?.length
    ? Object.fromEntries(REGION_FIELDS.map((name) => [name, options.regions as readonly string[]]))
    : {};
  listEnums([paths, schemas], { ...STORED_ENUMS, ...regions });
  addExamples(operations, paths, schemas);
  return {
    openapi: "3.1.1",
    info: {
      title: API_TITLE,
      version: packageJson.version,
      description:
        "The Core API of the proxy gateway: organisations (clients), members, invites, users, credentials, targets, proxies, rules, request logs and notifications. Every operation except the documentation itself takes the raw user API token in the `Authorization` header (no `Bearer` prefix), or the session cookie a browser gets from `POST /auth/sign-in`. Successful answers carry a `message` and the resources under their wrapper key, always as an array.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    // Relative: the API is where this document is served from ({base_url}).
    servers: [{ url: ".", description: "This deployment ({base_url})" }],
    tags,
    paths,
    components: {
      schemas,
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: "apiKey",
          in: "header",
          name: "Authorization",
          description:
            "The raw user API token (prefix `u-`), as it is: not prefixed with `Bearer`. To get one, sign in (`POST /auth/sign-in`) and create it with `POST /api/users/{userId}/tokens` (the value is shown once), or have an operator issue one with `npm run admin`; the web console's Settings, Keys page does the same once the console is deployed. `DELETE /api/users/{userId}/tokens/{tokenId}` revokes one: a revoked token is refused on its next request. A request with `Authorization` is decided by the token alone.",
        },
        [COOKIE_SECURITY_SCHEME]: {
          type: "apiKey",
          in: "cookie",
          name: "session",
          description:
            "The session cookie `POST /auth/sign-in` sets (HttpOnly, SameSite=Lax; named `__Host-session`, and Secure, over https), for the web console: it authenticates every operation as a token does, with the same roles and rate limit (one window per user, shared by their sessions). A request authenticated by the cookie whose method is not GET, HEAD or OPTIONS must carry this service's own `Origin` header, or it is refused with 403 (CSRF). Signing out, a password reset or `DELETE /auth/sessions/{sessionId}` revokes a session: it is refused on its next request.",
        },
      },
    },
  };
}
