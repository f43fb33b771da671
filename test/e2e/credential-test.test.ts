/**
 * The credential test and the token test (spec 2.5 "Application of credentials", 4.5) over real
 * HTTP against the local stack, with a real echo server on 127.0.0.1 that records every request it
 * receives. Every response of the Core API is searched for every secret given to the vault.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type ApiClient,
  createClientFor,
  joinClient,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const BIG_BODY_BYTES = 200 * 1024;
const TEST_BODY_LIMIT = 64 * 1024;
const BINARY = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let echo: Server;
let echoBase: string;
let closedPort: number;
const received: Received[] = [];
/** Every secret value given to the vault (and the token the token server hands out). */
const secretsSeen = new Set<string>();
/** The text of every Core API response of this file. */
const responseTexts: string[] = [];
/** The token the token server answers with; the token test must never show it. */
const issuedToken = `tok-${randomUUID()}-SECRET`;
secretsSeen.add(issuedToken);

/** An API client that keeps the text of every response, to be searched for secrets. */
function tracked(api: ApiClient): ApiClient {
  const request: ApiClient["request"] = async (method, path, body) => {
    const response = await api.request(method, path, body);
    responseTexts.push(typeof response.body === "string" ? response.body : JSON.stringify(response.body));
    return response as never;
  };
  return {
    request,
    get: (path) => request("GET", path),
    post: (path, body) => request("POST", path, body),
    put: (path, body) => request("PUT", path, body),
    delete: (path, body) => request("DELETE", path, body),
  };
}

async function newUser(): Promise<TestUser> {
  const user = await stack.newUser();
  return { ...user, api: tracked(user.api) };
}

function startEcho(): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = req.url ?? "/";
      received.push({
        method: req.method ?? "",
        url,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      const path = url.split("?")[0]!;
      if (path.endsWith("/silent")) return; // never answers
      if (path.endsWith("/big")) {
        res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
        res.end("x".repeat(BIG_BODY_BYTES));
        return;
      }
      if (path.endsWith("/big-utf8")) {
        // 3-byte characters: the 64 KiB cut falls inside one.
        res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
        res.end("€".repeat(BIG_BODY_BYTES / 3));
        return;
      }
      if (path.endsWith("/binary")) {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        res.end(BINARY);
        return;
      }
      if (path === "/token") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ data: { token: issuedToken }, expires_in: 120 }));
        return;
      }
      if (path === "/token-fail") {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "boom" }));
        return;
      }
      // Deliberately no echo of the request: the answer must not carry what the gateway sent.
      res.writeHead(201, { "content-type": "application/json", "x-echo": "yes" });
      res.end(JSON.stringify({ ok: true, method: req.method, path }));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

async function freePortWithNothingListening(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  echo = await startEcho();
  echoBase = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
  closedPort = await freePortWithNothingListening();
  stack = await startTestStack();
});
// A fresh owner (token) and client per test: each test stays within the basic plan's 100 calls a minute.
beforeEach(async () => {
  received.length = 0;
  owner = await newUser();
  clientId = await createClientFor(owner, "Tester Co");
});
afterAll(async () => {
  await stack?.stop();
  echo?.closeAllConnections();
  await new Promise<void>((resolve) => (echo ? echo.close(() => resolve()) : resolve()));
});

const secretValue = (label: string) => {
  const value = `${label}-${randomUUID()}-SECRET`;
  secretsSeen.add(value);
  return value;
};

const base = (id = clientId) => `/api/clients/${id}`;

async function credential(
  authType: string,
  secret: Record<string, unknown>,
  user = owner,
  id = clientId,
): Promise<string> {
  const response = await user.api.post(`${base(id)}/credentials`, {
    credentialName: `${authType} credential`,
    credentialType: "target",
    authType,
    region: US,
    secret,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.credentials[0].credentialId as string;
}

async function target(overrides: Record<string, unknown> = {}): Promise<string> {
  const response = await owner.api.post(`${base()}/targets`, {
    targetName: "Echo",
    targetRegion: US,
    targetBaseURL: `${echoBase}/base`,
    targetTestPath: "/health?from=test",
    ...overrides,
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.targets[0].targetId as string;
}

const runTest = (credentialId: string, body: Record<string, unknown>, user = owner, id = clientId) =>
  user.api.post(`${base(id)}/credentials/${credentialId}/test`, body);

const runTokenTest = (credentialId: string, user = owner) =>
  user.api.post(`${base()}/credentials/${credentialId}/token-test`, {});

/** The single test result of a successful answer. */
function resultOf(response: { status: number; body: any }) {
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  expect(response.body.message).toEqual(expect.any(String));
  expect(response.body.tests).toHaveLength(1);
  return response.body.tests[0] as Record<string, any>;
}

/** The one request the echo server received. */
function onlyReceived(): Received {
  expect(received).toHaveLength(1);
  return received[0]!;
}

const queryOf = (url: string) => new URL(url, "http://x").searchParams;

/** No header but `except` carries any of the values. */
function expectNoOtherHeaderCarries(request: Received, values: string[], except: string[]) {
  for (const [name, value] of Object.entries(request.headers)) {
    if (except.includes(name)) continue;
    for (const secret of values) expect(String(value), name).not.toContain(secret);
  }
}

describe("credential application (what the target receives)", () => {
  it("apiKey in a header with a prefix: extra headers of the same name never override it", async () => {
    const key = secretValue("apikey");
    const id = await credential("apiKey", { keyName: "X-Api-Key", keyValue: key, prefix: "Token" });
    const test = resultOf(
      await runTest(id, {
        url: `${echoBase}/k`,
        headers: { "X-API-KEY": "evil", "X-Trace": "t-1" },
      }),
    );
    const request = onlyReceived();
    expect(request.method).toBe("GET");
    expect(request.url).toBe("/k");
    expect(request.headers["x-api-key"]).toBe(`Token ${key}`);
    expect(request.headers["x-trace"]).toBe("t-1");
    expect(request.headers.authorization).toBeUndefined();
    expectNoOtherHeaderCarries(request, [key], ["x-api-key"]);
    expect(test.request).toEqual({ method: "GET", url: `${echoBase}/k` });
  });

  it("apiKey in the query: the key arrives as a parameter, an extra one cannot replace it, the URL shown is redacted", async () => {
    const key = secretValue("qkey");
    const id = await credential("apiKey", { keyName: "api_key", keyValue: key, placement: "query" });
    const test = resultOf(
      await runTest(id, { url: `${echoBase}/q?keep=1`, query: { api_key: "evil", page: "2" } }),
    );
    const request = onlyReceived();
    const query = queryOf(request.url);
    expect(query.getAll("api_key")).toEqual([key]);
    expect(query.get("keep")).toBe("1");
    expect(query.get("page")).toBe("2");
    expectNoOtherHeaderCarries(request, [key], []);

    expect(test.request.url).not.toContain(key);
    expect(test.request.url).toContain("api_key=[redacted]");
    const shown = new URL(test.request.url);
    expect(`${shown.origin}${shown.pathname}`).toBe(`${echoBase}/q`);
    expect(shown.searchParams.get("api_key")).toBe("[redacted]");
    expect(shown.searchParams.get("keep")).toBe("1");
    expect(shown.searchParams.get("page")).toBe("2");
  });

  it("bearer gets the default `Bearer ` prefix and an extra Authorization header cannot override it", async () => {
    const token = secretValue("bearer");
    const id = await credential("bearer", { token });
    resultOf(
      await runTest(id, { url: `${echoBase}/b`, headers: { Authorization: "evil", "X-Other": "kept" } }),
    );
    const request = onlyReceived();
    expect(request.headers.authorization).toBe(`Bearer ${token}`);
    expect(request.headers["x-other"]).toBe("kept");
    expectNoOtherHeaderCarries(request, [token], ["authorization"]);
  });

  it("jwt is sent as the Authorization header as given", async () => {
    const signature = randomBytes(32).toString("base64url");
    const jwt = `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.${signature}`;
    secretsSeen.add(jwt);
    secretsSeen.add(signature);
    const id = await credential("jwt", { token: jwt });
    resultOf(await runTest(id, { url: `${echoBase}/j`, headers: { authorization: "evil" } }));
    expect(onlyReceived().headers.authorization).toBe(jwt);
  });

  it("basicAuth sends `Basic base64(user:pass)`", async () => {
    const username = secretValue("user");
    const password = secretValue("pass");
    const encoded = Buffer.from(`${username}:${password}`).toString("base64");
    secretsSeen.add(encoded);
    const id = await credential("basicAuth", { username, password });
    resultOf(
      await runTest(id, { url: `${echoBase}/basic`, headers: { Authorization: "Basic ZXZpbDpldmls" } }),
    );
    const request = onlyReceived();
    expect(request.headers.authorization).toBe(`Basic ${encoded}`);
    expectNoOtherHeaderCarries(request, [username, password, encoded], ["authorization"]);
  });

  it("custom applies its headers and query parameters and merges its data into a POST JSON body", async () => {
    const headerSecret = secretValue("custom-header");
    const querySecret = secretValue("custom-query");
    const dataSecret = secretValue("custom-data");
    const id = await credential("custom", {
      additionalHeaders: { "X-Custom-Auth": headerSecret },
      additionalQueryParams: { sig: querySecret },
      data: { apiSecret: dataSecret, fixed: "from-credential" },
    });
    const test = resultOf(
      await runTest(id, {
        method: "POST",
        url: `${echoBase}/custom`,
        headers: { "x-custom-auth": "evil", "X-Extra": "e" },
        query: { sig: "evil", other: "o" },
        body: { hello: "world", fixed: "from-caller" },
      }),
    );
    const request = onlyReceived();
    expect(request.method).toBe("POST");
    expect(request.headers["x-custom-auth"]).toBe(headerSecret);
    expect(request.headers["x-extra"]).toBe("e");
    expect(request.headers["content-type"]).toMatch(/^application\/json/);
    const query = queryOf(request.url);
    expect(query.getAll("sig")).toEqual([querySecret]);
    expect(query.get("other")).toBe("o");
    expect(JSON.parse(request.body)).toEqual({
      hello: "world",
      fixed: "from-credential",
      apiSecret: dataSecret,
    });
    expect(test.request.method).toBe("POST");
    expect(test.request.url).not.toContain(querySecret);
    expect(new URL(test.request.url).searchParams.get("sig")).toBe("[redacted]");
    expect(new URL(test.request.url).searchParams.get("other")).toBe("o");
  });

  it("custom data alone becomes the JSON body of a POST without a body", async () => {
    const dataSecret = secretValue("custom-only-data");
    const id = await credential("custom", { data: { apiSecret: dataSecret } });
    resultOf(await runTest(id, { method: "POST", url: `${echoBase}/custom-data` }));
    const request = onlyReceived();
    expect(request.headers["content-type"]).toMatch(/^application\/json/);
    expect(JSON.parse(request.body)).toEqual({ apiSecret: dataSecret });
  });

  it("none adds nothing: the extra headers, query and a text body arrive as given", async () => {
    const id = await credential("none", {});
    resultOf(
      await runTest(id, {
        method: "POST",
        url: `${echoBase}/none`,
        headers: { "X-Trace": "abc", Authorization: "caller-own" },
        query: { q: "1" },
        body: "plain text",
      }),
    );
    const request = onlyReceived();
    expect(request.url).toBe("/none?q=1");
    expect(request.headers["x-trace"]).toBe("abc");
    expect(request.headers.authorization).toBe("caller-own");
    expect(request.headers["content-type"]).toBe("text/plain");
    expect(request.body).toBe("plain text");
  });
});

describe("target paths", () => {
  it("calls the target's base URL + test path by default, and `path` instead when given", async () => {
    const token = secretValue("target-bearer");
    const [id, targetId] = await Promise.all([credential("bearer", { token }), target()]);

    resultOf(await runTest(id, { targetId }));
    expect(onlyReceived().url).toBe("/base/health?from=test");
    expect(received[0]!.headers.authorization).toBe(`Bearer ${token}`);

    received.length = 0;
    resultOf(await runTest(id, { targetId, path: "/other/thing?x=1", query: { y: "2" } }));
    const request = onlyReceived();
    const url = new URL(request.url, "http://x");
    expect(url.pathname).toBe("/base/other/thing");
    expect(url.searchParams.get("x")).toBe("1");
    expect(url.searchParams.get("y")).toBe("2");

    // Query strings of the test path and the extra query arrive exactly as written.
    const encoded = await target({ targetTestPath: "/enc?from=a%20b&list=[1]&next=a?b" });
    received.length = 0;
    resultOf(await runTest(id, { targetId: encoded, query: { y: "2 3" } }));
    expect(onlyReceived().url).toBe("/base/enc?from=a%20b&list=[1]&next=a?b&y=2%203");

    const missing = await runTest(id, { targetId: randomUUID() });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ message: "Target not found" });
  });
});

describe("the answer", () => {
  it("shows the status, the headers, a JSON body and the timing", async () => {
    const id = await credential("bearer", { token: secretValue("answer") });
    const test = resultOf(await runTest(id, { url: `${echoBase}/answer` }));
    expect(test).toEqual({
      request: { method: "GET", url: `${echoBase}/answer` },
      status: 201,
      headers: expect.objectContaining({ "content-type": "application/json", "x-echo": "yes" }),
      body: expect.any(String),
      bodyEncoding: "utf8",
      bodyTruncated: false,
      durationMs: expect.any(Number),
    });
    expect(JSON.parse(test.body)).toEqual({ ok: true, method: "GET", path: "/answer" });
    expect(test.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("caps a 200 KB body at 64 KiB and says it was truncated", async () => {
    const id = await credential("bearer", { token: secretValue("big") });
    const test = resultOf(await runTest(id, { url: `${echoBase}/big` }));
    expect(test.status).toBe(200);
    expect(test.bodyEncoding).toBe("utf8");
    expect(test.bodyTruncated).toBe(true);
    expect(Buffer.byteLength(test.body)).toBeLessThanOrEqual(TEST_BODY_LIMIT);
    expect(Buffer.byteLength(test.body)).toBeGreaterThan(0);
    expect(test.body).toMatch(/^x+$/);
  });

  it("cuts a long UTF-8 body on a character boundary, within 64 KiB", async () => {
    const id = await credential("bearer", { token: secretValue("big-utf8") });
    const test = resultOf(await runTest(id, { url: `${echoBase}/big-utf8` }));
    expect(test.bodyTruncated).toBe(true);
    expect(Buffer.byteLength(test.body)).toBeLessThanOrEqual(TEST_BODY_LIMIT);
    expect(Buffer.byteLength(test.body)).toBeGreaterThan(TEST_BODY_LIMIT - 4);
    expect(test.body).toMatch(/^€+$/);
  });

  it("answers a binary body in base64", async () => {
    const id = await credential("bearer", { token: secretValue("binary") });
    const test = resultOf(await runTest(id, { url: `${echoBase}/binary` }));
    expect(test.headers["content-type"]).toBe("application/octet-stream");
    expect(test.bodyEncoding).toBe("base64");
    expect(test.bodyTruncated).toBe(false);
    expect(Buffer.from(test.body, "base64").equals(BINARY)).toBe(true);
  });
});

describe("errors", () => {
  it("needs exactly one of targetId and url (400 naming targetId)", async () => {
    const [id, targetId] = await Promise.all([credential("bearer", { token: secretValue("v") }), target()]);
    for (const body of [{}, { targetId, url: `${echoBase}/both` }]) {
      const response = await runTest(id, body);
      expect(response.status, JSON.stringify(response.body)).toBe(400);
      expect(response.body.fields).toEqual(["targetId"]);
    }
    expect(received).toHaveLength(0);
  });

  it.each([
    [{ Host: "internal.example" }],
    [{ "Content-Length": "5" }],
    [{ "Transfer-Encoding": "chunked" }],
    [{ Connection: "upgrade" }],
    [{ Expect: "100-continue" }],
    [{ "X-Bad": "caf\u00e9\u20ac" }],
    [{ "X-Bad": "a\u0001b" }],
    [{ "x-dup": "1", "X-Dup": "2" }],
  ] as [Record<string, string>][])(
    "refuses the extra headers %j with 400 naming headers",
    async (headers) => {
      const id = await credential("bearer", { token: secretValue("bad-headers") });
      const response = await runTest(id, { url: `${echoBase}/bad-headers`, headers });
      expect(response.status, JSON.stringify(response.body)).toBe(400);
      expect(response.body.fields).toHaveLength(1);
      expect(response.body.fields[0]).toMatch(/^headers/);
      expect(received).toHaveLength(0);
    },
  );

  it("answers 404 for a credential of another client", async () => {
    const stranger = await newUser();
    const strangerClient = await createClientFor(stranger, "Other Co");
    const foreign = await credential("bearer", { token: secretValue("foreign") }, stranger, strangerClient);
    const response = await runTest(foreign, { url: `${echoBase}/foreign` });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Credential not found" });
    expect(received).toHaveLength(0);
  });

  it("refuses a customToken credential and points to the token test", async () => {
    const id = await credential("customToken", {
      tokenUrl: `${echoBase}/token`,
      tokenPath: "data.token",
    });
    const response = await runTest(id, { url: `${echoBase}/ct` });
    expect(response.status).toBe(400);
    expect(response.body.message).toContain("token-test");
    expect(received).toHaveLength(0);
  });

  it("refuses the cloud metadata address (SSRF) without contacting it", async () => {
    const id = await credential("bearer", { token: secretValue("ssrf") });
    const started = Date.now();
    const response = await runTest(id, { url: "http://169.254.169.254/latest/meta-data" });
    expect(response.status, JSON.stringify(response.body)).toBe(400);
    expect(response.body.message).toMatch(/not allowed/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("answers 504 when the target does not answer within timeoutSeconds", async () => {
    const id = await credential("bearer", { token: secretValue("timeout") });
    const started = Date.now();
    const response = await runTest(id, { url: `${echoBase}/silent`, timeoutSeconds: 1 });
    expect(response.status, JSON.stringify(response.body)).toBe(504);
    // What the tested target did is for the caller: the message is shown, not the generic 5xx one.
    expect(response.body).toEqual({ message: "The request timed out" });
    expect(Date.now() - started).toBeLessThan(8000);
    expect(onlyReceived().url).toBe("/silent");
  });

  it("answers 502 when nothing listens at the target's port", async () => {
    const id = await credential("bearer", { token: secretValue("refused") });
    const response = await runTest(id, { url: `http://127.0.0.1:${closedPort}/nothing` });
    expect(response.status, JSON.stringify(response.body)).toBe(502);
    expect(response.body).toEqual({ message: "The target could not be reached" });
  });

  it("lets a plain user member test against a target but not a full url; a non-member gets 404", async () => {
    const token = secretValue("roles");
    const id = await credential("bearer", { token });
    const plain = await newUser();
    await joinClient(owner, clientId, plain, "user");
    const refused = await runTest(id, { url: `${echoBase}/plain` }, plain);
    expect(refused.status).toBe(403);
    expect(received).toHaveLength(0);
    const targetResponse = await owner.api.post(`/api/clients/${clientId}/targets`, {
      targetName: "Echo",
      targetRegion: "us-east-1",
      targetBaseURL: echoBase,
      targetTestPath: "/plain",
    });
    expect(targetResponse.status).toBe(201);
    resultOf(await runTest(id, { targetId: targetResponse.body.targets[0].targetId }, plain));
    expect(onlyReceived().headers.authorization).toBe(`Bearer ${token}`);

    received.length = 0;
    const outsider = await newUser();
    await createClientFor(outsider, "Outsider Co");
    for (const response of [
      await runTest(id, { url: `${echoBase}/outsider` }, outsider),
      await runTokenTest(id, outsider),
    ]) {
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: "Client not found" });
    }
    expect(received).toHaveLength(0);
  });
  it("a reader reads credentials but runs no test; devops may test against a full url and manage credentials", async () => {
    const token = secretValue("new-roles");
    const id = await credential("bearer", { token });
    const reader = await newUser();
    await joinClient(owner, clientId, reader, "reader");
    expect((await reader.api.get(`${base()}/credentials`)).status).toBe(200);
    const read = await reader.api.get(`${base()}/credentials/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.credentials[0]).not.toHaveProperty("secretEnvelope");
    for (const response of [
      await runTest(id, { targetId: await target() }, reader),
      await runTokenTest(id, reader),
      await reader.api.put(`${base()}/credentials/${id}`, { credentialName: "renamed" }),
    ]) {
      expect(response.status, JSON.stringify(response.body)).toBe(403);
    }
    expect(received).toHaveLength(0);

    const devops = await newUser();
    await joinClient(owner, clientId, devops, "devops");
    resultOf(await runTest(id, { url: `${echoBase}/devops` }, devops));
    expect(onlyReceived().headers.authorization).toBe(`Bearer ${token}`);
    const own = await credential("apiKey", { keyName: "X-Key", keyValue: secretValue("devops") }, devops);
    expect((await devops.api.put(`${base()}/credentials/${own}`, { notes: "devops" })).status).toBe(200);
    expect((await devops.api.delete(`${base()}/credentials/${own}`)).status).toBe(200);
  });
});

describe("token test", () => {
  it("fetches a customToken token and answers with its expiry, never with the token", async () => {
    const clientSecret = secretValue("token-request");
    const id = await credential("customToken", {
      tokenUrl: `${echoBase}/token`,
      requestHeaders: { "X-Client-Secret": clientSecret },
      tokenPath: "data.token",
      expiryMethod: "expires_in",
      expiryPath: "expires_in",
    });
    const before = Date.now();
    const response = await runTokenTest(id);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.tokenTests).toHaveLength(1);
    const result = response.body.tokenTests[0];
    expect(result).toEqual({
      tokenReceived: true,
      tokenLength: issuedToken.length,
      expiresAt: expect.any(String),
      expiresInSeconds: expect.any(Number),
      durationMs: expect.any(Number),
    });
    expect(result.expiresInSeconds).toBeGreaterThanOrEqual(115);
    expect(result.expiresInSeconds).toBeLessThanOrEqual(120);
    const expiresAt = Date.parse(result.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 115_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 121_000);
    expect(JSON.stringify(response.body)).not.toContain(issuedToken);

    const request = onlyReceived();
    expect(request.method).toBe("POST");
    expect(request.url).toBe("/token");
    expect(request.headers["x-client-secret"]).toBe(clientSecret);

    // The token test is only for token credentials.
    const bearer = await credential("bearer", { token: secretValue("not-a-token-credential") });
    expect((await runTokenTest(bearer)).status).toBe(400);
  });

  it("answers 502 when the token endpoint fails", async () => {
    const id = await credential("customToken", {
      tokenUrl: `${echoBase}/token-fail`,
      tokenPath: "data.token",
    });
    const response = await runTokenTest(id);
    expect(response.status, JSON.stringify(response.body)).toBe(502);
    expect(response.body.message).toMatch(/^The token endpoint failed: /);
    expect(onlyReceived().url).toBe("/token-fail");
  });
});

describe("secrets in responses", () => {
  it("no response of this file contains any secret given to the vault", () => {
    expect(secretsSeen.size).toBeGreaterThan(20);
    expect(responseTexts.length).toBeGreaterThan(50);
    const joined = responseTexts.join("\n");
    for (const secret of secretsSeen) expect(joined).not.toContain(secret);
  });
});
