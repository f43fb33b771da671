/**
 * One MCP server for one HTTP request (stateless; a new server per request, so nothing of one
 * caller can reach another's): the selected tools (lib/mcp/toolsets.ts) and the resources
 * (lib/mcp/resources.ts), for the authenticated principal.
 *
 * Tool calls answer the operation's response body as `structuredContent` and as JSON text. A
 * domain error (and an invalid argument, which is the Core API's 400 `Input failed data
 * validation` naming the fields) is an `isError` result with the message; anything unexpected is
 * an `isError` result with a generic message and the request id, logged, never an HTTP 5xx. An
 * unknown (or unselected) tool is JSON-RPC -32602.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { HttpError, STATUS_OF_KIND } from "#lib/http/errors.ts";
import { describeError, log } from "#lib/log.ts";
import { DomainError } from "#lib/shared/errors.ts";
import { registerResources } from "./resources.ts";
import type { ToolContext, ToolDefinition } from "./tools.ts";
import { selectTools, type ToolSelection } from "./toolsets.ts";

export const SERVER_INFO = { name: "proxy-gateway", version: "0.1.0" };

const INSTRUCTIONS =
  "Tools of the API proxy gateway. Ids are never invented: take them from list_* and create_* answers. " +
  "Set up a proxy in this order (get_setup_guide): create_target, create_credential (proxy), create_credential (target), create_proxy, execute_proxy_read_request. " +
  "Ask the user before any delete and warn before setting a proxy or rule inactive. Secrets are never shown.";

const textOf = (value: unknown) => JSON.stringify(value);

/** A thrown error as a tool result the agent can act on; nothing internal is shown. */
export function errorResult(error: unknown, requestId: string): CallToolResult {
  let body: Record<string, unknown>;
  if (error instanceof DomainError && error.kind !== "unavailable") {
    body = { status: STATUS_OF_KIND[error.kind], message: error.message, ...error.details };
  } else if (error instanceof HttpError && error.expose) {
    body = { status: error.status, ...error.body };
  } else if (error instanceof DomainError) {
    body = { status: 503, message: "Service unavailable, retry shortly", requestId };
  } else {
    log.error("MCP tool failed", { ...describeError(error), requestId });
    body = { status: 500, message: "Internal server error", requestId };
  }
  return { content: [{ type: "text", text: textOf(body) }], isError: true };
}

export async function callTool(
  tool: ToolDefinition,
  args: Record<string, unknown>,
  context: ToolContext,
): Promise<CallToolResult> {
  try {
    const body = await tool.run(args, context);
    return { content: [{ type: "text", text: textOf(body) }], structuredContent: body };
  } catch (error) {
    return errorResult(error, context.requestId);
  }
}

/** The `tools` of a tools/list answer for a selection. */
export function listedTools(tools: readonly ToolDefinition[]) {
  return tools.map((tool) => ({
    name: tool.name,
    title: tool.annotations.title,
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
    annotations: tool.annotations,
  }));
}

export function createMcpServer(selection: ToolSelection, context: ToolContext): McpServer {
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
    instructions: INSTRUCTIONS,
  });
  const tools = selectTools(selection);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listedTools(tools) }));
  server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = byName.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    return callTool(tool, request.params.arguments ?? {}, context);
  });
  registerResources(server, tools, context);
  return server;
}
