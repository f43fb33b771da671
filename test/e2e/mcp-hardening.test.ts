/**
 * Issue 19, the MCP endpoint after a second outside probe, over real HTTP (the local stack, the
 * SDK's client, loopback targets and token servers):
 * - a token the data plane fetched for the target (oauth2 client_credentials, customToken) never
 *   reaches an agent through `execute_proxy_read_request`, nor the request log, when the target
 *   echoes it (headers, URL, body; plain, base64, percent- and JSON-encoded);
 * - a JSON-RPC batch is refused (-32600, 400) and does not run; the rate limit still holds;
 * - bad input (a lone surrogate, CR/LF in a header value, a bad header name) is a 400 naming the
 *   field, never a 500 or a 502;
 * - an error message carries the `MCP error <code>:` prefix once.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueToken } from "#lib/domain/tokens.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { TestClock } from "../support/clock.ts";
import { type BodyHandler, listenTokenEndpoint, listenWithBody } from "../support/loopback.ts";
import { type OAuthServer, serviceClient, startOAuthServer } from "../support/oauth-server.ts";
import { loggedDetail } from "../support/request-logs.ts";
import { expectNoSecret } from "../support/secret-forms.ts";
import {
  callDataPlane,
  createClientFor,
  createProxyOf,
  createProxyParts,
  joinClient,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const SERVICE_CLIENT = "probe-service";
const SERVICE_SECRET = `svc-${randomUUID()}`;
const CALLER_KEY = `caller-${randomUUID()}`;

let stack: TestStack;
let owner: TestUser;
/** A `user`-role member: the role the tool needs. */
let member: TestUser;
let clientId: string;
let oauth: OAuthServer;
let echoBase: string;
let tokenBase: string;
const servers: Server[] = [];
const clients: Client[] = [];
/** Tokens the customToken endpoint handed out. */
const customTokens = new Set<string>();

/** The echo: what the target received (method, URL, headers, body), in its body and headers. */
function echo(req: IncomingMessage, body: Buffer, res: ServerResponse) {
  const received = JSON.stringify({
    method: req.method,
    url: req.url,
    headers: req.headers,
    body: String(body),
  });
  res.writeHead(200, {
    "content-type": "application/json",
    "x-echo-authorization": String(req.headers.authorization ?? ""),
    "x-echo-fetched": String(req.headers["x-fetched"] ?? ""),
    "x-echo-url": req.url ?? "",
    "x-echo-base64": Buffer.from(received).toString("base64"),
    "set-cookie": `seen=${encodeURIComponent(String(req.headers.authorization ?? ""))}; Path=/`,
  });
  res.end(received);
}

const listen = (handler: BodyHandler) => listenWithBody(handler, servers);

async function connect(token: string) {
  const client = new Client({ name: "mcp-hardening", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.mcpUrl), {
      requestInit: { headers: { Authorization: token } },
    }),
  );
  clients.push(client);
  return client;
}

type ToolAnswer = {
  isError?: boolean;
  structuredContent?: Record<string, any>;
  content: { text?: string }[];
};
const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as ToolAnswer;

const post = (body: string, token: string) =>
  fetch(stack.mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: token,
    },
    body,
  });

const api = () => `/api/clients/${clientId}`;

async function proxyTo(targetAuthType: string, targetSecret: Record<string, unknown>) {
  const parts = await createProxyParts(owner, clientId, {
    region: US,
    key: CALLER_KEY,
    targetBaseURL: `${echoBase}/echo`,
    targetCredential: { authType: targetAuthType, secret: targetSecret },
  });
  return createProxyOf(owner, clientId, US, parts, `echo ${targetAuthType}`);
}

/** The stack's clock (lib/clock.ts): the rate-limit bursts start in a fresh minute of it. */
const clock = new TestClock();

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
  owner = await stack.newUser();
  member = await stack.newUser();
  clientId = await createClientFor(owner, "Probe Co");
  await joinClient(owner, clientId, member, "user");
  echoBase = await listen(echo);
  tokenBase = await listenTokenEndpoint(servers, customTokens, "fetched");
  oauth = await startOAuthServer({
    clients: [serviceClient(SERVICE_CLIENT, SERVICE_SECRET, "api:read")],
  });
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await closeOutboundAgents();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await oauth?.close();
  await stack?.stop();
});

describe("a token the data plane fetched for the target", () => {
  it.each([
    [
      "oauth2 client_credentials",
      "oauth2",
      () => ({
        flow: "client_credentials",
        tokenUrl: oauth.tokenUrl,
        clientId: SERVICE_CLIENT,
        clientSecret: SERVICE_SECRET,
        scope: "api:read",
      }),
      () => [...oauth.issued],
    ],
    [
      "customToken in a header",
      "customToken",
      () => ({ tokenUrl: `${tokenBase}/token`, tokenPath: "data.token", keyName: "X-Fetched" }),
      () => [...customTokens],
    ],
    [
      "customToken in the query",
      "customToken",
      () => ({
        tokenUrl: `${tokenBase}/token`,
        tokenPath: "data.token",
        placement: "query",
        keyName: "token",
      }),
      () => [...customTokens],
    ],
  ] as const)(
    "%s: not in the tool's result nor in the request log",
    async (_name, authType, secret, fetched) => {
      const proxyId = await proxyTo(authType, secret());
      // A plain caller of the proxy gets the echo unchanged: the token did reach the target.
      const direct = await callDataPlane(`${stack.regions[US]}/api/${proxyId}/direct`, {
        headers: { "x-api-key": CALLER_KEY },
      });
      expect(direct.status, direct.text).toBe(200);
      expect(fetched().length).toBeGreaterThan(0);
      expect(fetched().some((token) => direct.text.includes(token))).toBe(true);

      const client = await connect(member.token);
      const answer = await call(client, "execute_proxy_read_request", {
        clientId,
        proxyId,
        path: "/things",
        query: { q: "x" },
        headers: { "x-trace": "t1" },
      });
      expect(answer.isError, answer.content[0]?.text).toBeFalsy();
      const result = answer.structuredContent!;
      expect(result.status).toBe(200);
      const echoed = JSON.parse(result.body);
      expect(echoed.url).toMatch(/^\/echo\/things\?q=x/);
      expect(echoed.headers["x-trace"]).toBe("t1");
      // The gateway's own header reached neither the target nor the answer.
      expect(echoed.headers["service-proxy-redact"]).toBeUndefined();
      expect(JSON.stringify(result)).toContain("[redacted]");
      expectNoSecret("tool result", answer, fetched());
      expectNoSecret("tool result", answer, [SERVICE_SECRET, CALLER_KEY]);

      // The request log of that call, read by the member: no token, and no trace of the header.
      const requestId = String(result.headers["x-request-id"]);
      const detail = await loggedDetail(member.api, clientId, proxyId, requestId);
      expect(detail.responseBody).toContain("[redacted]");
      expect(JSON.stringify(detail.requestHeaders ?? {})).not.toContain("service-proxy-redact");
      expectNoSecret("request log", detail, fetched());
      expectNoSecret("request log", detail, [SERVICE_SECRET, CALLER_KEY]);
    },
  );
});

describe("JSON-RPC batches", () => {
  it("refuses a batch with -32600 (HTTP 400) without running it, and the rate limit still holds", async () => {
    const { token } = await issueToken(owner.userId);
    // Start 1 s into a fresh minute of the stack's clock: the burst finishes inside it.
    clock.toNextWindow();
    const calls = Array.from({ length: 100 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i + 1,
      method: "tools/call",
      params: {
        name: "create_target",
        arguments: { clientId, targetName: `batch ${i}`, targetRegion: US, targetBaseURL: echoBase },
      },
    }));
    const batch = await post(JSON.stringify(calls), token);
    expect(batch.status).toBe(400);
    const refused = (await batch.json()) as { error: { code: number; message: string }; id: unknown };
    expect(refused.error.code).toBe(-32600);
    expect(refused.error.message).toMatch(/batch/i);
    expect(refused.id).toBeNull();
    // Leading whitespace does not hide a batch.
    expect((await post(`\n  ${JSON.stringify(calls.slice(0, 1))}`, token)).status).toBe(400);
    // Nothing of it ran.
    const targets = await owner.api.get(`${api()}/targets?limit=100`);
    expect(JSON.stringify(targets.body)).not.toContain("batch 0");

    // The token's minute: 2 units spent above, 98 more, then the 101st call is refused.
    const statuses = await Promise.all(
      Array.from({ length: 98 }, () =>
        fetch(`${stack.baseUrl}/api/users`, { headers: { authorization: token } }).then((r) => r.status),
      ),
    );
    expect(statuses.filter((status) => status === 200).length).toBe(98);
    const single = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
    expect((await post(single, token)).status).toBe(429);
  });
});

describe("bad input is a 400 naming the field", () => {
  it("a lone surrogate, CR/LF in a header value, a bad or managed header name", async () => {
    const proxyId = await proxyTo("none", {});
    const client = await connect(member.token);
    const base = { clientId, proxyId, path: "/x" };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, query: { q: "a\uD800b" } }, "query.q"],
      [{ ...base, query: { "\uDC00": "v" } }, "query"],
      [{ ...base, path: "/a\uDFFFb" }, "path"],
      [{ ...base, headers: { "x-foo": "a\r\nx-injected: 1" } }, "headers.x-foo"],
      [{ ...base, headers: { "x-foo": "a\nb" } }, "headers.x-foo"],
      [{ ...base, headers: { "bad name": "v" } }, "headers"],
      [{ ...base, headers: { "x-é": "v" } }, "headers"],
      [{ ...base, headers: { host: "elsewhere.example" } }, "headers"],
    ];
    for (const [args, field] of cases) {
      const answer = await call(client, "execute_proxy_read_request", args);
      expect(answer.isError, JSON.stringify(args)).toBe(true);
      const body = JSON.parse(answer.content[0]?.text ?? "{}");
      expect(body, JSON.stringify(args)).toMatchObject({
        status: 400,
        message: "Input failed data validation",
      });
      expect(
        body.fields.some((name: string) => name === field || name.startsWith(`${field}.`)),
        `${JSON.stringify(args)} -> ${JSON.stringify(body)}`,
      ).toBe(true);
    }
    // Good input still goes through.
    const fine = await call(client, "execute_proxy_read_request", { ...base, headers: { "x-foo": "bar" } });
    expect(fine.isError, fine.content[0]?.text).toBeFalsy();
    expect(fine.structuredContent?.status).toBe(200);
  });
});

describe("error messages", () => {
  it("a 401 says how to send the token: a user token sent as Bearer is named", async () => {
    const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
    const prefixed = await post(list, `Bearer ${owner.token}`);
    expect(prefixed.status).toBe(401);
    expect(prefixed.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata=/);
    expect(((await prefixed.json()) as { message: string }).message).toContain("without the Bearer prefix");
    const unknown = await post(list, "u-unknown");
    expect(unknown.status).toBe(401);
    expect(((await unknown.json()) as { message: string }).message).toMatch(
      /^Unauthorized: missing or invalid token/,
    );
    // The same token as it is works.
    expect((await post(list, owner.token)).status).toBe(200);
  });

  it("an MCP error carries its `MCP error <code>:` prefix once", async () => {
    const client = await connect(owner.token);
    const unknown = await client
      .callTool({ name: "no_such_tool", arguments: {} })
      .catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(McpError);
    expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((unknown as McpError).message).toBe("MCP error -32602: Unknown tool: no_such_tool");
    // On the wire the code is in `code` and the message is the text alone.
    await post(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "raw", version: "1" },
        },
      }),
      owner.token,
    );
    const raw = await post(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "no_such_tool", arguments: {} },
      }),
      owner.token,
    );
    const body = (await raw.json()) as { error: { code: number; message: string } };
    expect(body.error).toEqual({ code: ErrorCode.InvalidParams, message: "Unknown tool: no_such_tool" });
  });
});
