/**
 * The figures of docs/mcp.md: how many tools the MCP endpoint offers and the approximate token
 * size of its tools/list answer (JSON characters / 4), for the default toolsets and for all of
 * them, with DELETE_ENABLED off and on. `npx tsx bench/mcp-tools-size.ts`
 */
import { listedTools } from "#lib/mcp/server.ts";
import { ALL_TOOLS, DEFAULT_TOOLSETS, selectTools, TOOLSETS } from "#lib/mcp/toolsets.ts";

const rows: string[] = [
  "| Selection | DELETE_ENABLED | Tools | tools/list characters | ~tokens |",
  "|---|---|---|---|---|",
];
for (const [label, toolsets] of [
  ["default", DEFAULT_TOOLSETS],
  ["all", TOOLSETS],
] as const) {
  for (const deleteEnabled of [false, true]) {
    const tools = selectTools({ toolsets, readOnly: false, deleteEnabled });
    const characters = JSON.stringify({ tools: listedTools(tools) }).length;
    rows.push(
      `| ${label} | ${deleteEnabled} | ${tools.length} | ${characters} | ${Math.round(characters / 4)} |`,
    );
  }
}
const readOnly = selectTools({ toolsets: TOOLSETS, readOnly: true, deleteEnabled: true });
process.stdout.write(
  `${rows.join("\n")}\n\nTools in all: ${ALL_TOOLS.length}; read-only (all toolsets): ${readOnly.length}\n`,
);
