/** Credential secrets (spec 2.5): auth types, where they may be used, and each secret's schema. */
import { describe, expect, it } from "vitest";
import {
  AUTH_TYPE_USAGE,
  AUTH_TYPES,
  type AuthType,
  type CredentialType,
  parseCredentialSecret,
} from "#lib/vault/secret-schemas.ts";
import { errorOf } from "../support/errors.ts";

/** The fields named by the 400 for this secret. */
function failingFields(
  authType: string,
  secret: unknown,
  credentialType: CredentialType = "target",
): string[] {
  const error = errorOf(() => parseCredentialSecret(credentialType, authType, secret));
  expect(error.status).toBe(400);
  expect(error.message).toBe("Input failed data validation");
  return error.body.fields as string[];
}

const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
const SHARED_SECRET = "s".repeat(32);

describe("auth types", () => {
  it("follows the spec's usage table", () => {
    expect([...AUTH_TYPES].sort()).toEqual(
      ["apiKey", "basicAuth", "bearer", "custom", "customToken", "jwt", "jwtVerify", "none", "oauth2"].sort(),
    );
    expect(AUTH_TYPE_USAGE).toEqual({
      apiKey: ["proxy", "target"],
      bearer: ["proxy", "target"],
      jwt: ["proxy", "target"],
      basicAuth: ["proxy", "target"],
      oauth2: ["target"],
      customToken: ["target"],
      custom: ["target"],
      none: ["target"],
      jwtVerify: ["proxy"],
    });
  });

  it("names authType when it is unknown", () => {
    const error = errorOf(() => parseCredentialSecret("target", "kerberos", {}));
    expect(error.body.fields).toEqual(["authType"]);
    expect((error.body.errors as string[])[0]).toMatch(/^authType: must be one of apiKey, /);
  });

  it.each([
    ["proxy", "oauth2"],
    ["proxy", "customToken"],
    ["proxy", "custom"],
    ["proxy", "none"],
    ["target", "jwtVerify"],
  ] as [CredentialType, AuthType][])("names authType when %s cannot use %s", (credentialType, authType) => {
    const error = errorOf(() => parseCredentialSecret(credentialType, authType, {}));
    expect(error.body.fields).toEqual(["authType"]);
    expect((error.body.errors as string[])[0]).toContain(`cannot be used for a ${credentialType} credential`);
  });

  it("names the secret itself when it is not an object", () => {
    for (const secret of [undefined, null, "token", 42, ["a"]]) {
      expect(failingFields("bearer", secret)).toEqual(["secret"]);
    }
  });

  it("names each field that is not part of the auth type's secret", () => {
    const error = errorOf(() =>
      parseCredentialSecret("target", "bearer", { token: "t", password: "x", foo: 1 }),
    );
    expect(error.body.fields).toEqual(["secret.password", "secret.foo"]);
    expect(error.body.errors).toContain("secret.foo: is not a field of this auth type's secret");
  });

  it("rejects documents nested deeper than the bound before parsing them", () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 5000; i++) deep = { d: deep };
    expect(failingFields("custom", { data: deep })).toEqual(["secret"]);
  });
});

describe("additionalHeaders and additionalQueryParams (every secret)", () => {
  it("are accepted on every auth type", () => {
    const additions = { additionalHeaders: { "X-Tenant": "acme" }, additionalQueryParams: { region: "eu" } };
    expect(parseCredentialSecret("target", "bearer", { token: "t", ...additions })).toMatchObject(additions);
    expect(parseCredentialSecret("target", "none", additions)).toEqual(additions);
    expect(
      parseCredentialSecret("proxy", "jwtVerify", {
        algorithms: ["HS256"],
        issuer: "i",
        audience: "a",
        subject: "s",
        sharedSecret: SHARED_SECRET,
        ...additions,
      }),
    ).toMatchObject(additions);
  });

  it("require header names that are HTTP tokens and not managed by the gateway", () => {
    expect(failingFields("none", { additionalHeaders: { "Bad Name": "x" } })).toEqual([
      "secret.additionalHeaders.Bad Name",
    ]);
    expect(failingFields("none", { additionalHeaders: { "X-Ok:": "x" } })).toEqual([
      "secret.additionalHeaders.X-Ok:",
    ]);
    for (const reserved of ["Host", "content-length", "Transfer-Encoding", "connection"]) {
      expect(failingFields("none", { additionalHeaders: { [reserved]: "x" } })).toEqual([
        `secret.additionalHeaders.${reserved}`,
      ]);
    }
  });

  it("reject header values with line breaks (header injection) and names repeated in another case", () => {
    expect(failingFields("none", { additionalHeaders: { "X-A": "a\r\nX-Injected: 1" } })).toEqual([
      "secret.additionalHeaders.X-A",
    ]);
    expect(failingFields("none", { additionalHeaders: { "X-A": "1", "x-a": "2" } })).toEqual([
      "secret.additionalHeaders.x-a",
    ]);
    expect(failingFields("none", { additionalHeaders: { "X-A": 1 } })).toEqual([
      "secret.additionalHeaders.X-A",
    ]);
  });

  it("hold at most 50 entries", () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-h${i}`, "v"]));
    expect(parseCredentialSecret("target", "none", { additionalHeaders: many(50) })).toBeTruthy();
    expect(failingFields("none", { additionalHeaders: many(51) })).toEqual(["secret.additionalHeaders"]);
    expect(failingFields("none", { additionalQueryParams: many(51) })).toEqual([
      "secret.additionalQueryParams",
    ]);
  });

  it("bound query parameter names and values", () => {
    expect(failingFields("none", { additionalQueryParams: { "": "x" } })).toEqual([
      "secret.additionalQueryParams.",
    ]);
    expect(failingFields("none", { additionalQueryParams: { a: "x".repeat(2049) } })).toEqual([
      "secret.additionalQueryParams.a",
    ]);
    expect(failingFields("none", { additionalQueryParams: "a=1" })).toEqual(["secret.additionalQueryParams"]);
  });
});

describe("apiKey", () => {
  it("defaults placement to header and keeps an optional prefix", () => {
    expect(parseCredentialSecret("target", "apiKey", { keyName: "X-Api-Key", keyValue: "k1" })).toEqual({
      keyName: "X-Api-Key",
      keyValue: "k1",
      placement: "header",
    });
    expect(
      parseCredentialSecret("proxy", "apiKey", {
        keyName: "Authorization",
        keyValue: "k1",
        prefix: "ApiKey",
        placement: "header",
      }),
    ).toMatchObject({ prefix: "ApiKey" });
    expect(
      parseCredentialSecret("target", "apiKey", { keyName: "api_key", keyValue: "k1", placement: "query" }),
    ).toMatchObject({ placement: "query", keyName: "api_key" });
  });

  it("names each invalid field", () => {
    expect(failingFields("apiKey", { keyName: "X-Api-Key" })).toEqual(["secret.keyValue"]);
    expect(failingFields("apiKey", { keyValue: "k" })).toEqual(["secret.keyName"]);
    expect(failingFields("apiKey", { keyName: "X-Api-Key", keyValue: "" })).toEqual(["secret.keyValue"]);
    expect(failingFields("apiKey", { keyName: "X-Api-Key", keyValue: " k" })).toEqual(["secret.keyValue"]);
    expect(failingFields("apiKey", { keyName: "X-Api-Key", keyValue: "k\n" })).toEqual(["secret.keyValue"]);
    expect(failingFields("apiKey", { keyName: "X-Api-Key", keyValue: "k".repeat(4097) })).toEqual([
      "secret.keyValue",
    ]);
    expect(failingFields("apiKey", { keyName: "X-Api-Key", keyValue: "k", placement: "body" })).toEqual([
      "secret.placement",
    ]);
    expect(failingFields("apiKey", { keyName: "X-Api-Key", keyValue: "k", prefix: "a\nb" })).toEqual([
      "secret.prefix",
    ]);
  });

  it("requires a header name for header placement, and no prefix for query placement", () => {
    expect(failingFields("apiKey", { keyName: "X Api Key", keyValue: "k" })).toEqual(["secret.keyName"]);
    expect(failingFields("apiKey", { keyName: "Host", keyValue: "k" })).toEqual(["secret.keyName"]);
    // "api key" is a fine query parameter name.
    expect(
      parseCredentialSecret("target", "apiKey", { keyName: "api key", keyValue: "k", placement: "query" }),
    ).toBeTruthy();
    expect(
      failingFields("apiKey", { keyName: "api_key", keyValue: "k", placement: "query", prefix: "Bearer" }),
    ).toEqual(["secret.prefix"]);
  });
});

describe("bearer", () => {
  it("defaults the prefix to Bearer; an empty prefix means none", () => {
    expect(parseCredentialSecret("target", "bearer", { token: "abc" })).toEqual({
      token: "abc",
      prefix: "Bearer",
    });
    expect(parseCredentialSecret("target", "bearer", { token: "abc", prefix: "Token " })).toEqual({
      token: "abc",
      prefix: "Token",
    });
    expect(parseCredentialSecret("proxy", "bearer", { token: "abc", prefix: "" })).toEqual({
      token: "abc",
      prefix: "",
    });
  });

  it("names each invalid field", () => {
    expect(failingFields("bearer", {})).toEqual(["secret.token"]);
    expect(failingFields("bearer", { token: "" })).toEqual(["secret.token"]);
    expect(failingFields("bearer", { token: "a b\r\n" })).toEqual(["secret.token"]);
    expect(failingFields("bearer", { token: "t".repeat(8193) })).toEqual(["secret.token"]);
    expect(failingFields("bearer", { token: "t", prefix: "p".repeat(65) })).toEqual(["secret.prefix"]);
    expect(failingFields("bearer", { token: "t", prefix: 1 })).toEqual(["secret.prefix"]);
  });
});

describe("basicAuth", () => {
  it("accepts a user name and password (spaces and colons allowed in the password)", () => {
    expect(parseCredentialSecret("target", "basicAuth", { username: "ann", password: " p:w d " })).toEqual({
      username: "ann",
      password: " p:w d ",
    });
  });

  it("names each invalid field", () => {
    expect(failingFields("basicAuth", { username: "ann" })).toEqual(["secret.password"]);
    expect(failingFields("basicAuth", { password: "pw" })).toEqual(["secret.username"]);
    expect(failingFields("basicAuth", { username: "a:b", password: "pw" })).toEqual(["secret.username"]);
    expect(failingFields("basicAuth", { username: "ann", password: "" })).toEqual(["secret.password"]);
    expect(failingFields("basicAuth", { username: "ann", password: "p\u0000" })).toEqual(["secret.password"]);
    expect(failingFields("basicAuth", { username: "u".repeat(257), password: "p" })).toEqual([
      "secret.username",
    ]);
  });
});

describe("jwt", () => {
  it("accepts a compact JWT, without a prefix by default", () => {
    expect(parseCredentialSecret("proxy", "jwt", { token: JWT })).toEqual({ token: JWT });
    expect(parseCredentialSecret("target", "jwt", { token: JWT, prefix: "Bearer" })).toEqual({
      token: JWT,
      prefix: "Bearer",
    });
    const jwe = "eyJhbGciOiJSU0EtT0FFUCJ9.a.b.c.d";
    expect(parseCredentialSecret("target", "jwt", { token: jwe })).toEqual({ token: jwe });
  });

  it("names each invalid field", () => {
    expect(failingFields("jwt", {})).toEqual(["secret.token"]);
    expect(failingFields("jwt", { token: "not-a-jwt" })).toEqual(["secret.token"]);
    expect(failingFields("jwt", { token: `Bearer ${JWT}` })).toEqual(["secret.token"]);
    expect(failingFields("jwt", { token: JWT, prefix: ["Bearer"] })).toEqual(["secret.prefix"]);
  });
});

describe("jwtVerify", () => {
  const jwks = {
    algorithms: ["RS256", "ES256"],
    issuer: "https://issuer.example.com/",
    audience: "api://gateway",
    subject: "client-*",
    jwksUri: "https://issuer.example.com/.well-known/jwks.json",
  };
  const hmac = {
    algorithms: ["HS256"],
    issuer: "iss",
    audience: "aud",
    subject: "svc",
    sharedSecret: SHARED_SECRET,
  };

  it("accepts a JWKS source with defaults applied", () => {
    expect(parseCredentialSecret("proxy", "jwtVerify", jwks)).toEqual({
      ...jwks,
      clockSkewSeconds: 30,
      failPolicy: "fail-closed",
    });
  });

  it("accepts a shared secret for HS* and every optional field", () => {
    const full = {
      ...hmac,
      algorithms: ["HS256", "HS384"],
      sharedSecret: "x".repeat(48),
      clockSkewSeconds: 0,
      requiredClaims: { scope: "read", tier: 2, admin: false, roles: ["a", "b"] },
    };
    expect(parseCredentialSecret("proxy", "jwtVerify", full)).toEqual({ ...full, failPolicy: "fail-closed" });
    expect(
      parseCredentialSecret("proxy", "jwtVerify", {
        ...jwks,
        jwksRefreshHint: 600,
        failPolicy: "fail-open",
        clockSkewSeconds: 300,
      }),
    ).toMatchObject({ jwksRefreshHint: 600, failPolicy: "fail-open", clockSkewSeconds: 300 });
  });

  it("allows http JWKS URLs only for loopback hosts", () => {
    for (const uri of ["http://localhost:8080/jwks", "http://127.0.0.1/jwks", "http://[::1]:9000/jwks"]) {
      expect(parseCredentialSecret("proxy", "jwtVerify", { ...jwks, jwksUri: uri })).toMatchObject({
        jwksUri: uri,
      });
    }
    for (const uri of [
      "http://issuer.example.com/jwks",
      "ftp://issuer.example.com/jwks",
      "/jwks",
      "not a url",
      "https://user:pw@issuer.example.com/jwks",
    ]) {
      expect(failingFields("jwtVerify", { ...jwks, jwksUri: uri }, "proxy"), uri).toEqual(["secret.jwksUri"]);
    }
  });

  it("names each invalid required field", () => {
    for (const field of ["algorithms", "issuer", "audience", "subject"]) {
      const secret: Record<string, unknown> = { ...jwks };
      delete secret[field];
      expect(failingFields("jwtVerify", secret, "proxy")).toEqual([`secret.${field}`]);
    }
    expect(failingFields("jwtVerify", { ...jwks, algorithms: [] }, "proxy")).toEqual(["secret.algorithms"]);
    expect(failingFields("jwtVerify", { ...jwks, algorithms: ["none"] }, "proxy")).toEqual([
      "secret.algorithms.0",
    ]);
    expect(failingFields("jwtVerify", { ...jwks, algorithms: ["RS256", "RS256"] }, "proxy")).toEqual([
      "secret.algorithms",
    ]);
    expect(failingFields("jwtVerify", { ...jwks, issuer: " " }, "proxy")).toEqual(["secret.issuer"]);
    expect(failingFields("jwtVerify", { ...jwks, audience: ["a"] }, "proxy")).toEqual(["secret.audience"]);
  });

  it("allows the subject wildcard only at the end", () => {
    expect(parseCredentialSecret("proxy", "jwtVerify", { ...jwks, subject: "*" })).toMatchObject({
      subject: "*",
    });
    expect(failingFields("jwtVerify", { ...jwks, subject: "a*b" }, "proxy")).toEqual(["secret.subject"]);
    expect(failingFields("jwtVerify", { ...jwks, subject: "**" }, "proxy")).toEqual(["secret.subject"]);
  });

  it("requires exactly one signing source", () => {
    const none = { ...jwks } as Record<string, unknown>;
    delete none.jwksUri;
    expect(failingFields("jwtVerify", none, "proxy")).toEqual(["secret.jwksUri"]);
    expect(failingFields("jwtVerify", { ...hmac, jwksUri: jwks.jwksUri }, "proxy")).toEqual([
      "secret.sharedSecret",
    ]);
  });

  it("requires the source to fit the algorithms, without mixing", () => {
    expect(failingFields("jwtVerify", { ...jwks, algorithms: ["HS256"] }, "proxy")).toEqual([
      "secret.sharedSecret",
    ]);
    expect(failingFields("jwtVerify", { ...hmac, algorithms: ["RS256"] }, "proxy")).toEqual([
      "secret.jwksUri",
    ]);
    expect(failingFields("jwtVerify", { ...hmac, algorithms: ["HS256", "RS256"] }, "proxy")).toEqual([
      "secret.algorithms",
      "secret.jwksUri",
    ]);
  });

  it("requires shared secrets of at least 32 characters, and as long as the hash for HS384/HS512", () => {
    expect(failingFields("jwtVerify", { ...hmac, sharedSecret: "s".repeat(31) }, "proxy")).toEqual([
      "secret.sharedSecret",
    ]);
    expect(
      failingFields("jwtVerify", { ...hmac, algorithms: ["HS512"], sharedSecret: "s".repeat(63) }, "proxy"),
    ).toEqual(["secret.sharedSecret"]);
    expect(
      parseCredentialSecret("proxy", "jwtVerify", {
        ...hmac,
        algorithms: ["HS512"],
        sharedSecret: "s".repeat(64),
      }),
    ).toBeTruthy();
  });

  it("bounds clockSkewSeconds, jwksRefreshHint and failPolicy", () => {
    for (const clockSkewSeconds of [-1, 301, 1.5, "30"]) {
      expect(failingFields("jwtVerify", { ...jwks, clockSkewSeconds }, "proxy")).toEqual([
        "secret.clockSkewSeconds",
      ]);
    }
    for (const jwksRefreshHint of [59, 86_401, "600"]) {
      expect(failingFields("jwtVerify", { ...jwks, jwksRefreshHint }, "proxy")).toEqual([
        "secret.jwksRefreshHint",
      ]);
    }
    expect(failingFields("jwtVerify", { ...jwks, failPolicy: "open" }, "proxy")).toEqual([
      "secret.failPolicy",
    ]);
    // Key-endpoint settings have no meaning with a shared secret.
    expect(failingFields("jwtVerify", { ...hmac, jwksRefreshHint: 600 }, "proxy")).toEqual([
      "secret.jwksRefreshHint",
    ]);
    expect(failingFields("jwtVerify", { ...hmac, failPolicy: "fail-open" }, "proxy")).toEqual([
      "secret.failPolicy",
    ]);
  });

  it("validates requiredClaims values and keeps registered claims to their own fields", () => {
    expect(failingFields("jwtVerify", { ...jwks, requiredClaims: { scope: { a: 1 } } }, "proxy")).toEqual([
      "secret.requiredClaims.scope",
    ]);
    expect(failingFields("jwtVerify", { ...jwks, requiredClaims: { roles: [] } }, "proxy")).toEqual([
      "secret.requiredClaims.roles",
    ]);
    const error = errorOf(() =>
      parseCredentialSecret("proxy", "jwtVerify", { ...jwks, requiredClaims: { roles: [1] } }),
    );
    expect(error.body.fields).toEqual(["secret.requiredClaims.roles"]);
    expect((error.body.errors as string[])[0]).toMatch(
      /^secret\.requiredClaims\.roles: must be a string, a number/,
    );
    expect(failingFields("jwtVerify", { ...jwks, requiredClaims: { exp: 1 } }, "proxy")).toEqual([
      "secret.requiredClaims.exp",
    ]);
    expect(failingFields("jwtVerify", { ...jwks, requiredClaims: ["scope"] }, "proxy")).toEqual([
      "secret.requiredClaims",
    ]);
  });
});

describe("customToken", () => {
  const minimal = { tokenUrl: "https://auth.example.com/token", tokenPath: "data.token" };

  it("applies the defaults", () => {
    expect(parseCredentialSecret("target", "customToken", minimal)).toEqual({
      ...minimal,
      method: "POST",
      defaultTtlSeconds: 300,
      keyName: "Authorization",
      placement: "header",
    });
  });

  it("accepts every designed key", () => {
    const full = {
      tokenUrl: "https://auth.example.com/token?tenant=1",
      method: "POST",
      requestHeaders: { "X-Client": "gw" },
      requestQueryParams: { grant: "token" },
      requestBody: { user: "svc", nested: { scopes: ["a"] } },
      tokenPath: "data.items.0.token",
      expiryMethod: "expires_at_iso",
      expiryPath: "data.items.0.expires",
      defaultTtlSeconds: 60,
      keyName: "X-Session",
      placement: "header",
      prefix: "Session",
      additionalHeaders: { "X-Trace": "1" },
      additionalQueryParams: { v: "2" },
      additionalData: { tenant: "acme" },
    };
    expect(parseCredentialSecret("target", "customToken", full)).toEqual(full);
    expect(
      parseCredentialSecret("target", "customToken", {
        ...minimal,
        method: "GET",
        placement: "query",
        keyName: "t",
      }),
    ).toMatchObject({ method: "GET", placement: "query", keyName: "t" });
  });

  it("names each invalid field", () => {
    expect(failingFields("customToken", { tokenPath: "t" })).toEqual(["secret.tokenUrl"]);
    expect(failingFields("customToken", { tokenUrl: minimal.tokenUrl })).toEqual(["secret.tokenPath"]);
    expect(failingFields("customToken", { ...minimal, tokenUrl: "http://auth.example.com/token" })).toEqual([
      "secret.tokenUrl",
    ]);
    expect(failingFields("customToken", { ...minimal, method: "PUT" })).toEqual(["secret.method"]);
    for (const tokenPath of ["", "data..token", ".token", "token."]) {
      expect(failingFields("customToken", { ...minimal, tokenPath }), tokenPath).toEqual([
        "secret.tokenPath",
      ]);
    }
    expect(failingFields("customToken", { ...minimal, requestHeaders: { "a b": "1" } })).toEqual([
      "secret.requestHeaders.a b",
    ]);
    expect(failingFields("customToken", { ...minimal, requestQueryParams: { a: 1 } })).toEqual([
      "secret.requestQueryParams.a",
    ]);
    expect(failingFields("customToken", { ...minimal, requestBody: ["a"] })).toEqual(["secret.requestBody"]);
    expect(failingFields("customToken", { ...minimal, expiryMethod: "expires", expiryPath: "e" })).toEqual([
      "secret.expiryMethod",
    ]);
    for (const defaultTtlSeconds of [0, 86_401, 1.5]) {
      expect(failingFields("customToken", { ...minimal, defaultTtlSeconds })).toEqual([
        "secret.defaultTtlSeconds",
      ]);
    }
    expect(failingFields("customToken", { ...minimal, placement: "cookie" })).toEqual(["secret.placement"]);
    expect(failingFields("customToken", { ...minimal, keyName: "Bad Header" })).toEqual(["secret.keyName"]);
    expect(failingFields("customToken", { ...minimal, additionalData: "x" })).toEqual([
      "secret.additionalData",
    ]);
    expect(failingFields("customToken", { ...minimal, additionalData: { big: "x".repeat(20_000) } })).toEqual(
      ["secret.additionalData"],
    );
  });

  it("checks the keys that depend on each other", () => {
    expect(failingFields("customToken", { ...minimal, method: "GET", requestBody: { a: 1 } })).toEqual([
      "secret.requestBody",
    ]);
    expect(failingFields("customToken", { ...minimal, expiryMethod: "expires_in" })).toEqual([
      "secret.expiryPath",
    ]);
    expect(failingFields("customToken", { ...minimal, expiryPath: "expires_in" })).toEqual([
      "secret.expiryMethod",
    ]);
    expect(failingFields("customToken", { ...minimal, placement: "query" })).toEqual(["secret.keyName"]);
    expect(
      failingFields("customToken", { ...minimal, placement: "query", keyName: "t", prefix: "Bearer" }),
    ).toEqual(["secret.prefix"]);
  });
});

describe("oauth2", () => {
  const clientCredentials = {
    flow: "client_credentials",
    tokenUrl: "https://auth.example.com/oauth/token",
    clientId: "cid",
    clientSecret: "csecret",
  };
  const authorizationCode = {
    ...clientCredentials,
    flow: "authorization_code",
    authorizationUrl: "https://auth.example.com/authorize",
  };

  it("accepts each flow with defaults applied", () => {
    expect(parseCredentialSecret("target", "oauth2", clientCredentials)).toEqual({
      ...clientCredentials,
      tokenAuthMethod: "client_secret_basic",
    });
    expect(parseCredentialSecret("target", "oauth2", authorizationCode)).toMatchObject(authorizationCode);
    const pkce = { ...authorizationCode, flow: "pkce" } as Record<string, unknown>;
    delete pkce.clientSecret;
    expect(parseCredentialSecret("target", "oauth2", pkce)).toMatchObject({ flow: "pkce", clientId: "cid" });
    expect(
      parseCredentialSecret("target", "oauth2", {
        ...clientCredentials,
        scope: "read write",
        audience: "https://api.example.com",
        tokenAuthMethod: "client_secret_post",
        extraTokenParams: { resource: "api" },
      }),
    ).toMatchObject({
      scope: "read write",
      tokenAuthMethod: "client_secret_post",
      extraTokenParams: { resource: "api" },
    });
  });

  it("names each invalid field", () => {
    expect(failingFields("oauth2", { ...clientCredentials, flow: "password" })).toEqual(["secret.flow"]);
    expect(failingFields("oauth2", { ...clientCredentials, tokenUrl: "http://auth.example.com/t" })).toEqual([
      "secret.tokenUrl",
    ]);
    expect(failingFields("oauth2", { ...clientCredentials, clientId: "" })).toEqual(["secret.clientId"]);
    expect(failingFields("oauth2", { ...clientCredentials, scope: "" })).toEqual(["secret.scope"]);
    expect(failingFields("oauth2", { ...clientCredentials, audience: 1 })).toEqual(["secret.audience"]);
    expect(failingFields("oauth2", { ...clientCredentials, tokenAuthMethod: "private_key_jwt" })).toEqual([
      "secret.tokenAuthMethod",
    ]);
    expect(
      failingFields("oauth2", { ...clientCredentials, extraTokenParams: { grant_type: "password" } }),
    ).toEqual(["secret.extraTokenParams.grant_type"]);
  });

  it("requires a client secret except for PKCE, and an authorization URL exactly for the interactive flows", () => {
    const noSecret = { ...clientCredentials } as Record<string, unknown>;
    delete noSecret.clientSecret;
    expect(failingFields("oauth2", noSecret)).toEqual(["secret.clientSecret"]);
    expect(
      failingFields("oauth2", {
        ...noSecret,
        flow: "authorization_code",
        authorizationUrl: "https://a.example/x",
      }),
    ).toEqual(["secret.clientSecret"]);
    const noAuthorizationUrl = { ...authorizationCode } as Record<string, unknown>;
    delete noAuthorizationUrl.authorizationUrl;
    expect(failingFields("oauth2", noAuthorizationUrl)).toEqual(["secret.authorizationUrl"]);
    expect(failingFields("oauth2", { ...noAuthorizationUrl, flow: "pkce" })).toEqual([
      "secret.authorizationUrl",
    ]);
    expect(
      failingFields("oauth2", { ...clientCredentials, authorizationUrl: "https://a.example/x" }),
    ).toEqual(["secret.authorizationUrl"]);
  });
});

describe("custom", () => {
  it("accepts headers, query parameters and body data", () => {
    const secret = {
      additionalHeaders: { "X-Api-Key": "k" },
      additionalQueryParams: { key: "k" },
      data: { account: "acme", options: { a: [1, 2] } },
    };
    expect(parseCredentialSecret("target", "custom", secret)).toEqual(secret);
    expect(parseCredentialSecret("target", "custom", { data: { a: 1 } })).toEqual({ data: { a: 1 } });
  });

  it("needs at least one non-empty part", () => {
    expect(failingFields("custom", {})).toEqual(["secret"]);
    expect(failingFields("custom", { additionalHeaders: {}, additionalQueryParams: {}, data: {} })).toEqual([
      "secret",
    ]);
  });

  it("names each invalid field", () => {
    expect(failingFields("custom", { data: [1] })).toEqual(["secret.data"]);
    expect(failingFields("custom", { data: "x" })).toEqual(["secret.data"]);
    expect(failingFields("custom", { additionalHeaders: { "X-A": "1" }, headers: {} })).toEqual([
      "secret.headers",
    ]);
  });
});

describe("none", () => {
  it("is an empty object or only the additions", () => {
    expect(parseCredentialSecret("target", "none", {})).toEqual({});
    expect(parseCredentialSecret("target", "none", { additionalQueryParams: { a: "1" } })).toEqual({
      additionalQueryParams: { a: "1" },
    });
  });

  it("names any other field", () => {
    expect(failingFields("none", { token: "t" })).toEqual(["secret.token"]);
  });
});
