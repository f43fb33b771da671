/**
 * Caller authentication of the data plane (lib/data-plane/caller-auth.ts) for the static auth
 * types: apiKey (header and query placement), bearer, basicAuth, jwt; the constant-time helper and
 * the request-shape refusals of jwtVerify. Cryptographic jwtVerify is in
 * test/integration/jwt-verify.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  authenticateCaller,
  type CallerCredential,
  type CallerRequest,
  constantTimeEqual,
  LastVerifiedTokens,
} from "#lib/data-plane/caller-auth.ts";
import {
  ApiKeySecretSchema,
  BasicAuthSecretSchema,
  BearerSecretSchema,
  JwtSecretSchema,
  JwtVerifySecretSchema,
} from "#lib/vault/secret-schemas.ts";

const request = (
  headers: Record<string, string> = {},
  query: Record<string, string> = {},
): CallerRequest => ({
  headers,
  query,
});

const cred = (authType: CallerCredential["authType"], secret: unknown): CallerCredential => {
  const schemas = {
    apiKey: ApiKeySecretSchema,
    bearer: BearerSecretSchema,
    basicAuth: BasicAuthSecretSchema,
    jwt: JwtSecretSchema,
    jwtVerify: JwtVerifySecretSchema,
  } as const;
  return { credentialId: `cred-${authType}`, authType, secret: schemas[authType].parse(secret) };
};

async function expectRefused(req: CallerRequest, credential: CallerCredential, reason?: RegExp) {
  const result = await authenticateCaller(req, credential);
  expect(result.ok).toBe(false);
  if (!result.ok && reason) expect(result.reason).toMatch(reason);
  return result;
}

async function expectAccepted(req: CallerRequest, credential: CallerCredential) {
  expect(await authenticateCaller(req, credential)).toEqual({ ok: true });
}

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;

describe("constantTimeEqual", () => {
  it("compares strings and buffers of any length", () => {
    expect(constantTimeEqual("secret-value", "secret-value")).toBe(true);
    expect(constantTimeEqual("secret-value", "secret-valuE")).toBe(false);
    expect(constantTimeEqual("short", "a much longer value than the other")).toBe(false);
    expect(constantTimeEqual("", "")).toBe(true);
    expect(constantTimeEqual("", "x")).toBe(false);
    expect(constantTimeEqual(Buffer.from("abc"), "abc")).toBe(true);
    expect(constantTimeEqual("é", Buffer.from("é", "utf8"))).toBe(true);
  });
});

describe("apiKey", () => {
  const header = cred("apiKey", { keyName: "X-Api-Key", keyValue: "k-123456" });
  const prefixed = cred("apiKey", { keyName: "Authorization", keyValue: "k-123456", prefix: "ApiKey" });
  const query = cred("apiKey", { keyName: "api_key", keyValue: "k-123456", placement: "query" });

  it("accepts the key in the credential's header, whatever the case of the header name", async () => {
    await expectAccepted(request({ "x-api-key": "k-123456" }), header);
    // The engine lower-cases names; a request built otherwise is still matched.
    await expectAccepted(request({ "X-API-KEY": "k-123456" }), header);
  });

  it("refuses a wrong, missing or misplaced key", async () => {
    await expectRefused(request({ "x-api-key": "k-12345" }), header, /^api key mismatch$/);
    await expectRefused(request({ "x-api-key": "k-1234567" }), header, /mismatch/);
    await expectRefused(request({}), header, /^missing header x-api-key$/);
    // Only where the credential says: not in Authorization, not in the query.
    await expectRefused(request({ authorization: "k-123456" }), header, /missing header/);
    await expectRefused(request({}, { "X-Api-Key": "k-123456" }), header, /missing header/);
    await expectRefused(request({ "x-api-key": "" }), header, /mismatch/);
  });

  it("reads only the request's own headers: a key named constructor or toString that is not sent is missing", async () => {
    for (const keyName of ["constructor", "toString", "__proto__"]) {
      const named = cred("apiKey", { keyName, keyValue: "k-123456" });
      await expectRefused(request({}), named, new RegExp(`^missing header ${keyName.toLowerCase()}$`));
      await expectAccepted(request(Object.fromEntries([[keyName.toLowerCase(), "k-123456"]])), named);
    }
  });

  it("checks the prefix (case-insensitive) before the value", async () => {
    await expectAccepted(request({ authorization: "ApiKey k-123456" }), prefixed);
    await expectAccepted(request({ authorization: "apikey k-123456" }), prefixed);
    await expectRefused(request({ authorization: "k-123456" }), prefixed, /expected ApiKey prefix/);
    await expectRefused(request({ authorization: "Bearer k-123456" }), prefixed, /expected ApiKey prefix/);
    await expectRefused(request({ authorization: "ApiKeyk-123456" }), prefixed, /expected ApiKey prefix/);
    await expectRefused(request({ authorization: "ApiKey k-000000" }), prefixed, /^api key mismatch$/);
  });

  it("query placement: the query parameter only, name case-sensitive", async () => {
    await expectAccepted(request({}, { api_key: "k-123456" }), query);
    await expectRefused(request({}, { api_key: "nope" }), query, /^api key mismatch$/);
    await expectRefused(request({ api_key: "k-123456" }), query, /^missing query parameter api_key$/);
    await expectRefused(request({}, { API_KEY: "k-123456" }), query, /missing query parameter/);
    await expectRefused(request({}, { authorization: "k-123456" }), query, /missing query parameter/);
  });
});

describe("bearer", () => {
  const bearer = cred("bearer", { token: "tok-abcdef" });
  const custom = cred("bearer", { token: "tok-abcdef", prefix: "Token" });
  const bare = cred("bearer", { token: "tok-abcdef", prefix: "" });

  it("accepts Authorization: Bearer <token>, scheme word in any case", async () => {
    await expectAccepted(request({ authorization: "Bearer tok-abcdef" }), bearer);
    await expectAccepted(request({ authorization: "bearer tok-abcdef" }), bearer);
    await expectAccepted(request({ authorization: "BEARER  tok-abcdef" }), bearer);
    await expectAccepted(request({ Authorization: "Bearer tok-abcdef" }), bearer);
  });

  it("refuses a wrong token, a wrong or missing prefix, a missing header", async () => {
    await expectRefused(request({ authorization: "Bearer tok-abcdeg" }), bearer, /^bearer token mismatch$/);
    await expectRefused(request({ authorization: "Token tok-abcdef" }), bearer, /expected Bearer prefix/);
    await expectRefused(request({ authorization: "tok-abcdef" }), bearer, /expected Bearer prefix/);
    await expectRefused(request({ authorization: "Bearer " }), bearer, /expected Bearer prefix/);
    await expectRefused(request({}), bearer, /^missing authorization header$/);
    await expectRefused(request({}, { authorization: "Bearer tok-abcdef" }), bearer, /missing/);
  });

  it("uses the configured prefix, or none when it is empty", async () => {
    await expectAccepted(request({ authorization: "Token tok-abcdef" }), custom);
    await expectRefused(request({ authorization: "Bearer tok-abcdef" }), custom, /expected Token prefix/);
    await expectAccepted(request({ authorization: "tok-abcdef" }), bare);
    await expectRefused(request({ authorization: "Bearer tok-abcdef" }), bare, /mismatch/);
  });
});

describe("basicAuth", () => {
  const credential = cred("basicAuth", { username: "alice", password: "p@ss:word" });

  it("accepts Basic base64(user:password), the password may contain colons", async () => {
    await expectAccepted(request({ authorization: basic("alice", "p@ss:word") }), credential);
    await expectAccepted(
      request({ authorization: basic("alice", "p@ss:word").replace("Basic", "basic") }),
      credential,
    );
  });

  it("refuses a wrong user, a wrong password, a malformed value, another scheme", async () => {
    await expectRefused(
      request({ authorization: basic("alicE", "p@ss:word") }),
      credential,
      /^basic credentials mismatch$/,
    );
    await expectRefused(
      request({ authorization: basic("alice", "p@ss:wore") }),
      credential,
      /^basic credentials mismatch$/,
    );
    await expectRefused(request({ authorization: basic("alice", "") }), credential, /mismatch/);
    await expectRefused(request({ authorization: "Basic !!!" }), credential, /malformed/);
    await expectRefused(
      request({ authorization: `Basic ${Buffer.from("alice").toString("base64")}` }),
      credential,
      /malformed/,
    );
    await expectRefused(
      request({ authorization: "Bearer YWxpY2U6cA==" }),
      credential,
      /expected Basic scheme/,
    );
    await expectRefused(request({}), credential, /^missing authorization header$/);
  });
});

describe("jwt (static)", () => {
  const token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl";
  const raw = cred("jwt", { token });
  const prefixed = cred("jwt", { token, prefix: "Bearer" });

  it("compares the Authorization value with the token", async () => {
    await expectAccepted(request({ authorization: token }), raw);
    await expectRefused(request({ authorization: `${token}x` }), raw, /^jwt mismatch$/);
    await expectRefused(request({ authorization: `Bearer ${token}` }), raw, /^jwt mismatch$/);
    await expectRefused(request({}), raw, /^missing authorization header$/);
  });

  it("expects <prefix> <token> when the secret has a prefix", async () => {
    await expectAccepted(request({ authorization: `Bearer ${token}` }), prefixed);
    await expectAccepted(request({ authorization: `bearer ${token}` }), prefixed);
    await expectRefused(request({ authorization: token }), prefixed, /expected Bearer prefix/);
  });
});

describe("jwtVerify request shape", () => {
  const credential = cred("jwtVerify", {
    algorithms: ["HS256"],
    issuer: "https://issuer.test",
    audience: "gateway",
    subject: "*",
    sharedSecret: "s".repeat(32),
  });

  it("needs Authorization: Bearer <JWT>", async () => {
    await expectRefused(request({}), credential, /^missing authorization header$/);
    await expectRefused(request({ authorization: "a.b.c" }), credential, /expected Bearer prefix/);
    await expectRefused(request({ authorization: "Bearer not-a-jwt" }), credential, /^malformed token$/);
    await expectRefused(request({ authorization: `Bearer ${"a".repeat(20_000)}` }), credential, /too long/);
  });
});

describe("refusal reasons", () => {
  it("never contain the presented or the stored secret", async () => {
    const cases: [CallerRequest, CallerCredential, string[]][] = [
      [
        request({ "x-key": "presented-1" }),
        cred("apiKey", { keyName: "x-key", keyValue: "stored-1" }),
        ["presented-1", "stored-1"],
      ],
      [
        request({}, { k: "presented-2" }),
        cred("apiKey", { keyName: "k", keyValue: "stored-2", placement: "query" }),
        ["presented-2", "stored-2"],
      ],
      [
        request({ authorization: "Bearer presented-3" }),
        cred("bearer", { token: "stored-3" }),
        ["presented-3", "stored-3"],
      ],
      [
        request({ authorization: basic("presented-4", "presented-5") }),
        cred("basicAuth", { username: "stored-4", password: "stored-5" }),
        ["presented-4", "presented-5", "stored-4", "stored-5"],
      ],
    ];
    for (const [req, credential, secrets] of cases) {
      const result = await expectRefused(req, credential);
      for (const secret of secrets) expect(JSON.stringify(result)).not.toContain(secret);
    }
  });
});

describe("LastVerifiedTokens", () => {
  it("matches the same token until exp (plus skew), and only that token", () => {
    const store = new LastVerifiedTokens(2);
    store.remember("c1", "token-a", 1000);
    expect(store.matches("c1", "token-a", 999_000)).toBe(true);
    expect(store.matches("c1", "token-a", 1_000_000)).toBe(false);
    expect(store.matches("c1", "token-a", 1_000_000, 5)).toBe(true);
    expect(store.matches("c1", "token-b", 999_000)).toBe(false);
    expect(store.matches("c2", "token-a", 999_000)).toBe(false);
    store.remember("c2", "x", 2000);
    store.remember("c3", "y", 2000);
    expect(store.matches("c1", "token-a", 0)).toBe(false); // evicted (bound 2)
    expect(store.matches("c3", "y", 0)).toBe(true);
  });
});
