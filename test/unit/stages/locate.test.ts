/** Stage locate (lib/data-plane/stages/locate.ts): the request's shape, then the proxy's configuration. */
import { describe, expect, expectTypeOf, it } from "vitest";
import { isAnswer, type RequestContext } from "#lib/data-plane/context.ts";
import type { LoadedRuntime, ProxyRuntime } from "#lib/data-plane/runtime-config.ts";
import { checkRequestShape, type LoadRuntime, locate, PROXY_METHODS } from "#lib/data-plane/stages/locate.ts";
import { hasDotSegment } from "#lib/net/path-segments.ts";
import { answerOf, context, PROXY_ID, runtime } from "./fixtures.ts";

const bodyOf = (answer: { response: { body: Buffer } }) => JSON.parse(answer.response.body.toString());

describe("checkRequestShape", () => {
  it("refuses a path that names no proxy, or a proxy id that cannot exist, as an unknown proxy", () => {
    for (const path of [
      "/",
      "/api",
      "/api/",
      "/other/p/x",
      `/api/${"a".repeat(65)}/x`,
      "/api/bad_id/x",
      "/api/a.b/x",
    ]) {
      const answer = checkRequestShape(context({ path }));
      expect(answer?.response.status, path).toBe(403);
      expect(answer?.outcome).toEqual({ code: "proxy-access-denied", message: "Unknown proxy" });
      expect(bodyOf(answer!)).toEqual({ code: "proxy-access-denied", message: "Unknown proxy" });
    }
  });

  it("answers 405 with Allow listing the forwarded methods for any other method", () => {
    for (const method of ["TRACE", "CONNECT", "PROPFIND", "get"]) {
      const answer = checkRequestShape(context({ method }));
      expect(answer?.response.status, method).toBe(405);
      expect(answer?.outcome.code).toBe("proxy-access-denied");
      expect(answer?.response.headers.allow).toBe("GET, POST, PUT, PATCH, DELETE, OPTIONS, HEAD");
    }
    // The method is echoed, cut to 20 characters.
    expect(checkRequestShape(context({ method: "X".repeat(50) }))?.outcome.message).toBe(
      `Method ${"X".repeat(20)} is not supported`,
    );
  });

  it("lets every forwarded method on a well-formed proxy path through", () => {
    for (const method of PROXY_METHODS) expect(checkRequestShape(context({ method }))).toBeUndefined();
    expect(checkRequestShape(context({ path: `/api/${PROXY_ID}` }))).toBeUndefined();
  });
});

describe("hasDotSegment", () => {
  it("finds . and .. segments in any spelling, and backslashes", () => {
    for (const path of [
      "/..",
      "/a/../b",
      "/a/./b",
      "/%2e%2e/x",
      "/%2E%2e/x",
      "/.%2E/x",
      "/%2e",
      "/a\\b",
      "/a/..",
    ])
      expect(hasDotSegment(path), path).toBe(true);
  });

  it("leaves dots inside a segment and an encoded slash alone", () => {
    for (const path of ["/", "/a.b", "/...", "/..a", "/x/..%2fadmin", "/v1.2/items", "/%2e%2e%2e"])
      expect(hasDotSegment(path), path).toBe(false);
  });
});

describe("locate", () => {
  const loaded = (fresh: boolean): LoadedRuntime => ({ runtime: runtime(), fresh });

  it("asks the injected loader for the path's proxy id with the pipeline's revalidate flag", async () => {
    const calls: [string, { revalidate: boolean }][] = [];
    const load: LoadRuntime = async (proxyId, options) => {
      calls.push([proxyId, options]);
      return loaded(false);
    };
    const ctx = context();
    expect(await locate(ctx, load, { revalidate: false })).toBe(ctx);
    expect(await locate(ctx, load, { revalidate: true })).toBe(ctx);
    expect(calls).toEqual([
      [PROXY_ID, { revalidate: false }],
      [PROXY_ID, { revalidate: true }],
    ]);
  });

  it("answers the same context, typed Located; an answer is told from a context by its response", async () => {
    const ctx = context();
    const located = await locate(ctx, async () => loaded(true), { revalidate: false });
    expect(located).toBe(ctx);
    expect(isAnswer(located)).toBe(false);
    if (!isAnswer(located)) expectTypeOf(located.runtime).toEqualTypeOf<ProxyRuntime>();
    const refused = await locate(context(), async () => undefined, { revalidate: false });
    expect(isAnswer(refused)).toBe(true);
    // isAnswer relies on it: a context never has a `response` (npx tsc --noEmit checks this).
    expectTypeOf<RequestContext>().not.toHaveProperty("response");
  });

  it("sets the runtime, whether it is fresh, and proxyExists (a new attempt starts a new record)", async () => {
    const ctx = context();
    ctx.validation = { proxyActive: true, requestSent: true }; // left from an earlier attempt
    await locate(ctx, async () => loaded(false), { revalidate: false });
    expect(ctx.runtime?.proxyId).toBe(PROXY_ID);
    expect(ctx.fresh).toBe(false);
    expect(ctx.validation).toEqual({ proxyExists: true });
    await locate(ctx, async () => loaded(true), { revalidate: true });
    expect(ctx.fresh).toBe(true);
  });

  it("answers 403 Unknown proxy when the loader finds none, with no runtime and nothing validated", async () => {
    const ctx = context();
    const answer = answerOf(await locate(ctx, async () => undefined, { revalidate: true }));
    expect(answer.response.status).toBe(403);
    expect(answer.outcome).toEqual({ code: "proxy-access-denied", message: "Unknown proxy" });
    expect(ctx.runtime).toBeUndefined();
    expect(ctx.validation).toEqual({});
  });

  it("answers 400 for a dot segment after the proxy is known (so the refusal is logged under it)", async () => {
    const ctx = context({ path: `/api/${PROXY_ID}/v1/tenant-a/%2e%2e/tenant-b` });
    const answer = answerOf(await locate(ctx, async () => loaded(true), { revalidate: false }));
    expect(answer.response.status).toBe(400);
    expect(answer.outcome.code).toBe("proxy-access-denied");
    expect(answer.outcome.message).toMatch(/\. or \.\. segments/);
    expect(ctx.runtime).toBeDefined();
    expect(ctx.validation).toEqual({ proxyExists: true });
  });

  it("sees the normalised path: unreserved escapes decoded, so no spelling of a dot segment gets through", async () => {
    const normalised = context({ path: `/api/${PROXY_ID}/%61dmin/a%2fb/%2561`, rawQuery: "x=%61&x=b" });
    expect(normalised.apiPath).toBe("/admin/a%2Fb/%2561");
    expect({ ...normalised.query }).toEqual({ x: ["a", "b"] });
    for (const path of ["/%2e%2e/x", "/%2E/x", "/.%2e", "/x/%2e%2E"]) {
      const ctx = context({ path: `/api/${PROXY_ID}${path}` });
      const answer = answerOf(await locate(ctx, async () => loaded(true), { revalidate: false }));
      expect(answer.response.status, path).toBe(400);
    }
    // Not decoded twice: %252e is a literal "%2e" for the target, not a dot.
    const twice = context({ path: `/api/${PROXY_ID}/%252e%252e/x` });
    expect(await locate(twice, async () => loaded(true), { revalidate: false })).toBe(twice);
    expect(twice.apiPath).toBe("/%252e%252e/x");
  });

  it("lets a loader failure through (the pipeline turns it into a logged 500/503)", async () => {
    const failure = new Error("store down");
    await expect(locate(context(), async () => Promise.reject(failure), { revalidate: false })).rejects.toBe(
      failure,
    );
  });
});
