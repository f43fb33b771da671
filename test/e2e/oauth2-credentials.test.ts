/**
 * OAuth2 target credentials end to end (spec 2.5, 4.5, 6.2) over real HTTP: the local stack as
 * the gateway, a real oidc-provider as the target API's authorization server, and the provider's
 * own login and consent pages driven as a browser would. The provider's redirect is followed by
 * fetching its Location, which is the gateway's public webhook `{base_url}/webhooks/oauth2`.
 * Every response of the gateway is kept and searched for client secrets, tokens and codes.
 */
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { keys } from "#lib/db/keys.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { decryptSecret, type SecretEnvelope } from "#lib/vault/envelope.ts";
import { Browser, type OAuthServer, startOAuthServer } from "../support/oauth-server.ts";
import { send, signedInUser } from "../support/sessions.ts";
import {
  type ApiClient,
  type ApiResult,
  createClientFor,
  startTestStack,
  storedItem,
  type TestStack,
} from "../support/stack.ts";

const US = "us-east-1";
const WEB_CLIENT = "gateway-web";
const WEB_SECRET = `web-${randomUUID()}-SECRET`;
const SPA_CLIENT = "gateway-spa";
const SERVICE_CLIENT = "gateway-service";
const SERVICE_SECRET = `svc-${randomUUID()}-SECRET`;
const SECRETS = [WEB_SECRET, SERVICE_SECRET];

let stack: TestStack;
let oauth: OAuthServer;
let redirectUri: string;
let api: ApiClient;
let clientId: string;
/** Every response of the gateway in this file: status line, headers and body. */
const responses: string[] = [];

const record = (label: string, status: number, headers: Headers, body: string) => {
  responses.push(`${label} ${status}\n${JSON.stringify([...headers])}\n${body}`);
};

/** An API client that keeps every response for the final leak check. */
function recording(inner: ApiClient): ApiClient {
  const request = async <T>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> => {
    const result = await inner.request<T>(method, path, body);
    record(`${method} ${path}`, result.status, result.headers, JSON.stringify(result.body));
    return result;
  };
  return {
    request,
    get: (path) => request("GET", path),
    post: (path, body) => request("POST", path, body),
    put: (path, body) => request("PUT", path, body),
    delete: (path, body) => request("DELETE", path, body),
  };
}

/** Follow the provider's redirect to the gateway, as the browser would: no Authorization header. */
async function callback(url: URL | string) {
  const response = await fetch(url, { redirect: "manual" });
  const text = await response.text();
  record("GET /webhooks/oauth2", response.status, response.headers, text);
  let body: Record<string, any> = {};
  try {
    body = JSON.parse(text);
  } catch {
    body = { text };
  }
  return { status: response.status, body };
}

beforeAll(async () => {
  stack = await startTestStack();
  redirectUri = `${stack.baseUrl}/webhooks/oauth2`;
  oauth = await startOAuthServer({
    clients: [
      {
        // Confidential: PKCE optional (oidc-provider's default rule), so the plain
        // authorization_code flow of the gateway (no code_challenge) is accepted.
        client_id: WEB_CLIENT,
        client_secret: WEB_SECRET,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: "client_secret_basic",
      },
      {
        // Public: no secret, PKCE required.
        client_id: SPA_CLIENT,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: "none",
      },
      {
        client_id: SERVICE_CLIENT,
        client_secret: SERVICE_SECRET,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
        scope: "api:read api:write",
      },
    ],
    pkceRequired: (client) => client.clientAuthMethod === "none",
  });
});
// A fresh owner (token) and client per test: each test stays within the basic plan's 100 calls a minute.
beforeEach(async () => {
  const owner = await stack.newUser();
  api = recording(owner.api);
  clientId = await createClientFor(owner, "OAuth Co");
});
afterAll(async () => {
  await closeOutboundAgents();
  await oauth?.close();
  await stack?.stop();
});

const base = () => `/api/clients/${clientId}`;

/** oidc-provider grants offline_access (a refresh token) only with prompt=consent: put it in the URL. */
const authorizationEndpoint = () => `${oauth.authorizationUrl}?prompt=consent`;

async function createCredential(secret: Record<string, unknown>, name = "Provider") {
  const response = await api.post(`${base()}/credentials`, {
    credentialName: name,
    credentialType: "target",
    authType: "oauth2",
    region: US,
    secret,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.credentials[0] as Record<string, any>;
}

const authorizationCodeSecret = () => ({
  flow: "authorization_code",
  tokenUrl: oauth.tokenUrl,
  authorizationUrl: authorizationEndpoint(),
  clientId: WEB_CLIENT,
  clientSecret: WEB_SECRET,
  scope: "openid offline_access",
});

const pkceSecret = () => ({
  flow: "pkce",
  tokenUrl: oauth.tokenUrl,
  authorizationUrl: authorizationEndpoint(),
  clientId: SPA_CLIENT,
  scope: "openid offline_access",
});

const storedCredential = (credentialId: string) => storedItem(keys.credential(clientId, credentialId), US);

async function storedSecret(credentialId: string) {
  const item = await storedCredential(credentialId);
  expect(item).toBeDefined();
  return decryptSecret<Record<string, any>>(item!.secretEnvelope as SecretEnvelope, {
    region: US,
    clientId,
    credentialId,
  });
}

async function getCredential(credentialId: string) {
  const response = await api.get(`${base()}/credentials/${credentialId}`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.credentials[0] as Record<string, any>;
}

async function listedIds(includeTemporary = false) {
  const response = await api.get(`${base()}/credentials${includeTemporary ? "?includeTemporary=true" : ""}`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return (response.body.credentials as { credentialId: string }[]).map((c) => c.credentialId);
}

async function expectTemporary(credentialId: string) {
  expect((await getCredential(credentialId)).credentialTemporary).toBe(true);
  expect(await listedIds()).not.toContain(credentialId);
  expect(await listedIds(true)).toContain(credentialId);
  const item = await storedCredential(credentialId);
  expect(item?.credentialTemporary).toBe(true);
  expect(item?.TTL).toEqual(expect.any(Number));
}

describe("authorization_code flow", () => {
  it("creates a temporary credential, and the provider's redirect makes it permanent with tokens", async () => {
    const before = Math.floor(Date.now() / 1000);
    const created = await createCredential(authorizationCodeSecret());
    const credentialId = created.credentialId as string;
    expect(created).toMatchObject({
      credentialAuthType: "oauth2",
      credentialType: "target",
      credentialTemporary: true,
      authorizationUrl: expect.any(String),
    });
    expect(created).not.toHaveProperty("secret");
    expect(created).not.toHaveProperty("secretEnvelope");

    const url = new URL(created.authorizationUrl);
    expect(`${url.origin}${url.pathname}`).toBe(oauth.authorizationUrl);
    expect(url.searchParams.get("response_type")).toBe("code");
    expect(url.searchParams.get("client_id")).toBe(WEB_CLIENT);
    expect(url.searchParams.get("redirect_uri")).toBe(redirectUri);
    expect(url.searchParams.get("scope")).toBe("openid offline_access");
    expect(url.searchParams.get("prompt")).toBe("consent");
    expect(url.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.has("code_challenge")).toBe(false);
    expect(url.searchParams.has("code_challenge_method")).toBe(false);

    // Temporary: hidden from the list unless asked for, expiring after an hour.
    await expectTemporary(credentialId);
    const temporary = await storedCredential(credentialId);
    expect(Number(temporary!.TTL)).toBeGreaterThanOrEqual(before + 3600);
    expect(Number(temporary!.TTL)).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 3600);
    // The state record points back to the credential and expires after 15 minutes.
    const state = await storedItem(keys.oauthState(url.searchParams.get("state")!));
    expect(state).toMatchObject({ clientId, credentialId, region: US });
    expect(Number(state!.TTL)).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 15 * 60);
    expect((await storedSecret(credentialId)).pkceVerifier).toBeUndefined();

    const redirect = await new Browser().authorize(created.authorizationUrl);
    expect(redirect.href.startsWith(`${redirectUri}?`)).toBe(true);
    expect(redirect.searchParams.get("state")).toBe(url.searchParams.get("state"));
    expect(redirect.searchParams.get("code")).toBeTruthy();

    const done = await callback(redirect);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.credentials[0]).toMatchObject({ credentialId, credentialTemporary: false });

    // Permanent: listed normally, no TTL, and the state is gone.
    expect((await getCredential(credentialId)).credentialTemporary).toBe(false);
    expect(await listedIds()).toContain(credentialId);
    const item = await storedCredential(credentialId);
    expect(item).toBeDefined();
    expect(item!.TTL).toBeUndefined();
    expect(item!.credentialTemporary).toBeUndefined();
    expect(item!.oauthAuthorizedAt).toEqual(expect.any(String));
    expect(await storedItem(keys.oauthState(url.searchParams.get("state")!))).toBeUndefined();

    const secret = await storedSecret(credentialId);
    expect(secret).toMatchObject({
      flow: "authorization_code",
      clientId: WEB_CLIENT,
      clientSecret: WEB_SECRET,
      redirectUri,
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
    });
    expect(secret.expiresAt).toBeGreaterThan(Date.now());
    // The tokens are the ones the provider issued.
    expect(oauth.issued.has(secret.accessToken)).toBe(true);
    expect(oauth.issued.has(secret.refreshToken)).toBe(true);
  });

  it("a temporary credential cannot be used in a proxy until it is authorized", async () => {
    const created = await createCredential(authorizationCodeSecret());
    const proxyCredential = await api.post(`${base()}/credentials`, {
      credentialName: "Callers",
      credentialType: "proxy",
      authType: "apiKey",
      region: US,
      secret: { keyName: "x-api-key", keyValue: `proxy-${randomUUID()}` },
    });
    expect(proxyCredential.status, JSON.stringify(proxyCredential.body)).toBe(201);
    const target = await api.post(`${base()}/targets`, {
      targetName: "Provider API",
      targetRegion: US,
      targetBaseURL: "https://api.example.test/v1",
      targetTestPath: "/health",
    });
    expect(target.status, JSON.stringify(target.body)).toBe(201);
    const proxyBody = {
      proxyName: "Main",
      proxyRegion: US,
      proxyProxyCredentialId: proxyCredential.body.credentials[0].credentialId,
      proxyTargetId: target.body.targets[0].targetId,
      proxyTargetCredentialId: created.credentialId,
    };

    const refused = await api.post(`${base()}/proxies`, proxyBody);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.fields).toEqual(["proxyTargetCredentialId"]);
    expect(JSON.stringify(refused.body.errors)).toMatch(/OAuth2 authorization/);

    const done = await callback(await new Browser().authorize(created.authorizationUrl));
    expect(done.status, JSON.stringify(done.body)).toBe(200);

    const accepted = await api.post(`${base()}/proxies`, proxyBody);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(201);
    expect(accepted.body.proxies[0].proxyTargetCredentialId).toBe(created.credentialId);
  });
});

describe("pkce flow", () => {
  it("sends the S256 challenge and exchanges the code with the kept verifier, without a client secret", async () => {
    const created = await createCredential(pkceSecret(), "Public app");
    const credentialId = created.credentialId as string;
    expect(created.credentialTemporary).toBe(true);
    const url = new URL(created.authorizationUrl);
    expect(url.searchParams.get("client_id")).toBe(SPA_CLIENT);
    expect(url.searchParams.get("redirect_uri")).toBe(redirectUri);
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    const challenge = url.searchParams.get("code_challenge");
    expect(challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // The verifier is kept, encrypted, in the temporary credential's secret.
    const pending = await storedSecret(credentialId);
    expect(pending.pkceVerifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(createHash("sha256").update(pending.pkceVerifier).digest("base64url")).toBe(challenge);
    expect(pending.clientSecret).toBeUndefined();
    await expectTemporary(credentialId);

    // The provider requires PKCE for this public client: the exchange passes only with the verifier.
    const done = await callback(await new Browser().authorize(created.authorizationUrl));
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.credentials[0]).toMatchObject({ credentialId, credentialTemporary: false });
    expect(await listedIds()).toContain(credentialId);

    const item = await storedCredential(credentialId);
    expect(item!.TTL).toBeUndefined();
    const secret = await storedSecret(credentialId);
    expect(secret.flow).toBe("pkce");
    expect(secret.accessToken).toEqual(expect.any(String));
    expect(secret.refreshToken).toEqual(expect.any(String));
    expect(oauth.issued.has(secret.accessToken)).toBe(true);
    // Used once: the verifier is dropped after the exchange.
    expect(secret.pkceVerifier).toBeUndefined();
  });
});

describe("the callback", () => {
  it("works once: a replayed callback and an unknown state are refused", async () => {
    const created = await createCredential(authorizationCodeSecret());
    const redirect = await new Browser().authorize(created.authorizationUrl);
    const first = await callback(redirect);
    expect(first.status, JSON.stringify(first.body)).toBe(200);

    const replay = await callback(redirect);
    expect(replay.status, JSON.stringify(replay.body)).toBe(400);
    expect(replay.body.message).toMatch(/state/i);

    const unknown = new URL(redirect);
    unknown.searchParams.set("state", randomUUID());
    const refused = await callback(unknown);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.message).toMatch(/state/i);

    const missing = await callback(`${redirectUri}?code=abc`);
    expect(missing.status, JSON.stringify(missing.body)).toBe(400);
    // Still permanent and authorized once.
    expect((await getCredential(created.credentialId)).credentialTemporary).toBe(false);
  });

  it("refuses a denied authorization (error=access_denied) and the credential stays temporary", async () => {
    const created = await createCredential(authorizationCodeSecret());
    const redirect = await new Browser().authorize(created.authorizationUrl, { abort: true });
    expect(redirect.searchParams.get("error")).toBe("access_denied");
    expect(redirect.searchParams.has("code")).toBe(false);

    const denied = await callback(redirect);
    expect(denied.status, JSON.stringify(denied.body)).toBe(400);
    expect(denied.body.message).toMatch(/access_denied/);
    await expectTemporary(created.credentialId);
    // The state was consumed: a code sent with it afterwards is refused too.
    const late = new URL(redirect);
    late.searchParams.delete("error");
    late.searchParams.delete("error_description");
    late.searchParams.set("code", "forged");
    expect((await callback(late)).status).toBe(400);
    await expectTemporary(created.credentialId);
  });

  it("refuses the authorization of a credential deleted while it waited", async () => {
    const created = await createCredential(authorizationCodeSecret());
    const redirect = await new Browser().authorize(created.authorizationUrl);
    const deleted = await api.delete(`${base()}/credentials/${created.credentialId}`);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);

    const late = await callback(redirect);
    expect(late.status, JSON.stringify(late.body)).toBe(400);
    expect(late.body.message).toMatch(/no longer waits/);
    expect(await storedCredential(created.credentialId)).toBeUndefined();
  });

  it("answers 502 when the provider refuses the code exchange, and the credential stays temporary", async () => {
    const created = await createCredential(authorizationCodeSecret());
    const redirect = await new Browser().authorize(created.authorizationUrl);
    const code = redirect.searchParams.get("code")!;
    const tampered = new URL(redirect);
    tampered.searchParams.set("code", `${code.slice(0, -4)}${code.endsWith("AAAA") ? "BBBB" : "AAAA"}`);

    const refused = await callback(tampered);
    expect(refused.status, JSON.stringify(refused.body)).toBe(502);
    expect(refused.body.message).toMatch(/refused the code exchange.*invalid_grant/);
    await expectTemporary(created.credentialId);
    const secret = await storedSecret(created.credentialId);
    expect(secret.accessToken).toBeUndefined();

    // The state is single-use even when the exchange failed: the genuine code cannot follow it.
    const genuine = await callback(redirect);
    expect(genuine.status, JSON.stringify(genuine.body)).toBe(400);
    await expectTemporary(created.credentialId);
  });
});

describe("a flow started from the console", () => {
  // The console's APP_URL in this test environment (test/setup/file-env.ts).
  const APP_URL = "http://app.gateway.test";
  const consolePage = (credentialId: string, outcome: string) =>
    `${APP_URL}/organisations/${clientId}/credentials/${credentialId}?oauth2=${outcome}`;

  /** Created as the console does: with the session cookie (and this service's Origin), no token. */
  async function createFromConsole(secret: Record<string, unknown>) {
    const user = await signedInUser(stack);
    clientId = await createClientFor(user, "Console Co");
    api = recording(user.api);
    const answer = await send(stack.baseUrl, "POST", `/api/clients/${clientId}/credentials`, {
      headers: { cookie: user.cookie, origin: stack.baseUrl },
      body: {
        credentialName: "From the console",
        credentialType: "target",
        authType: "oauth2",
        region: US,
        secret,
      },
    });
    record("POST credentials (session)", answer.status, answer.headers, JSON.stringify(answer.body));
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    const created = (answer.body.credentials as Record<string, any>[])[0]!;
    expect(created.authorizationUrl).toEqual(expect.any(String));
    return created;
  }

  /** The redirect, as the browser sees it: status and Location, not followed. */
  async function landing(url: URL | string) {
    const response = await fetch(url, { redirect: "manual" });
    record("GET /webhooks/oauth2 (console)", response.status, response.headers, await response.text());
    return { status: response.status, location: response.headers.get("location") };
  }

  it("redirects (303) to the credential's page with oauth2=authorized, whatever the request adds", async () => {
    const created = await createFromConsole(authorizationCodeSecret());
    const redirect = await new Browser().authorize(created.authorizationUrl);
    // Parameters the request could add do not choose where it goes: APP_URL and the stored ids do.
    const tampered = new URL(redirect);
    tampered.searchParams.set("redirect_uri", "https://evil.example/steal");
    tampered.searchParams.set("returnTo", "https://evil.example/steal");
    tampered.searchParams.set("clientId", "someone-else");
    const done = await landing(tampered);
    expect(done.status).toBe(303);
    expect(done.location).toBe(consolePage(created.credentialId, "authorized"));
    expect((await getCredential(created.credentialId)).credentialTemporary).toBe(false);
    const secret = await storedSecret(created.credentialId);
    expect(oauth.issued.has(secret.accessToken)).toBe(true);

    // The state worked once: a replay has no credential to go back to, and answers JSON 400.
    const replay = await callback(redirect);
    expect(replay.status, JSON.stringify(replay.body)).toBe(400);
    expect(replay.body.message).toMatch(/state/i);
  });

  it("lands with oauth2=denied when the user refuses, and the credential stays temporary", async () => {
    const created = await createFromConsole(authorizationCodeSecret());
    const redirect = await new Browser().authorize(created.authorizationUrl, { abort: true });
    expect(redirect.searchParams.get("error")).toBe("access_denied");
    const done = await landing(redirect);
    expect(done.status).toBe(303);
    expect(done.location).toBe(consolePage(created.credentialId, "denied"));
    await expectTemporary(created.credentialId);
  });

  it("lands with oauth2=failed when the provider refuses the code exchange", async () => {
    const created = await createFromConsole(pkceSecret());
    const redirect = await new Browser().authorize(created.authorizationUrl);
    const tampered = new URL(redirect);
    tampered.searchParams.set("code", "not-the-code");
    const done = await landing(tampered);
    expect(done.status).toBe(303);
    expect(done.location).toBe(consolePage(created.credentialId, "failed"));
    await expectTemporary(created.credentialId);
  });

  it("keeps the JSON answer for a flow an API token started", async () => {
    const created = await createCredential(authorizationCodeSecret());
    const done = await callback(await new Browser().authorize(created.authorizationUrl));
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.credentials[0]).toMatchObject({ credentialId: created.credentialId });
  });
});

describe("client_credentials flow", () => {
  it("is created permanent at once, and the token test fetches a token without showing it", async () => {
    const created = await createCredential(
      {
        flow: "client_credentials",
        tokenUrl: oauth.tokenUrl,
        clientId: SERVICE_CLIENT,
        clientSecret: SERVICE_SECRET,
        scope: "api:read",
      },
      "Service",
    );
    const credentialId = created.credentialId as string;
    expect(created.credentialTemporary).toBe(false);
    expect(created).not.toHaveProperty("authorizationUrl");
    expect(await listedIds()).toContain(credentialId);
    expect((await storedCredential(credentialId))!.TTL).toBeUndefined();

    const issuedBefore = new Set(oauth.issued);
    const test = await api.post(`${base()}/credentials/${credentialId}/token-test`);
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    const result = test.body.tokenTests[0];
    expect(result.tokenReceived).toBe(true);
    expect(result.tokenLength).toBeGreaterThan(0);
    // ClientCredentials tokens of the test provider live 600 s.
    expect(result.expiresInSeconds).toBeGreaterThan(0);
    expect(result.expiresInSeconds).toBeLessThanOrEqual(600);
    expect(Date.parse(result.expiresAt)).toBeGreaterThan(Date.now());

    const fresh = [...oauth.issued].filter((token) => !issuedBefore.has(token));
    expect(fresh).toHaveLength(1);
    expect(fresh[0]!.length).toBe(result.tokenLength);
    const everything = JSON.stringify(test.body) + JSON.stringify([...test.headers]);
    expect(everything).not.toContain(fresh[0]);
    expect(everything).not.toContain(SERVICE_SECRET);
  });

  it("reports the provider's refusal of a wrong client secret as 502 without the secret", async () => {
    const wrong = `wrong-${randomUUID()}-SECRET`;
    SECRETS.push(wrong);
    const created = await createCredential({
      flow: "client_credentials",
      tokenUrl: oauth.tokenUrl,
      clientId: SERVICE_CLIENT,
      clientSecret: wrong,
    });
    const test = await api.post(`${base()}/credentials/${created.credentialId}/token-test`);
    expect(test.status, JSON.stringify(test.body)).toBe(502);
    expect(test.body.message).toMatch(/invalid_client/);
  });
});

describe("secrets", () => {
  it("no response of the gateway contained a client secret, a token or a code", () => {
    expect(responses.length).toBeGreaterThan(40);
    expect(oauth.issued.size).toBeGreaterThan(5);
    const all = responses.join("\n");
    for (const secret of [...SECRETS, ...oauth.issued]) {
      expect(all).not.toContain(secret);
      expect(all).not.toContain(encodeURIComponent(secret));
    }
  });
});
