/**
 * OAuth 2.0 client side (lib/vault/oauth2.ts) against a real authorization server: oidc-provider
 * on 127.0.0.1. The authorization_code flow is driven through the provider's own (development)
 * login and consent pages over HTTP, as a browser would, with a cookie jar; no mocks.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeOutboundAgents, OutboundBlockedError } from "#lib/net/outbound.ts";
import {
  buildAuthorizationUrl,
  createPkcePair,
  exchangeAuthorizationCode,
  fetchClientCredentialsToken,
  isExpiring,
  OAuthError,
  refreshAccessToken,
} from "#lib/vault/oauth2.ts";
import { Browser, type OAuthServer, startOAuthServer } from "../support/oauth-server.ts";

const policy = { allowLoopback: true, allowPrivate: false };
const REDIRECT_URI = "https://gateway.example.test/webhooks/oauth2";
// Characters that must be form-urlencoded before base64 in client_secret_basic (RFC 6749 2.3.1).
const BASIC_ID = "svc:basic client";
const BASIC_SECRET = "p@ss w0rd:+/%&=~*-basic-secret";
const POST_SECRET = "post-secret-0123456789abcdef";
const WEB_SECRET = "web-secret-0123456789abcdef";

let server: OAuthServer;
let tokenUrl: string;
let authorizationUrl: string;

beforeAll(async () => {
  server = await startOAuthServer({
    clients: [
      {
        client_id: BASIC_ID,
        client_secret: BASIC_SECRET,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
        scope: "api:read api:write",
      },
      {
        client_id: "svc-post",
        client_secret: POST_SECRET,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_post",
        scope: "api:read",
      },
      {
        client_id: "web",
        client_secret: WEB_SECRET,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    // Confidential clients too must use PKCE here, so a wrong verifier is refused.
    pkceRequired: () => true,
  });
  tokenUrl = server.tokenUrl;
  authorizationUrl = server.authorizationUrl;
});

afterAll(async () => {
  await closeOutboundAgents();
  await server?.close();
});

async function authorizationCode(options: { offline?: boolean } = {}) {
  const pkce = createPkcePair();
  const state = `state-${Math.random().toString(36).slice(2)}`;
  const url = buildAuthorizationUrl({
    authorizationUrl,
    clientId: "web",
    redirectUri: REDIRECT_URI,
    scope: options.offline ? "openid offline_access" : "openid",
    state,
    codeChallenge: pkce.challenge,
    // oidc-provider grants offline_access only with an explicit consent prompt.
    ...(options.offline ? { extraParams: { prompt: "consent" } } : {}),
  });
  const callback = await new Browser().authorize(url, { redirectUri: REDIRECT_URI });
  expect(callback.searchParams.get("state")).toBe(state);
  const code = callback.searchParams.get("code");
  expect(code, callback.href).toBeTruthy();
  return { code: code!, pkce };
}

async function oauthError(promise: Promise<unknown>): Promise<OAuthError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OAuthError);
  return error as OAuthError;
}

function expectNoSecrets(error: OAuthError, secrets: string[]) {
  const everything = [
    error.message,
    error.errorDescription ?? "",
    error.stack ?? "",
    JSON.stringify(error),
    String((error.cause as Error | undefined)?.message ?? ""),
  ].join("\n");
  for (const secret of secrets) {
    expect(everything).not.toContain(secret);
    expect(everything).not.toContain(encodeURIComponent(secret));
  }
}

describe("PKCE and authorization URL", () => {
  it("creates a 43-character verifier and its S256 challenge", () => {
    const pair = createPkcePair();
    expect(pair.method).toBe("S256");
    expect(pair.verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(pair.challenge).toBe(createHash("sha256").update(pair.verifier).digest("base64url"));
    expect(createPkcePair().verifier).not.toBe(pair.verifier);
  });

  it("builds the authorization URL, keeping existing parameters", () => {
    const url = new URL(
      buildAuthorizationUrl({
        authorizationUrl: "https://auth.example.com/authorize?tenant=acme",
        clientId: "client 1",
        redirectUri: REDIRECT_URI,
        scope: "read write",
        state: "xyz",
        codeChallenge: "abc",
        audience: "https://api.example.com",
        extraParams: { prompt: "consent", client_id: "ignored" },
      }),
    );
    expect(Object.fromEntries(url.searchParams)).toEqual({
      tenant: "acme",
      prompt: "consent",
      response_type: "code",
      client_id: "client 1",
      redirect_uri: REDIRECT_URI,
      scope: "read write",
      state: "xyz",
      code_challenge: "abc",
      code_challenge_method: "S256",
      audience: "https://api.example.com",
    });
    expect(() =>
      buildAuthorizationUrl({
        authorizationUrl: "javascript:alert(1)",
        clientId: "c",
        redirectUri: "r",
        state: "s",
      }),
    ).toThrow(OAuthError);
  });
});

describe("client_credentials", () => {
  it("fetches a token with client_secret_basic (id and secret form-encoded before base64)", async () => {
    const before = Date.now();
    const tokens = await fetchClientCredentialsToken({
      tokenUrl,
      clientId: BASIC_ID,
      clientSecret: BASIC_SECRET,
      tokenAuthMethod: "client_secret_basic",
      scope: "api:read",
      policy,
    });
    expect(tokens.accessToken).toBeTruthy();
    expect(tokens.tokenType).toBe("Bearer");
    expect(tokens.scope).toBe("api:read");
    expect(tokens.refreshToken).toBeUndefined();
    // ClientCredentials lifetime configured above: 10 minutes.
    expect(tokens.expiresAt).toBeGreaterThanOrEqual(before + 590_000);
    expect(tokens.expiresAt).toBeLessThanOrEqual(Date.now() + 600_000);
    expect(isExpiring(tokens)).toBe(false);
  });

  it("fetches a token with client_secret_post", async () => {
    const tokens = await fetchClientCredentialsToken({
      tokenUrl,
      clientId: "svc-post",
      clientSecret: POST_SECRET,
      tokenAuthMethod: "client_secret_post",
      scope: "api:read",
      policy,
    });
    expect(tokens.accessToken).toBeTruthy();
    expect(tokens.scope).toBe("api:read");
  });

  it("refuses a wrong secret with invalid_client and no secret in the error", async () => {
    const wrong = "wrong-secret-value-123456";
    for (const tokenAuthMethod of ["client_secret_basic", "client_secret_post"] as const) {
      const error = await oauthError(
        fetchClientCredentialsToken({
          tokenUrl,
          clientId: "svc-post",
          clientSecret: wrong,
          tokenAuthMethod,
          policy,
        }),
      );
      expect(error.status).toBe(401);
      expect(error.error).toBe("invalid_client");
      expect(error.message).toMatch(/HTTP 401 \(invalid_client\)/);
      expectNoSecrets(error, [wrong, POST_SECRET]);
    }
  });

  it("goes through the outbound policy: loopback token URL blocked by default, metadata always", async () => {
    const blocked = await oauthError(
      fetchClientCredentialsToken({
        tokenUrl,
        clientId: "svc-post",
        clientSecret: POST_SECRET,
        tokenAuthMethod: "client_secret_post",
        policy: { allowLoopback: false, allowPrivate: false },
      }),
    );
    expect(blocked.cause).toBeInstanceOf(OutboundBlockedError);
    expectNoSecrets(blocked, [POST_SECRET]);
    const metadata = await oauthError(
      fetchClientCredentialsToken({
        tokenUrl: "http://169.254.169.254/latest/api/token",
        clientId: "svc-post",
        clientSecret: POST_SECRET,
        tokenAuthMethod: "client_secret_post",
        policy: { allowLoopback: true, allowPrivate: true },
      }),
    );
    expect(metadata.cause).toBeInstanceOf(OutboundBlockedError);
  });
});

describe("authorization_code with PKCE", () => {
  it("completes sign-in and consent and exchanges the code with the verifier", async () => {
    const { code, pkce } = await authorizationCode();
    const tokens = await exchangeAuthorizationCode({
      tokenUrl,
      clientId: "web",
      clientSecret: WEB_SECRET,
      tokenAuthMethod: "client_secret_basic",
      code,
      redirectUri: REDIRECT_URI,
      codeVerifier: pkce.verifier,
      policy,
    });
    expect(tokens.accessToken).toBeTruthy();
    expect(tokens.tokenType).toBe("Bearer");
    expect(tokens.expiresAt).toBeGreaterThan(Date.now());
    expect(tokens.scope).toBe("openid");
    expect(tokens.refreshToken).toBeUndefined();

    // A code is good for one exchange only.
    const replay = await oauthError(
      exchangeAuthorizationCode({
        tokenUrl,
        clientId: "web",
        clientSecret: WEB_SECRET,
        tokenAuthMethod: "client_secret_basic",
        code,
        redirectUri: REDIRECT_URI,
        codeVerifier: pkce.verifier,
        policy,
      }),
    );
    expect(replay.error).toBe("invalid_grant");
  });

  it("refuses a wrong verifier and a missing one, without leaking code, verifier or secret", async () => {
    const { code, pkce } = await authorizationCode();
    const wrongVerifier = createPkcePair().verifier;
    const error = await oauthError(
      exchangeAuthorizationCode({
        tokenUrl,
        clientId: "web",
        clientSecret: WEB_SECRET,
        tokenAuthMethod: "client_secret_post",
        code,
        redirectUri: REDIRECT_URI,
        codeVerifier: wrongVerifier,
        policy,
      }),
    );
    expect(error.status).toBe(400);
    expect(error.error).toBe("invalid_grant");
    expectNoSecrets(error, [code, wrongVerifier, pkce.verifier, WEB_SECRET]);
    // The provider checks PKCE before consuming the code: the same code with the right verifier
    // passes, so the verifier alone was what it refused.
    const tokens = await exchangeAuthorizationCode({
      tokenUrl,
      clientId: "web",
      clientSecret: WEB_SECRET,
      tokenAuthMethod: "client_secret_post",
      code,
      redirectUri: REDIRECT_URI,
      codeVerifier: pkce.verifier,
      policy,
    });
    expect(tokens.accessToken).toBeTruthy();

    const second = await authorizationCode();
    const missing = await oauthError(
      exchangeAuthorizationCode({
        tokenUrl,
        clientId: "web",
        clientSecret: WEB_SECRET,
        tokenAuthMethod: "client_secret_basic",
        code: second.code,
        redirectUri: REDIRECT_URI,
        policy,
      }),
    );
    expect(missing.status).toBe(400);
    expectNoSecrets(missing, [second.code, WEB_SECRET]);
  });

  it("gets a refresh token with offline_access and refreshes the access token", async () => {
    const { code, pkce } = await authorizationCode({ offline: true });
    const tokens = await exchangeAuthorizationCode({
      tokenUrl,
      clientId: "web",
      clientSecret: WEB_SECRET,
      tokenAuthMethod: "client_secret_post",
      code,
      redirectUri: REDIRECT_URI,
      codeVerifier: pkce.verifier,
      policy,
    });
    expect(tokens.refreshToken).toBeTruthy();
    expect(tokens.scope?.split(" ").sort()).toEqual(["offline_access", "openid"]);

    const refreshed = await refreshAccessToken({
      tokenUrl,
      clientId: "web",
      clientSecret: WEB_SECRET,
      tokenAuthMethod: "client_secret_basic",
      refreshToken: tokens.refreshToken!,
      policy,
    });
    expect(refreshed.accessToken).toBeTruthy();
    expect(refreshed.accessToken).not.toBe(tokens.accessToken);
    expect(refreshed.refreshToken).toBeTruthy();
    expect(refreshed.expiresAt).toBeGreaterThan(Date.now());

    const bogus = `${tokens.refreshToken}-not-valid`;
    const error = await oauthError(
      refreshAccessToken({
        tokenUrl,
        clientId: "web",
        clientSecret: WEB_SECRET,
        tokenAuthMethod: "client_secret_basic",
        refreshToken: bogus,
        policy,
      }),
    );
    expect(error.error).toBe("invalid_grant");
    expectNoSecrets(error, [bogus, tokens.refreshToken!, WEB_SECRET]);
  });
});

describe("isExpiring", () => {
  const now = 1_700_000_000_000;
  it("uses a 60 s skew by default and never expires tokens without expiry", () => {
    expect(isExpiring({ accessToken: "a", tokenType: "Bearer", expiresAt: null }, now)).toBe(false);
    expect(isExpiring({ accessToken: "a", tokenType: "Bearer", expiresAt: now + 61_000 }, now)).toBe(false);
    expect(isExpiring({ accessToken: "a", tokenType: "Bearer", expiresAt: now + 60_000 }, now)).toBe(true);
    expect(isExpiring({ accessToken: "a", tokenType: "Bearer", expiresAt: now - 1 }, now)).toBe(true);
    expect(isExpiring({ accessToken: "a", tokenType: "Bearer", expiresAt: now + 5_000 }, now, 1_000)).toBe(
      false,
    );
  });
});
