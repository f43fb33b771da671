/** Application of target credentials to outgoing requests (spec 2.5), proxy additions and redaction names. */
import { describe, expect, it } from "vitest";
import {
  applyTargetCredential,
  CredentialApplicationError,
  callerCredentialNames,
  credentialHeaderNames,
  credentialQueryParamNames,
  isJsonContentType,
  mergeProxyAdditions,
  type OutgoingRequest,
} from "#lib/vault/apply-credential.ts";
import { type AuthType, parseCredentialSecret, type TargetSecret } from "#lib/vault/secret-schemas.ts";

function request(
  overrides: Partial<Omit<OutgoingRequest, "url">> & { url?: URL | string } = {},
): OutgoingRequest {
  const { url, ...rest } = overrides;
  return {
    method: "GET",
    headers: { accept: "application/json" },
    ...rest,
    url: url instanceof URL ? url : new URL(url ?? "https://api.example.com/v1/items?page=2"),
  };
}

function apply(authType: AuthType, secret: unknown, req = request(), dynamicToken?: string) {
  const parsed = parseCredentialSecret("target", authType, secret) as TargetSecret;
  return applyTargetCredential(req, authType, parsed, dynamicToken === undefined ? {} : { dynamicToken });
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const bodyOf = (req: OutgoingRequest) => JSON.parse(req.body!.toString("utf8"));

describe("apiKey", () => {
  it("header placement: `<keyName>: <value>`, or with the prefix", () => {
    expect(apply("apiKey", { keyName: "X-Api-Key", keyValue: "k1" }).headers).toEqual({
      accept: "application/json",
      "x-api-key": "k1",
    });
    expect(
      apply("apiKey", { keyName: "Authorization", keyValue: "k1", prefix: "ApiKey" }).headers.authorization,
    ).toBe("ApiKey k1");
  });

  it("query placement: `?keyName=value`, replacing an existing one and keeping other pairs as they were", () => {
    const req = request({
      url: "https://api.example.com/v1/items?q=a%20b+c&api_key=caller&x&api_key=again&z=%7E",
    });
    const result = apply("apiKey", { keyName: "api_key", keyValue: "k 1&2", placement: "query" }, req);
    expect(result.url.search).toBe("?q=a%20b+c&x&z=%7E&api_key=k%201%262");
    expect(result.url.searchParams.getAll("api_key")).toEqual(["k 1&2"]);
    expect(result.headers).toEqual({ accept: "application/json" });
  });

  it("query placement also replaces an encoded spelling of the same name", () => {
    const req = request({ url: "https://api.example.com/?api%5Fkey=caller" });
    const result = apply("apiKey", { keyName: "api_key", keyValue: "k", placement: "query" }, req);
    expect(result.url.search).toBe("?api_key=k");
  });
});

describe("bearer, jwt, basicAuth", () => {
  it("bearer: `Authorization: Bearer <token>` by default, or the prefix given, or none", () => {
    expect(apply("bearer", { token: "t1" }).headers.authorization).toBe("Bearer t1");
    expect(apply("bearer", { token: "t1", prefix: "Token" }).headers.authorization).toBe("Token t1");
    expect(apply("bearer", { token: "t1", prefix: "" }).headers.authorization).toBe("t1");
  });

  it("jwt: `Authorization: <token>`, or with its prefix", () => {
    const token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln";
    expect(apply("jwt", { token }).headers.authorization).toBe(token);
    expect(apply("jwt", { token, prefix: "Bearer" }).headers.authorization).toBe(`Bearer ${token}`);
  });

  it("basicAuth: `Authorization: Basic base64(user:pass)` (UTF-8)", () => {
    expect(apply("basicAuth", { username: "Aladdin", password: "open sesame" }).headers.authorization).toBe(
      "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
    );
    const header = apply("basicAuth", { username: "zoë", password: "p:w" }).headers.authorization!;
    expect(Buffer.from(header.slice("Basic ".length), "base64").toString("utf8")).toBe("zoë:p:w");
  });
});

describe("the credential wins", () => {
  it("over an existing header of the same name in any case", () => {
    const req = request({ headers: { authorization: "Bearer caller-token", "x-api-key": "caller" } });
    expect(apply("bearer", { token: "t1" }, req).headers.authorization).toBe("Bearer t1");
    const mixed = request({ headers: { Authorization: "caller", "X-API-KEY": "caller" } });
    const result = apply("apiKey", { keyName: "X-Api-Key", keyValue: "k1" }, mixed);
    expect(result.headers).toEqual({ authorization: "caller", "x-api-key": "k1" });
  });

  it("over its own additionalHeaders and over the proxy's additions merged before it", () => {
    const secret = { token: "t1", additionalHeaders: { Authorization: "nope", "X-Tenant": "acme" } };
    expect(apply("bearer", secret).headers).toMatchObject({ authorization: "Bearer t1", "x-tenant": "acme" });

    const withProxy = mergeProxyAdditions(request(), {
      headers: { Authorization: "proxy", "X-From-Proxy": "1" },
      queryParams: { api_key: "proxy" },
    });
    const result = apply("apiKey", { keyName: "api_key", keyValue: "k1", placement: "query" }, withProxy);
    expect(result.url.searchParams.getAll("api_key")).toEqual(["k1"]);
    expect(result.headers["x-from-proxy"]).toBe("1");
  });
});

describe("configured headers the gateway manages (issue 7: proxies saved before the header rules)", () => {
  it("never sets Host, framing or hop-by-hop headers, nor values with control characters", () => {
    const merged = mergeProxyAdditions(request(), {
      headers: {
        Host: "evil.example",
        "Content-Length": "0",
        "Transfer-Encoding": "chunked",
        Connection: "close",
        "X-Broken": "a\r\nX-Injected: 1",
        "X-Kept": "café",
      },
    });
    expect(merged.headers).toEqual({ accept: "application/json", "x-kept": "café" });
  });
});

describe("additionalHeaders and additionalQueryParams", () => {
  it("are merged for every auth type, replacing what the request had", () => {
    const additions = {
      additionalHeaders: { "X-Tenant": "acme" },
      additionalQueryParams: { page: "9", v: "2" },
    };
    for (const [authType, secret] of [
      ["apiKey", { keyName: "X-Key", keyValue: "k", ...additions }],
      ["bearer", { token: "t", ...additions }],
      ["basicAuth", { username: "u", password: "p", ...additions }],
      ["none", additions],
      ["custom", additions],
    ] as [AuthType, unknown][]) {
      const result = apply(authType, secret);
      expect(result.headers["x-tenant"], authType).toBe("acme");
      expect(result.url.search, authType).toBe("?page=9&v=2");
    }
    expect(
      apply(
        "customToken",
        { tokenUrl: "https://a.example/t", tokenPath: "t", ...additions },
        request(),
        "tok",
      ),
    ).toMatchObject({ headers: { "x-tenant": "acme", authorization: "tok" } });
    expect(
      apply(
        "oauth2",
        {
          flow: "client_credentials",
          tokenUrl: "https://a.example/t",
          clientId: "c",
          clientSecret: "s",
          ...additions,
        },
        request(),
        "tok",
      ).url.search,
    ).toBe("?page=9&v=2");
  });
});

describe("none", () => {
  it("adds nothing and returns an equal request", () => {
    const req = request({
      method: "POST",
      headers: { "content-type": "application/json" },
      body: json({ a: 1 }),
    });
    const result = apply("none", {}, req);
    expect(result).toEqual(req);
    expect(result).not.toBe(req);
  });
});

describe("custom", () => {
  const secret = {
    additionalHeaders: { "X-Api-Key": "k1" },
    additionalQueryParams: { account: "acme" },
    data: { apiKey: "k1", nested: { a: 1 } },
  };

  it("applies its headers and query parameters", () => {
    const result = apply("custom", secret);
    expect(result.headers["x-api-key"]).toBe("k1");
    expect(result.url.search).toBe("?page=2&account=acme");
  });

  it("merges its data into JSON object bodies of POST, PUT and PATCH (data wins)", () => {
    for (const method of ["POST", "put", "PATCH"]) {
      const req = request({
        method,
        headers: { "content-type": "application/json; charset=utf-8", "content-length": "22" },
        body: json({ apiKey: "caller", keep: true }),
      });
      const result = apply("custom", secret, req);
      expect(bodyOf(result), method).toEqual({ apiKey: "k1", keep: true, nested: { a: 1 } });
      expect(result.headers["content-length"]).toBe(String(result.body!.length));
    }
    const vendor = request({
      method: "POST",
      headers: { "content-type": "application/vnd.api+json" },
      body: json({ x: 1 }),
    });
    expect(bodyOf(apply("custom", secret, vendor))).toMatchObject({ x: 1, apiKey: "k1" });
  });

  it("turns an empty body of POST/PUT/PATCH into the data (as JSON)", () => {
    const result = apply("custom", secret, request({ method: "POST", headers: {} }));
    expect(bodyOf(result)).toEqual(secret.data);
    expect(result.headers["content-type"]).toBe("application/json");
    const emptyBuffer = apply(
      "custom",
      secret,
      request({ method: "PUT", headers: {}, body: Buffer.alloc(0) }),
    );
    expect(bodyOf(emptyBuffer)).toEqual(secret.data);
  });

  it("leaves other bodies and methods untouched", () => {
    const cases: OutgoingRequest[] = [
      request({ method: "GET" }),
      request({ method: "DELETE", headers: { "content-type": "application/json" }, body: json({ a: 1 }) }),
      request({ method: "POST", headers: { "content-type": "text/plain" }, body: Buffer.from("hello") }),
      request({
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: Buffer.from("a=1"),
      }),
      request({
        method: "POST",
        headers: { "content-type": "application/json" },
        body: Buffer.from("{not json"),
      }),
      request({ method: "POST", headers: { "content-type": "application/json" }, body: json([1, 2]) }),
      request({ method: "POST", headers: { "content-type": "application/json" }, body: json("text") }),
      request({ method: "POST", headers: {}, body: json({ a: 1 }) }),
      request({ method: "POST", headers: { "content-type": "text/plain" } }),
      request({
        method: "POST",
        headers: { "content-type": "application/json; charset=latin1" },
        body: json({ a: 1 }),
      }),
    ];
    for (const req of cases) {
      const result = apply("custom", secret, req);
      expect(result.body, `${req.method} ${req.headers["content-type"]}`).toEqual(req.body);
      expect(result.headers["content-type"]).toEqual(req.headers["content-type"]);
    }
  });
});

describe("customToken and oauth2", () => {
  const customToken = { tokenUrl: "https://auth.example.com/token", tokenPath: "token" };
  const oauth2 = {
    flow: "client_credentials",
    tokenUrl: "https://auth.example.com/token",
    clientId: "c",
    clientSecret: "s",
  };

  it("customToken applies the dynamic token per keyName, placement and prefix", () => {
    expect(apply("customToken", customToken, request(), "tok").headers.authorization).toBe("tok");
    expect(
      apply("customToken", { ...customToken, prefix: "Bearer" }, request(), "tok").headers.authorization,
    ).toBe("Bearer tok");
    expect(
      apply("customToken", { ...customToken, keyName: "X-Session", prefix: "S" }, request(), "tok").headers[
        "x-session"
      ],
    ).toBe("S tok");
    const query = apply(
      "customToken",
      { ...customToken, placement: "query", keyName: "access_token" },
      request(),
      "t&k",
    );
    expect(query.url.search).toBe("?page=2&access_token=t%26k");
    expect(query.headers.authorization).toBeUndefined();
  });

  it("customToken merges additionalData into JSON bodies", () => {
    const req = request({
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: json({ a: 1 }),
    });
    const result = apply("customToken", { ...customToken, additionalData: { tenant: "acme" } }, req, "tok");
    expect(bodyOf(result)).toEqual({ a: 1, tenant: "acme" });
  });

  it("oauth2 applies `Authorization: Bearer <token>`", () => {
    const req = request({ headers: { authorization: "caller" } });
    expect(apply("oauth2", oauth2, req, "at-1").headers.authorization).toBe("Bearer at-1");
  });

  it("throw without a dynamic token", () => {
    expect(() => apply("customToken", customToken)).toThrow(CredentialApplicationError);
    expect(() => apply("oauth2", oauth2, request(), "")).toThrow(CredentialApplicationError);
  });
});

it("refuses jwtVerify, which is not a target auth type", () => {
  const secret = parseCredentialSecret("proxy", "jwtVerify", {
    algorithms: ["HS256"],
    issuer: "i",
    audience: "a",
    subject: "s",
    sharedSecret: "x".repeat(32),
  });
  expect(() => applyTargetCredential(request(), "jwtVerify", secret as never)).toThrow(
    CredentialApplicationError,
  );
});

it("never changes the request it was given", () => {
  const req = request({
    method: "POST",
    headers: { authorization: "caller", "content-type": "application/json" },
    body: json({ a: 1 }),
  });
  const snapshot = { ...req, url: req.url.href, headers: { ...req.headers }, body: Buffer.from(req.body!) };
  apply(
    "custom",
    { additionalHeaders: { Authorization: "x" }, additionalQueryParams: { q: "1" }, data: { b: 2 } },
    req,
  );
  apply("bearer", { token: "t" }, req);
  mergeProxyAdditions(req, { headers: { "X-A": "1" }, queryParams: { p: "1" }, data: { c: 3 } });
  expect({ ...req, url: req.url.href }).toEqual(snapshot);
});

describe("mergeProxyAdditions", () => {
  it("merges headers, query parameters and data with the JSON body rule", () => {
    const req = request({
      method: "POST",
      url: "https://api.example.com/x?keep=%2F",
      headers: { "content-type": "application/json", "x-a": "caller" },
      body: json({ a: 1 }),
    });
    const result = mergeProxyAdditions(req, {
      headers: { "X-A": "proxy", "X-B": "2" },
      queryParams: { p: "1" },
      data: { b: 2 },
    });
    expect(result.headers).toEqual({ "content-type": "application/json", "x-a": "proxy", "x-b": "2" });
    expect(result.url.search).toBe("?keep=%2F&p=1");
    expect(bodyOf(result)).toEqual({ a: 1, b: 2 });
    const get = mergeProxyAdditions(request(), { data: { b: 2 } });
    expect(get.body).toBeUndefined();
    expect(mergeProxyAdditions(request(), {})).toEqual(request());
  });
});

describe("isJsonContentType", () => {
  it("recognises application/json and +json types in UTF-8", () => {
    for (const type of ["application/json", "Application/JSON; charset=UTF-8", "application/problem+json"]) {
      expect(isJsonContentType(type), type).toBe(true);
    }
    for (const type of [
      undefined,
      "",
      "text/json5",
      "application/jsonx",
      "text/plain",
      "application/json; charset=utf-16",
    ]) {
      expect(isJsonContentType(type), String(type)).toBe(false);
    }
  });
});

describe("credentialHeaderNames and credentialQueryParamNames", () => {
  const names = (authType: AuthType, secret: unknown, credentialType: "proxy" | "target" = "target") => {
    const parsed = parseCredentialSecret(credentialType, authType, secret);
    return {
      headers: credentialHeaderNames(authType, parsed).sort(),
      query: credentialQueryParamNames(authType, parsed).sort(),
    };
  };

  it("name the headers and parameters that carry the secret, lower-case for headers", () => {
    expect(names("apiKey", { keyName: "X-Api-Key", keyValue: "k" })).toEqual({
      headers: ["x-api-key"],
      query: [],
    });
    expect(names("apiKey", { keyName: "api_key", keyValue: "k", placement: "query" })).toEqual({
      headers: [],
      query: ["api_key"],
    });
    for (const [authType, secret] of [
      ["bearer", { token: "t" }],
      ["jwt", { token: "a.b.c" }],
      ["basicAuth", { username: "u", password: "p" }],
      [
        "oauth2",
        { flow: "client_credentials", tokenUrl: "https://a.example/t", clientId: "c", clientSecret: "s" },
      ],
    ] as [AuthType, unknown][]) {
      expect(names(authType, secret).headers, authType).toEqual(["authorization"]);
    }
    expect(
      names(
        "jwtVerify",
        { algorithms: ["HS256"], issuer: "i", audience: "a", subject: "s", sharedSecret: "x".repeat(32) },
        "proxy",
      ).headers,
    ).toEqual(["authorization"]);
    expect(
      names("customToken", { tokenUrl: "https://a.example/t", tokenPath: "t", keyName: "X-Session" }).headers,
    ).toEqual(["x-session"]);
    expect(
      names("customToken", {
        tokenUrl: "https://a.example/t",
        tokenPath: "t",
        keyName: "tok",
        placement: "query",
      }),
    ).toEqual({ headers: [], query: ["tok"] });
  });

  it("include every additional header and query parameter of the secret", () => {
    expect(
      names("custom", {
        additionalHeaders: { "X-Key": "k", "X-Tenant": "t" },
        additionalQueryParams: { sig: "s" },
      }),
    ).toEqual({ headers: ["x-key", "x-tenant"], query: ["sig"] });
    expect(names("none", {})).toEqual({ headers: [], query: [] });
    expect(names("bearer", { token: "t", additionalHeaders: { "X-Extra": "1" } }).headers).toEqual([
      "authorization",
      "x-extra",
    ]);
  });
});

describe("callerCredentialNames: the caller's credential in a request", () => {
  const of = (credentialAuthType: string, secret: unknown) => {
    const names = callerCredentialNames({ item: { credentialAuthType }, secret });
    return { headers: [...names.headers].sort(), query: names.query };
  };

  it("names the credential's header or query parameter, and authorization always", () => {
    expect(of("apiKey", { keyName: "X-Api-Key", keyValue: "k" })).toEqual({
      headers: ["authorization", "x-api-key"],
      query: [],
    });
    expect(of("apiKey", { keyName: "api_key", keyValue: "k", placement: "query" })).toEqual({
      headers: ["authorization"],
      query: ["api_key"],
    });
    for (const authType of ["bearer", "basicAuth", "jwt", "jwtVerify"])
      expect(of(authType, {}), authType).toEqual({ headers: ["authorization"], query: [] });
    expect(callerCredentialNames().headers).toEqual(new Set(["authorization"]));
  });
});
