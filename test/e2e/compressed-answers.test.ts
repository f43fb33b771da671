/**
 * Compressed bodies (issue 19, docs/data-plane.md "Compressed bodies") over real HTTP against the
 * local stack, with a loopback target that encodes its answers with whatever coding it is told
 * (gzip, x-gzip, deflate, raw deflate, br, zstd, and two codings stacked), whatever the gateway
 * asked for:
 * - the caller gets the decoded body and no Content-Encoding, from `fetch` and from a raw client;
 * - the target is asked for what the gateway decodes, never for the caller's own list;
 * - every reader of the body works on the decoded bytes: the payload filter, a response_value
 *   meter, a response transform, the request log and its redaction of the echoed target secret;
 * - decompression is bounded: a 64 MiB bomb answers 413 response-too-large; a corrupt body or an
 *   unknown coding answers 502, never a crash, and the gateway goes on serving;
 * - a caller's compressed request body is decoded the same way before any reader sees it, and the
 *   target gets what was checked.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setClientPlan } from "../../cli/client-plan.ts";
import { CODINGS, contentEncodingOf, encodeBody } from "../support/content-codings.ts";
import { loggedDetail, loggedRecord } from "../support/request-logs.ts";
import {
  callDataPlane,
  createClientFor,
  created,
  createProxyOf,
  createProxyParts,
  startTestStack,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const KEY = "compressed-caller-key-1234567890";
const TARGET_KEY = "target-key-compressed-0123456789abcdef";
/** Every coding, raw deflate (no zlib wrapper, as some servers send it), and stacked codings. */
const ALL = [...CODINGS, "deflate-raw", "gzip, br", "br, zstd"] as const;

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let target: Server;
let targetBase: string;
/** What the target received, newest last. */
const received: { url: string; headers: IncomingMessage["headers"]; body: Buffer }[] = [];
const bombs = new Map<string, Buffer>();

/** 64 MiB of zeros, encoded once per coding (a few KiB each). */
function bombOf(coding: string): Buffer {
  let bomb = bombs.get(coding);
  if (!bomb) {
    bomb = encodeBody(coding, Buffer.alloc(64 * 1024 * 1024));
    bombs.set(coding, bomb);
  }
  return bomb;
}

beforeAll(async () => {
  stack = await startTestStack();
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Compressed Co");
  await setClientPlan(clientId, "team");
  target = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      received.push({ url: req.url ?? "", headers: req.headers, body });
      const url = new URL(req.url ?? "/", "http://target");
      const coding = url.searchParams.get("enc") ?? "identity";
      if (url.pathname.endsWith("/bomb")) {
        res.writeHead(200, {
          "content-type": "application/json",
          "content-encoding": contentEncodingOf(coding),
        });
        res.end(bombOf(coding));
        return;
      }
      if (url.pathname.endsWith("/corrupt")) {
        res.writeHead(200, { "content-type": "application/json", "content-encoding": coding });
        res.end(Buffer.from("this is not compressed at all"));
        return;
      }
      const answer = JSON.stringify({
        id: 7,
        secret: "remove-me-by-filter",
        usage: { value: Number(url.searchParams.get("value") ?? 40) },
        // The target echoes the headers it got, the target credential among them.
        echo: req.headers,
        padding: "p".repeat(2048),
      });
      res.writeHead(200, {
        "content-type": "application/json",
        ...(coding === "identity" ? {} : { "content-encoding": contentEncodingOf(coding) }),
        "x-target-coding": coding,
      });
      res.end(encodeBody(coding, answer));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
});

afterAll(async () => {
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
  await stack?.stop();
});

const api = () => `/api/clients/${clientId}`;

/** A proxy to the target with an apiKey caller and an apiKey target credential the target echoes. */
async function newProxy(): Promise<string> {
  const parts = await createProxyParts(owner, clientId, {
    region: US,
    key: KEY,
    targetBaseURL: targetBase,
    targetCredential: { authType: "apiKey", secret: { keyName: "x-target-key", keyValue: TARGET_KEY } },
  });
  return createProxyOf(owner, clientId, US, parts);
}

const urlOf = (proxyId: string, path: string) => `${stack.regions[US]}/api/${proxyId}${path}`;

const call = (proxyId: string, path: string, init: RequestInit = {}) =>
  callDataPlane(urlOf(proxyId, path), {
    ...init,
    headers: { "x-api-key": KEY, ...(init.headers as Record<string, string> | undefined) },
  });

const query = (coding: string, extra = "") => `?enc=${encodeURIComponent(coding)}${extra}`;

/** A GET with node:http, which decodes nothing: the bytes and headers exactly as the gateway sent them. */
function rawGet(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: IncomingMessage["headers"]; body: Buffer }>(
    (resolve, reject) => {
      const req = httpRequest(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end();
    },
  );
}

describe("a target's compressed answer", () => {
  let proxyId: string;
  beforeAll(async () => {
    proxyId = await newProxy();
  });

  it.each(ALL)(
    "%s: the caller gets the decoded body without Content-Encoding (raw client and fetch)",
    async (coding) => {
      const raw = await rawGet(urlOf(proxyId, `/items${query(coding)}`), {
        "x-api-key": KEY,
        "accept-encoding": "gzip, deflate, br, zstd",
      });
      expect(raw.status, raw.body.toString()).toBe(200);
      expect(raw.headers["content-encoding"]).toBeUndefined();
      expect(raw.headers["x-target-coding"]).toBe(coding);
      expect(JSON.parse(raw.body.toString("utf8")).usage).toEqual({ value: 40 });
      const fetched = await call(proxyId, `/items${query(coding)}`);
      expect(fetched.status).toBe(200);
      expect(JSON.parse(fetched.text).id).toBe(7);
    },
  );

  it("the target is asked for the codings the gateway decodes, not for the caller's", async () => {
    await rawGet(urlOf(proxyId, "/asked"), { "x-api-key": KEY, "accept-encoding": "compress, exi" });
    const asked = received.findLast((r) => r.url.startsWith("/asked"))!;
    const codings = String(asked.headers["accept-encoding"])
      .split(",")
      .map((c) => c.trim());
    expect(codings).toEqual(expect.arrayContaining(["gzip", "deflate", "br"]));
    expect(codings).not.toContain("compress");
    expect(codings).not.toContain("exi");
  });

  it.each(ALL)("%s: the payload filter removes fields from the decoded body", async (coding) => {
    const filtered = await newProxy();
    const set = await owner.api.put(`${api()}/proxies/${filtered}/filters`, {
      removeResponseFields: ["secret"],
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const answer = await call(filtered, `/items${query(coding)}`);
    expect(answer.status).toBe(200);
    const body = JSON.parse(answer.text);
    expect(body.id).toBe(7);
    expect(body).not.toHaveProperty("secret");
  });

  it.each(ALL)(
    "%s: a response_value meter counts the decoded value (limit 100, 40 a request)",
    async (coding) => {
      const metered = await newProxy();
      await created(
        owner.api.post(`${api()}/proxies/${metered}/meters`, {
          meterType: "response_value",
          meterActive: true,
          extraction: { location: "body", path: "usage.value" },
          limits: { hour: 100 },
        }),
        "meters",
      );
      // 40, 80, 120: the request that crosses the limit passes, the next is refused.
      for (let i = 0; i < 3; i++) {
        const answer = await call(metered, `/units${query(coding)}`);
        expect(answer.status, answer.text).toBe(200);
        // The value is settled with the log, after the answer.
        await loggedRecord(owner.api, clientId, metered, answer.headers.get("x-request-id")!);
      }
      const refused = await call(metered, `/units${query(coding)}`);
      expect(refused.status).toBe(429);
    },
  );

  it.each(ALL)("%s: a response transform reads the decoded JSON", async (coding) => {
    const transformed = await newProxy();
    await created(
      owner.api.post(`${api()}/proxies/${transformed}/response-transforms`, {
        transformMode: "all",
        transformActive: true,
        code: "export default (c, q, r) => ({ ...r, body: { seen: r.body.usage.value, id: r.body.id } })",
      }),
      "responseTransforms",
    );
    const answer = await call(transformed, `/t${query(coding)}`);
    expect(answer.status, answer.text).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ seen: 40, id: 7 });
  });

  it.each(ALL)(
    "%s: the request log stores the decoded body, the echoed target key redacted",
    async (coding) => {
      const answer = await call(proxyId, `/logged${query(coding)}`);
      expect(answer.status).toBe(200);
      // The caller gets what the target sent: the echo shows the target key.
      expect(answer.text).toContain(TARGET_KEY);
      const detail = await loggedDetail(owner.api, clientId, proxyId, answer.headers.get("x-request-id")!);
      expect(detail.responseBody).toContain('"usage":{"value":40}');
      expect(detail.responseBody).toContain("[redacted]");
      expect(JSON.stringify(detail)).not.toContain(TARGET_KEY);
      expect(JSON.stringify(detail)).not.toContain(Buffer.from(TARGET_KEY).toString("base64").slice(0, 16));
    },
  );
});

describe("bounded decoding", () => {
  let proxyId: string;
  beforeAll(async () => {
    proxyId = await newProxy();
  });

  it.each([...CODINGS, "gzip, br"])("%s: a 64 MiB bomb answers 413 response-too-large", async (coding) => {
    const answer = await call(proxyId, `/bomb${query(coding)}`);
    expect(answer.status, answer.text).toBe(413);
    expect(answer.headers.get("service-proxy-code")).toBe("response-too-large");
    // The gateway goes on serving.
    expect((await call(proxyId, `/after${query("gzip")}`)).status).toBe(200);
  });

  it.each(["gzip", "deflate", "br", "zstd"])(
    "%s: a corrupt body answers 502 naming the coding",
    async (coding) => {
      const answer = await call(proxyId, `/corrupt${query(coding)}`);
      expect(answer.status, answer.text).toBe(502);
      expect(JSON.parse(answer.text)).toEqual({
        code: "proxy-access-granted",
        message: `The target's response could not be decoded (${coding})`,
      });
    },
  );

  it("an unknown coding answers 502 naming it", async () => {
    const answer = await call(proxyId, `/corrupt${query("compress")}`);
    expect(answer.status).toBe(502);
    expect(JSON.parse(answer.text).message).toBe(
      "The target's response has a Content-Encoding the gateway cannot decode (compress)",
    );
  });
});

describe("a caller's compressed request body", () => {
  it("is decoded before the transforms and the log see it, and the target gets the decoded body", async () => {
    const proxyId = await newProxy();
    await created(
      owner.api.post(`${api()}/proxies/${proxyId}/request-transforms`, {
        transformMode: "all",
        transformActive: true,
        code: "export default (c, r) => ({ ...r, body: { ...r.body, seenByTransform: r.body.model } })",
      }),
      "requestTransforms",
    );
    const answer = await call(proxyId, "/echo", {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(JSON.stringify({ model: "big", note: `caller key ${KEY}` })),
    });
    expect(answer.status, answer.text).toBe(200);
    const got = received.findLast((r) => r.url.startsWith("/echo"))!;
    expect(got.headers["content-encoding"]).toBeUndefined();
    expect(JSON.parse(got.body.toString("utf8"))).toMatchObject({ model: "big", seenByTransform: "big" });
    const detail = await loggedDetail(owner.api, clientId, proxyId, answer.headers.get("x-request-id")!);
    expect(detail.requestBody).toContain('"model":"big"');
    expect(JSON.stringify(detail)).not.toContain(KEY);
  });

  it("with an unknown coding is refused 415 naming it, and the target is not called", async () => {
    const proxyId = await newProxy();
    const before = received.length;
    const answer = await call(proxyId, "/echo", {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "compress" },
      body: "compressed?",
    });
    expect(answer.status).toBe(415);
    expect(JSON.parse(answer.text).message).toBe(
      "The request's Content-Encoding cannot be decoded by the gateway (compress); send gzip, deflate, br, zstd or none",
    );
    expect(received.length).toBe(before);
  });

  it("that is corrupt is refused 400, and a bomb 413", async () => {
    const proxyId = await newProxy();
    const corrupt = await call(proxyId, "/echo", {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: "not gzip",
    });
    expect(corrupt.status).toBe(400);
    expect(JSON.parse(corrupt.text).message).toBe("The request body could not be decoded (gzip)");
    const bomb = await call(proxyId, "/echo", {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: gzipSync(Buffer.alloc(64 * 1024 * 1024)),
    });
    expect(bomb.status).toBe(413);
  });
});
