/**
 * OAuth2 authorization_code and PKCE target credentials on the data plane (spec 2.5, 4.13) over
 * real HTTP: the credential is authorized through a real oidc-provider's login and consent pages
 * (the provider redirects to the gateway's `/webhooks/oauth2`), used as a proxy's target
 * credential, and its access token is refreshed with the refresh token when it expires: once for
 * concurrent requests, with the new tokens encrypted back onto the credential. A refused or
 * failing refresh answers 502 without calling the target. Every response of the gateway (Core
 * API, callback, data plane, request log) is kept and searched for tokens and client secrets.
 *
 * The provider's access-token lifetime is switched per test (`accessTokenTtl`): below the data
 * plane's 60 s expiry margin a token is "expiring" as soon as it is issued.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { clearOAuthTokenCache } from "#lib/data-plane/oauth-tokens.ts";
import { keys } from "#lib/db/keys.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { decryptSecret, type SecretEnvelope } from "#lib/vault/envelope.ts";
import {
  Browser,
  type OAuthClientMetadata,
  type OAuthServer,
  startOAuthServer,
} from "../support/oauth-server.ts";
import {
  type ApiClient,
  type ApiResult,
  createClientFor,
  created,
  startTestStack,
  storedItem,
  type TestStack,
} from "../support/stack.ts";

const US = "us-east-1";
const WEB_CLIENT = "gateway-web";
const WEB_SECRET = `web-${randomUUID()}-SECRET`;
const SPA_CLIENT = "gateway-spa";
/** Below the data plane's 60 s margin: such a token is refreshed on its first use. */
const SHORT_TTL = 30;
const LONG_TTL = 3600;

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
}

let stack: TestStack;
let oauth: OAuthServer;
let redirectUri: string;
let target: Server;
let targetBase: string;
let api: ApiClient;
let clientId: string;
/** Lifetime in seconds of the access tokens the provider issues from now on. */
let accessTokenTtl = LONG_TTL;
/** What the target received. */
const received: Received[] = [];
/** Every response of the gateway in this file: status, headers and body. */
const responses: string[] = [];
/** Every token issued by any provider of this file (the extra ones are stopped in their test). */
const issuedElsewhere = new Set<string>();

const record = (label: string, status: number, headers: Headers, body: string) => {
  responses.push(`${label} ${status}\n${JSON.stringify([...headers])}\n${body}`);
};

/** An API client that keeps every response for the leak check. */
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

/** The provider's clients, registered with the gateway's callback as redirect URI. */
const providerClients = (): OAuthClientMetadata[] => [
  {
    // Confidential: client_secret_basic, PKCE optional, refresh tokens not rotated.
    client_id: WEB_CLIENT,
    client_secret: WEB_SECRET,
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    redirect_uris: [redirectUri],
    token_endpoint_auth_method: "client_secret_basic",
  },
  {
    // Public: no secret, PKCE required, and oidc-provider rotates its refresh tokens (a rotated
    // one used again is refused and revokes the whole grant).
    client_id: SPA_CLIENT,
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    redirect_uris: [redirectUri],
    token_endpoint_auth_method: "none",
  },
];

const startProvider = () =>
  startOAuthServer({
    clients: providerClients(),
    pkceRequired: (client) => client.clientAuthMethod === "none",
    // oidc-provider takes a function as well as a number (the support types only numbers).
    ttl: { AccessToken: (() => accessTokenTtl) as unknown as number },
  });

beforeAll(async () => {
  stack = await startTestStack();
  redirectUri = `${stack.baseUrl}/webhooks/oauth2`;
  oauth = await startProvider();
  target = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true }));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}/base`;
});
afterAll(async () => {
  await closeOutboundAgents();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
  await oauth?.close();
  await stack?.stop();
});
// A fresh owner (token) and client per test: the basic plan allows 100 Core API calls a minute.
beforeEach(async () => {
  const owner = await stack.newUser();
  api = recording(owner.api);
  clientId = await createClientFor(owner, "Data Plane OAuth Co");
  received.length = 0;
  accessTokenTtl = LONG_TTL;
});

const base = () => `/api/clients/${clientId}`;

/** oidc-provider grants offline_access (a refresh token) only with prompt=consent. */
const webSecret = (provider: OAuthServer) => ({
  flow: "authorization_code",
  tokenUrl: provider.tokenUrl,
  authorizationUrl: `${provider.authorizationUrl}?prompt=consent`,
  clientId: WEB_CLIENT,
  clientSecret: WEB_SECRET,
  scope: "openid offline_access",
});

const pkceSecret = (provider: OAuthServer) => ({
  flow: "pkce",
  tokenUrl: provider.tokenUrl,
  authorizationUrl: `${provider.authorizationUrl}?prompt=consent`,
  clientId: SPA_CLIENT,
  scope: "openid offline_access",
});

/** Create the credential, sign in and consent at the provider, follow its redirect to the gateway. */
async function authorizedCredential(secret: Record<string, unknown>): Promise<string> {
  const credential = await created(
    api.post(`${base()}/credentials`, {
      credentialName: "provider",
      credentialType: "target",
      authType: "oauth2",
      region: US,
      secret,
    }),
    "credentials",
  );
  expect(credential.credentialTemporary).toBe(true);
  const redirect = await new Browser().authorize(credential.authorizationUrl);
  expect(redirect.href.startsWith(`${redirectUri}?`)).toBe(true);
  const response = await fetch(redirect, { redirect: "manual" });
  const text = await response.text();
  record("GET /webhooks/oauth2", response.status, response.headers, text);
  expect(response.status, text).toBe(200);
  expect(JSON.parse(text).credentials[0]).toMatchObject({
    credentialId: credential.credentialId,
    credentialTemporary: false,
  });
  return credential.credentialId;
}

interface Setup {
  proxyId: string;
  url: string;
  key: string;
  credentialId: string;
}

/** An apiKey proxy credential, the target and a proxy using the given target credential. */
async function proxyFor(credentialId: string): Promise<Setup> {
  const key = `caller-${randomUUID()}`;
  const [proxyCredential, theTarget] = await Promise.all([
    created(
      api.post(`${base()}/credentials`, {
        credentialName: "caller",
        credentialType: "proxy",
        authType: "apiKey",
        region: US,
        secret: { keyName: "x-api-key", keyValue: key },
      }),
      "credentials",
    ),
    created(
      api.post(`${base()}/targets`, {
        targetName: "echo",
        targetRegion: US,
        targetBaseURL: targetBase,
        targetTestPath: "/health",
      }),
      "targets",
    ),
  ]);
  const proxy = await created(
    api.post(`${base()}/proxies`, {
      proxyName: "main",
      proxyRegion: US,
      proxyProxyCredentialId: proxyCredential.credentialId,
      proxyTargetId: theTarget.targetId,
      proxyTargetCredentialId: credentialId,
    }),
    "proxies",
  );
  return { proxyId: proxy.proxyId, url: `${stack.regions[US]}/api/${proxy.proxyId}`, key, credentialId };
}

async function call(url: string, init: RequestInit = {}) {
  const response = await fetch(url, init);
  const text = await response.text();
  record(`${init.method ?? "GET"} ${url}`, response.status, response.headers, text);
  return { status: response.status, headers: response.headers, text };
}

/** One request through the proxy; returns what the target received for it. */
async function forward(s: Setup, path: string) {
  // Requests may run concurrently: each one is found at the target by its own id.
  const callId = randomUUID();
  const response = await call(`${s.url}${path}`, {
    headers: { "x-api-key": s.key, authorization: "Bearer caller-junk", "x-call-id": callId },
  });
  expect(response.status, response.text).toBe(200);
  expect(response.headers.get("service-proxy-code")).toBe("proxy-access-granted");
  const got = received.filter((one) => one.headers["x-call-id"] === callId);
  expect(got).toHaveLength(1);
  expect(got[0]!.headers["x-api-key"]).toBeUndefined();
  return got[0]!;
}

/** 502 with the service headers, and the target never called. */
async function expectTokenFailure(s: Setup, path: string) {
  const before = received.length;
  const response = await call(`${s.url}${path}`, { headers: { "x-api-key": s.key } });
  expect(response.status, response.text).toBe(502);
  expect(response.headers.get("service-proxy-code")).toBe("proxy-access-granted");
  expect(response.headers.get("service-proxy-message")).toMatch(/token/i);
  expect(received).toHaveLength(before);
  return response;
}

interface StoredTokens {
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
  [name: string]: unknown;
}

async function storedSecret(credentialId: string): Promise<StoredTokens> {
  const item = await storedItem(keys.credential(clientId, credentialId), US);
  expect(item).toBeDefined();
  return decryptSecret<StoredTokens>(item!.secretEnvelope as SecretEnvelope, {
    region: US,
    clientId,
    credentialId,
  });
}

/** Tokens the provider issued since `before` was taken. */
const issuedSince = (before: Set<string>, provider = oauth) =>
  [...provider.issued].filter((token) => !before.has(token));

/** A refresh_token grant of the public client, sent by the test itself. */
async function refreshAtProvider(refreshToken: string) {
  const response = await fetch(oauth.tokenUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "refresh_token",
      refresh_token: refreshToken,
      client_id: SPA_CLIENT,
    }).toString(),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** The proxy's request log, kept for the leak check. */
async function readRequestLog(s: Setup) {
  const list = await api.get(`${base()}/proxies/${s.proxyId}/requests`);
  expect(list.status, JSON.stringify(list.body)).toBe(200);
  const first = (list.body.requests as { requestId: string }[] | undefined)?.[0];
  if (first) {
    const detail = await api.get(`${base()}/proxies/${s.proxyId}/requests/${first.requestId}`);
    expect(detail.status, JSON.stringify(detail.body)).toBe(200);
  }
  return list.body;
}

describe("authorization_code target credential", () => {
  it("sends the access token obtained at authorization while it is valid", async () => {
    const credentialId = await authorizedCredential(webSecret(oauth));
    const secret = await storedSecret(credentialId);
    expect(oauth.issued.has(secret.accessToken)).toBe(true);
    expect(oauth.issued.has(secret.refreshToken)).toBe(true);
    expect(secret.expiresAt - Date.now()).toBeGreaterThan(60_000);
    const s = await proxyFor(credentialId);

    const before = new Set(oauth.issued);
    const got = await Promise.all([forward(s, "/a?x=1"), forward(s, "/b")]);
    got.push(await forward(s, "/c"));
    for (const one of got) expect(one.headers.authorization).toBe(`Bearer ${secret.accessToken}`);
    expect(got[0]!.url).toBe("/base/a?x=1");
    // Nothing was refreshed: no new token, the stored secret is unchanged.
    expect(issuedSince(before)).toEqual([]);
    expect(await storedSecret(credentialId)).toEqual(secret);
    expect((await storedItem(keys.credential(clientId, credentialId), US))?.oauthRefreshedAt).toBeUndefined();
    await vi.waitFor(async () => expect((await readRequestLog(s)).totalRequests).toBe(3), {
      timeout: 10_000,
      interval: 50,
    });
  });

  it("refreshes an expiring access token once for concurrent requests and stores the new one", async () => {
    accessTokenTtl = SHORT_TTL;
    const credentialId = await authorizedCredential(webSecret(oauth));
    const authorized = await storedSecret(credentialId);
    expect(oauth.issued.has(authorized.accessToken)).toBe(true);
    expect(oauth.issued.has(authorized.refreshToken)).toBe(true);
    // Already inside the 60 s margin: the data plane must refresh it before use.
    expect(authorized.expiresAt - Date.now()).toBeLessThanOrEqual(SHORT_TTL * 1000);
    const s = await proxyFor(credentialId);

    accessTokenTtl = LONG_TTL;
    const before = new Set(oauth.issued);
    const startedAt = Date.now();
    const got = await Promise.all([1, 2, 3, 4, 5].map((n) => forward(s, `/concurrent/${n}`)));

    // Exactly one refresh_token grant: one new access token, and the refresh token not rotated
    // (oidc-provider keeps a confidential client's refresh token).
    const fresh = issuedSince(before);
    expect(fresh).toHaveLength(1);
    const newAccessToken = fresh[0]!;
    expect(newAccessToken).not.toBe(authorized.accessToken);
    for (const one of got) expect(one.headers.authorization).toBe(`Bearer ${newAccessToken}`);

    // The new tokens are encrypted onto the credential.
    const refreshed = await storedSecret(credentialId);
    expect(refreshed).toEqual({
      ...authorized,
      accessToken: newAccessToken,
      refreshToken: authorized.refreshToken,
      expiresAt: expect.any(Number),
    });
    expect(refreshed.expiresAt).toBeGreaterThanOrEqual(startedAt + (LONG_TTL - 5) * 1000);
    expect(refreshed.expiresAt).toBeLessThanOrEqual(Date.now() + LONG_TTL * 1000);
    const item = await storedItem(keys.credential(clientId, credentialId), US);
    expect(Date.parse(item!.oauthRefreshedAt)).toBeGreaterThanOrEqual(startedAt);

    // Valid for an hour now: reused without another grant.
    const later = await Promise.all([forward(s, "/later/1"), forward(s, "/later/2")]);
    for (const one of later) expect(one.headers.authorization).toBe(`Bearer ${newAccessToken}`);
    expect(issuedSince(before)).toEqual([newAccessToken]);
    await vi.waitFor(async () => expect((await readRequestLog(s)).totalRequests).toBe(7), {
      timeout: 10_000,
      interval: 50,
    });
  });

  it("answers 502 without calling the target when the token endpoint cannot be reached", async () => {
    // A provider of its own, stopped after the authorization.
    accessTokenTtl = SHORT_TTL;
    const provider = await startProvider();
    let credentialId: string;
    try {
      credentialId = await authorizedCredential(webSecret(provider));
    } finally {
      for (const token of provider.issued) issuedElsewhere.add(token);
      await provider.close();
    }
    const authorized = await storedSecret(credentialId);
    const s = await proxyFor(credentialId);

    await expectTokenFailure(s, "/down");
    // Both of concurrent requests fail the same way.
    await Promise.all([expectTokenFailure(s, "/down/1"), expectTokenFailure(s, "/down/2")]);
    expect(received).toHaveLength(0);
    expect(await storedSecret(credentialId)).toEqual(authorized);
    await readRequestLog(s);
  });
});

describe("pkce target credential (public client, rotated refresh tokens)", () => {
  it("refreshes once for concurrent requests, stores the rotated refresh token, and uses it next time", async () => {
    accessTokenTtl = SHORT_TTL;
    const credentialId = await authorizedCredential(pkceSecret(oauth));
    const authorized = await storedSecret(credentialId);
    expect(authorized.flow).toBe("pkce");
    expect(authorized.clientSecret).toBeUndefined();
    expect(authorized.pkceVerifier).toBeUndefined();
    expect(oauth.issued.has(authorized.accessToken)).toBe(true);
    expect(oauth.issued.has(authorized.refreshToken)).toBe(true);
    const s = await proxyFor(credentialId);

    // The new access token is still below the margin: every use refreshes, each time with the
    // refresh token the previous refresh returned (the provider would refuse a rotated one).
    const before = new Set(oauth.issued);
    const got = await Promise.all([1, 2, 3, 4, 5].map((n) => forward(s, `/pkce/${n}`)));
    const first = await storedSecret(credentialId);
    expect(new Set(issuedSince(before))).toEqual(new Set([first.accessToken, first.refreshToken]));
    expect(first.accessToken).not.toBe(authorized.accessToken);
    expect(first.refreshToken).not.toBe(authorized.refreshToken);
    for (const one of got) expect(one.headers.authorization).toBe(`Bearer ${first.accessToken}`);
    // The authorization's refresh token was consumed by the one grant: the provider refuses it.
    const replay = await refreshAtProvider(authorized.refreshToken);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe("invalid_grant");
  });

  it("keeps refreshing with the latest rotated refresh token", async () => {
    accessTokenTtl = SHORT_TTL;
    const credentialId = await authorizedCredential(pkceSecret(oauth));
    const s = await proxyFor(credentialId);
    let previous = await storedSecret(credentialId);
    for (const step of [1, 2, 3]) {
      const before = new Set(oauth.issued);
      const got = await forward(s, `/again/${step}`);
      const now = await storedSecret(credentialId);
      expect(new Set(issuedSince(before))).toEqual(new Set([now.accessToken, now.refreshToken]));
      expect(now.refreshToken).not.toBe(previous.refreshToken);
      expect(got.headers.authorization).toBe(`Bearer ${now.accessToken}`);
      previous = now;
    }
    // Once the provider issues hour-long tokens, the last one is reused.
    accessTokenTtl = LONG_TTL;
    const before = new Set(oauth.issued);
    const renewed = await forward(s, "/long");
    const last = await storedSecret(credentialId);
    expect(new Set(issuedSince(before))).toEqual(new Set([last.accessToken, last.refreshToken]));
    expect(renewed.headers.authorization).toBe(`Bearer ${last.accessToken}`);
    expect((await forward(s, "/long/again")).headers.authorization).toBe(`Bearer ${last.accessToken}`);
    expect(issuedSince(before)).toHaveLength(2);
  });

  it("another warm function (its own token cache, the credential as loaded before) uses the stored tokens", async () => {
    accessTokenTtl = SHORT_TTL;
    const credentialId = await authorizedCredential(pkceSecret(oauth));
    const s = await proxyFor(credentialId);
    await forward(s, "/first");
    const afterFirst = await storedSecret(credentialId);

    // This function's configuration cache still holds the secret from before the refresh, with
    // the authorization's refresh token, which the provider has rotated. Forgetting the tokens
    // in memory is what a second warm function that loaded the proxy earlier looks like.
    clearOAuthTokenCache();
    const before = new Set(oauth.issued);
    const got = await forward(s, "/second");
    const afterSecond = await storedSecret(credentialId);
    expect(new Set(issuedSince(before))).toEqual(
      new Set([afterSecond.accessToken, afterSecond.refreshToken]),
    );
    expect(afterSecond.refreshToken).not.toBe(afterFirst.refreshToken);
    expect(got.headers.authorization).toBe(`Bearer ${afterSecond.accessToken}`);

    // With an hour-long token stored, a function without it in memory takes it as it is.
    accessTokenTtl = LONG_TTL;
    await forward(s, "/third");
    const stored = await storedSecret(credentialId);
    clearOAuthTokenCache();
    const quiet = new Set(oauth.issued);
    expect((await forward(s, "/fourth")).headers.authorization).toBe(`Bearer ${stored.accessToken}`);
    expect(issuedSince(quiet)).toEqual([]);
  });

  it("answers 502 without calling the target when the provider refuses the refresh (grant revoked)", async () => {
    accessTokenTtl = SHORT_TTL;
    const credentialId = await authorizedCredential(pkceSecret(oauth));
    const authorized = await storedSecret(credentialId);
    const s = await proxyFor(credentialId);

    // Someone else uses the refresh token first, then again: oidc-provider treats the reuse of a
    // rotated refresh token as theft and revokes the grant, so the gateway's refresh is refused.
    const stolen = await refreshAtProvider(authorized.refreshToken);
    expect(stolen.status, JSON.stringify(stolen.body)).toBe(200);
    for (const token of [stolen.body.access_token, stolen.body.refresh_token]) issuedElsewhere.add(token);
    expect((await refreshAtProvider(authorized.refreshToken)).status).toBe(400);

    const before = new Set(oauth.issued);
    await expectTokenFailure(s, "/revoked");
    await Promise.all([expectTokenFailure(s, "/revoked/1"), expectTokenFailure(s, "/revoked/2")]);
    expect(received).toHaveLength(0);
    expect(issuedSince(before)).toEqual([]);
    // The stored tokens stay as they were.
    expect(await storedSecret(credentialId)).toEqual(authorized);
    await vi.waitFor(async () => expect((await readRequestLog(s)).totalRequests).toBe(3), {
      timeout: 10_000,
      interval: 50,
    });
  });
});

describe("secrets", () => {
  it("no response of the gateway contained an issued token or the client secret", () => {
    expect(responses.length).toBeGreaterThan(60);
    const issued = new Set([...oauth.issued, ...issuedElsewhere]);
    expect(issued.size).toBeGreaterThan(20);
    const all = responses.join("\n");
    for (const secret of [WEB_SECRET, ...issued]) {
      expect(all).not.toContain(secret);
      expect(all).not.toContain(encodeURIComponent(secret));
    }
  });
});
