/**
 * customToken credentials against a real token endpoint (node:http on 127.0.0.1): the request sent,
 * each expiry method, caching until 30 s before expiry, single flight, and every failure reason.
 * Requests go through the SSRF-guarded outbound client (loopback allowed here by
 * OUTBOUND_ALLOW_LOOPBACK) unless a test passes its own fetch.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  CustomTokenError,
  type CustomTokenFailure,
  clearCustomTokenCache,
  fetchCustomToken,
  getCustomToken,
  invalidateCustomToken,
  readPath,
} from "#lib/vault/custom-token.ts";
import { type CustomTokenSecret, parseCredentialSecret } from "#lib/vault/secret-schemas.ts";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

type Route = (seen: Seen, res: ServerResponse) => void | Promise<void>;

const SECRET_TOKEN = "tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
let server: Server;
let base: string;
let seen: Seen[] = [];
const routes = new Map<string, Route>();

const sendJson = (res: ServerResponse, body: unknown, status = 200) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
};
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function route(path: string, handler: Route): string {
  routes.set(path, handler);
  return `${base}${path}`;
}

function secretFor(url: string, overrides: Record<string, unknown> = {}): CustomTokenSecret {
  return parseCredentialSecret("target", "customToken", {
    tokenUrl: url,
    tokenPath: "access_token",
    ...overrides,
  });
}

async function failure(promise: Promise<unknown>, reason: CustomTokenFailure): Promise<CustomTokenError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(CustomTokenError);
  expect((error as CustomTokenError).reason).toBe(reason);
  expect((error as Error).message).not.toContain(SECRET_TOKEN);
  return error as CustomTokenError;
}

beforeAll(async () => {
  process.env.OUTBOUND_ALLOW_LOOPBACK = "true";
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const entry = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      seen.push(entry);
      const handler = routes.get(new URL(entry.url, "http://x").pathname);
      if (!handler) return sendJson(res, { message: "no route" }, 404);
      void Promise.resolve(handler(entry, res)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen = [];
  routes.clear();
  clearCustomTokenCache();
  process.env.OUTBOUND_ALLOW_LOOPBACK = "true";
});

afterEach(() => clearCustomTokenCache());

describe("fetchCustomToken: the token request", () => {
  it("POSTs the JSON body with the headers and query parameters, and reads a nested token path", async () => {
    const url = route("/auth/token", (_, res) =>
      sendJson(res, { data: { items: [{ token: SECRET_TOKEN, ttl: 120 }] } }),
    );
    const secret = secretFor(`${url}?tenant=acme`, {
      requestHeaders: { "X-Client-Id": "gw", Accept: "application/vnd.auth+json" },
      requestQueryParams: { grant: "session token" },
      requestBody: { user: "svc", scopes: ["a", "b"] },
      tokenPath: "data.items.0.token",
      expiryMethod: "expires_in",
      expiryPath: "data.items.0.ttl",
    });
    const token = await fetchCustomToken(secret, { now: () => 1_000_000 });
    expect(token).toEqual({ token: SECRET_TOKEN, expiresAt: 1_000_000 + 120_000, expirySource: "response" });

    expect(seen).toHaveLength(1);
    const [request] = seen;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/auth/token?tenant=acme&grant=session%20token");
    expect(request?.headers["x-client-id"]).toBe("gw");
    expect(request?.headers.accept).toBe("application/vnd.auth+json");
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(request?.body ?? "")).toEqual({ user: "svc", scopes: ["a", "b"] });
  });

  it("sends GET without a body", async () => {
    const url = route("/get-token", (_, res) => sendJson(res, { access_token: SECRET_TOKEN }));
    const token = await fetchCustomToken(secretFor(url, { method: "GET" }));
    expect(token.token).toBe(SECRET_TOKEN);
    expect(seen[0]).toMatchObject({ method: "GET", body: "" });
    expect(seen[0]?.headers["content-type"]).toBeUndefined();
    expect(seen[0]?.headers.accept).toBe("application/json");
  });

  it("uses the fetch given in the options", async () => {
    const url = route("/via-fetch", (_, res) => sendJson(res, { access_token: SECRET_TOKEN }));
    const calls: string[] = [];
    const countingFetch: typeof fetch = (input, init) => {
      calls.push(String(input));
      return fetch(input, init);
    };
    const token = await fetchCustomToken(secretFor(url, { requestBody: { a: 1 } }), { fetch: countingFetch });
    expect(token.token).toBe(SECRET_TOKEN);
    expect(calls).toEqual([url]);
    expect(JSON.parse(seen[0]?.body ?? "")).toEqual({ a: 1 });
  });
});

describe("fetchCustomToken: expiry", () => {
  const now = () => 1_700_000_000_000;

  it.each([
    ["expires_in", 3600, now() + 3_600_000],
    ["expires_in", "90", now() + 90_000],
    ["expires_in_ms", 45_000, now() + 45_000],
    ["expires_at", 1_800_000_000, 1_800_000_000_000],
    ["expires_at", "1800000000", 1_800_000_000_000],
    ["expires_at_iso", "2030-01-02T03:04:05Z", Date.parse("2030-01-02T03:04:05Z")],
    ["expires_at_iso", "2030-01-02T03:04:05.500+02:00", Date.parse("2030-01-02T01:04:05.500Z")],
  ])("%s = %j", async (expiryMethod, value, expected) => {
    const url = route("/expiry", (_, res) =>
      sendJson(res, { access_token: SECRET_TOKEN, meta: { exp: value } }),
    );
    const token = await fetchCustomToken(secretFor(url, { expiryMethod, expiryPath: "meta.exp" }), { now });
    expect(token).toEqual({ token: SECRET_TOKEN, expiresAt: expected, expirySource: "response" });
  });

  it("uses defaultTtlSeconds without an expiry method, or when the response has no usable value", async () => {
    const url = route("/no-expiry", (_, res) => sendJson(res, { access_token: SECRET_TOKEN, exp: "soon" }));
    expect(await fetchCustomToken(secretFor(url), { now })).toEqual({
      token: SECRET_TOKEN,
      expiresAt: now() + 300_000,
      expirySource: "default",
    });
    for (const [expiryMethod, expiryPath] of [
      ["expires_in", "exp"],
      ["expires_at_iso", "exp"],
      ["expires_in", "missing"],
    ]) {
      const token = await fetchCustomToken(
        secretFor(url, { expiryMethod, expiryPath, defaultTtlSeconds: 60 }),
        {
          now,
        },
      );
      expect(token, `${expiryMethod} ${expiryPath}`).toEqual({
        token: SECRET_TOKEN,
        expiresAt: now() + 60_000,
        expirySource: "default",
      });
    }
  });
});

describe("fetchCustomToken: failures", () => {
  it("a non-2xx status (http_error), without the body in the message", async () => {
    const url = route("/fail", (_, res) => sendJson(res, { error: "bad", leaked: SECRET_TOKEN }, 401));
    const error = await failure(fetchCustomToken(secretFor(url)), "http_error");
    expect(error.status).toBe(401);
    expect(error.message).toMatch(/status 401/);
    expect(error.message).not.toContain("/fail");
  });

  it("a redirect (not followed)", async () => {
    const target = route("/target", (_, res) => sendJson(res, { access_token: SECRET_TOKEN }));
    const url = route("/moved", (_, res) => {
      res.writeHead(302, { location: target });
      res.end();
    });
    expect((await failure(fetchCustomToken(secretFor(url)), "redirect")).status).toBe(302);
    expect((await failure(fetchCustomToken(secretFor(url), { fetch }), "redirect")).status).toBe(302);
    expect(seen.map((s) => s.url)).toEqual(["/moved", "/moved"]);
  });

  it("an answer that is not JSON", async () => {
    const url = route("/html", (_, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<html>${SECRET_TOKEN}</html>`);
    });
    await failure(fetchCustomToken(secretFor(url)), "not_json");
    await failure(fetchCustomToken(secretFor(url), { fetch }), "not_json");
  });

  it("nothing at the token path", async () => {
    const url = route("/wrong-shape", (_, res) => sendJson(res, { token: SECRET_TOKEN, data: [] }));
    for (const tokenPath of ["access_token", "data.0.token", "token.value", "constructor", "__proto__"]) {
      const error = await failure(fetchCustomToken(secretFor(url, { tokenPath })), "token_missing");
      expect(error.message).toContain(`"${tokenPath}"`);
    }
  });

  it("something at the token path that is not a usable token", async () => {
    for (const [name, value] of [
      ["number", 12345],
      ["object", { t: SECRET_TOKEN }],
      ["empty", ""],
      ["line-break", `${SECRET_TOKEN}\r\nX-Injected: 1`],
      ["padded", ` ${SECRET_TOKEN}`],
    ] as const) {
      const url = route(`/bad-${name}`, (_, res) => sendJson(res, { access_token: value }));
      await failure(fetchCustomToken(secretFor(url)), "token_invalid");
    }
  });

  it("an answer larger than 1 MiB", async () => {
    const url = route("/huge", (_, res) =>
      sendJson(res, { access_token: SECRET_TOKEN, pad: "x".repeat(1_100_000) }),
    );
    await failure(fetchCustomToken(secretFor(url)), "too_large");
    await failure(fetchCustomToken(secretFor(url), { fetch }), "too_large");
  });

  it("no answer in time", async () => {
    const url = route("/slow", async (_, res) => {
      await delay(1_000);
      sendJson(res, { access_token: SECRET_TOKEN });
    });
    await failure(fetchCustomToken(secretFor(url), { timeoutMs: 150 }), "timeout");
    await failure(fetchCustomToken(secretFor(url), { fetch, timeoutMs: 150 }), "timeout");
  });

  it("no server (request_failed)", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const secret = secretFor(`http://127.0.0.1:${port}/token`);
    await failure(fetchCustomToken(secret), "request_failed");
    await failure(fetchCustomToken(secret, { fetch }), "request_failed");
  });

  it("a loopback endpoint when the outbound policy does not allow it (blocked)", async () => {
    const url = route("/blocked", (_, res) => sendJson(res, { access_token: SECRET_TOKEN }));
    process.env.OUTBOUND_ALLOW_LOOPBACK = "false";
    await failure(fetchCustomToken(secretFor(url)), "blocked");
    expect(seen).toHaveLength(0);
  });
});

describe("getCustomToken", () => {
  function counter(expiresIn: number | undefined, latencyMs = 0) {
    let issued = 0;
    const url = route(`/counted-${Math.random().toString(36).slice(2)}`, async (_, res) => {
      issued++;
      await delay(latencyMs);
      sendJson(res, { access_token: `${SECRET_TOKEN}-${issued}`, expires_in: expiresIn });
    });
    return { url, issued: () => issued };
  }

  it("caches the token until 30 s before it expires", async () => {
    const endpoint = counter(100);
    const secret = secretFor(endpoint.url, { expiryMethod: "expires_in", expiryPath: "expires_in" });
    let clock = 5_000_000;
    const now = () => clock;

    const first = await getCustomToken("client-1/cred-1", secret, { now });
    expect(first).toMatchObject({ token: `${SECRET_TOKEN}-1`, expiresAt: 5_100_000 });
    clock += 69_999;
    expect((await getCustomToken("client-1/cred-1", secret, { now })).token).toBe(`${SECRET_TOKEN}-1`);
    expect(endpoint.issued()).toBe(1);

    clock += 1; // 30 s before expiry
    expect((await getCustomToken("client-1/cred-1", secret, { now })).token).toBe(`${SECRET_TOKEN}-2`);
    expect(endpoint.issued()).toBe(2);
  });

  it("caches the default TTL when the endpoint announces no expiry", async () => {
    const endpoint = counter(undefined);
    const secret = secretFor(endpoint.url, { defaultTtlSeconds: 120 });
    let clock = 0;
    const now = () => clock;
    await getCustomToken("k", secret, { now });
    clock = 89_999;
    await getCustomToken("k", secret, { now });
    expect(endpoint.issued()).toBe(1);
    clock = 90_000;
    await getCustomToken("k", secret, { now });
    expect(endpoint.issued()).toBe(2);
  });

  it("refreshes short-lived tokens at half their lifetime", async () => {
    const endpoint = counter(20);
    const secret = secretFor(endpoint.url, { expiryMethod: "expires_in", expiryPath: "expires_in" });
    let clock = 0;
    const now = () => clock;
    await getCustomToken("short", secret, { now });
    clock = 9_999;
    await getCustomToken("short", secret, { now });
    expect(endpoint.issued()).toBe(1);
    clock = 10_000;
    await getCustomToken("short", secret, { now });
    expect(endpoint.issued()).toBe(2);
  });

  it("shares one fetch between 10 concurrent callers", async () => {
    const endpoint = counter(3600, 100);
    const secret = secretFor(endpoint.url);
    const tokens = await Promise.all(Array.from({ length: 10 }, () => getCustomToken("shared", secret)));
    expect(endpoint.issued()).toBe(1);
    expect(new Set(tokens.map((t) => t.token))).toEqual(new Set([`${SECRET_TOKEN}-1`]));
    // And the shared result is cached afterwards.
    await getCustomToken("shared", secret);
    expect(endpoint.issued()).toBe(1);
  });

  it("shares a failure between concurrent callers and does not cache it", async () => {
    let calls = 0;
    const url = route("/flaky", async (_, res) => {
      calls++;
      await delay(50);
      if (calls === 1) return sendJson(res, { error: "down" }, 503);
      sendJson(res, { access_token: SECRET_TOKEN });
    });
    const secret = secretFor(url);
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => getCustomToken("flaky", secret)),
    );
    expect(results.every((r) => r.status === "rejected")).toBe(true);
    expect(calls).toBe(1);
    expect((await getCustomToken("flaky", secret)).token).toBe(SECRET_TOKEN);
    expect(calls).toBe(2);
  });

  it("keeps separate tokens per cache key and per secret, and forgets one on invalidate", async () => {
    const endpoint = counter(3600);
    const secret = secretFor(endpoint.url);
    await getCustomToken("a", secret);
    await getCustomToken("b", secret);
    expect(endpoint.issued()).toBe(2);
    await getCustomToken("a", secretFor(endpoint.url, { requestBody: { other: true } }));
    expect(endpoint.issued()).toBe(3);
    invalidateCustomToken("b");
    await getCustomToken("b", secret);
    expect(endpoint.issued()).toBe(4);
  });
});

describe("readPath", () => {
  it("reads own properties and array indexes only", () => {
    const doc = { data: { items: [{ token: "t" }], "0": "zero" } };
    expect(readPath(doc, "data.items.0.token")).toBe("t");
    expect(readPath(doc, "data.0")).toBe("zero");
    expect(readPath(doc, "data.items.x")).toBeUndefined();
    expect(readPath(doc, "data.items.length")).toBeUndefined();
    expect(readPath(doc, "data.toString")).toBeUndefined();
    expect(readPath("text", "length")).toBeUndefined();
  });
});
