/**
 * The MCP endpoint with OAuth 2.1, end to end over real HTTP against the local stack: discovery
 * from the 401, registration, consent, PKCE exchange, then the SDK's client calling tools with the
 * Bearer access token; a token for another resource, a wrong verifier and a wrong password are
 * refused; the approval's API token `MCP: <client>` is in the user's token list, and deleting it there
 * cuts the agent off. (The authorization server's own rules are in test/integration/mcp-oauth.test.ts.)
 */
import { createHash, randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueToken } from "#lib/domain/tokens.ts";
import { type AccountHolder, newAccountHolder } from "../support/accounts.ts";
import { type ApiClient, apiClient, startTestStack, type TestStack } from "../support/stack.ts";

const REDIRECT_URI = "http://127.0.0.1:33419/callback";
let stack: TestStack;
let user: Person;
let origin: string;

/** A person with an account (e-mail and password) and a Core API client of their own token. */
interface Person extends AccountHolder {
  api: ApiClient;
}
async function newPerson(): Promise<Person> {
  const holder = await newAccountHolder("mcp-e2e");
  const { token } = await issueToken(holder.userId, { tokenName: "console" });
  return { ...holder, api: apiClient(stack.baseUrl, token) };
}

beforeAll(async () => {
  stack = await startTestStack();
  user = await newPerson();
  origin = new URL(stack.mcpUrl).origin;
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

const post = (path: string, fields: Record<string, string>) =>
  fetch(`${origin}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });

/** Discovery, registration, consent and sign-in with approval: the authorization code and what exchanges it. */
async function authorize(person: Person) {
  const unauthorized = await fetch(stack.mcpUrl, { method: "POST", body: "{}" });
  expect(unauthorized.status).toBe(401);
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(
    unauthorized.headers.get("www-authenticate") ?? "",
  )?.[1];
  const resourceMetadata = (await (await fetch(metadataUrl ?? "")).json()) as Record<string, any>;
  expect(resourceMetadata.resource).toBe(stack.mcpUrl);
  const server = (await (
    await fetch(`${resourceMetadata.authorization_servers[0]}/.well-known/oauth-authorization-server`)
  ).json()) as Record<string, any>;
  expect(server.code_challenge_methods_supported).toContain("S256");

  const registered = (await (
    await fetch(server.registration_endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "E2E agent" }),
    })
  ).json()) as Record<string, any>;
  const verifier = randomBytes(32).toString("base64url");
  const params = {
    response_type: "code",
    client_id: registered.client_id as string,
    redirect_uri: REDIRECT_URI,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: "e2e-state",
    resource: stack.mcpUrl,
  };
  const page = await fetch(`${server.authorization_endpoint}?${new URLSearchParams(params)}`);
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('autocomplete="current-password"');
  expect(html).not.toContain('name="token"');
  // A wrong password: the page again, and no code.
  const wrong = await post("/oauth/authorize", {
    ...params,
    email: person.email,
    password: `${person.password}-wrong`,
    consent: "approve",
  });
  expect(wrong.status).toBe(401);
  expect(wrong.headers.get("location")).toBeNull();
  expect(await wrong.text()).toContain("Invalid email or password");
  const approved = await post("/oauth/authorize", {
    ...params,
    email: person.email,
    password: person.password,
    consent: "approve",
  });
  expect([302, 303]).toContain(approved.status);
  const location = new URL(approved.headers.get("location") ?? "");
  expect(location.searchParams.get("state")).toBe("e2e-state");
  return { code: location.searchParams.get("code") ?? "", verifier, clientId: params.client_id };
}

const exchange = (grant: { code: string; verifier: string; clientId: string }, verifier = grant.verifier) =>
  post("/oauth/token", {
    grant_type: "authorization_code",
    code: grant.code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    client_id: grant.clientId,
  });

async function connect(authorization: string) {
  const client = new Client({ name: "mcp-oauth-e2e", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { requestInit: { headers: { authorization } } }),
  );
  return client;
}

describe("MCP with an OAuth 2.1 access token", () => {
  it("runs the whole flow with PKCE, then calls tools with the Bearer token", async () => {
    const grant = await authorize(user);
    const tokens = (await (await exchange(grant)).json()) as Record<string, any>;
    expect(tokens).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(tokens.refresh_token).toEqual(expect.any(String));

    const client = await connect(`Bearer ${tokens.access_token}`);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain("get_current_user");
    const answer = (await client.callTool({ name: "get_current_user", arguments: {} })) as Record<
      string,
      any
    >;
    expect(answer.isError).toBeFalsy();
    expect(JSON.stringify(answer.structuredContent)).toContain(user.userId);
    await client.close();

    // A reused code is refused (and what it issued is revoked).
    const reused = await exchange(grant);
    expect(reused.status).toBe(400);
    expect(((await reused.json()) as Record<string, any>).error).toBe("invalid_grant");
    const after = await fetch(stack.mcpUrl, {
      method: "POST",
      headers: { authorization: `Bearer ${tokens.access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(after.status).toBe(401);
  });

  it("refuses a wrong verifier with invalid_grant", async () => {
    const grant = await authorize(user);
    const answer = await exchange(grant, randomBytes(32).toString("base64url"));
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as Record<string, any>).error).toBe("invalid_grant");
  });

  it("refuses a token whose audience is another resource, and one whose API token was deleted", async () => {
    const other = await newPerson();
    const grant = await authorize(other);
    const tokens = (await (await exchange(grant)).json()) as Record<string, any>;
    // The same token presented to a resource at another origin (the loopback address by name).
    const elsewhere = stack.mcpUrl.replace("127.0.0.1", "localhost");
    const listRequest = {
      method: "POST",
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    };
    if (elsewhere !== stack.mcpUrl) expect((await fetch(elsewhere, listRequest)).status).toBe(401);
    expect((await fetch(stack.mcpUrl, listRequest)).status).toBe(200);

    // The approval's API token is in the user's list, named after the client; deleting it there
    // cuts the agent off: its access token and its refresh token are refused.
    const listed = await other.api.get<{ tokens: Array<Record<string, any>> }>(
      `/api/users/${other.userId}/tokens`,
    );
    expect(listed.status).toBe(200);
    const mcpTokens = listed.body.tokens.filter((token) => token.tokenName === "MCP: E2E agent");
    expect(mcpTokens).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toMatch(/u-[A-Za-z0-9_-]{43}/);
    const deleted = await other.api.delete(`/api/users/${other.userId}/tokens/${mcpTokens[0]?.tokenId}`);
    expect(deleted.status, JSON.stringify(deleted.body)).toBeLessThan(300);
    expect((await fetch(stack.mcpUrl, listRequest)).status).toBe(401);
    const refreshed = await post("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: grant.clientId,
    });
    expect(refreshed.status).toBe(400);
    // The person's own API token still works.
    expect((await other.api.get(`/api/users/${other.userId}`)).status).toBe(200);
  });
});
