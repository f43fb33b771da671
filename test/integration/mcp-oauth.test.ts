/**
 * The MCP endpoint's OAuth 2.1 authorization server (lib/oauth) over real HTTP: handleOAuthRequest
 * served on a loopback Node server (test/support/web-handler-server.ts), against the emulator's
 * DynamoDB and KMS (an ECC_NIST_P256 signing key). Users and API tokens are real ones
 * (lib/domain/tokens.ts); the browser's part is plain fetch with manual redirects.
 */
import { createHash, randomBytes } from "node:crypto";
import { auth, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getConfig } from "#lib/config.ts";
import { findAuthorizationCode, redeemAuthorizationCode } from "#lib/db/entities/oauth-code.ts";
import { findUser } from "#lib/db/entities/user.ts";
import { keys } from "#lib/db/keys.ts";
import { signIn, signOut, signUp } from "#lib/domain/accounts.ts";
import { issueToken, listUserTokens, revokeToken } from "#lib/domain/tokens.ts";
import { signAccessToken, verifyAccessToken } from "#lib/oauth/access-tokens.ts";
import { handleOAuthRequest } from "#lib/oauth/http.ts";
import { s256Challenge } from "#lib/oauth/pkce.ts";
import { provisionSigningKey, provisionTable } from "#local/provision.ts";
import { type AccountHolder, newAccountHolder } from "../support/accounts.ts";
import { storedItem } from "../support/stack.ts";
import { serveWebHandler, type WebHandlerServer } from "../support/web-handler-server.ts";

let server: WebHandlerServer;
let base: string;
let resource: string;
const REDIRECT_URI = "http://127.0.0.1:33418/callback";

beforeAll(async () => {
  const config = getConfig();
  await Promise.all([
    provisionTable(config.homeRegion, config.tableName),
    provisionSigningKey(config.homeRegion, config.oauthSigningKeyId),
  ]);
  // Every test registers its own client from 127.0.0.1: more than the default 10 a minute. The
  // registration limits themselves are tested in mcp-oauth-registration-limits.test.ts.
  process.env.OAUTH_REGISTRATIONS_PER_MINUTE = "1000";
  server = await serveWebHandler((request, { remoteAddress }) =>
    handleOAuthRequest(request, { sourceIp: remoteAddress }),
  );
  base = server.baseUrl;
  resource = `${base}/mcp`;
});

afterAll(async () => {
  await server?.close();
});

/** A person with a verified account and a password; `tokenId` is the API token of their latest approval. */
interface Person extends AccountHolder {
  tokenId: string;
}
async function newUser(): Promise<Person> {
  return { ...(await newAccountHolder("oauth")), tokenId: "" };
}

const tokenIdsOf = async (userId: string) => Object.keys((await findUser(userId))?.tokens ?? {});

const form = (fields: Record<string, string | undefined>) =>
  new URLSearchParams(
    Object.entries(fields).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );

const post = (path: string, fields: Record<string, string | undefined>) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: form(fields),
    redirect: "manual",
  });

async function register(body: Record<string, unknown> = {}) {
  const response = await fetch(`${base}/oauth/register`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "Test agent", ...body }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

interface Authorization {
  clientId: string;
  verifier: string;
  params: Record<string, string>;
}

async function newAuthorization(overrides: Record<string, string> = {}): Promise<Authorization> {
  const registered = await register();
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  const verifier = randomBytes(32).toString("base64url");
  const clientId = registered.body.client_id as string;
  return {
    clientId,
    verifier,
    params: {
      response_type: "code",
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: s256Challenge(verifier),
      code_challenge_method: "S256",
      state: `st-${randomBytes(6).toString("hex")}`,
      resource,
      ...overrides,
    },
  };
}

/**
 * Approve on the consent page, signing in with the person's e-mail and password; the redirect's
 * query (code, state, iss, or an error). The API token the approval issued becomes `user.tokenId`.
 */
async function approve(authorization: Authorization, user: Person | undefined, consent = "approve") {
  const before = user ? await tokenIdsOf(user.userId) : [];
  const response = await post("/oauth/authorize", {
    ...authorization.params,
    ...(user ? { email: user.email, password: user.password } : {}),
    consent,
  });
  expect(response.status, await response.clone().text()).toBe(303);
  const location = new URL(response.headers.get("location") ?? "");
  expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
  if (user && consent === "approve") {
    const added = (await tokenIdsOf(user.userId)).filter((id) => !before.includes(id));
    expect(added).toHaveLength(1);
    user.tokenId = added[0] ?? "";
  }
  return location.searchParams;
}

const exchange = (authorization: Authorization, code: string, verifier = authorization.verifier) =>
  post("/oauth/token", {
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    client_id: authorization.clientId,
  });

const refresh = (clientId: string, refreshToken: string) =>
  post("/oauth/token", { grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId });

/** The whole flow: register, consent, approve, exchange. */
async function tokensFor(user: Person) {
  const authorization = await newAuthorization();
  const code = (await approve(authorization, user)).get("code") ?? "";
  const response = await exchange(authorization, code);
  const body = (await response.json()) as Record<string, any>;
  expect(response.status, JSON.stringify(body)).toBe(200);
  return { authorization, code, body };
}

describe("discovery", () => {
  it("serves the protected resource metadata at both paths, derived from the request's origin", async () => {
    for (const path of [
      "/.well-known/oauth-protected-resource",
      "/.well-known/oauth-protected-resource/mcp",
    ]) {
      const response = await fetch(`${base}${path}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        resource,
        authorization_servers: [base],
        bearer_methods_supported: ["header"],
        resource_name: expect.any(String),
      });
    }
  });

  it("serves the authorization server metadata", async () => {
    const response = await fetch(`${base}/.well-known/oauth-authorization-server`);
    const body = (await response.json()) as Record<string, any>;
    expect(body).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none"],
    });
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("answers only its own paths (undefined -> the adapter's 404), and names the allowed methods", async () => {
    expect((await fetch(`${base}/mcp`)).status).toBe(404);
    expect(await handleOAuthRequest(new Request(`${base}/api/users`))).toBeUndefined();
    const wrongMethod = await fetch(`${base}/oauth/token`);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("POST");
  });
});

describe("registration", () => {
  it("registers a public client and stores it", async () => {
    const { status, body } = await register();
    expect(status).toBe(201);
    expect(body).toMatchObject({
      client_id: expect.stringMatching(/^mcp-/),
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
      client_name: "Test agent",
    });
    expect(body).not.toHaveProperty("client_secret");
    expect(await storedItem(keys.oauthClient(body.client_id))).toMatchObject({
      entity: "oauthClient",
      redirectUris: [REDIRECT_URI],
      TTL: expect.any(Number),
    });
  });

  it("refuses a non-loopback http redirect URI and a confidential client, naming the field", async () => {
    const insecure = await register({ redirect_uris: ["http://agent.example/cb"] });
    expect(insecure.status).toBe(400);
    expect(insecure.body).toMatchObject({
      error: "invalid_redirect_uri",
      error_description: expect.stringContaining("redirect_uris[0]"),
    });
    const confidential = await register({ token_endpoint_auth_method: "client_secret_basic" });
    expect(confidential.status).toBe(400);
    expect(confidential.body.error).toBe("invalid_client_metadata");
  });

  it("refuses an oversized body", async () => {
    const response = await fetch(`${base}/oauth/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "x".repeat(20_000) }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: "invalid_request",
      error_description: "body: too large",
    });
  });
});

describe("the authorization endpoint", () => {
  it("shows an escaped consent page naming the client and the resource, with a CSP, and no secret", async () => {
    const registered = await register({ client_name: "<script>alert(1)</script> agent" });
    const verifier = randomBytes(32).toString("base64url");
    const query = form({
      response_type: "code",
      client_id: registered.body.client_id,
      redirect_uri: REDIRECT_URI,
      code_challenge: s256Challenge(verifier),
      code_challenge_method: "S256",
      state: '"><b>',
      resource,
    });
    const response = await fetch(`${base}/oauth/authorize?${query}`, { redirect: "manual" });
    const html = await response.text();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    expect(response.headers.get("content-security-policy")).toContain(
      "form-action 'self' http://127.0.0.1:33418",
    );
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt; agent");
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<b>");
    expect(html).toContain(resource);
    expect(html).toMatch(
      /<label for="email">Email<\/label>\s*<input id="email" name="email" type="email" autocomplete="username"/,
    );
    expect(html).toMatch(
      /<label for="password">Password<\/label>\s*<input id="password" name="password" type="password" autocomplete="current-password"/,
    );
    expect(html).not.toContain('name="token"');
    expect(html).toContain(`name="code_challenge" value="${s256Challenge(verifier)}"`);
  });

  it("never redirects to an unregistered redirect URI or for an unknown client", async () => {
    const authorization = await newAuthorization();
    for (const params of [
      { ...authorization.params, redirect_uri: "http://127.0.0.1:33418/other" },
      { ...authorization.params, client_id: "mcp-unknown" },
    ]) {
      const response = await fetch(`${base}/oauth/authorize?${form(params)}`, { redirect: "manual" });
      expect(response.status).toBe(400);
      expect(response.headers.get("location")).toBeNull();
      expect(await response.text()).toMatch(/redirect_uri: not registered|client_id: unknown client/);
    }
  });

  it.each([
    [{ code_challenge_method: "plain" }, "invalid_request", "code_challenge_method"],
    [{ code_challenge: "" }, "invalid_request", "code_challenge"],
    [{ response_type: "x" }, "unsupported_response_type", "response_type"],
    [{ resource: "http://127.0.0.1:1/mcp" }, "invalid_target", "resource"],
  ])(
    "answers %j with a 400 error page (%s), never a redirect to the registered URI",
    async (change, error, field) => {
      // Open redirect (RFC 9700 4.11): anyone can register https://evil.example/cb; an error
      // redirected before the user interacted would send a victim there from this server's URL.
      const registered = await register({ redirect_uris: ["https://evil.example/cb"] });
      expect(registered.status).toBe(201);
      const params = {
        response_type: "code",
        client_id: registered.body.client_id,
        redirect_uri: "https://evil.example/cb",
        code_challenge: s256Challenge(randomBytes(32).toString("base64url")),
        code_challenge_method: "S256",
        state: "st-1",
        resource,
        ...change,
      };
      for (const response of [
        await fetch(`${base}/oauth/authorize?${form(params)}`, { redirect: "manual" }),
        await post("/oauth/authorize", { ...params, consent: "deny" }),
      ]) {
        const html = await response.text();
        expect(response.status).toBe(400);
        expect(response.headers.get("location")).toBeNull();
        expect(response.headers.get("content-type")).toMatch(/^text\/html/);
        expect(response.headers.get("content-security-policy")).toContain("form-action 'self';");
        expect(html).toContain(error);
        expect(html).toContain(`${field}:`);
        expect(html).not.toContain("evil.example");
      }
    },
  );

  it("answers a denial with access_denied, and a wrong password with the page again and no code", async () => {
    const user = await newUser();
    const authorization = await newAuthorization();
    const denied = await approve(authorization, undefined, "deny");
    expect(denied.get("error")).toBe("access_denied");
    expect(denied.get("state")).toBe(authorization.params.state);
    expect(denied.get("code")).toBeNull();

    const before = await tokenIdsOf(user.userId);
    const wrong = await post("/oauth/authorize", {
      ...authorization.params,
      email: user.email,
      password: `${user.password}x`,
      consent: "approve",
    });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("location")).toBeNull();
    expect(wrong.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await wrong.text();
    expect(html).toContain(
      '<p id="password-error" class="field-error" role="alert">Invalid email or password</p>',
    );
    // The address is kept, the password is not.
    expect(html).toContain(`value="${user.email}"`);
    expect(html).not.toContain(user.password);
    expect(await tokenIdsOf(user.userId)).toEqual(before);

    // An unknown address answers the same; an empty form asks for the fields.
    const unknown = await post("/oauth/authorize", {
      ...authorization.params,
      email: "nobody-here@accounts.example.test",
      password: "whatever-it-is",
      consent: "approve",
    });
    expect(unknown.status).toBe(401);
    expect(await unknown.text()).toContain("Invalid email or password");
    const empty = await post("/oauth/authorize", { ...authorization.params, consent: "approve" });
    expect(empty.status).toBe(401);
    expect(await empty.text()).toContain("Enter your email address and password");
  });

  it("applies the sign-in lockout: after 5 failures even the right password is refused", async () => {
    const user = await newUser();
    const authorization = await newAuthorization();
    for (let attempt = 0; attempt < 5; attempt++) {
      const wrong = await post("/oauth/authorize", {
        ...authorization.params,
        email: user.email,
        password: "not-the-password",
        consent: "approve",
      });
      expect(wrong.status).toBe(401);
    }
    const locked = await post("/oauth/authorize", {
      ...authorization.params,
      email: user.email,
      password: user.password,
      consent: "approve",
    });
    expect(locked.status).toBe(429);
    expect(locked.headers.get("location")).toBeNull();
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await locked.text()).toContain("Too many failed sign-ins for this address; try again later");
  });

  it("refuses an address not verified yet, with the message next to the address", async () => {
    const email = `unverified-${randomBytes(6).toString("hex")}@accounts.example.test`;
    await newAccountHolder("provision");
    await signUp({ email, password: "a-long-password-1", firstName: "U", lastName: "V" });
    const authorization = await newAuthorization();
    const answer = await post("/oauth/authorize", {
      ...authorization.params,
      email,
      password: "a-long-password-1",
      consent: "approve",
    });
    expect(answer.status).toBe(403);
    expect(answer.headers.get("location")).toBeNull();
    expect(await answer.text()).toContain(
      '<p id="email-error" class="field-error" role="alert">Email address not verified</p>',
    );
  });

  it("approves as the console session's user without a password", async () => {
    const user = await newUser();
    const signedIn = await signIn({ email: user.email, password: user.password });
    if (signedIn.kind !== "signedIn") throw new Error(signedIn.kind);
    const cookie = `session=${signedIn.cookieValue}`;
    const authorization = await newAuthorization();
    const page = await fetch(`${base}/oauth/authorize?${form(authorization.params)}`, {
      headers: { cookie },
    });
    const html = await page.text();
    expect(html).toContain(`Signed in as <strong>${user.email}</strong>`);
    expect(html).not.toContain('name="password"');

    const answer = await fetch(`${base}/oauth/authorize`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", cookie, origin: base },
      body: form({ ...authorization.params, consent: "approve" }),
      redirect: "manual",
    });
    expect(answer.status, await answer.clone().text()).toBe(303);
    const code = new URL(answer.headers.get("location") ?? "").searchParams.get("code") ?? "";
    const tokens = (await (await exchange(authorization, code)).json()) as Record<string, any>;
    expect(await verifyAccessToken(tokens.access_token, resource)).toMatchObject({ userId: user.userId });

    // A session that was signed out approves nothing.
    await signOut(cookie);
    const after = await fetch(`${base}/oauth/authorize`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", cookie, origin: base },
      body: form({ ...authorization.params, consent: "approve" }),
      redirect: "manual",
    });
    expect(after.status).toBe(401);
    expect(after.headers.get("location")).toBeNull();
  });

  it("refuses a POST from another origin (cross-site form), whatever it carries", async () => {
    const user = await newUser();
    const authorization = await newAuthorization();
    const forged: Record<string, string>[] = [
      { origin: "https://evil.example" },
      { "sec-fetch-site": "cross-site" },
    ];
    for (const headers of forged) {
      const answer = await fetch(`${base}/oauth/authorize`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
        body: form({
          ...authorization.params,
          email: user.email,
          password: user.password,
          consent: "approve",
        }),
        redirect: "manual",
      });
      expect(answer.status).toBe(403);
      expect(answer.headers.get("location")).toBeNull();
      expect(await answer.text()).toContain("must be sent from this server&#39;s own page");
    }
    expect(await tokenIdsOf(user.userId)).toEqual([]);
  });

  it("names the issued API token after the client, and says so when the user holds 20 tokens", async () => {
    const user = await newUser();
    const authorization = await newAuthorization();
    await approve(authorization, user);
    const tokens = await listUserTokens(user.userId);
    expect(tokens.map((token) => token.tokenName)).toEqual(["MCP: Test agent"]);
    expect(JSON.stringify(tokens)).not.toMatch(/u-[A-Za-z0-9_-]{43}/);
    for (let index = 1; index < 20; index++) await issueToken(user.userId);
    const full = await post("/oauth/authorize", {
      ...(await newAuthorization()).params,
      email: user.email,
      password: user.password,
      consent: "approve",
    });
    expect(full.status).toBe(400);
    expect(full.headers.get("location")).toBeNull();
    expect(await full.text()).toContain(
      "A user can hold at most 20 API tokens; revoke one before creating another",
    );
  });
});

describe("the full flow with PKCE", () => {
  it("register -> consent -> approve -> code -> tokens -> verifyAccessToken", async () => {
    const user = await newUser();
    const authorization = await newAuthorization();
    const consent = await fetch(`${base}/oauth/authorize?${form(authorization.params)}`);
    expect(consent.status).toBe(200);
    const answer = await approve(authorization, user);
    expect(answer.get("state")).toBe(authorization.params.state);
    expect(answer.get("iss")).toBe(base);
    const code = answer.get("code") ?? "";
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const response = await exchange(authorization, code);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const body = (await response.json()) as Record<string, any>;
    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    expect(body.refresh_token).toEqual(expect.any(String));

    expect(decodeProtectedHeader(body.access_token)).toEqual({ alg: "ES256", typ: "at+jwt" });
    const claims = decodeJwt(body.access_token);
    expect(claims).toMatchObject({ iss: base, aud: resource, sub: user.userId, api_token_id: user.tokenId });
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(3600);

    const caller = await verifyAccessToken(body.access_token, resource);
    expect(caller).toEqual({
      userId: user.userId,
      tokenId: user.tokenId,
      rateLimitPerMinute: expect.any(Number),
      systemAdmin: false,
    });
  });

  it("refuses a wrong verifier with invalid_grant, and the code still works with the right one", async () => {
    const user = await newUser();
    const authorization = await newAuthorization();
    const code = (await approve(authorization, user)).get("code") ?? "";
    const wrong = await exchange(authorization, code, randomBytes(32).toString("base64url"));
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: "invalid_grant", error_description: /code_verifier/ });
    expect((await exchange(authorization, code)).status).toBe(200);
  });

  it("refuses another client's or another redirect URI's use of a code", async () => {
    const user = await newUser();
    const authorization = await newAuthorization();
    const code = (await approve(authorization, user)).get("code") ?? "";
    const other = await newAuthorization();
    const stolen = await exchange({ ...other, verifier: authorization.verifier }, code);
    expect(stolen.status).toBe(400);
    expect(await stolen.json()).toMatchObject({ error: "invalid_grant", error_description: /client_id/ });
  });

  it("refuses a reused code with invalid_grant and revokes what the first use issued", async () => {
    const user = await newUser();
    const { authorization, code, body } = await tokensFor(user);
    expect(await verifyAccessToken(body.access_token, resource)).toBeDefined();

    const reused = await exchange(authorization, code);
    expect(reused.status).toBe(400);
    expect(await reused.json()).toMatchObject({ error: "invalid_grant" });
    expect(await verifyAccessToken(body.access_token, resource)).toBeUndefined();
    const refreshed = await refresh(authorization.clientId, body.refresh_token);
    expect(refreshed.status).toBe(400);
    expect(await refreshed.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("decides single use by the conditional write: a second redemption of a read code loses and writes nothing", async () => {
    const user = await newUser();
    const authorization = await newAuthorization();
    const code = (await approve(authorization, user)).get("code") ?? "";
    const codeHash = createHash("sha256").update(code).digest("hex");
    const stored = await findAuthorizationCode(codeHash);
    expect(stored?.redeemedAt).toBeUndefined();
    expect((await exchange(authorization, code)).status).toBe(200);
    // A redemption that read the code before the first one committed: the transaction refuses it.
    const late = {
      ...keys.oauthGrant("g-late"),
      entity: "oauthGrant" as const,
      grantId: "g-late",
      clientId: authorization.clientId,
      userId: user.userId,
      tokenId: user.tokenId,
      resource,
      refreshHash: "x",
      createdAt: "",
      rotatedAt: "",
      TTL: Math.floor(Date.now() / 1000) + 60,
    };
    expect(await redeemAuthorizationCode(stored!, late)).toBe(false);
    expect(await storedItem(keys.oauthGrant("g-late"))).toBeUndefined();
    expect((await findAuthorizationCode(codeHash))?.grantId).toMatch(/^g-/);
  });

  it("lets exactly one of two concurrent redemptions of a code win", async () => {
    const user = await newUser();
    const authorization = await newAuthorization();
    const code = (await approve(authorization, user)).get("code") ?? "";
    const statuses = (await Promise.all([exchange(authorization, code), exchange(authorization, code)])).map(
      (response) => response.status,
    );
    expect(statuses.sort()).toEqual([200, 400]);
  });
});

describe("refresh tokens", () => {
  it("rotate: the new one works, the old one is refused and its reuse revokes the grant", async () => {
    const user = await newUser();
    const { authorization, body } = await tokensFor(user);
    const first = await refresh(authorization.clientId, body.refresh_token);
    const rotated = (await first.json()) as Record<string, any>;
    expect(first.status, JSON.stringify(rotated)).toBe(200);
    expect(rotated.refresh_token).not.toBe(body.refresh_token);
    expect(await verifyAccessToken(rotated.access_token, resource)).toMatchObject({ userId: user.userId });

    const second = await refresh(authorization.clientId, rotated.refresh_token);
    const next = (await second.json()) as Record<string, any>;
    expect(second.status).toBe(200);

    const replay = await refresh(authorization.clientId, body.refresh_token);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: "invalid_grant" });
    // Replay detection: the live refresh token and the grant's access tokens die too.
    expect((await refresh(authorization.clientId, next.refresh_token)).status).toBe(400);
    expect(await verifyAccessToken(next.access_token, resource)).toBeUndefined();
  });

  it("refuse a forged token for a live grant without revoking it (the grant id is public in every access token)", async () => {
    const user = await newUser();
    const { authorization, body } = await tokensFor(user);
    const grantId = decodeJwt(body.access_token).grant_id as string;
    expect(body.refresh_token.startsWith(`${grantId}.`)).toBe(true);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const forged = await refresh(
        authorization.clientId,
        `${grantId}.${randomBytes(32).toString("base64url")}`,
      );
      expect(forged.status).toBe(400);
      expect(await forged.json()).toEqual({
        error: "invalid_grant",
        error_description: "refresh_token: unknown, used or expired",
      });
    }
    // The grant keeps working: its access token verifies and its real refresh token rotates.
    expect(await verifyAccessToken(body.access_token, resource)).toMatchObject({ userId: user.userId });
    const real = await refresh(authorization.clientId, body.refresh_token);
    expect(real.status, await real.clone().text()).toBe(200);
    expect(await storedItem(keys.oauthGrant(grantId))).toMatchObject({ entity: "oauthGrant" });
  });

  it("revoke the grant on a replay of a real rotated token, even after several rotations", async () => {
    const user = await newUser();
    const { authorization, body } = await tokensFor(user);
    let latest = body as Record<string, any>;
    for (let rotation = 0; rotation < 3; rotation += 1) {
      const response = await refresh(authorization.clientId, latest.refresh_token);
      latest = (await response.json()) as Record<string, any>;
      expect(response.status, JSON.stringify(latest)).toBe(200);
    }
    const replay = await refresh(authorization.clientId, body.refresh_token);
    expect(await replay.json()).toEqual({
      error: "invalid_grant",
      error_description: "refresh_token: already used; the grant is revoked",
    });
    expect((await refresh(authorization.clientId, latest.refresh_token)).status).toBe(400);
    expect(await verifyAccessToken(latest.access_token, resource)).toBeUndefined();
  });

  it("are bound to their client", async () => {
    const user = await newUser();
    const { body } = await tokensFor(user);
    const other = await register();
    const response = await refresh(other.body.client_id, body.refresh_token);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: "invalid_grant", error_description: /client_id/ });
  });
});

describe("access tokens", () => {
  it("expire: one signed an hour and a half ago is refused, one signed now for the same grant is not", async () => {
    const user = await newUser();
    const { authorization, body } = await tokensFor(user);
    const grant = {
      resource,
      userId: user.userId,
      tokenId: user.tokenId,
      grantId: decodeJwt(body.access_token).grant_id as string,
      clientId: authorization.clientId,
    };
    const now = Math.floor(Date.now() / 1000);
    const expired = await signAccessToken(grant, { issuedAt: now - 5400 });
    expect(decodeJwt(expired).exp).toBeLessThan(now);
    expect(await verifyAccessToken(expired, resource)).toBeUndefined();
    expect(await verifyAccessToken(await signAccessToken(grant), resource)).toMatchObject({
      userId: user.userId,
    });
  });

  it("are refused for another audience, and when tampered with", async () => {
    const user = await newUser();
    const { authorization, body } = await tokensFor(user);
    // A token of the same live grant, signed for another audience on the same origin.
    const otherAudience = await signAccessToken({
      resource: `${base}/other`,
      userId: user.userId,
      tokenId: user.tokenId,
      grantId: decodeJwt(body.access_token).grant_id as string,
      clientId: authorization.clientId,
    });
    expect(decodeJwt(otherAudience).aud).toBe(`${base}/other`);
    expect(await verifyAccessToken(otherAudience, resource)).toBeUndefined();
    expect(await verifyAccessToken(body.access_token, `${base}/other`)).toBeUndefined();
    expect(await verifyAccessToken(body.access_token, "https://elsewhere.example/mcp")).toBeUndefined();
    const [header, , signature] = body.access_token.split(".");
    const forged = Buffer.from(
      JSON.stringify({ ...decodeJwt(body.access_token), sub: "someone-else" }),
      "utf8",
    ).toString("base64url");
    expect(await verifyAccessToken(`${header}.${forged}.${signature}`, resource)).toBeUndefined();
    expect(await verifyAccessToken("not-a-jwt", resource)).toBeUndefined();
    expect(await verifyAccessToken(body.access_token, resource)).toBeDefined();
  });

  it("die with the API token they were approved with, and so does the refresh token", async () => {
    const user = await newUser();
    const { authorization, body } = await tokensFor(user);
    expect(await verifyAccessToken(body.access_token, resource)).toBeDefined();
    await revokeToken(user.userId, user.tokenId);
    expect(await verifyAccessToken(body.access_token, resource)).toBeUndefined();
    const response = await refresh(authorization.clientId, body.refresh_token);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: "invalid_grant", error_description: /API token/ });
  });
});

describe("the token endpoint's errors", () => {
  it("answers RFC 6749 errors, never cached", async () => {
    const unsupported = await post("/oauth/token", { grant_type: "password", client_id: "x" });
    expect(unsupported.status).toBe(400);
    expect(unsupported.headers.get("cache-control")).toBe("no-store");
    expect(await unsupported.json()).toMatchObject({ error: "unsupported_grant_type" });
    const missing = await post("/oauth/token", { grant_type: "authorization_code", client_id: "x" });
    expect(await missing.json()).toMatchObject({
      error: "invalid_request",
      error_description: "code: required",
    });
    const json = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: "{}",
    });
    expect(await json.json()).toMatchObject({ error: "invalid_request", error_description: /Content-Type/ });
    const unknownCode = await post("/oauth/token", {
      grant_type: "authorization_code",
      code: "nope",
      code_verifier: "v".repeat(43),
      redirect_uri: REDIRECT_URI,
      client_id: "x",
    });
    expect(await unknownCode.json()).toMatchObject({ error: "invalid_grant" });
  });
});

describe("the MCP SDK's own OAuth client", () => {
  /** The client side's storage, as an MCP client keeps it (the SDK asks a provider for it). */
  class ClientStore implements OAuthClientProvider {
    information?: OAuthClientInformationMixed;
    stored?: OAuthTokens;
    verifier = "";
    authorizationUrl?: URL;
    readonly redirectUrl = REDIRECT_URI;
    readonly clientMetadata = {
      redirect_uris: [REDIRECT_URI],
      client_name: "SDK client",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
    state = () => "sdk-state";
    clientInformation = () => this.information;
    saveClientInformation = (information: OAuthClientInformationMixed) => {
      this.information = information;
    };
    tokens = () => this.stored;
    saveTokens = (tokens: OAuthTokens) => {
      this.stored = tokens;
    };
    redirectToAuthorization = (url: URL) => {
      this.authorizationUrl = url;
    };
    saveCodeVerifier = (verifier: string) => {
      this.verifier = verifier;
    };
    codeVerifier = () => this.verifier;
  }

  it("discovers, registers, authorizes with PKCE, exchanges and refreshes against this server", async () => {
    const user = await newUser();
    const client = new ClientStore();
    const serverUrl = resource;

    expect(await auth(client, { serverUrl })).toBe("REDIRECT");
    const authorizationUrl = client.authorizationUrl ?? new URL("about:blank");
    expect(`${authorizationUrl.origin}${authorizationUrl.pathname}`).toBe(`${base}/oauth/authorize`);
    expect(authorizationUrl.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorizationUrl.searchParams.get("resource")).toBe(resource);

    // The browser's part: the consent page, then the user signs in there and approves.
    const page = await fetch(authorizationUrl);
    expect(page.status).toBe(200);
    const answer = await approve(
      { clientId: "", verifier: "", params: Object.fromEntries(authorizationUrl.searchParams) },
      user,
    );
    expect(answer.get("state")).toBe("sdk-state");

    expect(await auth(client, { serverUrl, authorizationCode: answer.get("code") ?? "" })).toBe("AUTHORIZED");
    const first = client.stored;
    expect(first?.token_type).toBe("Bearer");
    expect(await verifyAccessToken(first?.access_token ?? "", resource)).toMatchObject({
      userId: user.userId,
    });

    // With a refresh token stored, the SDK refreshes (rotation) instead of redirecting.
    expect(await auth(client, { serverUrl })).toBe("AUTHORIZED");
    expect(client.stored?.refresh_token).not.toBe(first?.refresh_token);
    expect(await verifyAccessToken(client.stored?.access_token ?? "", resource)).toMatchObject({
      userId: user.userId,
    });
  });
});
