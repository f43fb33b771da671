/**
 * Compressed request-log bodies over real HTTP (docs/request-logs.md "Bodies"): a loopback target
 * answers a 20-32 KiB list JSON that echoes the caller's key; the proxy's caller gets it unchanged,
 * the request log stores it as a gzip Binary several times smaller, and the log detail API answers
 * exactly the text it answered before compression existed (storedBody's text: redacted, capped),
 * with the echoed key still redacted.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDACTED, REQUEST_LOG_BODY_CAP_BYTES, storedBody } from "#lib/data-plane/request-log.ts";
import { keys } from "#lib/db/keys.ts";
import { closeOutboundAgents } from "#lib/net/outbound.ts";
import { secretRedactor } from "#lib/vault/secret-redaction.ts";
import { loggedDetail } from "../support/request-logs.ts";
import {
  callDataPlane,
  createClientFor,
  createProxyOf,
  createProxyParts,
  startTestStack,
  storedItem,
  type TestStack,
  type TestUser,
} from "../support/stack.ts";

const US = "us-east-1";
const KEY = `compression-caller-key-${Date.now()}-SECRET`;

let stack: TestStack;
let owner: TestUser;
let clientId: string;
let target: Server;
let targetBase: string;

/** A list-API JSON answer of `count` customers that echoes what the caller sent in its body. */
function listAnswer(count: number, echoed: string): Buffer {
  const data = Array.from({ length: count }, (_, i) => ({
    id: `cus_${(i * 7_919 + 104_729).toString(36).padStart(10, "0")}`,
    object: "customer",
    created: 1_700_000_000 + i * 3_607,
    email: `user${(i * 31) % 1000}@example.com`,
    name: ["Ana Almeida", "Ben Brown", "Chloé Chen", "Dmitri Dubois"][i % 4],
    address: {
      city: ["Lisbon", "Berlin", "Osaka", "Austin"][i % 4],
      country: ["PT", "DE", "JP", "US"][i % 4],
    },
  }));
  return Buffer.from(JSON.stringify({ object: "list", echoed, data, has_more: true }));
}

function answer(req: IncomingMessage, body: Buffer, res: ServerResponse) {
  const count = Number(new URL(req.url ?? "/", "http://t").searchParams.get("count") ?? 1);
  res.writeHead(200, { "content-type": "application/json" });
  res.end(listAnswer(count, body.toString("utf8")));
}

beforeAll(async () => {
  stack = await startTestStack();
  target = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => answer(req, Buffer.concat(chunks), res));
  });
  await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
  targetBase = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
  owner = await stack.newUser();
  clientId = await createClientFor(owner, "Compression Co");
});
afterAll(async () => {
  await closeOutboundAgents();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
  await stack?.stop();
});

async function newProxy(): Promise<string> {
  const parts = await createProxyParts(owner, clientId, { region: US, key: KEY, targetBaseURL: targetBase });
  return createProxyOf(owner, clientId, US, parts, "compressed logs");
}

/** POST through the proxy with the caller's key in the body too; the answer and its log. */
async function call(proxyId: string, count: number, requestBody: string) {
  const response = await callDataPlane(`${stack.regions[US]}/api/${proxyId}/customers?count=${count}`, {
    method: "POST",
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: requestBody,
  });
  expect(response.status, response.text).toBe(200);
  const requestId = response.headers.get("x-request-id")!;
  const detail = await loggedDetail(owner.api, clientId, proxyId, requestId);
  const stored = await storedItem(keys.requestLog(proxyId, requestId), US);
  expect(stored).toBeDefined();
  return { response, detail, stored: stored! };
}

/** What the log stored for a body before compression existed (and what the API answered). */
const textBefore = (body: Buffer) => storedBody(body, secretRedactor([KEY]));

describe("request-log bodies stored gzip-compressed", () => {
  it("answers a 20-32 KiB JSON body byte for byte as before, stored as a gzip Binary several times smaller, the echoed key redacted", async () => {
    const proxyId = await newProxy();
    const requestBody = JSON.stringify({ note: "the caller's key, echoed by the target", key: KEY });
    const { response, detail, stored } = await call(proxyId, 160, requestBody);
    const answered = response.body;
    expect(answered.length).toBeGreaterThan(20 * 1024);
    expect(answered.length).toBeLessThan(REQUEST_LOG_BODY_CAP_BYTES);
    // The caller got the echo unchanged: the key did travel.
    expect(response.text).toContain(KEY);

    // The detail API: the same text, encoding, flags and size as before compression.
    const before = textBefore(answered);
    expect(before.encoding).toBe("utf8");
    expect(detail.responseBody).toBe(before.body);
    expect(detail.responseBody).toBe(response.text.replaceAll(KEY, REDACTED));
    expect(Buffer.from(detail.responseBody, "utf8").equals(Buffer.from(before.body!, "utf8"))).toBe(true);
    expect(detail).toMatchObject({
      responseBodyEncoding: "utf8",
      responseBodyTruncated: false,
      responseBodyBytes: answered.length,
    });
    expect(detail.responseBody).toContain(REDACTED);
    expect(detail.responseBody).not.toContain(KEY);
    expect(JSON.stringify(detail)).not.toContain(KEY);
    // The API shape did not change: no compression flag, no binary.
    expect(detail).not.toHaveProperty("responseBodyCompression");
    expect(detail).not.toHaveProperty("requestBodyCompression");

    // The stored item: a gzip Binary, flagged, at least 4x smaller; redacted before compression.
    expect(stored.responseBodyCompression).toBe("gzip");
    expect(stored.responseBody).toBeInstanceOf(Uint8Array);
    const packed = stored.responseBody as Uint8Array;
    expect(packed.length * 4).toBeLessThan(Buffer.byteLength(before.body!));
    const inflated = gunzipSync(packed).toString("utf8");
    expect(inflated).toBe(before.body);
    expect(inflated).not.toContain(KEY);
    expect(stored.responseBodyEncoding).toBe("utf8");

    // The small request body (under 1 KiB) is stored as text, as before.
    expect(stored.requestBody).toBe(requestBody.replace(KEY, REDACTED));
    expect(stored).not.toHaveProperty("requestBodyCompression");
    expect(detail.requestBody).toBe(requestBody.replace(KEY, REDACTED));
  });

  it("compresses a large request body too, and keeps a body cut at the 32 KiB cap cut and flagged", async () => {
    const proxyId = await newProxy();
    const requestBody = listAnswer(120, KEY).toString("utf8");
    expect(Buffer.byteLength(requestBody)).toBeGreaterThan(1024);
    // About 46 KiB answered: more than the cap.
    const { response, detail, stored } = await call(proxyId, 250, requestBody);
    expect(response.body.length).toBeGreaterThan(REQUEST_LOG_BODY_CAP_BYTES);

    expect(stored.requestBodyCompression).toBe("gzip");
    expect(detail.requestBody).toBe(textBefore(Buffer.from(requestBody)).body);
    expect(detail.requestBody).not.toContain(KEY);

    const before = textBefore(response.body);
    expect(before.truncated).toBe(true);
    expect(stored.responseBodyCompression).toBe("gzip");
    expect(detail).toMatchObject({
      responseBody: before.body,
      responseBodyEncoding: "utf8",
      responseBodyTruncated: true,
      responseBodyBytes: response.body.length,
    });
    expect(JSON.stringify(detail)).not.toContain(KEY);
  });
});
