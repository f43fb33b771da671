/**
 * The request log record builder (spec 2.11): every field, redaction, caps, encodings, TTL, and
 * the UUIDv7 helpers the list's time range is built on.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  buildRequestLogItem,
  highestRequestIdAt,
  isSensitiveHeader,
  isSensitiveQueryParam,
  lowestRequestIdAt,
  newRequestId,
  REDACTED,
  REQUEST_LOG_BODY_CAP_BYTES,
  REQUEST_LOG_DEFAULT_RETENTION_DAYS,
  REQUEST_LOG_HEADERS_CAP_BYTES,
  type RequestLogInput,
  requestIdTime,
  requestLogRetentionDays,
  storedBody,
  truncateUtf8,
  VALIDATION_FIELDS,
} from "#lib/data-plane/request-log.ts";
import { requestLogItemOf, sortKeyRange } from "#lib/db/entities/request-log.ts";
import { parseIsoTimestamp, parseRequestLogQuery } from "#lib/domain/request-logs.ts";
import { secretRedactor } from "#lib/vault/secret-redaction.ts";

const RECEIVED = Date.UTC(2025, 0, 31, 12, 0, 0, 250);
const PROXY = { proxyId: "0c3c9c4e-1111-4222-8333-444455556666", clientId: "client-1", userId: "user-1" };

function input(overrides: Partial<RequestLogInput> = {}): RequestLogInput {
  return {
    requestId: newRequestId(RECEIVED),
    proxy: PROXY,
    proxyIdFromPath: PROXY.proxyId,
    stage: "prod",
    method: "POST",
    apiPath: "/v1/items",
    query: { page: "2" },
    requestHeaders: { "Content-Type": "application/json", Accept: "*/*" },
    requestBody: Buffer.from('{"hello":"world"}'),
    receivedAt: RECEIVED,
    sentAt: RECEIVED + 1500,
    status: 201,
    message: "proxy-access-granted",
    arnBase: "arn:aws:execute-api:us-east-1:123456789012:abc123/prod",
    target: {
      sentAt: RECEIVED + 100,
      receivedAt: RECEIVED + 1400,
      status: 201,
      location: "https://api.example.test/v1/items/42",
      responseHeaders: { "content-type": "application/json", "x-request-id": ["a", "b"] },
      responseBody: Buffer.from('{"id":42}'),
    },
    validation: { proxyExists: true, proxyActive: true, requestSent: true, responseReceived: true },
    processed: true,
    redactHeaders: [],
    redactQuery: [],
    ...overrides,
  };
}

/** Approximate DynamoDB item size: attribute names plus values, as JSON (an over-estimate). */
const itemBytes = (item: unknown) => Buffer.byteLength(JSON.stringify(item), "utf8");

afterEach(() => {
  delete process.env.REQUEST_LOG_RETENTION_DAYS;
});

describe("buildRequestLogItem", () => {
  it("writes every field of spec 2.11 plus the detail fields, under the proxy's REQLOG partition", () => {
    const given = input();
    const item = buildRequestLogItem(given);
    expect(item).toEqual({
      pKey: `REQLOG#${PROXY.proxyId}`,
      sKey: given.requestId,
      entity: "requestLog",
      requestId: given.requestId,
      proxyId: PROXY.proxyId,
      userId: "user-1",
      clientId: "client-1",
      parentId: PROXY.proxyId,
      processed: true,
      processedAt: RECEIVED,
      TTL: Math.floor(RECEIVED / 1000) + 30 * 86_400,
      proxyData: {
        stage: "prod",
        method: "POST",
        apiPath: "/v1/items",
        receivedAt: RECEIVED,
        sentAt: RECEIVED + 1500,
        duration: 1.5,
        status: 201,
        message: "proxy-access-granted",
        arnBase: "arn:aws:execute-api:us-east-1:123456789012:abc123/prod",
        apiHeaders: { "Content-Type": "application/json", Accept: "*/*" },
        apiParams: { page: "2" },
      },
      targetData: {
        sentAt: RECEIVED + 100,
        receivedAt: RECEIVED + 1400,
        duration: 1.3,
        status: 201,
        location: "https://api.example.test/v1/items/42",
      },
      validationData: Object.fromEntries(
        VALIDATION_FIELDS.map((field) => [
          field,
          ["proxyExists", "proxyActive", "requestSent", "responseReceived"].includes(field),
        ]),
      ),
      requestHeaders: { "Content-Type": "application/json", Accept: "*/*" },
      requestHeadersTruncated: false,
      requestBody: '{"hello":"world"}',
      requestBodyEncoding: "utf8",
      requestBodyTruncated: false,
      requestBodyBytes: 17,
      responseHeaders: { "content-type": "application/json", "x-request-id": ["a", "b"] },
      responseHeadersTruncated: false,
      responseBody: '{"id":42}',
      responseBodyEncoding: "utf8",
      responseBodyTruncated: false,
      responseBodyBytes: 9,
      apiParamsTruncated: false,
    });
  });

  it("has all 20 validation booleans, false when missing or not exactly true", () => {
    expect(VALIDATION_FIELDS).toHaveLength(20);
    const item = buildRequestLogItem(
      input({ validation: { systemError: true, proxyExists: "yes" as unknown as boolean } }),
    );
    const validation = item.validationData as Record<string, boolean>;
    expect(Object.keys(validation).sort()).toEqual([...VALIDATION_FIELDS].sort());
    expect(Object.entries(validation).filter(([, v]) => v)).toEqual([["systemError", true]]);
  });

  it("records a request that never reached the target: targetData null, no response", () => {
    const item = buildRequestLogItem(
      input({ target: null, status: 403, message: "proxy-access-denied", processed: false }),
    );
    expect(item.targetData).toBeNull();
    expect(item.processed).toBe(false);
    expect(item.responseHeaders).toEqual({});
    expect(item.responseBody).toBeNull();
    expect(item.responseBodyEncoding).toBeNull();
    expect((item.proxyData as any).status).toBe(403);
  });

  it("keys a record of an unknown proxy by the (cut) id of the path, with no owner", () => {
    const item = buildRequestLogItem(input({ proxy: null, proxyIdFromPath: "unknown-proxy" }));
    expect(item).toMatchObject({
      pKey: "REQLOG#unknown-proxy",
      proxyId: "unknown-proxy",
      parentId: "unknown-proxy",
      userId: null,
      clientId: null,
    });
    const long = buildRequestLogItem(input({ proxy: null, proxyIdFromPath: "x".repeat(5000) }));
    expect(String(long.pKey).length).toBeLessThan(200);
  });

  it("keeps an empty body as empty text and an absent one as null", () => {
    expect(buildRequestLogItem(input({ requestBody: Buffer.alloc(0) }))).toMatchObject({
      requestBody: "",
      requestBodyEncoding: "utf8",
      requestBodyTruncated: false,
    });
    expect(buildRequestLogItem(input({ requestBody: undefined }))).toMatchObject({
      requestBody: null,
      requestBodyEncoding: null,
      requestBodyTruncated: false,
      requestBodyBytes: 0,
    });
  });
});

describe("redaction", () => {
  const secrets = {
    authorization: "Bearer AUTH-SECRET-1",
    proxyAuthorization: "Basic PROXYAUTH-SECRET-2",
    cookie: "session=COOKIE-SECRET-3",
    xApiKey: "XAPIKEY-SECRET-4",
    customApiKey: "CUSTOM-API-KEY-SECRET-5",
    apikey: "APIKEY-SECRET-6",
    token: "TOKEN-SECRET-7",
    secret: "CLIENT-SECRET-8",
    extra: "EXTRA-HEADER-SECRET-9",
    setCookie: "sid=SETCOOKIE-SECRET-10",
    responseToken: "RESPONSE-TOKEN-SECRET-11",
    queryToken: "QUERY-TOKEN-SECRET-12",
    queryKey: "QUERY-KEY-SECRET-13",
    queryExtra: "QUERY-EXTRA-SECRET-14",
    queryAuthorization: "QUERY-AUTH-SECRET-15",
    locationToken: "LOCATION-TOKEN-SECRET-16",
  };
  const item = buildRequestLogItem(
    input({
      requestHeaders: {
        Authorization: secrets.authorization,
        "Proxy-Authorization": secrets.proxyAuthorization,
        Cookie: secrets.cookie,
        "X-Api-Key": secrets.xApiKey,
        "X-Custom-Api-Key": secrets.customApiKey,
        "X-Partner-ApiKey": secrets.apikey,
        "X-Auth-Token": secrets.token,
        "X-Client-Secret": secrets.secret,
        "X-Gateway-Key": secrets.extra,
        "Content-Type": "application/json",
      },
      query: {
        access_token: secrets.queryToken,
        key: secrets.queryKey,
        gk: secrets.queryExtra,
        Authorization: secrets.queryAuthorization,
        page: "2",
      },
      redactHeaders: ["x-gateway-key"],
      redactQuery: ["gk"],
      target: {
        ...input().target!,
        location: `https://api.example.test/next?id=1&token=${secrets.locationToken}`,
        responseHeaders: {
          "Set-Cookie": [secrets.setCookie, "other=x"],
          "X-Refresh-Token": secrets.responseToken,
          Location: `/next?id=1&token=${secrets.locationToken}`,
          "Content-Type": "text/plain",
        },
      },
    }),
  );

  it("replaces every sensitive header of the request, including the extra names", () => {
    const headers = item.requestHeaders as Record<string, string>;
    for (const name of [
      "Authorization",
      "Proxy-Authorization",
      "Cookie",
      "X-Api-Key",
      "X-Custom-Api-Key",
      "X-Partner-ApiKey",
      "X-Auth-Token",
      "X-Client-Secret",
      "X-Gateway-Key",
    ])
      expect(headers[name], name).toBe(REDACTED);
    expect(headers["Content-Type"]).toBe("application/json");
    expect((item.proxyData as any).apiHeaders).toEqual(headers);
  });

  it("replaces sensitive response headers and the token in a Location", () => {
    const headers = item.responseHeaders as Record<string, unknown>;
    expect(headers["Set-Cookie"]).toBe(REDACTED);
    expect(headers["X-Refresh-Token"]).toBe(REDACTED);
    expect(headers.Location).toBe("/next?id=1&token=%5Bredacted%5D");
    expect(headers["Content-Type"]).toBe("text/plain");
    expect((item.targetData as any).location).toBe("https://api.example.test/next?id=1&token=%5Bredacted%5D");
  });

  it("replaces sensitive query parameters, including the extra names", () => {
    expect((item.proxyData as any).apiParams).toEqual({
      access_token: REDACTED,
      key: REDACTED,
      gk: REDACTED,
      Authorization: REDACTED,
      page: "2",
    });
  });

  it("leaves no secret value anywhere in the item", () => {
    const stored = JSON.stringify(item);
    for (const value of Object.values(secrets)) {
      expect(stored).not.toContain(value);
      expect(stored).not.toContain(Buffer.from(value).toString("base64"));
    }
  });

  it("recognises sensitive names case-insensitively", () => {
    for (const name of [
      "AUTHORIZATION",
      "set-cookie",
      "x-API-key",
      "Api_Key",
      "X-Amz-Security-Token",
      "password",
    ])
      expect(isSensitiveHeader(name), name).toBe(true);
    for (const name of ["content-type", "accept", "x-request-id", "user-agent"])
      expect(isSensitiveHeader(name), name).toBe(false);
    expect(isSensitiveHeader("X-Mine", ["x-mine"])).toBe(true);
    expect(isSensitiveQueryParam("sig")).toBe(true);
    expect(isSensitiveQueryParam("page")).toBe(false);
    expect(isSensitiveQueryParam("K", ["k"])).toBe(true);
  });

  it("treats a __proto__ header as data", () => {
    const headers = JSON.parse('{"__proto__":"x","accept":"y"}') as Record<string, string>;
    const built = buildRequestLogItem(input({ requestHeaders: headers }));
    const stored = built.requestHeaders as Record<string, unknown>;
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    expect(Object.hasOwn(stored, "__proto__")).toBe(true);
    expect(stored.accept).toBe("y");
  });
});

describe("secret values (an echoing target)", () => {
  const secret = "target-token-5f0c2d9e-1111-4222-8333-444455556666";
  const key = "caller-key-0b7d6c1a-aaaa-4bbb-8ccc-dddddddddddd";
  const basic = Buffer.from(`svc:${secret}`).toString("base64");

  it("replaces every form of every secret in headers, query, path, bodies and Location; names stay", () => {
    const item = buildRequestLogItem(
      input({
        apiPath: `/v1/${key}`,
        query: { q: secret, page: "2" },
        requestHeaders: { "X-Echo": `k=${encodeURIComponent(key)}`, Accept: "*/*" },
        requestBody: Buffer.from(JSON.stringify({ mine: key })),
        target: {
          sentAt: RECEIVED + 100,
          receivedAt: RECEIVED + 1400,
          status: 200,
          location: `https://api.example.test/next?t=${secret}`,
          responseHeaders: { "x-echo-authorization": `Basic ${basic}` },
          responseBody: Buffer.from(
            JSON.stringify({
              headers: { authorization: `Bearer ${secret}`, "x-caller": key },
              url: `/v1?x=${encodeURIComponent(secret)}`,
              b64: Buffer.from(`{"token":"${secret}"}`).toString("base64"),
            }),
          ),
        },
        secretValues: [secret, key, `svc:${secret}`],
      }),
    );
    const json = JSON.stringify(item);
    for (const form of [secret, key, basic, Buffer.from(secret).toString("base64").slice(4, 20)])
      expect(json).not.toContain(form);
    expect((item.proxyData as Record<string, unknown>).apiPath).toBe(`/v1/${REDACTED}`);
    expect(item.requestHeaders).toMatchObject({ "X-Echo": `k=${REDACTED}`, Accept: "*/*" });
    expect(item.responseHeaders).toMatchObject({ "x-echo-authorization": `Basic ${REDACTED}` });
    expect(String(item.responseBody)).toContain(`"authorization":"Bearer ${REDACTED}"`);
    expect(String(item.requestBody)).toBe(`{"mine":"${REDACTED}"}`);
  });

  it("redacts before the body cap: a secret crossing the cap is not shown in part", () => {
    for (const shift of [1, 10, 30]) {
      const body = Buffer.from(`${"a".repeat(REQUEST_LOG_BODY_CAP_BYTES - shift)}${secret} and more`);
      const stored = storedBody(body, secretRedactor([secret]));
      expect(stored.truncated).toBe(true);
      expect(Buffer.byteLength(String(stored.body))).toBeLessThanOrEqual(REQUEST_LOG_BODY_CAP_BYTES);
      expect(String(stored.body)).not.toContain(secret.slice(0, Math.min(shift, 8)));
    }
  });

  it("redacts a binary body on its bytes before encoding it", () => {
    const body = Buffer.concat([Buffer.from([0, 0xff, 0]), Buffer.from(secret), Buffer.from([0xfe])]);
    const stored = storedBody(body, secretRedactor([secret]));
    expect(stored.encoding).toBe("base64");
    expect(Buffer.from(String(stored.body), "base64")).toEqual(
      Buffer.concat([Buffer.from([0, 0xff, 0]), Buffer.from(REDACTED), Buffer.from([0xfe])]),
    );
  });
});

describe("bodies and caps", () => {
  it("caps a large text body at the cap, on a character boundary, and flags it", () => {
    const text = "é".repeat(REQUEST_LOG_BODY_CAP_BYTES); // 2 bytes each: twice the cap
    const item = buildRequestLogItem(input({ requestBody: Buffer.from(text) }));
    // Stored gzip-compressed (body-compression.test.ts); the entity reads the stored text back.
    expect(item.requestBodyCompression).toBe("gzip");
    const body = requestLogItemOf(item).requestBody as string;
    expect(item.requestBodyEncoding).toBe("utf8");
    expect(item.requestBodyTruncated).toBe(true);
    expect(item.requestBodyBytes).toBe(REQUEST_LOG_BODY_CAP_BYTES * 2);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(REQUEST_LOG_BODY_CAP_BYTES);
    expect(body).toBe("é".repeat(REQUEST_LOG_BODY_CAP_BYTES / 2));
    // An odd cut point never leaves half a character.
    const odd = storedBody(Buffer.from(`a${text}`));
    expect(odd.body).toBe(`a${"é".repeat(REQUEST_LOG_BODY_CAP_BYTES / 2 - 1)}`);
    expect(odd.truncated).toBe(true);
  });

  it("keeps a body of exactly the cap whole", () => {
    const stored = storedBody(Buffer.alloc(REQUEST_LOG_BODY_CAP_BYTES, "a"));
    expect(stored.truncated).toBe(false);
    expect(stored.body).toHaveLength(REQUEST_LOG_BODY_CAP_BYTES);
  });

  it("stores binary bodies as base64 with the marker, capped and flagged", () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe]);
    const item = buildRequestLogItem(input({ target: { ...input().target!, responseBody: png } }));
    expect(item.responseBodyEncoding).toBe("base64");
    expect(Buffer.from(item.responseBody as string, "base64")).toEqual(png);
    expect(item.responseBodyTruncated).toBe(false);

    // Valid UTF-8 but with NUL bytes is binary too.
    expect(storedBody(Buffer.from("a\u0000b")).encoding).toBe("base64");

    const big = Buffer.alloc(REQUEST_LOG_BODY_CAP_BYTES * 4, 0xff);
    const stored = storedBody(big);
    expect(stored.encoding).toBe("base64");
    expect(stored.truncated).toBe(true);
    expect(stored.bytes).toBe(big.length);
    expect(stored.body!.length).toBeLessThanOrEqual(REQUEST_LOG_BODY_CAP_BYTES);
    expect(big.subarray(0, Buffer.from(stored.body!, "base64").length)).toEqual(
      Buffer.from(stored.body!, "base64"),
    );
  });

  it("caps header and query maps and flags them", () => {
    const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`x-h-${i}`, "v".repeat(100)]));
    const item = buildRequestLogItem(
      input({
        requestHeaders: many,
        query: many,
        target: { ...input().target!, responseHeaders: { "x-huge": "z".repeat(100_000) } },
      }),
    );
    for (const field of ["requestHeaders", "responseHeaders"]) {
      expect(itemBytes(item[field])).toBeLessThan(REQUEST_LOG_HEADERS_CAP_BYTES * 1.5);
    }
    expect(itemBytes((item.proxyData as any).apiParams)).toBeLessThan(REQUEST_LOG_HEADERS_CAP_BYTES * 1.5);
    expect(item.requestHeadersTruncated).toBe(true);
    expect(item.responseHeadersTruncated).toBe(true);
    expect(item.apiParamsTruncated).toBe(true);
    expect(((item.responseHeaders as any)["x-huge"] as string).length).toBeLessThan(
      REQUEST_LOG_HEADERS_CAP_BYTES,
    );
  });

  it("stays far below DynamoDB's 400 KB item limit for huge inputs", () => {
    const huge = "x".repeat(2_000_000);
    const hugeMap = Object.fromEntries(
      Array.from({ length: 5000 }, (_, i) => [`n${i}${huge.slice(0, 300)}`, huge]),
    );
    const item = buildRequestLogItem(
      input({
        stage: huge,
        method: huge,
        apiPath: huge,
        message: huge,
        arnBase: huge,
        query: hugeMap,
        requestHeaders: hugeMap,
        requestBody: Buffer.from(huge),
        target: {
          sentAt: RECEIVED,
          receivedAt: RECEIVED + 5,
          status: 200,
          location: `https://x.test/${huge}`,
          responseHeaders: { ...hugeMap, "set-cookie": [huge, huge] },
          responseBody: Buffer.alloc(6 * 1024 * 1024, 0xfe),
        },
      }),
    );
    expect(itemBytes(item)).toBeLessThan(150 * 1024);
  });

  it("cuts strings on UTF-8 boundaries", () => {
    expect(truncateUtf8("abc", 10)).toBe("abc");
    expect(truncateUtf8("a😀b", 3)).toBe("a");
    expect(truncateUtf8("a😀b", 5)).toBe("a😀");
  });
});

describe("retention (TTL)", () => {
  const ttlDays = (item: Record<string, unknown>) =>
    ((item.TTL as number) - Math.floor(RECEIVED / 1000)) / 86_400;

  it("defaults to 30 days after the request was received", () => {
    expect(REQUEST_LOG_DEFAULT_RETENTION_DAYS).toBe(30);
    expect(ttlDays(buildRequestLogItem(input()))).toBe(30);
  });

  it("reads REQUEST_LOG_RETENTION_DAYS, and an explicit retentionDays wins", () => {
    process.env.REQUEST_LOG_RETENTION_DAYS = "7";
    expect(requestLogRetentionDays()).toBe(7);
    expect(ttlDays(buildRequestLogItem(input()))).toBe(7);
    expect(ttlDays(buildRequestLogItem(input({ retentionDays: 90 })))).toBe(90);
  });

  it("falls back to the default for an invalid setting", () => {
    for (const bad of ["0", "-3", "1.5", "abc", "99999", ""]) {
      process.env.REQUEST_LOG_RETENTION_DAYS = bad;
      expect(requestLogRetentionDays(), bad).toBe(30);
    }
    expect(ttlDays(buildRequestLogItem(input({ retentionDays: 0 })))).toBe(30);
  });
});

describe("request ids and time ranges", () => {
  it("makes UUIDv7 ids carrying the receive time, ordered by time", () => {
    const a = newRequestId(RECEIVED);
    const b = newRequestId(RECEIVED + 1);
    expect(requestIdTime(a)).toBe(RECEIVED);
    expect(requestIdTime(b)).toBe(RECEIVED + 1);
    expect(a < b).toBe(true);
    expect(requestIdTime("not-a-uuid")).toBeUndefined();
  });

  it("names every request of a millisecond differently, each a UUIDv7 with the RFC 9562 variant", () => {
    const ids = Array.from({ length: 2000 }, () => newRequestId(RECEIVED));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The random bits are spread: every variant digit and many version-field digits occur.
    expect(new Set(ids.map((id) => id[19]))).toEqual(new Set(["8", "9", "a", "b"]));
    expect(new Set(ids.map((id) => id.slice(15, 18))).size).toBeGreaterThan(1000);
  });

  it("brackets every id of a millisecond between the lowest and highest id of it", () => {
    for (let i = 0; i < 200; i++) {
      const id = newRequestId(RECEIVED);
      expect(lowestRequestIdAt(RECEIVED) <= id && id <= highestRequestIdAt(RECEIVED)).toBe(true);
      expect(id > highestRequestIdAt(RECEIVED - 1)).toBe(true);
      expect(id < lowestRequestIdAt(RECEIVED + 1)).toBe(true);
    }
    expect(requestIdTime(lowestRequestIdAt(RECEIVED))).toBe(RECEIVED);
    expect(requestIdTime(highestRequestIdAt(RECEIVED))).toBe(RECEIVED);
  });

  it("parses ISO 8601 timestamps and rejects impossible ones", () => {
    expect(parseIsoTimestamp("2025-01-31T12:00:00.250Z")).toBe(RECEIVED);
    expect(parseIsoTimestamp("2025-01-31T14:00:00.250+02:00")).toBe(RECEIVED);
    expect(parseIsoTimestamp("2025-01-31T12:00:00.25")).toBe(RECEIVED);
    expect(parseIsoTimestamp("2025-01-31")).toBe(Date.UTC(2025, 0, 31));
    for (const bad of ["2025-02-30T00:00:00Z", "yesterday", "2025-13-01", "1738324800", "2025-01-31T25:00Z"])
      expect(parseIsoTimestamp(bad), bad).toBeUndefined();
  });

  it("validates the list query, naming each bad field", () => {
    expect(parseRequestLogQuery({})).toEqual({ limit: 1000, after: undefined, before: undefined });
    const fields = (query: Record<string, string>) => {
      try {
        parseRequestLogQuery(query);
        return [];
      } catch (error) {
        return (error as { details: { fields: string[] } }).details.fields;
      }
    };
    expect(fields({ limit: "0" })).toEqual(["limit"]);
    expect(fields({ limit: "1001" })).toEqual(["limit"]);
    expect(fields({ limit: "2.5" })).toEqual(["limit"]);
    expect(fields({ processedAfter: "soon" })).toEqual(["processedAfter"]);
    expect(fields({ processedBefore: "2025-02-30" })).toEqual(["processedBefore"]);
    expect(
      fields({ processedAfter: "2025-02-01T00:00:00Z", processedBefore: "2025-01-01T00:00:00Z" }),
    ).toEqual(["processedAfter"]);
    expect(
      fields({ processedAfter: "2025-01-01T00:00:00Z", processedBefore: "2025-01-01T00:00:00Z" }),
    ).toEqual([]);
  });

  it("turns the range into sort-key bounds", () => {
    expect(sortKeyRange()).toEqual({ condition: "#pk = :pk", values: {} });
    expect(sortKeyRange(1, 2)).toEqual({
      condition: "#pk = :pk AND #sk BETWEEN :from AND :to",
      values: { ":from": lowestRequestIdAt(1), ":to": highestRequestIdAt(2) },
    });
    expect(sortKeyRange(1).condition).toContain(">= :from");
    expect(sortKeyRange(undefined, 2).condition).toContain("<= :to");
  });
});
