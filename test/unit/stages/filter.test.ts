/**
 * Filters and overrides in the data plane's stages (lib/data-plane/stages/filter.ts, compiled by
 * lib/data-plane/policies.ts from stored items; docs/filters.md): the IP screen, the required
 * headers, the stripped headers and a path override in the outgoing request, and the payload filter.
 */
import { describe, expect, it } from "vitest";
import { authenticateCaller } from "#lib/data-plane/caller-auth.ts";
import { type Answer, isAnswer } from "#lib/data-plane/context.ts";
import { compilePolicies } from "#lib/data-plane/policies.ts";
import { admit } from "#lib/data-plane/stages/admit.ts";
import { filterResponse, routeOverride, screenCaller, screenRequest } from "#lib/data-plane/stages/filter.ts";
import { outgoingRequest } from "#lib/data-plane/stages/forward.ts";
import { CALLER_KEY, CLIENT_ID, located, PROXY_ID, runtime } from "./fixtures.ts";

const AT = "2025-01-01T00:00:00.000Z";
const stored = {
  pKey: "p",
  sKey: "s",
  clientId: CLIENT_ID,
  proxyId: PROXY_ID,
  updatedAt: AT,
  updatedBy: "u",
  policyVersion: 1,
};

function filters(
  fields: Partial<
    Record<"ipAllow" | "ipDeny" | "requiredHeaders" | "stripHeaders" | "removeResponseFields", string[]>
  >,
) {
  return {
    ...stored,
    entity: "proxyFilters",
    ipAllow: [],
    ipDeny: [],
    requiredHeaders: [],
    stripHeaders: [],
    removeResponseFields: [],
    ...fields,
  };
}

const overrides = (pathOverrides: unknown[]) => ({ ...stored, entity: "proxyOverrides", pathOverrides });

describe("screenCaller", () => {
  it("refuses a denied or not-allowed caller with 403 proxy-access-denied, IPv4 and IPv6", () => {
    const policies = compilePolicies(
      filters({ ipAllow: ["198.51.100.0/24", "2001:db8::/32"], ipDeny: ["198.51.100.66"] }),
      undefined,
    );
    const rt = runtime({ policies });
    const answer = (sourceIp: string) => screenCaller(located(rt, { sourceIp }));
    expect(answer("198.51.100.5")).toBeUndefined();
    expect(answer("2001:db8::7")).toBeUndefined();
    for (const [ip, message] of [
      ["198.51.100.66", /denied by the proxy's IP filter/],
      ["203.0.113.7", /not in the proxy's IP allow list/],
      ["2001:db9::7", /not in the proxy's IP allow list/],
    ] as const) {
      const refused = answer(ip)!;
      expect(refused.response.status).toBe(403);
      expect(refused.outcome.code).toBe("proxy-access-denied");
      expect(refused.outcome.message).toMatch(message);
    }
  });

  it("lets every caller through a proxy without filters", () => {
    expect(screenCaller(located(runtime(), { sourceIp: "203.0.113.7" }))).toBeUndefined();
  });
});

describe("screenRequest", () => {
  it("answers 400 required-header-missing naming the first missing header (names ignore case)", () => {
    const rt = runtime({
      policies: compilePolicies(filters({ requiredHeaders: ["x-tenant", "x-trace"] }), undefined),
    });
    const missing = screenRequest(located(rt, { headers: { "x-api-key": CALLER_KEY, "X-Tenant": "a" } }))!;
    expect(missing.response.status).toBe(400);
    expect(missing.outcome).toEqual({
      code: "required-header-missing",
      message: "The request must carry the header x-trace",
    });
    expect(
      screenRequest(located(rt, { headers: { "x-api-key": CALLER_KEY, "x-tenant": "a", "x-trace": "" } })),
    ).toBeUndefined();
  });
});

describe("the outgoing request", () => {
  it("drops stripped headers and adds the longest path override's headers over the proxy's", async () => {
    const policies = compilePolicies(
      filters({ stripHeaders: ["x-debug", "cookie"] }),
      overrides([
        { pathPrefix: "/items", additionalHeaders: { "X-Version": "items", "X-Only-Items": "1" } },
        { pathPrefix: "/items/42", additionalHeaders: { "x-version": "42" }, timeoutSeconds: 5 },
      ]),
    );
    const rt = runtime({
      policies,
      proxy: { proxyAdditionalHeaders: { "X-Version": "proxy", "X-Proxy": "p" } },
    });
    const ctx = located(rt, {
      headers: { "x-api-key": CALLER_KEY, "x-debug": "1", cookie: "a=b", "x-keep": "k" },
    });
    const admitted = await admit(ctx, authenticateCaller);
    if (isAnswer(admitted)) throw new Error(`not admitted: ${admitted.outcome.message}`);
    const out = outgoingRequest(admitted);
    if ("response" in out) throw new Error("not built");
    expect(out.headers["x-debug"]).toBeUndefined();
    expect(out.headers.cookie).toBeUndefined();
    expect(out.headers["x-keep"]).toBe("k");
    expect(out.headers["x-version"]).toBe("42");
    expect(out.headers["x-proxy"]).toBe("p");
    expect(out.headers["x-only-items"]).toBeUndefined();
    expect(routeOverride(ctx)?.timeoutSeconds).toBe(5);
  });
});

describe("filterResponse", () => {
  const answerOf = (body: string, contentType = "application/json"): Answer => ({
    response: { status: 200, headers: { "content-type": contentType }, body: Buffer.from(body) },
    outcome: { code: "proxy-access-granted", message: "Request forwarded to the target" },
  });
  const processedCtx = (paths: string[]) => {
    const ctx = located(
      runtime({ policies: compilePolicies(filters({ removeResponseFields: paths }), undefined) }),
    );
    ctx.processed = true;
    ctx.target = {
      sentAt: 0,
      receivedAt: 0,
      status: 200,
      location: null,
      headers: {},
      body: Buffer.from("x"),
    };
    return ctx;
  };

  it("removes the fields from a JSON answer and records the filtered body for the log", () => {
    const ctx = processedCtx(["secret", "items.*.internal"]);
    const filtered = filterResponse(ctx, answerOf('{"id":1,"secret":"s","items":[{"a":1,"internal":2}]}'));
    expect(JSON.parse(filtered.response.body.toString())).toEqual({ id: 1, items: [{ a: 1 }] });
    expect(ctx.target!.body!.toString()).toBe(filtered.response.body.toString());
  });

  it("passes non-JSON bodies, invalid JSON and answers where nothing matched unchanged, byte for byte", () => {
    const ctx = processedCtx(["secret"]);
    for (const answer of [
      answerOf('{"secret":"s"}', "text/plain"),
      answerOf("{not json"),
      answerOf('{ "other" : 1 }'),
    ])
      expect(filterResponse(ctx, answer)).toBe(answer);
  });

  it("leaves the gateway's own answers (not processed) alone", () => {
    const ctx = processedCtx(["message"]);
    ctx.processed = false;
    const answer = answerOf('{"message":"Too many requests","code":"proxy-access-granted"}');
    expect(filterResponse(ctx, answer)).toBe(answer);
  });
});
