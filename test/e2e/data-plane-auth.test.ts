/**
 * Authentication on the data plane (spec 2.5, 4.13, 5.3, 5.4) over real HTTP: the caller's proxy
 * credential of every type (accepted and refused), jwtVerify against a JWKS served on loopback
 * (claims, signature, expiry, last verified token, key rotation, keys stored on the credential
 * record, an unreachable key endpoint under both fail policies), the target credential of every
 * type as the target receives it (customToken from a loopback token server, oauth2
 * client_credentials from a real oidc-provider), and the request log of a basicAuth caller.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { base64url, type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { jwtVerifyStats } from "#lib/data-plane/caller-auth.ts";
import { DEFAULT_JWKS_COOLDOWN_MS } from "#lib/data-plane/jwks-cache.ts";
import { keys } from "#lib/db/keys.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { TestClock } from "../support/clock.ts";
import { type BodyHandler, listenWithBody } from "../support/loopback.ts";
import { type OAuthServer, serviceClient, startOAuthServer } from "../support/oauth-server.ts";
import { loggedRecords } from "../support/request-logs.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const ISSUER = "https://issuer.gateway.test";
const AUDIENCE = "proxy-gateway";
const SERVICE_CLIENT = "gateway-service";
const SERVICE_SECRET = `svc-${randomUUID()}-SECRET`;

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let oauth: OAuthServer;
const servers: Server[] = [];
let targetBase: string;
let tokenBase: string;
/** What the target received. */
const received: Received[] = [];
/** What the customToken endpoint received. */
const tokenRequests: Received[] = [];
const TOKEN_TTL_SECONDS = 3;
/** The stack's clock (lib/clock.ts): moved on past the JWKS cooldown and the token's expiry. */
const clock = new TestClock();

const secret = (label: string) => `${label}-${randomUUID()}`;

const listen = (handler: BodyHandler) => listenWithBody(handler, servers);

const record = (req: IncomingMessage, body: Buffer): Received => ({
  method: req.method ?? "",
  url: req.url ?? "",
  headers: req.headers,
  body,
});

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
  targetBase = `${await listen((req, body, res) => {
    received.push(record(req, body));
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ok: true }));
  })}/base`;
  let issued = 0;
  tokenBase = await listen((req, body, res) => {
    tokenRequests.push(record(req, body));
    if ((req.url ?? "").startsWith("/fail")) {
      res.writeHead(500, { "content-type": "application/json" });
      return res.end(JSON.stringify({ error: "token service down" }));
    }
    issued += 1;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({ data: { token: `tok-${issued}-${randomUUID()}`, expires_in: TOKEN_TTL_SECONDS } }),
    );
  });
  oauth = await startOAuthServer({
    clients: [serviceClient(SERVICE_CLIENT, SERVICE_SECRET, "api:read api:write")],
  });
});
afterAll(async () => {
  await closeOutboundAgents();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await oauth?.close();
  await stack?.stop();
});
// A fresh owner (token) and client per test: the basic plan allows 100 Core API calls a minute.
beforeEach(async () => {
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Data Plane Auth Co");
  received.length = 0;
  tokenRequests.length = 0;
});

const api = () => `/api/clients/${clientId}`;

interface Auth {
  authType: string;
  secret: Record<string, unknown>;
}

interface Setup {
  proxyId: string;
  url: string;
  /** The caller's key of the default apiKey proxy credential (header x-api-key). */
  key: string;
  /** The token of the default bearer target credential. */
  upstream: string;
  proxyCredentialId: string;
  targetCredentialId: string;
}

/** A proxy credential, a target credential, a target and a proxy, through the Core API. */
async function setup(options: { caller?: Auth; upstream?: Auth } = {}): Promise<Setup> {
  const key = secret("caller-key");
  const upstream = secret("upstream-token");
  const caller = options.caller ?? { authType: "apiKey", secret: { keyName: "x-api-key", keyValue: key } };
  const target = options.upstream ?? { authType: "bearer", secret: { token: upstream } };
  const [proxyCredential, targetCredential, theTarget] = await Promise.all([
    created(
      owner.api.post(`${api()}/credentials`, {
        credentialName: "caller",
        credentialType: "proxy",
        authType: caller.authType,
        region: US,
        secret: caller.secret,
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api()}/credentials`, {
        credentialName: "upstream",
        credentialType: "target",
        authType: target.authType,
        region: US,
        secret: target.secret,
      }),
      "credentials",
    ),
    created(
      owner.api.post(`${api()}/targets`, {
        targetName: "echo",
        targetRegion: US,
        targetBaseURL: targetBase,
        targetTestPath: "/health",
      }),
      "targets",
    ),
  ]);
  const proxy = await created(
    owner.api.post(`${api()}/proxies`, {
      proxyName: "main",
      proxyRegion: US,
      proxyProxyCredentialId: proxyCredential.credentialId,
      proxyTargetId: theTarget.targetId,
      proxyTargetCredentialId: targetCredential.credentialId,
    }),
    "proxies",
  );
  return {
    proxyId: proxy.proxyId,
    url: `${stack.regions[US]}/api/${proxy.proxyId}`,
    key,
    upstream,
    proxyCredentialId: proxyCredential.credentialId,
    targetCredentialId: targetCredential.credentialId,
  };
}

const call = callDataPlane;

/** Accepted, forwarded once, and the target saw the target credential, not the caller's. */
async function expectAccepted(s: Setup, url: string, headers: Record<string, string>) {
  const before = received.length;
  const response = await call(url, { headers });
  expect(response.status, response.text).toBe(200);
  expect(response.headers.get("service-proxy-code")).toBe("proxy-access-granted");
  expect(received).toHaveLength(before + 1);
  const got = received.at(-1)!;
  expect(got.headers.authorization).toBe(`Bearer ${s.upstream}`);
  return got;
}

/** 403 proxy-access-denied with the service headers, and the target never called. */
async function expectDenied(url: string, headers: Record<string, string>) {
  const before = received.length;
  const response = await call(url, { headers });
  expect(response.status, response.text).toBe(403);
  expect(response.headers.get("service-proxy-code")).toBe("proxy-access-denied");
  expect(response.headers.get("service-proxy-message")).toEqual(expect.any(String));
  expect(received).toHaveLength(before);
  return response;
}

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;

describe("caller authentication by the proxy credential", () => {
  it("apiKey in a header with a prefix: the key header never reaches the target", async () => {
    const value = secret("prefixed-key");
    const s = await setup({
      caller: { authType: "apiKey", secret: { keyName: "X-Caller-Key", keyValue: value, prefix: "Key" } },
    });
    const got = await expectAccepted(s, `${s.url}/a`, {
      "x-caller-key": `Key ${value}`,
      authorization: "Bearer caller-junk",
    });
    expect(got.headers["x-caller-key"]).toBeUndefined();
    // The header name is case-insensitive, so is the prefix word.
    await expectAccepted(s, `${s.url}/a`, { "X-CALLER-KEY": `key ${value}` });

    await expectDenied(`${s.url}/a`, { "x-caller-key": value }); // prefix missing
    await expectDenied(`${s.url}/a`, { "x-caller-key": `Key ${value}x` });
    await expectDenied(`${s.url}/a`, { "x-caller-key": `Bearer ${value}` });
    await expectDenied(`${s.url}/a`, { authorization: `Key ${value}` }); // wrong header
    await expectDenied(`${s.url}/a`, {});
  });

  it("apiKey as a query parameter: the key is not forwarded, the rest of the query is unchanged", async () => {
    const value = secret("query-key");
    const s = await setup({
      caller: { authType: "apiKey", secret: { keyName: "api_key", keyValue: value, placement: "query" } },
    });
    const got = await expectAccepted(s, `${s.url}/q?sp=a%20b&api_key=${value}&t=%7E&b=2`, {});
    expect(got.url).toBe("/base/q?sp=a%20b&t=%7E&b=2");
    expect(got.url).not.toContain(value);

    await expectDenied(`${s.url}/q?api_key=wrong`, {});
    await expectDenied(`${s.url}/q`, { api_key: value }); // a header is not the query

    // Nor is the key in the request log.
    await loggedRecords(owner.api, clientId, s.proxyId, 3);
    const list = await owner.api.get(`${api()}/proxies/${s.proxyId}/requests`);
    expect(list.status).toBe(200);
    expect(list.body.totalRequests).toBe(3);
    expect(JSON.stringify(list.body)).not.toContain(value);

    // Under another parameter name (names are case-sensitive) the key does not count.
    await expectDenied(`${s.url}/q?other=${value}`, {});
    await expectDenied(`${s.url}/q?API_KEY=${value}`, {});
  });

  it("bearer with the default Bearer prefix and with a custom prefix", async () => {
    const token = secret("bearer");
    const s = await setup({ caller: { authType: "bearer", secret: { token } } });
    await expectAccepted(s, `${s.url}/b`, { authorization: `Bearer ${token}` });
    await expectAccepted(s, `${s.url}/b`, { authorization: `bearer ${token}` });
    await expectDenied(`${s.url}/b`, { authorization: token });
    await expectDenied(`${s.url}/b`, { authorization: `Bearer ${token}-other` });
    await expectDenied(`${s.url}/b`, { authorization: `Token ${token}` });
    await expectDenied(`${s.url}/b`, {});

    const custom = secret("custom-prefixed");
    const c = await setup({ caller: { authType: "bearer", secret: { token: custom, prefix: "Token" } } });
    await expectAccepted(c, `${c.url}/b`, { authorization: `Token ${custom}` });
    await expectDenied(`${c.url}/b`, { authorization: `Bearer ${custom}` });
    await expectDenied(`${c.url}/b`, { authorization: custom });
  });

  it("basicAuth", async () => {
    const password = secret("pässword");
    const s = await setup({ caller: { authType: "basicAuth", secret: { username: "svc-user", password } } });
    await expectAccepted(s, `${s.url}/c`, { authorization: basic("svc-user", password) });
    await expectDenied(`${s.url}/c`, { authorization: basic("svc-user", `${password}x`) });
    await expectDenied(`${s.url}/c`, { authorization: basic("other", password) });
    await expectDenied(`${s.url}/c`, { authorization: `Bearer ${password}` });
    await expectDenied(`${s.url}/c`, { authorization: "Basic !!!" });
    await expectDenied(`${s.url}/c`, {});
  });

  it("static jwt: the JWT as the Authorization value", async () => {
    const jwt = (label: string) =>
      [{ alg: "HS256", typ: "JWT" }, { sub: label, jti: randomUUID() }, "sig"]
        .map((part) => base64url.encode(typeof part === "string" ? part : JSON.stringify(part)))
        .join(".");
    const token = jwt("caller");
    const s = await setup({ caller: { authType: "jwt", secret: { token } } });
    await expectAccepted(s, `${s.url}/d`, { authorization: token });
    await expectDenied(`${s.url}/d`, { authorization: jwt("caller") });
    await expectDenied(`${s.url}/d`, { authorization: `${token}x` });
    await expectDenied(`${s.url}/d`, {});
  });
});

// ---------------------------------------------------------------------------------------------
// jwtVerify
// ---------------------------------------------------------------------------------------------

interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
  /** The private JWK (must never be stored anywhere by the gateway). */
  privateJwk: JWK;
}

async function signingKey(kid = `rsa-${randomUUID()}`): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  return {
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" },
    privateJwk: { ...(await exportJWK(privateKey)), kid: `${kid}-private`, alg: "RS256" },
  };
}

interface JwksServer {
  url: string;
  fetches: number;
  keys: object[];
  stop(): Promise<void>;
}

async function startJwksServer(keySet: object[]): Promise<JwksServer> {
  const state = { url: "", fetches: 0, keys: keySet } as JwksServer;
  const server = createServer((req, res) => {
    if (req.url !== "/.well-known/jwks.json") return void res.writeHead(404).end();
    state.fetches++;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: state.keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  state.stop = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  servers.push(server);
  return state;
}

interface Claims {
  iss?: string;
  aud?: string;
  sub?: string;
  /** Epoch seconds. */
  exp?: number;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

async function sign(key: SigningKey | { sharedSecret: string }, claims: Claims = {}) {
  const jwt = new SignJWT({ scope: "read" })
    .setIssuer(claims.iss ?? ISSUER)
    .setAudience(claims.aud ?? AUDIENCE)
    .setSubject(claims.sub ?? "svc-billing")
    .setIssuedAt()
    .setJti(randomUUID())
    .setExpirationTime(claims.exp ?? nowSeconds() + 600);
  if ("sharedSecret" in key) {
    return jwt.setProtectedHeader({ alg: "HS256" }).sign(new TextEncoder().encode(key.sharedSecret));
  }
  return jwt.setProtectedHeader({ alg: "RS256", kid: key.kid }).sign(key.privateKey);
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const jwtVerifyCaller = (jwksUri: string, extra: Record<string, unknown> = {}): Auth => ({
  authType: "jwtVerify",
  secret: { algorithms: ["RS256"], issuer: ISSUER, audience: AUDIENCE, subject: "svc-*", jwksUri, ...extra },
});

const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

describe("jwtVerify", () => {
  it("RS256 against a JWKS on loopback: claims, signature and expiry checked, keys stored on the credential", async () => {
    const key = await signingKey();
    const leaked = await signingKey();
    const symmetric = { kty: "oct", kid: "shared", k: base64url.encode(randomBytes(32)) };
    // A careless issuer also publishes a private key and a symmetric one: neither may be kept.
    const jwks = await startJwksServer([key.jwk, leaked.privateJwk, symmetric]);
    const s = await setup({ caller: jwtVerifyCaller(jwks.url) });

    const token = await sign(key);
    await expectAccepted(s, `${s.url}/j`, bearer(token));
    expect(jwks.fetches).toBe(1);

    await expectDenied(`${s.url}/j`, bearer(await sign(key, { iss: "https://evil.test" })));
    await expectDenied(`${s.url}/j`, bearer(await sign(key, { aud: "another-api" })));
    await expectDenied(`${s.url}/j`, bearer(await sign(key, { sub: "user-1" })));
    await expectDenied(`${s.url}/j`, bearer(await sign(key, { exp: nowSeconds() - 120 })));
    // Signed by another key under the same kid.
    const impostor = await signingKey(key.kid);
    await expectDenied(`${s.url}/j`, bearer(await sign(impostor)));
    // A tampered payload with the original signature.
    const [header, , signature] = token.split(".");
    const forged = base64url.encode(
      JSON.stringify({ iss: ISSUER, aud: AUDIENCE, sub: "svc-admin", exp: 9e9 }),
    );
    await expectDenied(`${s.url}/j`, bearer(`${header}.${forged}.${signature}`));
    await expectDenied(`${s.url}/j`, { authorization: token }); // no Bearer
    await expectDenied(`${s.url}/j`, {});

    // The same token again: approved by comparison with the last verified one, no new verification.
    const verifications = jwtVerifyStats.verifications;
    await expectAccepted(s, `${s.url}/j`, bearer(token));
    expect(jwtVerifyStats.verifications).toBe(verifications);
    // A new valid token is verified in full, with the cached keys (no new fetch).
    await expectAccepted(s, `${s.url}/j`, bearer(await sign(key)));
    expect(jwtVerifyStats.verifications).toBe(verifications + 1);
    expect(jwks.fetches).toBe(1);

    // Spec 5.4: the keys are cached on the credential record: public keys only.
    const stored = await storedItem(keys.credential(clientId, s.proxyCredentialId), US);
    expect(stored?.jwksCache).toEqual({
      keys: [expect.objectContaining({ kid: key.kid })],
      fetchedAt: expect.any(Number),
    });
    for (const member of PRIVATE_MEMBERS) expect(stored!.jwksCache.keys[0]).not.toHaveProperty(member);
    const everything = JSON.stringify(stored);
    expect(everything).not.toContain(String(leaked.privateJwk.d));
    expect(everything).not.toContain(symmetric.k);
    expect(everything).not.toContain(token);
    // And never shown by the Core API.
    const shown = await owner.api.get(`${api()}/credentials/${s.proxyCredentialId}`);
    expect(shown.status).toBe(200);
    expect(JSON.stringify(shown.body)).not.toContain("jwksCache");
    expect(JSON.stringify(shown.body)).not.toContain(key.kid);
  });

  it("accepts a token with a new kid once the JWKS has rotated (one refetch, after the cooldown)", async () => {
    const first = await signingKey();
    const jwks = await startJwksServer([first.jwk]);
    const s = await setup({ caller: jwtVerifyCaller(jwks.url) });
    await expectAccepted(s, `${s.url}/r`, bearer(await sign(first)));
    expect(jwks.fetches).toBe(1);
    const fetchedAt = clock.now();

    const second = await signingKey();
    jwks.keys = [second.jwk];
    const rotated = await sign(second);
    // Unknown kids trigger at most one refetch per cooldown (30 s): retry, a second later on the
    // stack's clock each time, until it is over.
    let response = await call(`${s.url}/r`, { headers: bearer(rotated) });
    while (response.status !== 200 && clock.now() - fetchedAt < DEFAULT_JWKS_COOLDOWN_MS + 10_000) {
      expect(response.status).toBe(403);
      expect(response.headers.get("service-proxy-code")).toBe("proxy-access-denied");
      clock.advance(1000);
      response = await call(`${s.url}/r`, { headers: bearer(rotated) });
    }
    expect(response.status, response.text).toBe(200);
    expect(response.headers.get("service-proxy-code")).toBe("proxy-access-granted");
    // The refused attempts while cooling down did not hit the key endpoint.
    expect(jwks.fetches).toBe(2);
    expect(received.at(-1)!.headers.authorization).toBe(`Bearer ${s.upstream}`);

    // The retired key is gone from the cache and from the record.
    await expectDenied(`${s.url}/r`, bearer(await sign(first)));
    const stored = await storedItem(keys.credential(clientId, s.proxyCredentialId), US);
    expect(stored?.jwksCache.keys.map((k: JWK) => k.kid)).toEqual([second.kid]);
  });

  it("HS256 with a shared secret", async () => {
    const sharedSecret = randomBytes(32).toString("hex");
    const s = await setup({
      caller: {
        authType: "jwtVerify",
        secret: { algorithms: ["HS256"], issuer: ISSUER, audience: AUDIENCE, subject: "svc-*", sharedSecret },
      },
    });
    const token = await sign({ sharedSecret });
    await expectAccepted(s, `${s.url}/h`, bearer(token));
    await expectAccepted(s, `${s.url}/h`, bearer(token));
    await expectAccepted(s, `${s.url}/h`, bearer(await sign({ sharedSecret })));
    await expectDenied(`${s.url}/h`, bearer(await sign({ sharedSecret: randomBytes(32).toString("hex") })));
    await expectDenied(`${s.url}/h`, bearer(await sign({ sharedSecret }, { iss: "https://evil.test" })));
    await expectDenied(`${s.url}/h`, bearer(await sign({ sharedSecret }, { exp: nowSeconds() - 120 })));
    // An RS256 token is refused: the credential allows HS256 only.
    await expectDenied(`${s.url}/h`, bearer(await sign(await signingKey())));
    const stored = await storedItem(keys.credential(clientId, s.proxyCredentialId), US);
    expect(JSON.stringify(stored)).not.toContain(sharedSecret);
  });

  it("with the key endpoint down: fail-closed refuses, fail-open uses the keys cached before", async () => {
    const key = await signingKey();
    const jwks = await startJwksServer([key.jwk]);
    await jwks.stop();
    const closed = await setup({ caller: jwtVerifyCaller(jwks.url) });
    // Without any cached keys fail-closed cannot verify anything.
    await expectDenied(`${closed.url}/f`, bearer(await sign(key)));

    const open = await setup({ caller: jwtVerifyCaller(jwks.url, { failPolicy: "fail-open" }) });
    const failClosedWithCache = await setup({
      caller: jwtVerifyCaller(jwks.url, { failPolicy: "fail-closed" }),
    });
    // As a cold function finds them: keys stored on the record by an earlier fetch, two hours ago
    // (past their one-hour lifetime, so the gateway tries the endpoint again).
    const earlier = { keys: [key.jwk], fetchedAt: Date.now() - 2 * 3_600_000 };
    for (const credentialId of [open.proxyCredentialId, failClosedWithCache.proxyCredentialId]) {
      await dynamo(US).send(
        new UpdateCommand({
          TableName: getConfig().tableName,
          Key: keys.credential(clientId, credentialId),
          UpdateExpression: "SET jwksCache = :jwks",
          ExpressionAttributeValues: { ":jwks": earlier },
        }),
      );
    }
    await expectAccepted(open, `${open.url}/f`, bearer(await sign(key)));
    await expectAccepted(open, `${open.url}/f`, bearer(await sign(key)));
    await expectDenied(`${open.url}/f`, bearer(await sign(key, { aud: "another-api" })));
    await expectDenied(`${failClosedWithCache.url}/f`, bearer(await sign(key)));
    expect(jwks.fetches).toBe(0);
    // The stale copy stays as it was: nothing new was fetched.
    const stored = await storedItem(keys.credential(clientId, open.proxyCredentialId), US);
    expect(stored?.jwksCache.fetchedAt).toBe(earlier.fetchedAt);
  });
});

// ---------------------------------------------------------------------------------------------
// Target credentials
// ---------------------------------------------------------------------------------------------

/** One request through a proxy with the default apiKey caller; returns what the target received. */
async function forward(s: Setup, path: string, init: RequestInit = {}) {
  // Requests may run concurrently: each one is found at the target by its own id.
  const callId = randomUUID();
  const response = await call(`${s.url}${path}`, {
    ...init,
    headers: {
      "x-api-key": s.key,
      authorization: "Bearer caller-junk",
      "x-call-id": callId,
      ...(init.headers as object),
    },
  });
  expect(response.status, response.text).toBe(200);
  expect(response.headers.get("service-proxy-code")).toBe("proxy-access-granted");
  const got = received.filter((one) => one.headers["x-call-id"] === callId);
  expect(got).toHaveLength(1);
  expect(got[0]!.headers["x-api-key"]).toBeUndefined();
  return got[0]!;
}

describe("target credentials", () => {
  it("apiKey in a header (with a prefix) and as a query parameter", async () => {
    const headerKey = secret("target-key");
    const h = await setup({
      upstream: {
        authType: "apiKey",
        secret: { keyName: "X-Target-Key", keyValue: headerKey, prefix: "Key" },
      },
    });
    const got = await forward(h, "/k");
    expect(got.headers["x-target-key"]).toBe(`Key ${headerKey}`);
    expect(got.headers.authorization).toBeUndefined();

    const queryKey = secret("target-query-key");
    const q = await setup({
      upstream: {
        authType: "apiKey",
        secret: { keyName: "api_key", keyValue: queryKey, placement: "query" },
      },
    });
    const viaQuery = await forward(q, "/k?sp=a%20b&api_key=caller-supplied");
    expect(viaQuery.url).toBe(`/base/k?sp=a%20b&api_key=${queryKey}`);
    expect(viaQuery.headers.authorization).toBeUndefined();
  });

  it("basicAuth", async () => {
    const password = secret("target-password");
    const s = await setup({ upstream: { authType: "basicAuth", secret: { username: "svc", password } } });
    const got = await forward(s, "/basic");
    expect(got.headers.authorization).toBe(basic("svc", password));
  });

  it("custom: extra headers and query parameters, data merged into a POST JSON body", async () => {
    const tenantKey = secret("tenant-key");
    const s = await setup({
      upstream: {
        authType: "custom",
        secret: {
          additionalHeaders: { "X-Tenant-Key": tenantKey },
          additionalQueryParams: { tenant: "acme" },
          data: { injected: "yes", nested: { level: 1 } },
        },
      },
    });
    const got = await forward(s, "/custom?x=1", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ a: 1 }),
    });
    expect(got.method).toBe("POST");
    expect(got.url).toBe("/base/custom?x=1&tenant=acme");
    expect(got.headers["x-tenant-key"]).toBe(tenantKey);
    expect(got.headers.authorization).toBeUndefined();
    expect(JSON.parse(got.body.toString())).toEqual({ a: 1, injected: "yes", nested: { level: 1 } });
    // A GET carries no body data.
    const plain = await forward(s, "/custom");
    expect(plain.body.length).toBe(0);
    expect(plain.headers["x-tenant-key"]).toBe(tenantKey);
  });

  it("none: nothing added, and the caller's Authorization is still removed", async () => {
    const s = await setup({ upstream: { authType: "none", secret: {} } });
    const got = await forward(s, "/none?x=1");
    expect(got.url).toBe("/base/none?x=1");
    expect(got.headers.authorization).toBeUndefined();
  });

  it("customToken: fetched once, reused until it expires, then fetched again", async () => {
    const s = await setup({
      upstream: {
        authType: "customToken",
        secret: {
          tokenUrl: `${tokenBase}/token`,
          method: "POST",
          requestHeaders: { "X-Client": "gateway" },
          requestQueryParams: { tenant: "acme" },
          requestBody: { grant: "api" },
          tokenPath: "data.token",
          expiryMethod: "expires_in",
          expiryPath: "data.expires_in",
          prefix: "Bearer",
        },
      },
    });
    const first = await Promise.all([forward(s, "/t1"), forward(s, "/t2")]);
    first.push(await forward(s, "/t3"));
    const fetchedAt = clock.now();
    expect(tokenRequests).toHaveLength(1);
    const tokenRequest = tokenRequests[0]!;
    expect(tokenRequest.method).toBe("POST");
    expect(tokenRequest.url).toBe("/token?tenant=acme");
    expect(tokenRequest.headers["x-client"]).toBe("gateway");
    expect(JSON.parse(tokenRequest.body.toString())).toEqual({ grant: "api" });
    const token = first[0]!.headers.authorization;
    expect(token).toMatch(/^Bearer tok-1-/);
    for (const got of first) expect(got.headers.authorization).toBe(token);

    // Past the token's expiry on the stack's clock.
    clock.advance(Math.max(0, fetchedAt + TOKEN_TTL_SECONDS * 1000 + 200 - clock.now()));
    const later = await forward(s, "/t4");
    expect(tokenRequests).toHaveLength(2);
    expect(later.headers.authorization).toMatch(/^Bearer tok-2-/);
    expect((await forward(s, "/t5")).headers.authorization).toBe(later.headers.authorization);
    expect(tokenRequests).toHaveLength(2);
  });

  it("customToken: a failing token endpoint gives 502 with the service headers", async () => {
    const s = await setup({
      upstream: {
        authType: "customToken",
        secret: { tokenUrl: `${tokenBase}/fail`, tokenPath: "data.token" },
      },
    });
    const response = await call(`${s.url}/x`, { headers: { "x-api-key": s.key } });
    expect(response.status).toBe(502);
    expect(response.headers.get("service-proxy-code")).toBe("proxy-access-granted");
    expect(response.headers.get("service-proxy-message")).toMatch(/token/);
    expect(tokenRequests).toHaveLength(1);
    expect(received).toHaveLength(0);
  });

  it("oauth2 client_credentials: the provider's token, fetched once for several requests", async () => {
    const before = new Set(oauth.issued);
    const s = await setup({
      upstream: {
        authType: "oauth2",
        secret: {
          flow: "client_credentials",
          tokenUrl: oauth.tokenUrl,
          clientId: SERVICE_CLIENT,
          clientSecret: SERVICE_SECRET,
          scope: "api:read",
        },
      },
    });
    const got = await Promise.all([forward(s, "/o1"), forward(s, "/o2"), forward(s, "/o3")]);
    got.push(await forward(s, "/o4"));
    const fresh = [...oauth.issued].filter((token) => !before.has(token));
    expect(fresh).toHaveLength(1);
    for (const one of got) expect(one.headers.authorization).toBe(`Bearer ${fresh[0]}`);
  });
});

describe("request log", () => {
  it("of a basicAuth caller holds neither the password nor the base64 credentials", async () => {
    const password = secret("log-password");
    const encoded = Buffer.from(`svc-user:${password}`).toString("base64");
    const s = await setup({ caller: { authType: "basicAuth", secret: { username: "svc-user", password } } });
    const response = await call(`${s.url}/logged?q=1`, {
      method: "POST",
      headers: { authorization: `Basic ${encoded}`, "content-type": "application/json" },
      body: JSON.stringify({ hello: "world" }),
    });
    expect(response.status).toBe(200);
    const requestId = response.headers.get("x-request-id");
    expect(requestId).toEqual(expect.any(String));
    const refused = await call(`${s.url}/logged`, { headers: { authorization: basic("svc-user", "wrong") } });
    expect(refused.status).toBe(403);

    await loggedRecords(owner.api, clientId, s.proxyId, 2);
    const detail = await owner.api.get(`${api()}/proxies/${s.proxyId}/requests/${requestId}`);
    expect(detail.status, JSON.stringify(detail.body)).toBe(200);
    expect(detail.body.requests[0]).toMatchObject({ method: "POST", statusCode: 200 });
    const list = await owner.api.get(`${api()}/proxies/${s.proxyId}/requests`);
    expect(list.body.totalRequests).toBe(2);
    for (const text of [JSON.stringify(detail.body), JSON.stringify(list.body)]) {
      expect(text).not.toContain(password);
      expect(text).not.toContain(encoded);
      expect(text).not.toContain(s.upstream);
    }
  });
});
