/**
 * The tools that are not Core API operations (spec 4.15): proxy execution, guides and discovery.
 * Their input is declared with zod (the JSON Schema shown is derived from it), and a call that
 * names a client checks the caller's access the way the dispatcher does (requireClientAccess).
 */
import { z } from "zod";
import { requireClientAccess } from "#lib/domain/access.ts";
import { jsonInputIssues } from "#lib/http/input-checks.ts";
import { parseInput } from "#lib/http/validation.ts";
import { validationFailed } from "#lib/shared/errors.ts";
import { AUTH_TYPES, HeaderRecord, QueryParamRecord } from "#lib/vault/secret-schemas.ts";
import { authTypeGuide, authTypesDiscovery, regionsDiscovery, setupGuide } from "./guides.ts";
import { executeProxyReadRequest } from "./proxy-request.ts";
import {
  annotationsOf,
  jsonSchemaOf,
  type ObjectJsonSchema,
  type ToolContext,
  type ToolDefinition,
} from "./tools.ts";

const Id = z.string().min(1).max(128);

const ProxyReadArguments = z
  .object({
    clientId: Id.describe("The client that owns the proxy"),
    proxyId: Id.describe("The proxy (an id from list_proxies or create_proxy)"),
    path: z
      .string()
      .max(2048)
      .describe("Path below the proxy's URL, e.g. `/status` (sent to the target below its base URL)"),
    // The credential test's rules: a header or parameter HTTP cannot carry is a 400 naming it.
    query: QueryParamRecord.optional().describe("Query parameters to add"),
    headers: HeaderRecord.optional().describe("Extra request headers (the credential is added last)"),
  })
  .strict();

const AuthTypeArguments = z
  .object({ authType: z.enum(AUTH_TYPES).optional().describe("One auth type; all when omitted") })
  .strict();

const NoArguments = z.object({}).strict();

function extraTool<S extends z.ZodType<Record<string, unknown>>>(declaration: {
  name: string;
  toolset: string;
  description: string;
  title: string;
  input: S;
  output?: z.ZodType;
  run: (args: z.infer<S>, context: ToolContext) => Promise<Record<string, unknown>>;
}): ToolDefinition {
  return {
    name: declaration.name,
    description: declaration.description,
    toolset: declaration.toolset,
    effect: "read",
    inputSchema: jsonSchemaOf(declaration.input, "input") as ObjectJsonSchema,
    ...(declaration.output
      ? { outputSchema: jsonSchemaOf(declaration.output, "output") as ObjectJsonSchema }
      : {}),
    annotations: annotationsOf(declaration.title, "read", "GET"),
    run: async (args, context) => {
      // As an operation's tool (tools.ts splitArguments): ill-formed text is a 400 naming the field.
      const issues = jsonInputIssues(args, "arguments");
      if (issues.length > 0) throw validationFailed(issues);
      return declaration.run(parseInput(declaration.input, args, "arguments"), context);
    },
  };
}

export const EXTRA_TOOLS: readonly ToolDefinition[] = [
  extraTool({
    name: "execute_proxy_read_request",
    toolset: "execution",
    title: "Send a GET through a proxy",
    description:
      "Sends one GET through the proxy's regional data plane, authenticated as the proxy's own proxy credential (apiKey, bearer, jwt or basicAuth; a jwtVerify proxy cannot be presented by the server), and answers {status, headers, body}. The target's answer is capped at 64 KiB; every secret of the proxy's credentials, and any token the gateway fetched for the target, is redacted from it. Needs the `user` role of the client.",
    input: ProxyReadArguments,
    output: z.object({
      status: z.number().int(),
      headers: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
      body: z.string(),
      bodyEncoding: z.enum(["utf8", "base64"]),
      bodyTruncated: z.boolean(),
    }),
    run: async ({ clientId, ...input }, { principal }) =>
      executeProxyReadRequest(
        await requireClientAccess(clientId, principal.userId, "user", "proxies"),
        input,
      ),
  }),
  extraTool({
    name: "get_setup_guide",
    toolset: "guides",
    title: "Recommended proxy setup order",
    description:
      "The recommended order to set up a proxy (spec 4.15): create_target, create_credential (proxy credential), create_credential (target credential), create_proxy, execute_proxy_read_request, with what each step needs.",
    input: NoArguments,
    run: async () => setupGuide(),
  }),
  extraTool({
    name: "get_auth_type_guide",
    toolset: "guides",
    title: "How each auth type is configured",
    description:
      "For one auth type (or all): where it may be used (proxy and/or target credential), the JSON Schema of its secret, and how a caller presents a proxy credential of that type.",
    input: AuthTypeArguments,
    run: async ({ authType }) => authTypeGuide(authType),
  }),
  extraTool({
    name: "list_regions",
    toolset: "discovery",
    title: "Configured regions",
    description:
      "The deployment's home region and configured regions, each with its data-plane URL (where proxies answer).",
    input: NoArguments,
    run: async () => regionsDiscovery(),
  }),
  extraTool({
    name: "list_auth_types",
    toolset: "discovery",
    title: "Auth types and their secret shapes",
    description:
      "Every credential auth type: where it may be used, the keys of its secret (required ones apart) and the resource URI of its secret's JSON Schema.",
    input: NoArguments,
    run: async () => authTypesDiscovery(),
  }),
];
