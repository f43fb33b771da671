/**
 * The MCP endpoint (spec 4.15, issue 13) over real HTTP with the SDK's own client: tools/list and
 * the selection (toolsets, read-only, DELETE_ENABLED), a tool of every domain, the setup order end
 * to end through execute_proxy_read_request against a loopback target that echoes what it got
 * (no stored secret may come back), resources, errors, and the HTTP rules (405, Origin, 401,
 * the shared rate limit).
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { issueToken } from "#lib/domain/tokens.ts";
import { DEFAULT_TOOLSETS } from "#lib/mcp/toolsets.ts";
import { TestClock } from "../support/clock.ts";
import { createClientFor, startTestStack, type TestStack, type TestUser } from "../support/stack.ts";

const US = "us-east-1";
let stack: TestStack;
let owner: TestUser;
let clientId: string;
let echoBase: string;
let echoServer: Server;
const clients: Client[] = [];

/** A client connected to the endpoint with `token`, extra headers and query. */
async function connect(token: string, options: { headers?: Record<string, string>; query?: string } = {}) {
  const client = new Client({ name: "mcp-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.mcpUrl}${options.query ?? ""}`), {
    requestInit: { headers: { Authorization: token, ...options.headers } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}

type ToolAnswer = {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { type: string; text?: string }[];
};

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolAnswer> {
  return (await client.callTool({ name, arguments: args })) as ToolAnswer;
}

/** The structured answer of a call that must succeed. */
async function ok(client: Client, name: string, args: Record<string, unknown> = {}) {
  const answer = await call(client, name, args);
  expect(answer.isError, `${name}: ${answer.content[0]?.text}`).toBeFalsy();
  expect(JSON.parse(answer.content[0]?.text ?? "null")).toEqual(answer.structuredContent);
  return answer.structuredContent as Record<string, any>;
}

/** The error body of a call that must fail as a tool result. */
async function failed(client: Client, name: string, args: Record<string, unknown> = {}) {
  const answer = await call(client, name, args);
  expect(answer.isError, `${name} should fail`).toBe(true);
  return JSON.parse(answer.content[0]?.text ?? "{}") as Record<string, any>;
}

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(stack.mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify(body),
  });
/** The text of a resource's first content. */
const textOf = (resource: { contents: ({ text: string } | { blob: string })[] }) => {
  const first = resource.contents[0];
  return first && "text" in first ? first.text : "";
};
const listRequest = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} };

/** The stack's clock (lib/clock.ts): the rate-limit bursts start in a fresh minute of it. */
const clock = new TestClock();

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Mcp Co");
  // A target that echoes what it received (as httpbin does), headers included.
  echoServer = createServer((req, res) => {
    res.writeHead(200, {
      "content-type": "application/json",
      "x-echo-authorization": String(req.headers.authorization ?? ""),
    });
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers }));
  });
  await new Promise<void>((resolve) => echoServer.listen(0, "127.0.0.1", resolve));
  echoBase = `http://127.0.0.1:${(echoServer.address() as AddressInfo).port}`;
});

afterEach(() => {
  delete process.env.DELETE_ENABLED;
  delete process.env.MCP_ALLOWED_ORIGINS;
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await new Promise<void>((resolve) => echoServer?.close(() => resolve()));
  await stack?.stop();
});

describe("tools/list and the selection", () => {
  it("lists the default toolsets (at most 40 tools) with the registry's names, schemas and annotations", async () => {
    const client = await connect(owner.token);
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    expect(tools.length).toBeLessThanOrEqual(40);
    for (const name of [
      "list_clients",
      "create_target",
      "create_credential",
      "create_proxy",
      "get_current_user",
      "execute_proxy_read_request",
      "get_setup_guide",
      "list_regions",
    ])
      expect(names).toContain(name);
    // Not offered: member invites, billing configuration, unsupported and public routes; deletes off.
    for (const name of [
      "create_invite",
      "update_msp_client_configuration",
      "add_member",
      "get_api_reference",
      "delete_proxy",
    ])
      expect(names).not.toContain(name);
    const createProxy = tools.find((tool) => tool.name === "create_proxy")!;
    expect(createProxy.inputSchema.required).toEqual(
      expect.arrayContaining(["clientId", "proxyName", "proxyProxyCredentialId", "proxyTargetId"]),
    );
    expect(createProxy.outputSchema?.properties).toHaveProperty("proxies");
    expect(createProxy.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
    });
    const listClients = tools.find((tool) => tool.name === "list_clients")!;
    expect(listClients.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
    const updateTarget = tools.find((tool) => tool.name === "update_target")!;
    expect(updateTarget.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    expect(new Set(DEFAULT_TOOLSETS).size).toBe(DEFAULT_TOOLSETS.length);
  });

  it("toolsets by header or query; `all`; an unknown toolset is a 400", async () => {
    const meters = await connect(owner.token, { headers: { "X-MCP-Toolsets": "meters,telemetry" } });
    const names = (await meters.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(["list_meters", "create_meter", "get_proxy_telemetry"]));
    expect(names.every((name) => /meter|telemetry/.test(name))).toBe(true);
    const byQuery = await connect(owner.token, { query: "?toolsets=msps" });
    const mspNames = (await byQuery.listTools()).tools.map((tool) => tool.name);
    expect(mspNames.length).toBeGreaterThan(5);
    expect(mspNames.every((name) => name.includes("msp"))).toBe(true);
    const all = await connect(owner.token, { headers: { "X-MCP-Toolsets": "all" } });
    const allNames = (await all.listTools()).tools.map((tool) => tool.name);
    expect(allNames.length).toBeGreaterThan(70);
    expect(allNames.some((name) => name.startsWith("delete_"))).toBe(false);

    const unknown = await post(listRequest, { authorization: owner.token, "x-mcp-toolsets": "clients,nope" });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { message: string }).message).toContain("nope");
  });

  it("read-only mode lists and allows read tools only", async () => {
    const client = await connect(owner.token, {
      headers: { "X-MCP-Readonly": "true", "X-MCP-Toolsets": "all" },
    });
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(30);
    expect(tools.every((tool) => tool.annotations?.readOnlyHint === true)).toBe(true);
    expect(tools.map((tool) => tool.name)).toContain("execute_proxy_read_request");
    const refused = await client
      .callTool({ name: "create_target", arguments: { clientId } })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(McpError);
    expect((refused as McpError).code).toBe(ErrorCode.InvalidParams);
  });

  it("delete tools exist only with DELETE_ENABLED=true", async () => {
    const off = await connect(owner.token, { headers: { "X-MCP-Toolsets": "all" } });
    const target = await ok(off, "create_target", {
      clientId,
      targetName: "doomed",
      targetRegion: US,
      targetBaseURL: echoBase,
      targetTestPath: "/",
    });
    const targetId = target.targets[0].targetId as string;
    const refused = await off
      .callTool({ name: "delete_target", arguments: { clientId, targetId } })
      .catch((error: unknown) => error);
    expect((refused as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((await owner.api.get(`/api/clients/${clientId}/targets/${targetId}`)).status).toBe(200);

    process.env.DELETE_ENABLED = "true";
    const on = await connect(owner.token, { headers: { "X-MCP-Toolsets": "all" } });
    const names = (await on.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(["delete_target", "delete_proxy", "delete_client"]));
    const deleteTool = (await on.listTools()).tools.find((tool) => tool.name === "delete_target")!;
    expect(deleteTool.annotations).toMatchObject({ destructiveHint: true, idempotentHint: true });
    await ok(on, "delete_target", { clientId, targetId });
    expect((await owner.api.get(`/api/clients/${clientId}/targets/${targetId}`)).status).toBe(404);
  });
});

describe("setup order end to end, and redaction", () => {
  it("create_target, create_credential x2, create_proxy, execute_proxy_read_request; no secret comes back", async () => {
    const client = await connect(owner.token);
    const guide = await ok(client, "get_setup_guide");
    expect(guide.steps.map((step: { tool: string }) => step.tool)).toEqual([
      "create_target",
      "create_credential",
      "create_credential",
      "create_proxy",
      "execute_proxy_read_request",
    ]);
    const callerKey = `caller-${randomUUID()}`;
    const upstreamToken = `upstream-${randomUUID()}`;
    const target = (
      await ok(client, "create_target", {
        clientId,
        targetName: "echo",
        targetRegion: US,
        targetBaseURL: echoBase,
        targetTestPath: "/health",
      })
    ).targets[0];
    const proxyCredential = (
      await ok(client, "create_credential", {
        clientId,
        credentialName: "caller",
        credentialType: "proxy",
        authType: "apiKey",
        region: US,
        secret: { keyName: "x-api-key", keyValue: callerKey },
      })
    ).credentials[0];
    const targetCredential = (
      await ok(client, "create_credential", {
        clientId,
        credentialName: "upstream",
        credentialType: "target",
        authType: "bearer",
        region: US,
        secret: { token: upstreamToken },
      })
    ).credentials[0];
    const proxy = (
      await ok(client, "create_proxy", {
        clientId,
        proxyName: "echo proxy",
        proxyRegion: US,
        proxyProxyCredentialId: proxyCredential.credentialId,
        proxyTargetId: target.targetId,
        proxyTargetCredentialId: targetCredential.credentialId,
      })
    ).proxies[0];
    // The same answer as the Core API's.
    const listed = await ok(client, "list_proxies", { clientId });
    expect(listed).toEqual((await owner.api.get(`/api/clients/${clientId}/proxies`)).body);

    const answer = await ok(client, "execute_proxy_read_request", {
      clientId,
      proxyId: proxy.proxyId,
      path: "/things/1",
      query: { q: "x" },
      headers: { "x-trace": "t1" },
    });
    expect(answer.status).toBe(200);
    const echoed = JSON.parse(answer.body);
    expect(echoed.method).toBe("GET");
    expect(echoed.url).toBe("/things/1?q=x");
    expect(echoed.headers["x-trace"]).toBe("t1");
    // Both secrets reached the target (so the echo holds them) and neither comes back.
    expect(echoed.headers.authorization).toBe("Bearer [redacted]");
    expect(answer.headers["x-echo-authorization"]).toBe("Bearer [redacted]");
    const whole = JSON.stringify(answer);
    expect(whole).not.toContain(callerKey);
    expect(whole).not.toContain(upstreamToken);
    expect(whole).not.toContain(Buffer.from(upstreamToken).toString("base64").slice(4, 24));

    // A dot segment cannot leave the proxy's path.
    const escaped = await failed(client, "execute_proxy_read_request", {
      clientId,
      proxyId: proxy.proxyId,
      path: "/../other",
    });
    expect(escaped.fields).toEqual(["path"]);
  });
});

describe("execute_proxy_read_request with other caller credentials", () => {
  /** A proxy to the echo target whose caller credential is `authType` with `secret`. */
  async function proxyWith(client: Client, authType: string, secret: Record<string, unknown>) {
    const create = (body: Record<string, unknown>) =>
      ok(client, "create_credential", { clientId, region: US, ...body });
    const [caller, upstream, target] = await Promise.all([
      create({ credentialName: "caller", credentialType: "proxy", authType, secret }),
      create({ credentialName: "upstream", credentialType: "target", authType: "none", secret: {} }),
      ok(client, "create_target", {
        clientId,
        targetName: "echo",
        targetRegion: US,
        targetBaseURL: echoBase,
        targetTestPath: "/",
      }),
    ]);
    const proxy = await ok(client, "create_proxy", {
      clientId,
      proxyName: `${authType} proxy`,
      proxyRegion: US,
      proxyProxyCredentialId: caller.credentials[0].credentialId,
      proxyTargetId: target.targets[0].targetId,
      proxyTargetCredentialId: upstream.credentials[0].credentialId,
    });
    return proxy.proxies[0].proxyId as string;
  }

  it("presents a basicAuth caller credential, and refuses a jwtVerify one with a way forward", async () => {
    const client = await connect(owner.token);
    const password = `pw-${randomUUID()}`;
    const basic = await proxyWith(client, "basicAuth", { username: "agent", password });
    const answer = await ok(client, "execute_proxy_read_request", { clientId, proxyId: basic, path: "/b" });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).url).toBe("/b");
    expect(JSON.stringify(answer)).not.toContain(password);

    const jwt = await proxyWith(client, "jwtVerify", {
      algorithms: ["HS256"],
      issuer: "https://issuer.test",
      audience: "gw",
      subject: "svc-*",
      sharedSecret: `s-${randomUUID()}-${randomUUID()}`,
    });
    const refused = await failed(client, "execute_proxy_read_request", { clientId, proxyId: jwt, path: "/" });
    expect(refused.status).toBe(400);
    expect(refused.message).toContain(`${stack.regions[US]}/api/${jwt}/`);
  });
});

describe("a tool of every domain", () => {
  it("answers what the Core API answers", async () => {
    const client = await connect(owner.token, { headers: { "X-MCP-Toolsets": "all" } });
    const me = await ok(client, "get_current_user");
    expect(me.users[0].userId).toBe(owner.userId);
    await ok(client, "get_user", { userId: owner.userId });
    expect((await ok(client, "list_clients")).clients.map((c: { clientId: string }) => c.clientId)).toContain(
      clientId,
    );
    await ok(client, "get_client", { clientId });
    await ok(client, "list_members", { clientId });
    await ok(client, "list_memberships", { userId: owner.userId });
    await ok(client, "list_system_notifications");
    await ok(client, "list_user_notifications", { userId: owner.userId });
    await ok(client, "list_client_notifications", { clientId });
    await ok(client, "list_credentials", { clientId });
    const targets = await ok(client, "list_targets", { clientId });
    expect(targets).toEqual((await owner.api.get(`/api/clients/${clientId}/targets`)).body);
    const proxies = (await ok(client, "list_proxies", { clientId })).proxies;
    expect(proxies.length).toBeGreaterThan(0);
    const proxyId = proxies[0].proxyId as string;
    await ok(client, "get_proxy_filters", { clientId, proxyId });
    await ok(client, "list_proxy_rules", { clientId, proxyId });
    await ok(client, "list_meters", { clientId, proxyId });
    await ok(client, "list_request_transforms", { clientId, proxyId });
    await ok(client, "list_request_logs", { clientId, proxyId });
    await ok(client, "get_client_telemetry", { clientId });
    const msp = await failed(client, "list_msp_clients", { mspId: "no-such-msp" });
    expect(msp).toMatchObject({ status: 404, message: "MSP not found" });
    const types = await ok(client, "list_auth_types");
    expect(types.authTypes.map((t: { authType: string }) => t.authType)).toContain("jwtVerify");
    const guide = await ok(client, "get_auth_type_guide", { authType: "apiKey" });
    expect(guide.authTypes[0].secretSchema.required).toContain("keyValue");
    const regions = await ok(client, "list_regions");
    expect(regions.regions).toContainEqual({ region: US, dataPlaneUrl: stack.regions[US] });
  });
});

describe("errors", () => {
  it("invalid arguments, unknown ids and other clients are isError results; an unknown tool is -32602", async () => {
    const client = await connect(owner.token);
    const invalid = await failed(client, "create_target", { clientId, targetName: "" });
    expect(invalid).toMatchObject({ status: 400, message: "Input failed data validation" });
    expect(invalid.fields).toEqual(expect.arrayContaining(["targetName", "targetRegion"]));
    const extra = await failed(client, "get_current_user", { surprise: 1 });
    expect(extra.fields).toEqual(["surprise"]);
    const missingId = await failed(client, "get_target", { clientId });
    expect(missingId.fields).toEqual(["targetId"]);
    expect(await failed(client, "get_target", { clientId, targetId: "nope" })).toMatchObject({
      status: 404,
      message: "Target not found",
    });
    const stranger = await stack.newUser();
    const other = await connect(stranger.token);
    expect(await failed(other, "list_targets", { clientId })).toMatchObject({
      status: 404,
      message: "Client not found",
    });
    expect(
      await failed(other, "execute_proxy_read_request", { clientId, proxyId: "x", path: "/" }),
    ).toMatchObject({
      status: 404,
    });
    const unknown = await client
      .callTool({ name: "no_such_tool", arguments: {} })
      .catch((error: unknown) => error);
    expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams);
  });
});

describe("resources", () => {
  it("schemas, examples and the client's lists through the same access checks", async () => {
    const client = await connect(owner.token);
    const { resources } = await client.listResources();
    const uris = resources.map((resource) => resource.uri);
    expect(uris).toEqual(
      expect.arrayContaining([
        "service://schemas/credentials/apiKey",
        "service://schemas/proxy/create",
        "service://examples/responses/error",
        "service://examples/responses/create_proxy",
      ]),
    );
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(
      expect.arrayContaining([
        "service://client/{clientId}/targets",
        "service://client/{clientId}/proxies",
        "service://client/{clientId}/credentials",
      ]),
    );
    const schema = await client.readResource({ uri: "service://schemas/credentials/basicAuth" });
    expect(JSON.parse(textOf(schema)).required).toEqual(["username", "password"]);
    const example = await client.readResource({ uri: "service://examples/responses/create_proxy" });
    expect(JSON.parse(textOf(example)).proxies[0]).toHaveProperty("proxyId");
    const targets = await client.readResource({ uri: `service://client/${clientId}/targets` });
    expect(JSON.parse(textOf(targets))).toEqual(
      (await owner.api.get(`/api/clients/${clientId}/targets`)).body,
    );
    const stranger = await connect((await stack.newUser()).token);
    await expect(stranger.readResource({ uri: `service://client/${clientId}/proxies` })).rejects.toThrow(
      /Client not found/,
    );
  });
});

describe("HTTP rules", () => {
  it("GET and DELETE get 405 with Allow: POST", async () => {
    for (const method of ["GET", "DELETE"]) {
      const response = await fetch(stack.mcpUrl, { method, headers: { authorization: owner.token } });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
    }
  });

  it("refuses a foreign Origin, allows its own and the configured ones", async () => {
    const foreign = await post(listRequest, { authorization: owner.token, origin: "http://evil.example" });
    expect(foreign.status).toBe(403);
    const own = await post(listRequest, { authorization: owner.token, origin: new URL(stack.mcpUrl).origin });
    expect(own.status).toBe(200);
    process.env.MCP_ALLOWED_ORIGINS = "https://app.example, http://evil.example";
    const listed = await post(listRequest, { authorization: owner.token, origin: "http://evil.example" });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { result: { tools: unknown[] } }).result.tools.length).toBeGreaterThan(
      0,
    );
  });

  it("401 with WWW-Authenticate naming the protected resource metadata", async () => {
    for (const headers of [
      {},
      { authorization: "u-not-a-token" },
      { authorization: "Bearer not.a.jwt" },
    ] as Record<string, string>[]) {
      const response = await post(listRequest, headers);
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe(
        `Bearer resource_metadata="${new URL(stack.mcpUrl).origin}/.well-known/oauth-protected-resource"`,
      );
    }
  });

  it("shares the Core API's rate limit per user token: 429 once the token's minute is spent", async () => {
    const { token } = await issueToken(owner.userId);
    // Start 1 s into a fresh minute of the stack's clock: the burst finishes inside it.
    clock.toNextWindow();
    const statuses = await Promise.all(
      Array.from({ length: 100 }, () =>
        fetch(`${stack.baseUrl}/api/users`, { headers: { authorization: token } }).then((r) => r.status),
      ),
    );
    expect(statuses.filter((status) => status === 200).length).toBe(100);
    const limited = await post(listRequest, { authorization: token });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toMatch(/^\d+$/);
    // Another token of the same user has its own counter.
    const fresh = await issueToken(owner.userId);
    expect((await post(listRequest, { authorization: fresh.token })).status).toBe(200);
  });
});
