/**
 * jwtVerify caller authentication (lib/data-plane/caller-auth.ts + jwks-cache.ts) against a real
 * JWKS served by node:http on 127.0.0.1, with RS256 and ES256 keys from jose: claims, clock skew,
 * algorithm confusion, HS256, key rotation, a flood of unknown kids, an unreachable endpoint under
 * both fail policies, the last-verified-token shortcut, persistence and seeding of the keys.
 * Time is a fake clock shared by the cache and the verification, so cooldowns and lifetimes are
 * crossed without waiting.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { base64url, type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  authenticateCaller,
  type CallerAuthResult,
  type CallerCredential,
  jwtVerifyStats,
  LastVerifiedTokens,
} from "#lib/data-plane/caller-auth.ts";
import { JwksCache, type JwksDocument } from "#lib/data-plane/jwks-cache.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { JwtVerifySecretSchema } from "#lib/vault/secret-schemas.ts";

process.env.OUTBOUND_ALLOW_LOOPBACK = "true";

const ISSUER = "https://issuer.test";
const AUDIENCE = "gateway-proxy";

interface SigningKey {
  kid: string;
  alg: "RS256" | "ES256";
  privateKey: CryptoKey;
  jwk: JWK;
}

async function signingKey(alg: "RS256" | "ES256", kid = `${alg}-${randomUUID()}`): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { kid, alg, privateKey, jwk };
}

/** A JWKS server whose key set and availability the test controls. */
interface JwksServer {
  url: string;
  fetches: number;
  keys: JWK[];
  cacheControl?: string;
  /** Extra delay before answering (to make concurrent callers overlap). */
  delayMs: number;
  stop(): Promise<void>;
}

const servers: Server[] = [];

async function startJwksServer(keys: JWK[]): Promise<JwksServer> {
  const state: JwksServer = {
    url: "",
    fetches: 0,
    keys,
    delayMs: 0,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req, res) => {
    if (req.url !== "/.well-known/jwks.json") {
      res.writeHead(404).end();
      return;
    }
    state.fetches++;
    setTimeout(() => {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (state.cacheControl) headers["cache-control"] = state.cacheControl;
      res.writeHead(200, headers).end(JSON.stringify({ keys: state.keys }));
    }, state.delayMs);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
  return state;
}

let clock = Date.now();
const now = () => clock;
const seconds = (ms: number) => Math.floor(ms / 1000);

interface Claims {
  iss?: string;
  aud?: string | string[];
  sub?: string;
  exp?: number | null;
  nbf?: number;
  [claim: string]: unknown;
}

async function sign(key: SigningKey | { alg: "HS256"; secret: string }, claims: Claims = {}, header = {}) {
  const { iss = ISSUER, aud = AUDIENCE, sub = "client-1", exp, ...rest } = claims;
  const jwt = new SignJWT(rest)
    .setIssuer(iss)
    .setAudience(aud)
    .setSubject(sub)
    .setIssuedAt(seconds(clock))
    .setJti(randomUUID());
  if (exp !== null) jwt.setExpirationTime(exp ?? seconds(clock) + 3600);
  if ("secret" in key) {
    return jwt.setProtectedHeader({ alg: "HS256", ...header }).sign(new TextEncoder().encode(key.secret));
  }
  return jwt.setProtectedHeader({ alg: key.alg, kid: key.kid, ...header }).sign(key.privateKey);
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` }, query: {} });

function credential(
  secret: Record<string, unknown>,
  credentialId = `cred-${randomUUID()}`,
): CallerCredential {
  return {
    credentialId,
    authType: "jwtVerify",
    secret: JwtVerifySecretSchema.parse({
      algorithms: ["RS256", "ES256"],
      issuer: ISSUER,
      audience: AUDIENCE,
      subject: "client-*",
      ...secret,
    }),
  };
}

let persisted: { credentialId: string; jwks: JwksDocument }[] = [];
const newCache = (options: ConstructorParameters<typeof JwksCache>[0] = {}): JwksCache =>
  new JwksCache({
    now,
    persist: async (credentialId, jwks) => {
      persisted.push({ credentialId, jwks });
    },
    ...options,
  });

let jwks: JwksCache;
let lastVerified: LastVerifiedTokens;
/** An accepted caller, with the token's verified claims (meters bind variables from them). */
const ACCEPTED = { ok: true, claims: expect.objectContaining({ exp: expect.any(Number) }) };

const auth = (token: string, cred: CallerCredential): Promise<CallerAuthResult> =>
  authenticateCaller(bearer(token), cred, { jwks, now, lastVerified });

const refused = (reason: string | RegExp) => ({
  ok: false,
  reason: typeof reason === "string" ? reason : expect.stringMatching(reason),
});

let rsa: SigningKey;
let ec: SigningKey;
let server: JwksServer;

beforeAll(async () => {
  [rsa, ec] = await Promise.all([signingKey("RS256"), signingKey("ES256")]);
  server = await startJwksServer([rsa.jwk, ec.jwk]);
});

beforeEach(() => {
  clock = Date.now();
  jwks = newCache();
  lastVerified = new LastVerifiedTokens();
  persisted = [];
  server.keys = [rsa.jwk, ec.jwk];
  server.cacheControl = undefined;
  server.delayMs = 0;
});

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  await closeOutboundAgents();
});

describe("jwtVerify against a JWKS on loopback", () => {
  it("accepts valid RS256 and ES256 tokens with one fetch, and persists the public keys", async () => {
    const cred = credential({ jwksUri: server.url });
    const before = server.fetches;
    expect(await auth(await sign(rsa), cred)).toEqual(ACCEPTED);
    expect(await auth(await sign(ec, { team: "blue" }), cred)).toEqual({
      ok: true,
      claims: expect.objectContaining({ team: "blue", iss: expect.any(String) }),
    });
    expect(server.fetches - before).toBe(1);
    expect(persisted).toHaveLength(1);
    expect(persisted[0]!.credentialId).toBe(cred.credentialId);
    expect(persisted[0]!.jwks.fetchedAt).toBe(clock);
    expect(persisted[0]!.jwks.keys.map((key) => key.kid).sort()).toEqual([rsa.kid, ec.kid].sort());
    for (const key of persisted[0]!.jwks.keys) expect(key).not.toHaveProperty("d");
  });

  it("concurrent first requests share one fetch", async () => {
    const cred = credential({ jwksUri: server.url });
    server.delayMs = 50;
    const before = server.fetches;
    const tokens = await Promise.all(Array.from({ length: 10 }, () => sign(rsa)));
    const results = await Promise.all(tokens.map((token) => auth(token, cred)));
    expect(results.every((result) => result.ok)).toBe(true);
    expect(server.fetches - before).toBe(1);
  });

  it("uses the only key of the fitting type when the token has no kid", async () => {
    const cred = credential({ jwksUri: server.url });
    expect(await auth(await sign(rsa, {}, { kid: undefined }), cred)).toEqual(ACCEPTED);
    expect(await auth(await sign(ec, {}, { kid: undefined }), cred)).toEqual(ACCEPTED);
    // Two RSA keys and no kid: ambiguous.
    const rsa2 = await signingKey("RS256");
    server.keys = [rsa.jwk, rsa2.jwk];
    const other = credential({ jwksUri: server.url });
    expect(await auth(await sign(rsa, {}, { kid: undefined }), other)).toEqual(refused("no matching key"));
  });

  it("refuses a bad signature", async () => {
    const cred = credential({ jwksUri: server.url });
    const impostor = { ...(await signingKey("RS256")), kid: rsa.kid };
    expect(await auth(await sign(impostor), cred)).toEqual(refused("invalid signature"));
    const [header, payload, signature] = (await sign(rsa)).split(".");
    const tampered = base64url.encode(
      JSON.stringify({
        ...JSON.parse(new TextDecoder().decode(base64url.decode(payload!))),
        sub: "client-9",
      }),
    );
    expect(await auth(`${header}.${tampered}.${signature}`, cred)).toEqual(refused("invalid signature"));
  });

  it("refuses a wrong iss, aud or sub", async () => {
    const cred = credential({ jwksUri: server.url });
    expect(await auth(await sign(rsa, { iss: "https://evil.test" }), cred)).toEqual(
      refused("claim iss invalid"),
    );
    expect(await auth(await sign(rsa, { aud: "someone-else" }), cred)).toEqual(refused("claim aud invalid"));
    expect(await auth(await sign(rsa, { aud: ["x", AUDIENCE] }), cred)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa, { sub: "other-1" }), cred)).toEqual(refused("claim sub invalid"));
  });

  it("matches sub exactly, by prefix with a trailing *, or anything with * alone", async () => {
    const exact = credential({ jwksUri: server.url, subject: "client-1" });
    expect(await auth(await sign(rsa, { sub: "client-1" }), exact)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa, { sub: "client-10" }), exact)).toEqual(refused("claim sub invalid"));
    const prefix = credential({ jwksUri: server.url, subject: "client-*" });
    expect(await auth(await sign(rsa, { sub: "client-42" }), prefix)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa, { sub: "client-" }), prefix)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa, { sub: "clien" }), prefix)).toEqual(refused("claim sub invalid"));
    const any = credential({ jwksUri: server.url, subject: "*" });
    expect(await auth(await sign(rsa, { sub: "whoever" }), any)).toEqual(ACCEPTED);
  });

  it("tolerates clock skew on exp and nbf, no more; exp is required", async () => {
    const cred = credential({ jwksUri: server.url, clockSkewSeconds: 30 });
    const t = seconds(clock);
    expect(await auth(await sign(rsa, { exp: t - 10 }), cred)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa, { exp: t - 60 }), cred)).toEqual(refused("token expired"));
    expect(await auth(await sign(rsa, { nbf: t + 10 }), cred)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa, { nbf: t + 60 }), cred)).toEqual(refused("claim nbf invalid"));
    expect(await auth(await sign(rsa, { exp: null }), cred)).toEqual(refused("claim exp invalid"));
    const strict = credential({ jwksUri: server.url, clockSkewSeconds: 0 });
    expect(await auth(await sign(rsa, { exp: t - 1 }), strict)).toEqual(refused("token expired"));
  });

  it("checks requiredClaims: equality, any-of lists, containment in array claims", async () => {
    const cred = credential({
      jwksUri: server.url,
      requiredClaims: {
        role: "admin",
        tier: ["gold", "silver"],
        scopes: "proxy:call",
        verified: true,
        level: 3,
      },
    });
    const good = { role: "admin", tier: "silver", scopes: ["read", "proxy:call"], verified: true, level: 3 };
    expect(await auth(await sign(rsa, good), cred)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa, { ...good, role: "user" }), cred)).toEqual(
      refused("claim role invalid"),
    );
    expect(await auth(await sign(rsa, { ...good, tier: "bronze" }), cred)).toEqual(
      refused("claim tier invalid"),
    );
    expect(await auth(await sign(rsa, { ...good, tier: ["bronze", "gold"] }), cred)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa, { ...good, scopes: ["read"] }), cred)).toEqual(
      refused("claim scopes invalid"),
    );
    expect(await auth(await sign(rsa, { ...good, verified: "true" }), cred)).toEqual(
      refused("claim verified invalid"),
    );
    const { level: _level, ...withoutLevel } = good;
    expect(await auth(await sign(rsa, withoutLevel), cred)).toEqual(refused("claim level invalid"));
  });

  it("refuses alg none and an HS256 token against an RS256 credential, without fetching", async () => {
    const cred = credential({ jwksUri: server.url, algorithms: ["RS256"] });
    const before = server.fetches;
    const payload = { iss: ISSUER, aud: AUDIENCE, sub: "client-1", exp: seconds(clock) + 3600 };
    const encode = (value: object) => base64url.encode(JSON.stringify(value));
    const none = `${encode({ alg: "none", typ: "JWT" })}.${encode(payload)}.`;
    expect(await auth(none, cred)).toEqual(refused("algorithm not allowed"));
    const noneUpper = `${encode({ alg: "NONE" })}.${encode(payload)}.`;
    expect(await auth(noneUpper, cred)).toEqual(refused("algorithm not allowed"));
    // Algorithm confusion: the RSA public key (as published) used as an HMAC secret.
    const confused = await sign({ alg: "HS256", secret: JSON.stringify(rsa.jwk) }, {}, { kid: rsa.kid });
    expect(await auth(confused, cred)).toEqual(refused("algorithm not allowed"));
    // ES256 is not in this credential's list either.
    expect(await auth(await sign(ec), cred)).toEqual(refused("algorithm not allowed"));
    expect(server.fetches - before).toBe(0);
  });

  it("verifies HS256 with the shared secret", async () => {
    const secret = randomBytes(32).toString("hex");
    const cred = credential({ algorithms: ["HS256"], sharedSecret: secret });
    expect(await auth(await sign({ alg: "HS256", secret }), cred)).toEqual(ACCEPTED);
    expect(await auth(await sign({ alg: "HS256", secret: `${secret}x` }), cred)).toEqual(
      refused("invalid signature"),
    );
    expect(await auth(await sign({ alg: "HS256", secret }, { aud: "x" }), cred)).toEqual(
      refused("claim aud invalid"),
    );
    expect(await auth(await sign(rsa), cred)).toEqual(refused("algorithm not allowed"));
  });

  it("key rotation: a new kid is accepted after exactly one refetch", async () => {
    const cred = credential({ jwksUri: server.url });
    expect(await auth(await sign(rsa), cred)).toEqual(ACCEPTED);
    const before = server.fetches;
    const rotated = await signingKey("RS256");
    server.keys = [rotated.jwk];
    clock += 31_000; // past the cooldown, well within the key set's lifetime
    expect(await auth(await sign(rotated), cred)).toEqual(ACCEPTED);
    expect(server.fetches - before).toBe(1);
    expect(persisted).toHaveLength(2);
    expect(persisted[1]!.jwks.keys.map((key) => key.kid)).toEqual([rotated.kid]);
    // More tokens with the new kid: no fetch. The retired kid is now unknown (and within cooldown).
    expect(await auth(await sign(rotated), cred)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa), cred)).toEqual(refused("no matching key"));
    expect(server.fetches - before).toBe(1);
  });

  it("a new kid right after a routine fetch is fetched at once; a second unknown kid then waits for the cooldown", async () => {
    const cred = credential({ jwksUri: server.url });
    expect(await auth(await sign(rsa), cred)).toEqual(ACCEPTED);
    const before = server.fetches;
    const rotated = await signingKey("RS256");
    server.keys = [rsa.jwk, rotated.jwk];
    clock += 5_000;
    // Rotation: one refetch, accepted at once.
    expect(await auth(await sign(rotated), cred)).toEqual(ACCEPTED);
    expect(server.fetches - before).toBe(1);
    // Another unknown kid inside the cooldown of that miss-triggered fetch: no fetch.
    const later = await signingKey("RS256");
    server.keys = [rsa.jwk, rotated.jwk, later.jwk];
    clock += 5_000;
    expect(await auth(await sign(later), cred)).toEqual(refused("no matching key"));
    expect(server.fetches - before).toBe(1);
    clock += 26_000;
    expect(await auth(await sign(later), cred)).toEqual(ACCEPTED);
    expect(server.fetches - before).toBe(2);
  });

  it("a flood of 50 unknown kids makes at most one fetch per cooldown", async () => {
    const cred = credential({ jwksUri: server.url });
    expect(await auth(await sign(rsa), cred)).toEqual(ACCEPTED);
    const before = server.fetches;
    clock += 31_000;
    server.delayMs = 20;
    const flood = await Promise.all(
      Array.from({ length: 50 }, () => sign({ ...rsa, kid: randomBytes(8).toString("hex") })),
    );
    const concurrent = await Promise.all(flood.map((token) => auth(token, cred)));
    expect(concurrent.every((result) => !result.ok && result.reason === "no matching key")).toBe(true);
    expect(server.fetches - before).toBe(1);
    // Sequential, still inside the cooldown: no more fetches.
    for (const token of flood) {
      clock += 100;
      expect(await auth(token, cred)).toEqual(refused("no matching key"));
    }
    expect(server.fetches - before).toBe(1);
    // Valid tokens keep working meanwhile.
    expect(await auth(await sign(rsa), cred)).toEqual(ACCEPTED);
  });

  it("refetches when the key set is older than jwksRefreshHint or the response's max-age", async () => {
    const hinted = credential({ jwksUri: server.url, jwksRefreshHint: 120 });
    await auth(await sign(rsa), hinted);
    let before = server.fetches;
    clock += 119_000;
    await auth(await sign(rsa), hinted);
    expect(server.fetches - before).toBe(0);
    clock += 2_000;
    expect(await auth(await sign(rsa), hinted)).toEqual(ACCEPTED);
    expect(server.fetches - before).toBe(1);

    server.cacheControl = "public, max-age=300";
    const cached = credential({ jwksUri: server.url });
    await auth(await sign(rsa), cached);
    before = server.fetches;
    clock += 299_000;
    await auth(await sign(rsa), cached);
    expect(server.fetches - before).toBe(0);
    clock += 2_000;
    await auth(await sign(rsa), cached);
    expect(server.fetches - before).toBe(1);
  });

  it("a seeded copy (from the credential record) is used without fetching", async () => {
    const cred = credential({ jwksUri: server.url });
    jwks.seed(cred.credentialId, { keys: [rsa.jwk], fetchedAt: clock - 60_000 });
    const before = server.fetches;
    expect(await auth(await sign(rsa), cred)).toEqual(ACCEPTED);
    expect(server.fetches - before).toBe(0);
    // An unknown kid for the seeded copy: one refetch (none happened in this process yet).
    expect(await auth(await sign(ec), cred)).toEqual(ACCEPTED);
    expect(server.fetches - before).toBe(1);
  });
});

describe("unreachable JWKS endpoint", () => {
  let down: JwksServer;
  let closed: CallerCredential;
  let open: CallerCredential;

  beforeEach(async () => {
    down = await startJwksServer([rsa.jwk]);
    closed = credential({ jwksUri: down.url, failPolicy: "fail-closed" });
    open = credential({ jwksUri: down.url, failPolicy: "fail-open" });
    expect(await auth(await sign(rsa), closed)).toEqual(ACCEPTED);
    expect(await auth(await sign(rsa), open)).toEqual(ACCEPTED);
    await down.stop();
    clock += 3_601_000; // the cached copies are now stale
  });

  it("fail-closed refuses, fail-open serves the stale keys", async () => {
    expect(await auth(await sign(rsa), closed)).toEqual(refused("jwks unreachable"));
    expect(await auth(await sign(rsa), open)).toEqual(ACCEPTED);
    // Within the cooldown after the failure, no new attempt: same answers, fast.
    clock += 1_000;
    expect(await auth(await sign(rsa), closed)).toEqual(refused("jwks unreachable"));
    expect(await auth(await sign(rsa), open)).toEqual(ACCEPTED);
    // Stale keys do not know new kids.
    expect(await auth(await sign(ec), open)).toEqual(refused("no matching key"));
    expect(persisted).toHaveLength(2);
  });

  it("fail-open with nothing cached at all refuses", async () => {
    const cold = credential({ jwksUri: down.url, failPolicy: "fail-open" });
    expect(await auth(await sign(rsa), cold)).toEqual(refused("jwks unreachable"));
  });

  it("the last verified token is still approved by comparison (no verification, no fetch)", async () => {
    const cred = credential({ jwksUri: server.url, failPolicy: "fail-closed" });
    const token = await sign(rsa); // exp: clock + 3600 s
    expect(await auth(token, cred)).toEqual(ACCEPTED);
    const verifications = jwtVerifyStats.verifications;
    const fetches = server.fetches;
    expect(await auth(token, cred)).toEqual(ACCEPTED);
    expect(jwtVerifyStats.verifications).toBe(verifications);
    expect(server.fetches).toBe(fetches);

    // Make the cache stale and its endpoint fail: the same token still passes, a new one does not.
    await server.stop();
    try {
      clock += 3_610_000; // cache stale (3600 s); token valid until exp + 30 s skew
      expect(await auth(token, cred)).toEqual(ACCEPTED);
      expect(await auth(await sign(rsa), cred)).toEqual(refused("jwks unreachable"));
      expect(jwtVerifyStats.verifications).toBe(verifications);
      // Past exp plus skew, the shortcut ends (and full verification cannot run).
      clock += 30_000;
      expect((await auth(token, cred)).ok).toBe(false);
    } finally {
      server = await restart(server);
    }
  });
});

/** A fresh server with the same keys (the old port is gone). */
async function restart(old: JwksServer): Promise<JwksServer> {
  return startJwksServer(old.keys);
}

describe("last verified token", () => {
  it("a different token triggers full verification", async () => {
    const cred = credential({ jwksUri: server.url });
    const first = await sign(rsa);
    const second = await sign(rsa);
    const start = jwtVerifyStats.verifications;
    await auth(first, cred);
    await auth(first, cred);
    expect(jwtVerifyStats.verifications - start).toBe(1);
    await auth(second, cred);
    expect(jwtVerifyStats.verifications - start).toBe(2);
    // Only the last one is remembered.
    await auth(first, cred);
    expect(jwtVerifyStats.verifications - start).toBe(3);
    // A refused token is never remembered.
    const bad = await sign(rsa, { iss: "https://evil.test" });
    await auth(bad, cred);
    await auth(bad, cred);
    expect(jwtVerifyStats.verifications - start).toBe(5);
  });
});
