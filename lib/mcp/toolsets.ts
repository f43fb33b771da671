/**
 * Which tools a request sees (spec 4.15, issue 13): toolsets (`X-MCP-Toolsets: a,b` or
 * `?toolsets=a,b`; `all` for every one; a default set that fits a 40-tool client), read-only mode
 * (`X-MCP-Readonly: true`: read tools only) and the deployment's DELETE_ENABLED flag (delete tools
 * exist only when it is `true`). A tool that is not selected is neither listed nor callable.
 */
import { EXTRA_TOOLS } from "./extra-tools.ts";
import { OPERATION_TOOLS, type ToolDefinition } from "./tools.ts";

/** Every tool, before selection. */
export const ALL_TOOLS: readonly ToolDefinition[] = [...OPERATION_TOOLS, ...EXTRA_TOOLS];

/** Every toolset name, in order of first appearance. */
export const TOOLSETS: readonly string[] = [...new Set(ALL_TOOLS.map((tool) => tool.toolset))];

/** What a request gets without choosing: setting up and running proxies (at most 40 tools). */
export const DEFAULT_TOOLSETS: readonly string[] = [
  "clients",
  "users",
  "credentials",
  "targets",
  "proxies",
  "execution",
  "guides",
  "discovery",
];

export interface ToolSelection {
  toolsets: readonly string[];
  readOnly: boolean;
  deleteEnabled: boolean;
}

export class UnknownToolsetError extends Error {}

/** The toolsets named by a header or query value (comma list); undefined or empty: the default. */
export function parseToolsets(value: string | null | undefined): readonly string[] {
  const names = (value ?? "")
    .split(",")
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  if (names.length === 0) return DEFAULT_TOOLSETS;
  if (names.includes("all")) return TOOLSETS;
  const unknown = names.filter((name) => !TOOLSETS.includes(name));
  if (unknown.length)
    throw new UnknownToolsetError(
      `Unknown toolset ${unknown.join(", ")}; known: all, ${TOOLSETS.join(", ")}`,
    );
  return [...new Set(names)];
}

/** The selection of one request: its headers, its query and the deployment's environment. */
export function selectionOf(request: Request, env: NodeJS.ProcessEnv = process.env): ToolSelection {
  const url = new URL(request.url);
  return {
    toolsets: parseToolsets(request.headers.get("x-mcp-toolsets") ?? url.searchParams.get("toolsets")),
    readOnly:
      (request.headers.get("x-mcp-readonly") ?? url.searchParams.get("readonly") ?? "").toLowerCase() ===
      "true",
    deleteEnabled: env.DELETE_ENABLED === "true",
  };
}

export function selectTools(selection: ToolSelection): ToolDefinition[] {
  return ALL_TOOLS.filter(
    (tool) =>
      selection.toolsets.includes(tool.toolset) &&
      (!selection.readOnly || tool.effect === "read") &&
      (selection.deleteEnabled || tool.effect !== "delete"),
  );
}
