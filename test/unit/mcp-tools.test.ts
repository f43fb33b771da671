/**
 * The MCP tools derived from the operation registry (lib/mcp/tools.ts) and their selection
 * (lib/mcp/toolsets.ts): names, schemas, annotations, exclusions as data, toolsets, read-only and
 * DELETE_ENABLED. No I/O: the calls themselves are tested over HTTP (test/e2e/mcp.test.ts).
 */
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "#lib/api/registry.ts";
import { EXTRA_TOOLS } from "#lib/mcp/extra-tools.ts";
import { exampleOf } from "#lib/mcp/resources.ts";
import { exclusionOf, MCP_EXCLUDED_OPERATIONS, OPERATION_TOOLS, toolNameOf } from "#lib/mcp/tools.ts";
import {
  ALL_TOOLS,
  DEFAULT_TOOLSETS,
  parseToolsets,
  selectionOf,
  selectTools,
  TOOLSETS,
  UnknownToolsetError,
} from "#lib/mcp/toolsets.ts";

const byName = (name: string) => ALL_TOOLS.find((tool) => tool.name === name)!;

describe("derivation from the registry", () => {
  it("names each tool after its operation id in snake_case, uniquely", () => {
    expect(toolNameOf("getCurrentUser")).toBe("get_current_user");
    expect(toolNameOf("listClients")).toBe("list_clients");
    expect(toolNameOf("getOpenApiDocument")).toBe("get_open_api_document");
    const names = ALL_TOOLS.map((tool) => tool.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[a-z][a-z0-9_]*$/);
  });

  it("offers every operation except unsupported and public routes and the declared exclusions", () => {
    const offered = new Set(OPERATION_TOOLS.map((tool) => tool.name));
    for (const operation of OPERATIONS) {
      const excluded =
        operation.unsupported ||
        operation.path.startsWith("/auth/") ||
        operation.access.kind === "public" ||
        operation.id in MCP_EXCLUDED_OPERATIONS;
      expect(offered.has(toolNameOf(operation.id)), operation.id).toBe(!excluded);
      expect(exclusionOf(operation) !== undefined, operation.id).toBe(Boolean(excluded));
    }
    // Every declared exclusion names a real operation; invites and billing are out.
    const ids = new Set(OPERATIONS.map((operation) => operation.id));
    for (const id of Object.keys(MCP_EXCLUDED_OPERATIONS)) expect(ids.has(id), id).toBe(true);
    for (const id of OPERATIONS.filter((o) => o.group === "invites").map((o) => o.id))
      expect(offered.has(toolNameOf(id))).toBe(false);
    expect(offered.has("update_msp_client_configuration")).toBe(false);
    expect(offered.has("get_api_reference")).toBe(false);
  });

  it("offers no API token operation, so a raw token is never a tool result (issue 21)", () => {
    const tokenOperations = OPERATIONS.filter((operation) =>
      operation.path.startsWith("/api/users/{userId}/tokens"),
    );
    expect(tokenOperations.map((operation) => operation.id).sort()).toEqual(
      ["createUserToken", "deleteUserToken", "listUserTokens"].sort(),
    );
    const offered = new Set(OPERATION_TOOLS.map((tool) => tool.name));
    for (const operation of tokenOperations) {
      expect(offered.has(toolNameOf(operation.id)), operation.id).toBe(false);
      expect(exclusionOf(operation), operation.id).toMatch(/API tokens/);
    }
  });

  it("offers no /auth operation, so a password, code or session is never a tool argument or result (issue 21)", () => {
    const authOperations = OPERATIONS.filter((operation) => operation.path.startsWith("/auth/"));
    expect(authOperations.map((operation) => operation.id)).toEqual(
      expect.arrayContaining(["signUp", "verifyEmail", "signIn", "forgotPassword", "resetPassword"]),
    );
    const offered = new Set(OPERATION_TOOLS.map((tool) => tool.name));
    for (const operation of authOperations) {
      expect(offered.has(toolNameOf(operation.id)), operation.id).toBe(false);
      // Excluded by its path, whatever its access (public today, a session cookie later).
      expect(
        exclusionOf({ ...operation, access: { kind: "self" } } as typeof operation),
        operation.id,
      ).toMatch(/accounts/);
    }
  });

  it("merges path, query and body into one input schema with the Core API's field names", () => {
    const createProxy = byName("create_proxy");
    expect(createProxy.inputSchema.type).toBe("object");
    expect(Object.keys(createProxy.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(["clientId", "proxyName", "proxyRegion", "proxyTargetId", "proxyAlias"]),
    );
    expect(createProxy.inputSchema.required).toEqual(expect.arrayContaining(["clientId", "proxyName"]));
    const getRule = byName("delete_proxy_rule");
    expect(getRule.inputSchema.required).toEqual(["clientId", "proxyId", "ruleId"]);
    // A field accepted in both the query and the body is one argument.
    expect(byName("delete_client").inputSchema.properties).toHaveProperty("immediatelyDelete");
    const logs = byName("list_request_logs");
    expect(Object.keys(logs.inputSchema.properties ?? {}).length).toBeGreaterThan(2);
  });

  it("declares an object output schema from the response schema, and the annotations from the effect", () => {
    for (const tool of OPERATION_TOOLS) {
      expect(tool.outputSchema?.type, tool.name).toBe("object");
      const { readOnlyHint, destructiveHint } = tool.annotations;
      expect(readOnlyHint, tool.name).toBe(tool.effect === "read");
      expect(destructiveHint, tool.name).toBe(tool.effect === "delete");
    }
    expect(byName("list_targets").annotations.idempotentHint).toBe(true);
    expect(byName("update_proxy").annotations.idempotentHint).toBe(true);
    expect(byName("delete_proxy").annotations.idempotentHint).toBe(true);
    expect(byName("create_proxy").annotations.idempotentHint).toBe(false);
    expect(byName("create_target").description).toMatch(/^Create a target\. /);
  });

  it("builds response examples from the output schema", () => {
    const example = exampleOf(byName("create_target").outputSchema) as { targets: Record<string, unknown>[] };
    expect(example.targets[0]).toHaveProperty("targetId", "<string>");
    expect(example.targets[0]).toHaveProperty("targetDefaultRuleEffect", "allow");
  });

  it("checks tool arguments with the operation's own schemas before anything runs", async () => {
    const context = {
      principal: { userId: "u", tokenId: "t", systemAdmin: false },
      requestId: "r",
      baseUrl: "",
    };
    await expect(byName("get_target").run({ clientId: "c" }, context)).rejects.toMatchObject({
      kind: "validation",
      details: { fields: ["targetId"] },
    });
    await expect(
      byName("get_target").run({ clientId: "c", targetId: "x".repeat(129) }, context),
    ).rejects.toMatchObject({
      details: { fields: ["targetId"] },
    });
    await expect(byName("list_clients").run({ extra: 1 }, context)).rejects.toMatchObject({
      details: { fields: ["extra"] },
    });
    await expect(byName("list_regions").run({ extra: 1 }, context)).rejects.toMatchObject({
      kind: "validation",
    });
  });
});

describe("selection", () => {
  const all = { toolsets: TOOLSETS, readOnly: false, deleteEnabled: true };

  it("has a default set of at most 40 tools, deletes included", () => {
    expect(selectTools({ ...all, toolsets: DEFAULT_TOOLSETS }).length).toBeLessThanOrEqual(40);
    for (const name of DEFAULT_TOOLSETS) expect(TOOLSETS).toContain(name);
    expect(ALL_TOOLS.length).toBe(OPERATION_TOOLS.length + EXTRA_TOOLS.length);
    expect(ALL_TOOLS.length).toBeGreaterThanOrEqual(85);
  });

  it("drops delete tools unless DELETE_ENABLED, and everything but reads in read-only mode", () => {
    const withoutDeletes = selectTools({ ...all, deleteEnabled: false });
    expect(withoutDeletes.some((tool) => tool.effect === "delete")).toBe(false);
    expect(selectTools(all).some((tool) => tool.name === "delete_proxy")).toBe(true);
    const readOnly = selectTools({ ...all, readOnly: true });
    expect(readOnly.every((tool) => tool.annotations.readOnlyHint)).toBe(true);
    expect(readOnly.map((tool) => tool.name)).toContain("execute_proxy_read_request");
  });

  it("parses toolsets from the header or the query; `all`; unknown names refused", () => {
    expect(parseToolsets(undefined)).toEqual(DEFAULT_TOOLSETS);
    expect(parseToolsets(" Meters , rules ")).toEqual(["meters", "rules"]);
    expect(parseToolsets("all")).toEqual(TOOLSETS);
    expect(() => parseToolsets("clients,billing")).toThrow(UnknownToolsetError);
    const request = new Request("http://h/mcp?toolsets=msps", { headers: { "x-mcp-readonly": "TRUE" } });
    expect(selectionOf(request, { DELETE_ENABLED: "true" })).toEqual({
      toolsets: ["msps"],
      readOnly: true,
      deleteEnabled: true,
    });
    const header = new Request("http://h/mcp?toolsets=msps", { headers: { "x-mcp-toolsets": "users" } });
    expect(selectionOf(header, { DELETE_ENABLED: "1" })).toMatchObject({
      toolsets: ["users"],
      deleteEnabled: false,
    });
  });
});
