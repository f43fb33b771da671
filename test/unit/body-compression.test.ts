/**
 * The compression of logged bodies (lib/shared/body-compression.ts) and its use by the request
 * log builder: the threshold, incompressible text kept as it is, the round trip, redaction and the
 * cap before compression, and a bounded, clear failure for a corrupt or hostile stored body.
 */
import { randomBytes } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  buildRequestLogItem,
  newRequestId,
  REDACTED,
  REQUEST_LOG_BODY_CAP_BYTES,
  type RequestLogInput,
  storedBody,
} from "#lib/data-plane/request-log.ts";
import { requestLogItemOf } from "#lib/db/entities/request-log.ts";
import {
  BODY_COMPRESSION_MIN_BYTES,
  compressStoredBody,
  gzipIfSmaller,
  storedBodyText,
  UnreadableBodyError,
} from "#lib/shared/body-compression.ts";
import { secretRedactor } from "#lib/vault/secret-redaction.ts";

const CAP = REQUEST_LOG_BODY_CAP_BYTES;

/** A list-API JSON body of about `bytes` bytes (compresses several times). */
function listJson(bytes: number): string {
  const data = [];
  for (let i = 0; JSON.stringify(data).length < bytes; i++)
    data.push({
      id: `cus_${(i * 7919).toString(36).padStart(8, "0")}`,
      object: "customer",
      name: `Name ${i % 13}`,
    });
  return JSON.stringify({ object: "list", data });
}

describe("compressStoredBody / storedBodyText", () => {
  it("keeps a body under the threshold as text, and compresses one at the threshold when smaller", () => {
    const small = "a".repeat(BODY_COMPRESSION_MIN_BYTES - 1);
    expect(compressStoredBody(small)).toEqual({ body: small, compression: null });
    const atThreshold = "a".repeat(BODY_COMPRESSION_MIN_BYTES);
    const packed = compressStoredBody(atThreshold);
    expect(packed.compression).toBe("gzip");
    expect(Buffer.isBuffer(packed.body)).toBe(true);
    expect((packed.body as Buffer).length).toBeLessThan(100);
    // The threshold counts UTF-8 bytes, not characters: 342 three-byte characters are 1,026 bytes.
    expect(compressStoredBody("€".repeat(342)).compression).toBe("gzip");
  });

  it("leaves incompressible bytes raw; base64 text of random bytes still loses its base64 overhead", () => {
    const random = randomBytes(4096);
    expect(gzipIfSmaller(random)).toBeUndefined();
    expect(gzipIfSmaller(Buffer.from(listJson(4096)))?.length).toBeLessThan(4096 / 3);
    // Text of random bytes (how storedBody keeps a binary body) shrinks to about its raw size.
    const base64 = random.toString("base64");
    const packed = compressStoredBody(base64);
    expect(packed.compression).toBe("gzip");
    expect((packed.body as Buffer).length).toBeLessThan(random.length * 1.05);
    expect(storedBodyText(packed.body, "gzip", CAP)).toBe(base64);
  });

  it("round-trips text exactly, multi-byte characters included", () => {
    const text = `${listJson(30_000)}Chloé García 東京 🙂`;
    const packed = compressStoredBody(text);
    expect(packed.compression).toBe("gzip");
    expect((packed.body as Buffer).length * 4).toBeLessThan(Buffer.byteLength(text));
    expect(storedBodyText(packed.body, packed.compression, CAP + 100)).toBe(text);
    expect(storedBodyText("plain", null, CAP)).toBe("plain");
    expect(storedBodyText("plain", undefined, CAP)).toBe("plain");
  });

  it("refuses, with a clear error and bounded memory, a body that is not what its flag says", () => {
    const cases: [string | Uint8Array, "gzip" | null, RegExp][] = [
      [Buffer.from("not gzip at all, just bytes"), "gzip", /corrupt/],
      [gzipSync(Buffer.from("x".repeat(5000))).subarray(0, 20), "gzip", /corrupt/],
      ["text flagged gzip", "gzip", /stored as text/],
      [Buffer.from("bytes without a flag"), null, /without a compression flag/],
    ];
    for (const [body, flag, reason] of cases) {
      expect(() => storedBodyText(body, flag, CAP)).toThrow(UnreadableBodyError);
      expect(() => storedBodyText(body, flag, CAP)).toThrow(reason);
    }
    // A gzip bomb: 64 MiB of zeros in about 64 KiB; inflating stops at the cap plus a margin.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });
    expect(bomb.length).toBeLessThan(100 * 1024);
    const before = process.memoryUsage().arrayBuffers;
    expect(() => storedBodyText(bomb, "gzip", CAP)).toThrow(/inflates past/);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 * 1024 * 1024);
  });
});

const SECRET = "sk_live_0123456789abcdefSECRET";

function input(overrides: Partial<RequestLogInput> = {}): RequestLogInput {
  const receivedAt = Date.UTC(2026, 0, 15, 12);
  return {
    requestId: newRequestId(receivedAt),
    proxy: { proxyId: "p", clientId: "c", userId: "u" },
    proxyIdFromPath: "p",
    stage: "prod",
    method: "POST",
    apiPath: "/v1/customers",
    query: {},
    requestHeaders: {},
    requestBody: undefined,
    receivedAt,
    sentAt: receivedAt + 5,
    status: 200,
    message: "ok",
    arnBase: "arn",
    target: {
      sentAt: receivedAt + 1,
      receivedAt: receivedAt + 4,
      status: 200,
      location: null,
      responseHeaders: {},
      responseBody: undefined,
    },
    validation: {},
    processed: true,
    redactHeaders: [],
    redactQuery: [],
    secretValues: [SECRET],
    retentionDays: 30,
    ...overrides,
  };
}

const withResponse = (body: Buffer, overrides: Partial<RequestLogInput> = {}) => {
  const base = input(overrides);
  return input({ ...overrides, target: { ...base.target!, responseBody: body } });
};

describe("buildRequestLogItem with compression", () => {
  it("stores a large body as gzip bytes of the redacted text, flagged, and the entity reads the same text back", () => {
    const json = listJson(28_000).replace('"object":"list"', `"object":"list","echo":"${SECRET}"`);
    const item = buildRequestLogItem(withResponse(Buffer.from(json), { requestBody: Buffer.from(json) }));
    const expectedText = storedBody(Buffer.from(json), secretRedactor([SECRET])).body;
    for (const prefix of ["request", "response"] as const) {
      expect(item[`${prefix}BodyCompression`]).toBe("gzip");
      const packed = item[`${prefix}Body`] as Buffer;
      expect(Buffer.isBuffer(packed)).toBe(true);
      expect(packed.length * 4).toBeLessThan(json.length);
      // Redacted before compression: the inflated bytes never hold the secret.
      const inflated = gunzipSync(packed).toString("utf8");
      expect(inflated).not.toContain(SECRET);
      expect(inflated).toContain(`"echo":"${REDACTED}"`);
      expect(item[`${prefix}BodyEncoding`]).toBe("utf8");
      expect(item[`${prefix}BodyTruncated`]).toBe(false);
      expect(item[`${prefix}BodyBytes`]).toBe(json.length);
    }
    const read = requestLogItemOf(item);
    expect(read.responseBody).toBe(json.replace(SECRET, REDACTED));
    expect(read.requestBody).toBe(read.responseBody);
    expect(expectedText).toBe(read.responseBody);
    expect(read).not.toHaveProperty("responseBodyCompression");
  });

  it("keeps the truncation flag and size of a body cut at the cap", () => {
    const json = listJson(100_000);
    const item = buildRequestLogItem(withResponse(Buffer.from(json)));
    expect(item.responseBodyCompression).toBe("gzip");
    expect(item.responseBodyTruncated).toBe(true);
    expect(item.responseBodyBytes).toBe(json.length);
    const read = requestLogItemOf(item);
    expect(read.responseBody).toBe(json.slice(0, CAP));
    expect(read.responseBodyTruncated).toBe(true);
  });

  it("stores small bodies as before (text, no flag), and a binary body as gzip of its base64 text", () => {
    const binary = randomBytes(20_000);
    const item = buildRequestLogItem(withResponse(binary, { requestBody: Buffer.from('{"small":true}') }));
    expect(item.requestBody).toBe('{"small":true}');
    expect(item).not.toHaveProperty("requestBodyCompression");
    expect(item.responseBodyEncoding).toBe("base64");
    expect(item.responseBodyCompression).toBe("gzip");
    expect((item.responseBody as Buffer).length).toBeLessThan(binary.length * 1.05);
    const read = requestLogItemOf(item);
    expect(read.responseBodyEncoding).toBe("base64");
    expect(Buffer.from(read.responseBody!, "base64").equals(binary)).toBe(true);
  });

  it("reads a corrupt compressed body as omitted (null, truncated, size kept), never throwing", () => {
    const item = buildRequestLogItem(withResponse(Buffer.from(listJson(10_000))));
    const corrupt = { ...item, responseBody: Buffer.from("garbage that is not gzip") };
    const read = requestLogItemOf(corrupt);
    expect(read).toMatchObject({
      responseBody: null,
      responseBodyEncoding: null,
      responseBodyTruncated: true,
      responseBodyBytes: item.responseBodyBytes,
    });
    const bomb = { ...item, responseBody: gzipSync(Buffer.alloc(8 * 1024 * 1024)) };
    expect(requestLogItemOf(bomb).responseBody).toBeNull();
  });
});
