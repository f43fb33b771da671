/**
 * MCP resources (spec 4.15):
 * - `service://schemas/credentials/<type>`: the JSON Schema of each auth type's secret;
 * - `service://schemas/proxy/create`: the JSON Schema of create_proxy's body;
 * - `service://examples/responses/<tool>`: the shape of a tool's answer, an example built from its
 *   output schema (so it cannot drift from it), and `service://examples/responses/error`;
 * - templates `service://client/{clientId}/targets|proxies|credentials`: the client's lists, read
 *   through the same operations as list_targets, list_proxies and list_credentials (access checked).
 */
import { type McpServer, ResourceTemplate } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ErrorCode, McpError, type ReadResourceResult } from "@modelcontextprotocol/sdk/types.js";
import { DomainError } from "#lib/shared/errors.ts";
import { AUTH_TYPES } from "#lib/vault/secret-schemas.ts";
import { createProxySchema, secretSchemaOf } from "./guides.ts";
import { OPERATION_TOOLS, type ToolContext, type ToolDefinition, toolNameOf } from "./tools.ts";

const JSON_TYPE = "application/json";

const jsonContents = (uri: URL | string, value: unknown): ReadResourceResult => ({
  contents: [{ uri: String(uri), mimeType: JSON_TYPE, text: JSON.stringify(value, null, 2) }],
});

/** A value of the shape a JSON Schema describes: first enum value, placeholders, arrays of one. */
export function exampleOf(schema: unknown, depth = 0): unknown {
  if (depth > 12 || schema === null || typeof schema !== "object") return null;
  const node = schema as Record<string, unknown>;
  if ("const" in node) return node.const;
  if (Array.isArray(node.enum)) return node.enum[0];
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const options = node[key];
    if (Array.isArray(options) && options.length) {
      const concrete = options.find((option) => (option as { type?: string }).type !== "null") ?? options[0];
      return exampleOf(concrete, depth + 1);
    }
  }
  const type = Array.isArray(node.type) ? node.type.find((t) => t !== "null") : node.type;
  switch (type) {
    case "object": {
      const properties = (node.properties ?? {}) as Record<string, unknown>;
      return Object.fromEntries(
        Object.entries(properties).map(([name, value]) => [name, exampleOf(value, depth + 1)]),
      );
    }
    case "array":
      return node.items ? [exampleOf(node.items, depth + 1)] : [];
    case "string":
      return node.format === "date-time" ? "2026-01-01T00:00:00.000Z" : "<string>";
    case "integer":
    case "number":
      return 0;
    case "boolean":
      return false;
    default:
      return null;
  }
}

/** The error result every tool may answer (lib/mcp/server.ts errorResult). */
const ERROR_EXAMPLE = {
  isError: true,
  content: [
    {
      type: "text",
      text: JSON.stringify({
        status: 400,
        message: "Input failed data validation",
        fields: ["targetBaseURL"],
        errors: ["targetBaseURL: must be an https URL"],
      }),
    },
  ],
};

const LIST_TEMPLATES = [
  { kind: "targets", operationId: "listTargets" },
  { kind: "proxies", operationId: "listProxies" },
  { kind: "credentials", operationId: "listCredentials" },
] as const;

export function registerResources(server: McpServer, tools: readonly ToolDefinition[], context: ToolContext) {
  for (const authType of AUTH_TYPES) {
    const uri = `service://schemas/credentials/${authType}`;
    server.registerResource(
      `secret-schema-${authType}`,
      uri,
      { title: `Secret of a ${authType} credential`, mimeType: JSON_TYPE },
      () => jsonContents(uri, secretSchemaOf(authType)),
    );
  }
  server.registerResource(
    "create-proxy-schema",
    "service://schemas/proxy/create",
    { title: "Body of create_proxy", mimeType: JSON_TYPE },
    () => jsonContents("service://schemas/proxy/create", createProxySchema()),
  );
  server.registerResource(
    "example-error",
    "service://examples/responses/error",
    { title: "An error result of a tool call", mimeType: JSON_TYPE },
    () => jsonContents("service://examples/responses/error", ERROR_EXAMPLE),
  );
  const withOutput = tools.filter((tool) => tool.outputSchema);
  server.registerResource(
    "example-response",
    new ResourceTemplate("service://examples/responses/{tool}", {
      list: () => ({
        resources: withOutput.map((tool) => ({
          uri: `service://examples/responses/${tool.name}`,
          name: `example-${tool.name}`,
          mimeType: JSON_TYPE,
        })),
      }),
    }),
    { title: "The shape of a tool's answer (structuredContent)", mimeType: JSON_TYPE },
    (uri, variables) => {
      const tool = withOutput.find((candidate) => candidate.name === variables.tool);
      if (!tool) throw new McpError(ErrorCode.InvalidParams, `No example for ${String(variables.tool)}`);
      return jsonContents(uri, exampleOf(tool.outputSchema));
    },
  );
  for (const { kind, operationId } of LIST_TEMPLATES) {
    const tool = OPERATION_TOOLS.find((candidate) => candidate.name === toolNameOf(operationId));
    if (!tool) throw new Error(`No tool for ${operationId}`);
    server.registerResource(
      `client-${kind}`,
      new ResourceTemplate(`service://client/{clientId}/${kind}`, { list: undefined }),
      { title: `The client's ${kind} (as ${tool.name})`, mimeType: JSON_TYPE },
      async (uri, variables) => {
        try {
          return jsonContents(uri, await tool.run({ clientId: String(variables.clientId) }, context));
        } catch (error) {
          if (error instanceof DomainError) throw new McpError(ErrorCode.InvalidParams, error.message);
          throw error;
        }
      },
    );
  }
}
